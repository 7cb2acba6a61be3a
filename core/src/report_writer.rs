//! What long jobs report (see [`crate::long_jobs`]), acted on by the
//! worker process that runs them: their busy entries keep each job's
//! latest cursor, its latest progress report and whether it asked to be
//! put back, and one task writes the noted reports to Redis, at most every
//! [`WRITE_INTERVAL`]: progress records (`SET` with a TTL, and `PUBLISH`
//! on the same name, for watchers; a run's last one again when it ends,
//! with its `state`) and checkpoints (`checkpoint.lua` on the in-progress
//! record).

use crate::long_jobs::{Control, Pending, NEAR_TIME_LIMIT, PROGRESS_TTL_SECS, WRITE_INTERVAL};
use crate::scripts::SCRIPTS;
use crate::shared::Shared;
use serde_json::Value;
use std::sync::Arc;

impl Control for Shared {
    fn cursor(&self, token: u64) -> Option<Value> {
        self.with_busy(token, |entry| entry.job.get("cursor").cloned())
            .flatten()
    }

    fn progress(&self, token: u64, record: String) {
        let held = self.with_busy(token, |entry| {
            let ttl = entry.job.result_ttl_secs().unwrap_or(PROGRESS_TTL_SECS);
            entry.progress = Some((record, ttl));
        });
        // Settled meanwhile: nothing to report on.
        if held.is_some() {
            self.reports.progress(token);
        }
    }

    fn checkpoint(&self, token: u64, cursor: Value) {
        let held = self.with_busy(token, |entry| {
            entry.job.set("cursor", cursor);
            entry.checkpointed = true;
        });
        if held.is_some() {
            self.reports.checkpoint(token);
        }
    }

    fn stopping(&self, token: u64, jid: &str) -> bool {
        self.is_stopping()
            || self.cancellations.contains(jid)
            || self
                .with_busy(token, |entry| {
                    entry.time_limit.as_ref().is_some_and(|limit| {
                        let left = limit.deadline().saturating_duration_since(std::time::Instant::now());
                        limit.is_expired() || left < NEAR_TIME_LIMIT.min(limit.duration() / 10)
                    })
                })
                .unwrap_or(false)
    }

    fn interrupt(&self, token: u64) {
        self.with_busy(token, |entry| entry.interrupted = true);
    }

    fn running_for(&self, token: u64) -> Option<std::time::Duration> {
        let started = self.with_busy(token, |entry| entry.run_at)?;
        std::time::Duration::try_from_secs_f64(crate::job::now() - started).ok()
    }
}

/// The writer: writes what is noted, at most every [`WRITE_INTERVAL`].
pub(crate) async fn run(shared: Arc<Shared>) {
    loop {
        shared.reports.noted.notified().await;
        if let Err(e) = flush(&shared).await {
            tracing::warn!("writing jobs' progress and checkpoints failed (retrying): {e}");
        }
        tokio::time::sleep(WRITE_INTERVAL).await;
    }
}

/// Writes everything noted now: the writer's step, and shutdown's before
/// it gives back what still runs (so a job goes back with its last
/// checkpoint). What could not be written is kept for the next flush.
pub(crate) async fn flush(shared: &Shared) -> redis::RedisResult<()> {
    let _writing = shared.reports.writing.lock().await;
    let pending = shared.reports.take();
    if pending.is_empty() {
        return Ok(());
    }
    let written = write(shared, &pending).await;
    if written.is_err() {
        shared.reports.put_back(pending);
    }
    written
}

/// Writes the last reports of the runs that ended, now: the settle pass
/// calls it before it records their outcomes, so a watcher, or a reader
/// of the result, never sees a run's end before that run's last report (a
/// retry that reported ended sooner than the writer's next pass showed
/// the failed run's report as the last). Nothing to write costs a look at
/// what is noted. What fails to be written is left for the writer.
pub(crate) async fn write_ended(shared: &Shared) {
    if !shared.reports.any_ended() {
        return;
    }
    let _writing = shared.reports.writing.lock().await;
    // Taken under the lock: a failed pass of the writer puts an earlier
    // run's report back only where no newer one is noted.
    let pending = Pending {
        ended: shared.reports.take_ended(),
        ..Pending::default()
    };
    if let Err(e) = write(shared, &pending).await {
        tracing::warn!("writing the last progress of ended runs failed (the writer retries): {e}");
        shared.reports.put_back(pending);
    }
}

async fn write(shared: &Shared, pending: &Pending) -> redis::RedisResult<()> {
    let mut conn = shared.redis.conn();
    for &token in &pending.checkpoints {
        // The payload with its cursor, made once per write, not per call;
        // the busy entry keeps it too (basic fetch gives back from there).
        let Some((key, raw)) = shared.with_busy(token, |entry| {
            entry.raw = entry.job.to_json().into_bytes();
            let key = shared.keys.in_progress_from(&shared.identity, &entry.queue);
            (key, entry.raw.clone())
        }) else {
            continue;
        };
        if shared.is_reliable() {
            let _: i64 = SCRIPTS
                .checkpoint
                .key(key)
                .arg(token)
                .arg(raw)
                .invoke_async(&mut conn)
                .await?;
        }
    }
    // The latest report of each job still running, and the last of each
    // run that ended: one round trip for all (the keys share the
    // namespace's slot on a cluster).
    let running = pending
        .progress
        .iter()
        .filter_map(|&token| {
            shared
                .with_busy(token, |entry| {
                    let jid = entry.jid.clone();
                    entry.progress.clone().map(|report| (jid, report))
                })
                .flatten()
        })
        .collect::<Vec<_>>();
    let reports = running.iter().map(|(jid, report)| (jid, report));
    let mut pipe = redis::pipe();
    let mut any = false;
    for (jid, (record, ttl)) in reports.chain(&pending.ended) {
        let key = shared.keys.progress(jid);
        pipe.set_ex(&key, record, *ttl).ignore().publish(&key, record).ignore();
        any = true;
    }
    if !any {
        return Ok(());
    }
    pipe.query_async(&mut conn).await
}
