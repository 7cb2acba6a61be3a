//! Settles finished jobs in Redis. Completions queue up here while jobs
//! run; each pass takes everything waiting (up to a cap) and acknowledges
//! all successes with one script call, so under load the bookkeeping costs
//! a fraction of a round trip per job. Failures are filed one script call
//! each (retry/dead and the acknowledgement in one atomic step). A write
//! that fails is retried, never dropped: until it succeeds the job stays on
//! the in-progress list, where shutdown or recovery will find it.
//!
//! `ack.rs` acknowledges successes, `file.rs` files failures, `bury.rs`
//! buries what no job can be made of, `lines.rs` writes their log lines;
//! this file runs the passes and retries what fails (`persist`).

mod ack;
mod bury;
mod file;
mod lines;

use ack::{ack, take_acknowledged, take_marked};
pub(crate) use bury::bury_unparseable;

/// The target (a host's logger name: `cogworker.completion`) of every line
/// the files of this module write, as when they were one file: a logging
/// configuration by logger name keeps working.
const TARGET: &str = "cogworker::completion";
use file::{file_delivery, file_failure};
use lines::log_success;

use crate::delivery::Completion;
use crate::events::WorkerEvent;
use crate::handler::{Failure, Outcome};
use crate::in_progress::{own_entry, NOT_HELD};
use crate::job::{now, Job};
use crate::locks::{self};
use crate::metrics::MetricsBatch;
use crate::shared::Shared;
use std::collections::HashSet;
use std::future::Future;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Most completions settled per pass (and per `ack.lua` call).
const BATCH: usize = 500;

/// How long this task rests after a batch while jobs are still running,
/// so the next settles gather into one acknowledgement. Without it, under
/// load each settle woke the task on its own: host threads (and processor
/// tasks) settle one job at a time, and every wake of a parked runtime
/// thread is a futex call and a context switch. Measured on the 2-core
/// machine, 50,000 no-op jobs, runs alternating with and without: Ruby
/// drain median 21.4k vs 17.3k jobs/s (faster in 5 of 5), Python 23.0k vs
/// 20.3k (3 of 5), Rust unchanged (3 runs), Redis commands per job 2.0 ->
/// 1.5, pickup latency unchanged. The cost: a job's acknowledgement (and
/// its result) is written up to this much later while the worker is busy.
///
/// "Busy" includes the moments every slot is idle while a fetch that will
/// find jobs is on its way (the last one found some): between short jobs
/// that is often, and each such moment cost an acknowledgement of its own.
/// `bench --fair --drain-only`, 4 alternating pairs: `ack.lua` calls per
/// 100,000 jobs 1,149-1,415 -> 258-295 on a plain queue, 1,509-1,622 ->
/// 334-364 over 1,000 groups; Redis CPU per job 3.4-3.7 -> 3.2-3.3 µs and
/// 4.2-4.4 -> 4.0-4.3 µs.
const LINGER: Duration = Duration::from_millis(1);

/// While stopping with reliable fetch, how long a failing write is retried
/// before giving up (the job then stays on the in-progress list for
/// recovery).
const STOPPING_RETRY_LIMIT: Duration = Duration::from_secs(10);

/// How long a job runs before it shows as busy in the workers hash (the
/// Busy page, `Api::busy`), and how often the entries are brought up to
/// date when no completion is being written anyway. Jobs shorter than this
/// (most, under load) cost the hash nothing.
pub(crate) const BUSY_AFTER: Duration = Duration::from_millis(100);

pub(crate) async fn run(shared: Arc<Shared>, completions: flume::Receiver<Completion>) {
    // The busy entries this task has written (by token); the heartbeat
    // rewrites the whole hash from the slots every beat.
    let mut recorded = HashSet::new();
    let mut tick = tokio::time::interval(BUSY_AFTER);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let mut metrics = PendingMetrics::new();
    loop {
        let batch = tokio::select! {
            first = completions.recv_async() => {
                let Ok(first) = first else { break };
                let mut batch = vec![first];
                while batch.len() < BATCH {
                    match completions.try_recv() {
                        Ok(c) => batch.push(c),
                        Err(_) => break,
                    }
                }
                batch
            }
            _ = tick.tick() => Vec::new(),
        };
        let settled = batch.len();
        settle(&shared, batch, &mut recorded, &mut metrics).await;
        // Jobs still running, or on their way: let their settles gather
        // first (LINGER).
        if settled > 0 && settled < BATCH && (shared.busy_count() > 0 || shared.jobs_flowing()) {
            tokio::time::sleep(LINGER).await;
        }
    }
    // Every job is settled: write the metrics still held.
    if let Some(last) = metrics.take(true) {
        let none = BusyChanges::none();
        persist(&shared, "writing job metrics", || ack(&shared, &[], &none, Some(&last))).await;
    }
}

/// How often the metrics of settled jobs are written (with the next
/// acknowledgement): per batch they cost a tenth of the drain rate, once
/// a second nothing measurable. A process killed outright loses at most
/// this much of its metrics (never a job).
const METRICS_EVERY: Duration = Duration::from_secs(1);

/// The metrics of the jobs settled since they were last written.
struct PendingMetrics {
    batch: MetricsBatch,
    since: Instant,
}

impl PendingMetrics {
    fn new() -> Self {
        PendingMetrics {
            batch: MetricsBatch::default(),
            since: Instant::now(),
        }
    }

    /// The metrics to write now, if any are due (or `now` says so).
    fn take(&mut self, now: bool) -> Option<MetricsBatch> {
        if self.batch.is_empty() || !(now || self.since.elapsed() >= METRICS_EVERY) {
            return None;
        }
        self.since = Instant::now();
        Some(std::mem::take(&mut self.batch))
    }
}

async fn settle(shared: &Shared, batch: Vec<Completion>, recorded: &mut HashSet<u64>, metrics: &mut PendingMetrics) {
    record_running(shared, &batch).await;
    // The last progress of the runs settled here goes before their
    // outcomes (noted when they ended, before their completions were sent).
    crate::report_writer::write_ended(shared).await;
    let mut successes = Vec::new();
    let mut flushes = Vec::new();
    let mut ended = HashSet::new();
    // Expired jobs dropped, by queue: one line per queue and batch.
    let mut expired: std::collections::BTreeMap<String, usize> = Default::default();
    // The leases of capped groups' jobs settled here, ended last.
    let mut leases = Vec::new();
    for completion in batch {
        leases.extend(lease_of(shared, &completion));
        if let Completion::Done {
            delivery,
            outcome,
            finished_at,
        } = &completion
        {
            ended.insert(delivery.token);
            let (job, failed) = (&delivery.job, matches!(outcome, Outcome::Failure(_)));
            // A class this process has no handler for is whatever a pusher
            // wrote: one label for all of them.
            let class = if shared.runs(job.class()) {
                job.display_class()
            } else {
                crate::metrics::UNKNOWN_CLASS
            };
            metrics
                .batch
                .record(class, job.queue_name(), delivery.started_at, *finished_at, failed);
        }
        match completion {
            Completion::Done {
                delivery,
                outcome: Outcome::Success,
                finished_at,
            } => {
                if !shared.quiet {
                    log_success(&delivery, finished_at);
                }
                successes.push((delivery, finished_at));
            }
            Completion::Done {
                delivery,
                outcome: Outcome::Failure(failure),
                finished_at,
            } => file_failure(shared, &delivery, &failure, finished_at).await,
            Completion::Expired(delivery) => {
                let at = now() + crate::clock::offset(&shared.redis).await;
                let plan = crate::retry::plan_expired(&delivery.job, at);
                file_delivery(shared, &delivery, &plan, "", "dropping an expired job").await;
                *expired.entry(delivery.queue.clone()).or_default() += 1;
            }
            Completion::Cancelled(delivery) => {
                let started_at = if delivery.started { delivery.started_at } else { 0.0 };
                let plan = crate::retry::plan_cancelled(&delivery.job, now(), started_at);
                file_delivery(shared, &delivery, &plan, "", "filing a cancelled job").await;
                tracing::info!(
                    jid = delivery.job.jid_str(),
                    class = delivery.job.display_class(),
                    queue = delivery.queue.as_str(),
                    outcome = "cancelled",
                    "{}",
                    if started_at > 0.0 {
                        "cancelled while it ran; stopped"
                    } else {
                        "cancelled; dropped unrun"
                    }
                );
            }
            Completion::OverLimit {
                delivery,
                limiter,
                retry_in,
            } => {
                let count = delivery.job.over_limit_count().saturating_add(1);
                if count > shared.config.over_limit_max() {
                    let failure = Failure::new(
                        crate::retry::OVER_LIMIT,
                        format!("over limit: {limiter} (rescheduled {} times)", count - 1),
                    );
                    file_failure(shared, &delivery, &failure, now()).await;
                } else {
                    let at = now() + crate::clock::offset(&shared.redis).await;
                    let sidekiq = shared.keys.is_sidekiq();
                    let plan = crate::retry::plan_over_limit(&delivery.job, retry_in, count, at, sidekiq);
                    tracing::info!(
                        jid = delivery.job.jid_str(),
                        class = delivery.job.display_class(),
                        "over limit {limiter}: rescheduled in {:.2}s ({count} of at most {})",
                        plan.score - at,
                        shared.config.over_limit_max()
                    );
                    file_delivery(shared, &delivery, &plan, "", "rescheduling a job over its limit").await;
                }
            }
            Completion::Bury {
                queue,
                raw,
                reason,
                token,
            } => {
                let owner = shared.identity.clone();
                let entry = token.map_or_else(|| NOT_HELD.to_string(), |t| own_entry(shared, t));
                persist(shared, "burying an unparseable payload", || {
                    bury_unparseable(shared, &owner, &entry, &queue, &raw, &reason)
                })
                .await;
                let job = Job::unparseable(&raw, &queue, &reason).into_value();
                shared.events.emit(WorkerEvent::Died { job });
            }
            Completion::Requeue { token, queue, raw, job } => {
                let (identity, entry) = (&shared.identity, own_entry(shared, token));
                let requeued = persist(shared, "putting a job back on its queue", || {
                    crate::requeue::requeue_one(shared, identity, &raw, &job, 0, &entry, &queue)
                })
                .await;
                match requeued {
                    Some(0) => {
                        tracing::info!("{job} was no longer this process's (recovered by another): not put back")
                    }
                    Some(_) => tracing::info!("{job} put back on queue {queue}"),
                    None => {}
                }
            }
            Completion::RunLockStarted { lock, jid } => {
                // Best effort: the next heartbeat shortens it too.
                let ttl = locks::active_ttl(&shared.config);
                let lock = [(lock, jid)];
                if let Err(e) = locks::expire_owned(&mut shared.redis.conn(), &lock, ttl).await {
                    tracing::warn!("could not shorten the run lock {}: {e}", lock[0].0);
                }
            }
            Completion::Flush(reply) => flushes.push(reply),
            Completion::ResultStarted { .. } => {}
        }
    }
    for (queue, count) in expired {
        tracing::info!("dropped {count} expired job(s) from queue {queue}, unstarted");
    }
    if shared.keys.is_sharded_by_queue() && !successes.is_empty() {
        successes = take_acknowledged(shared, successes).await;
    }
    let busy = BusyChanges::since(shared, recorded, &ended);
    let due = metrics.take(shared.is_stopping());
    if !successes.is_empty() || !busy.is_empty() || due.is_some() {
        persist(shared, "acknowledging finished jobs", || {
            ack(shared, &successes, &busy, due.as_ref())
        })
        .await;
        if shared.keys.is_sharded_by_queue() {
            take_marked(shared, &successes).await;
        }
        recorded.retain(|token| !busy.ended.contains(token));
        recorded.extend(busy.started.iter().map(|(token, _)| *token));
    }
    crate::group_leases::end(shared, &leases).await;
    for reply in flushes {
        let _ = reply.send(());
    }
}

/// The lease of a capped group's job that `completion` settles, if any.
fn lease_of(shared: &Shared, completion: &Completion) -> Option<crate::group_leases::Lease> {
    let (queue, job, token) = match completion {
        Completion::Done { delivery, .. }
        | Completion::Expired(delivery)
        | Completion::Cancelled(delivery)
        | Completion::OverLimit { delivery, .. } => (&delivery.queue, &delivery.job, delivery.token),
        Completion::Requeue { token, queue, job, .. } => (queue, job, *token),
        _ => return None,
    };
    crate::group_leases::Lease::of(shared, queue, job, token)
}

/// The `running` records of the batch, in one round trip; best effort (a
/// status, not a job: the outcome overwrites it either way).
async fn record_running(shared: &Shared, batch: &[Completion]) {
    let mut pipe = redis::pipe();
    let mut any = false;
    for completion in batch {
        if let Completion::ResultStarted { key, record, ttl } = completion {
            pipe.set_ex(key, record, *ttl).ignore();
            any = true;
        }
    }
    if any {
        if let Err(e) = pipe.query_async::<()>(&mut shared.redis.conn()).await {
            tracing::warn!("could not record running jobs' status: {e}");
        }
    }
}

/// What a write changes in the workers hash: entries for the jobs running
/// for [`BUSY_AFTER`] or longer that it lacks, and the removal of those it
/// holds that have ended since.
struct BusyChanges {
    started: Vec<(u64, String)>,
    ended: Vec<u64>,
}

impl BusyChanges {
    fn none() -> Self {
        BusyChanges {
            started: Vec::new(),
            ended: Vec::new(),
        }
    }

    fn since(shared: &Shared, recorded: &HashSet<u64>, ended: &HashSet<u64>) -> Self {
        let (started, mut gone) = shared.busy_changes(recorded, now() - BUSY_AFTER.as_secs_f64());
        // A job whose outcome is in this batch may not have left its slot
        // yet; it is taken off now all the same.
        gone.extend(recorded.intersection(ended));
        gone.sort_unstable();
        gone.dedup();
        let started = started
            .into_iter()
            .filter(|(token, _)| !ended.contains(token))
            .collect();
        BusyChanges { started, ended: gone }
    }
    fn is_empty(&self) -> bool {
        self.started.is_empty() && self.ended.is_empty()
    }
}

/// Retries `write` until it succeeds, and returns what it returned. While
/// stopping with reliable fetch, for a bounded time (then `None`): the job
/// stays on the in-progress list, where recovery finds it. With basic fetch
/// this process holds the only copy, so it retries until the write succeeds
/// or the process is killed.
async fn persist<T, F, Fut, E>(shared: &Shared, what: &str, mut write: F) -> Option<T>
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Result<T, E>>,
    E: std::fmt::Display,
{
    let mut delay = Duration::from_millis(100);
    let mut stopping_since: Option<Instant> = None;
    loop {
        match write().await {
            Ok(written) => return Some(written),
            Err(e) => {
                tracing::error!("{what} failed, retrying in {delay:?}: {e}");
                if shared.is_stopping() && shared.is_reliable() {
                    let since = *stopping_since.get_or_insert_with(Instant::now);
                    if since.elapsed() > STOPPING_RETRY_LIMIT {
                        tracing::error!("{what}: giving up at shutdown; the job stays in progress for recovery");
                        return None;
                    }
                }
                tokio::time::sleep(delay).await;
                delay = (delay * 2).min(Duration::from_secs(2));
            }
        }
    }
}
