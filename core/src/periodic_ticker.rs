//! The ticker: once a second, for each entry, work out the due slot(s) from
//! Redis's clock (so host clock skew cannot make one process fire early)
//! and try to claim each with `periodic_claim.lua`, which pushes the job in
//! the same atomic step. Every process runs one; the script makes exactly
//! one of them win a slot.
//!
//! Nothing fires before this process's first orphan-recovery pass has
//! completed: after the whole fleet was down, recovery must requeue an
//! interrupted `until_executed` run (re-taking its lock) before the ticker
//! can look at that lock, or the next slot would start beside it.

use crate::config::CatchUp;
use crate::events::MiddlewareAnswer;
use crate::locks::queued_ttl;
use crate::periodic::Periodic;
use crate::scripts::SCRIPTS;
use crate::shared::{sleep_unless, Lifecycle, Shared};
use redis::AsyncCommands;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

/// With `periodic_catch_up = all`, at most this many missed slots of one
/// entry are run after downtime (the most recent ones).
pub(crate) const MAX_CATCH_UP_SLOTS: usize = 100;
/// An entry never claimed before fires a slot at most this many seconds
/// old; an older one (a daily entry added in the afternoon) is only noted.
const NEW_ENTRY_GRACE_SECS: i64 = 10;

struct Entry {
    definition: Periodic,
    pjid: String,
    /// The newest slot known to be settled (fired or skipped by anyone).
    settled: i64,
}

pub(crate) async fn run(shared: Arc<Shared>) {
    if shared.periodic.entries.is_empty() {
        return;
    }
    while !shared.recovered_once.load(Ordering::SeqCst) {
        if sleep_unless(&shared, Duration::from_millis(100), Lifecycle::Stopping).await {
            return;
        }
    }
    let mut entries: Vec<Entry> = shared
        .periodic
        .entries
        .iter()
        .map(|definition| Entry {
            pjid: definition.pjid(),
            definition: definition.clone(),
            settled: i64::MIN,
        })
        .collect();
    tracing::debug!("periodic ticker started with {} entries", entries.len());
    loop {
        let pause = match server_time(&shared).await {
            Ok(now) => {
                for entry in &mut entries {
                    if let Err(e) = tick(&shared, entry, now).await {
                        tracing::error!(
                            "periodic {} ({}) could not claim its slot (will retry): {e}",
                            entry.definition.class(),
                            entry.definition.cron()
                        );
                    }
                }
                // Wake just after the next whole second.
                Duration::from_secs_f64(1.0 - now.fract() + 0.005)
            }
            Err(e) => {
                tracing::error!("periodic ticker cannot read the time from Redis (will retry): {e}");
                Duration::from_secs(1)
            }
        };
        if sleep_unless(&shared, pause, Lifecycle::Stopping).await {
            return;
        }
    }
}

async fn server_time(shared: &Shared) -> crate::error::Result<f64> {
    crate::clock::now(&shared.redis).await
}

async fn tick(shared: &Shared, entry: &mut Entry, now: f64) -> crate::error::Result<()> {
    let now_secs = now.floor() as i64;
    let Some(latest) = entry.definition.latest_slot(now_secs) else {
        return Ok(());
    };
    if latest <= entry.settled {
        return Ok(());
    }
    let slots = match shared.config.periodic_catch_up() {
        CatchUp::Latest => vec![latest],
        CatchUp::All => {
            let last: Option<i64> = shared
                .redis
                .conn()
                .get(shared.keys.periodic_last_slot(&entry.pjid))
                .await?;
            match last {
                None => vec![latest],
                Some(last) => {
                    let (slots, truncated) =
                        entry
                            .definition
                            .slots_between(last.max(entry.settled), now_secs, MAX_CATCH_UP_SLOTS);
                    if truncated {
                        tracing::warn!(
                            "periodic {} ({}) missed more than {MAX_CATCH_UP_SLOTS} slots; running the latest {MAX_CATCH_UP_SLOTS}",
                            entry.definition.class(),
                            entry.definition.cron()
                        );
                    }
                    slots
                }
            }
        }
    };
    for slot in slots {
        claim(shared, entry, slot, now).await?;
        entry.settled = slot;
    }
    Ok(())
}

/// How long the host's client middleware may take with a periodic job.
const HOST_ANSWER_LIMIT: std::time::Duration = std::time::Duration::from_secs(5);

/// Hands `job` to the host language's client middleware and waits for its
/// answer: the job to push, or `None` to push nothing. No answer in time,
/// or one that is not a job: pushed as it was, with a warning.
async fn host_client_middleware(shared: &Shared, job: crate::job::Job) -> Option<crate::job::Job> {
    let (answer, answered) = tokio::sync::oneshot::channel();
    *shared.periodic.host_answer.lock().unwrap() = Some((job.jid_str().to_string(), answer));
    shared.events.emit(crate::events::WorkerEvent::ClientMiddleware {
        job: job.clone().into_value(),
    });
    match tokio::time::timeout(HOST_ANSWER_LIMIT, answered).await {
        Ok(Ok(MiddlewareAnswer::Skip)) => None,
        Ok(Ok(MiddlewareAnswer::Raised(error))) => {
            tracing::error!("client middleware raised {error} on periodic job {job}; pushing it as it was");
            Some(job)
        }
        Ok(Ok(MiddlewareAnswer::Push(value))) => {
            match crate::job::Job::from_value(value).map(|mut changed| (changed.validate(), changed)) {
                Ok((Ok(()), changed)) => Some(changed),
                _ => {
                    tracing::warn!(
                        "client middleware returned something that is not a job for {job}; pushing it as it was"
                    );
                    Some(job)
                }
            }
        }
        _ => {
            tracing::warn!("client middleware did not answer for {job} in {HOST_ANSWER_LIMIT:?}; pushing it as it was");
            Some(job)
        }
    }
}

/// Claims `slot` and pushes its job in one script.
async fn claim(shared: &Shared, entry: &Entry, slot: i64, now: f64) -> crate::error::Result<()> {
    let definition = &entry.definition;
    let job = definition.job_for(&entry.pjid, slot, &shared.keys.job_time(now));
    let pushes = &shared.periodic;
    let job = if pushes.host_client_middleware {
        match host_client_middleware(shared, job).await {
            Some(job) => job,
            None => {
                tracing::info!(
                    "periodic {} slot {}: client middleware stopped the push",
                    definition.class(),
                    slot_time(slot)
                );
                return Ok(());
            }
        }
    } else {
        job
    };
    let job = if pushes.client_middleware.is_empty() {
        job
    } else {
        let unchanged = job.clone();
        match std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| pushes.client_middleware.apply(job))) {
            Ok(Some(job)) => job,
            Ok(None) => {
                tracing::info!(
                    "periodic {} slot {}: client middleware stopped the push",
                    definition.class(),
                    slot_time(slot)
                );
                return Ok(());
            }
            Err(_) => {
                tracing::error!(
                    "client middleware panicked on periodic {}; pushing the job as it was",
                    definition.class()
                );
                unchanged
            }
        }
    };
    let last_slot_key = shared.keys.periodic_last_slot(&entry.pjid);
    let until_executed = definition.is_until_executed();
    // Sharded by queue, the job goes through the outbox (its queue is on
    // another slot than the claim; see outbox.rs).
    let sharded = shared.keys.is_sharded_by_queue();
    let handover = if sharded {
        crate::outbox::handover_id(job.jid_str())
    } else {
        String::new()
    };
    let (status, _previous): (i64, String) = SCRIPTS
        .periodic_claim
        .key(if until_executed {
            shared.keys.periodic_running(&entry.pjid)
        } else {
            last_slot_key.clone()
        })
        .key(&last_slot_key)
        .key(shared.keys.queues())
        .key(if sharded {
            shared.keys.outbox()
        } else {
            shared.keys.queue(definition.queue_name())
        })
        .arg(slot)
        .arg(if until_executed { "1" } else { "0" })
        .arg(job.jid_str())
        .arg(queued_ttl(&shared.config))
        .arg(definition.queue_name())
        .arg(job.to_json())
        .arg(now.floor() as i64 - NEW_ENTRY_GRACE_SECS)
        .arg(shared.keys.wake())
        .arg(&handover)
        .invoke_async(&mut shared.redis.conn())
        .await?;
    if status == 1 && sharded {
        crate::outbox::deliver(&shared.redis, &shared.keys, &[handover]).await?;
    }
    match status {
        1 => tracing::info!(
            "periodic {} ({}) fired for slot {}: {}",
            definition.class(),
            definition.cron(),
            slot_time(slot),
            job
        ),
        -1 => tracing::debug!(
            "periodic {} ({}) skipped slot {}: its previous run still holds the lock",
            definition.class(),
            definition.cron(),
            slot_time(slot)
        ),
        _ => {}
    }
    Ok(())
}

fn slot_time(slot: i64) -> String {
    chrono::DateTime::from_timestamp(slot, 0)
        .map(|t| t.format("%Y-%m-%dT%H:%M:%SZ").to_string())
        .unwrap_or_else(|| slot.to_string())
}
