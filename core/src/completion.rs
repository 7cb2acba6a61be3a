//! Settles finished jobs in Redis. Completions queue up here while jobs
//! run; each pass takes everything waiting (up to a cap) and acknowledges
//! all successes with one script call, so under load the bookkeeping costs
//! a fraction of a round trip per job. Failures are filed one script call
//! each (retry/dead and the acknowledgement in one atomic step). A write
//! that fails is retried, never dropped: until it succeeds the job stays on
//! the in-progress list, where shutdown or recovery will find it.

use crate::delivery::{Completion, Delivery};
use crate::events::WorkerEvent;
use crate::handler::{Failure, Outcome};
use crate::in_progress::{own_entry, NOT_HELD};
use crate::job::{now, Job};
use crate::locks::{self, JobLocks};
use crate::metrics::MetricsBatch;
use crate::results;
use crate::retry::{day_of, dead_bounds, history_entry, plan_failure, Disposition, FailurePlan};
use crate::scripts::SCRIPTS;
use crate::shared::Shared;
use std::collections::{HashMap, HashSet};
use std::future::Future;
use std::sync::{Arc, Mutex};
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
        // Jobs still running: let their settles gather first (LINGER).
        if settled > 0 && settled < BATCH && shared.busy_count() > 0 {
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
    let mut successes = Vec::new();
    let mut flushes = Vec::new();
    let mut ended = HashSet::new();
    // Expired jobs dropped, by queue: one line per queue and batch.
    let mut expired: std::collections::BTreeMap<String, usize> = Default::default();
    for completion in batch {
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
                    let plan = crate::retry::plan_over_limit(&delivery.job, retry_in, count, at);
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
        recorded.retain(|token| !busy.ended.contains(token));
        recorded.extend(busy.started.iter().map(|(token, _)| *token));
    }
    for reply in flushes {
        let _ = reply.send(());
    }
}

/// Files `delivery`'s failure (retry, dead or discard, as its policy says)
/// and tells the death hooks of a job filed in dead.
async fn file_failure(shared: &Shared, delivery: &Delivery, failure: &Failure, finished_at: f64) {
    // The retry's due time on the fleet's clock: a host whose clock is
    // behind would file it already due.
    let offset = crate::clock::offset(&shared.redis).await;
    let mut plan = plan_failure(&delivery.job, failure, finished_at + offset, &shared.identity);
    plan.started_at = delivery.started_at;
    let history = history_entry(&delivery.job, delivery.started_at, finished_at, Some(failure));
    log_failure(delivery, failure, &plan, finished_at);
    file_delivery(shared, delivery, &plan, &history, "filing a failed job").await;
    if plan.disposition == Disposition::Dead {
        let job = serde_json::from_str(&plan.payload).unwrap_or(serde_json::Value::Null);
        shared.events.emit(WorkerEvent::Died { job });
    }
}

/// Files `delivery` as `plan` says (`fail.lua`), retrying until it is
/// written (`what` names the write in the log).
async fn file_delivery(shared: &Shared, delivery: &Delivery, plan: &FailurePlan, history: &str, what: &str) {
    let entry = own_entry(shared, delivery.token);
    persist(shared, what, || {
        file(
            shared,
            &shared.identity,
            &entry,
            &delivery.queue,
            &delivery.raw,
            &delivery.job,
            plan,
            history,
        )
    })
    .await;
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

/// A run's length as the job lines show it (milliseconds, one decimal).
fn duration_ms(delivery: &Delivery, finished_at: f64) -> String {
    format!("{:.1}", (finished_at - delivery.started_at).max(0.0) * 1000.0)
}

/// The trace the job's push belongs to (any language's), on its lines so
/// a log search finds the job from the request that pushed it.
fn trace_id(job: &crate::job::Job) -> Option<&str> {
    crate::trace::parent_of(job).map(|parent| parent.trace_id)
}

/// The one line a success gets (after the `start` line `Shared::begin`
/// writes at debug), in every language.
fn log_success(delivery: &Delivery, finished_at: f64) {
    let job = &delivery.job;
    tracing::info!(
        jid = job.jid_str(),
        class = job.display_class(),
        queue = job.queue_name(),
        duration_ms = duration_ms(delivery, finished_at),
        outcome = "ok",
        trace_id = trace_id(job),
        "done"
    );
}

/// The one line a failure gets (in every language: the hosts log none of
/// their own): the job, its queue, the error, what happens next; and the
/// backtrace, on lines of its own, in JSON mode or at debug level.
fn log_failure(delivery: &Delivery, failure: &crate::handler::Failure, plan: &FailurePlan, finished_at: f64) {
    let job = &delivery.job;
    let first_line = failure.message.lines().next().unwrap_or("");
    let next = match plan.disposition {
        // A retry due now may already be a hair past: show 0.0, not -0.0.
        Disposition::Retry => format!("retry in {:.1}s", (plan.score - now()).max(0.0)),
        Disposition::Dead => "out of retries, moved to dead".to_string(),
        Disposition::Discard => "retry disabled, discarded".to_string(),
        Disposition::Reschedule => "rescheduled".to_string(),
        Disposition::Expired | Disposition::ExpiredDead => "expired".to_string(),
        Disposition::Cancelled => "cancelled".to_string(),
    };
    // An absent field (None) is not written at all.
    let backtrace = (crate::logging::json() || tracing::enabled!(tracing::Level::DEBUG))
        .then(|| failure.backtrace.join("\n"))
        .filter(|b| !b.is_empty());
    macro_rules! line {
        ($level:ident) => {
            tracing::$level!(
                jid = job.jid_str(),
                class = job.display_class(),
                queue = job.queue_name(),
                duration_ms = duration_ms(delivery, finished_at),
                outcome = plan.disposition.as_str(),
                trace_id = trace_id(job),
                backtrace = backtrace.as_deref(),
                "failed ({}: {first_line}); {next}",
                failure.class
            )
        };
    }
    match plan.disposition {
        Disposition::Dead => line!(error),
        Disposition::Retry
        | Disposition::Discard
        | Disposition::Reschedule
        | Disposition::Expired
        | Disposition::ExpiredDead
        | Disposition::Cancelled => line!(warn),
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

async fn ack(
    shared: &Shared,
    successes: &[(Delivery, f64)],
    busy: &BusyChanges,
    metrics: Option<&MetricsBatch>,
) -> redis::RedisResult<()> {
    let today = day_of(now());
    let mut invocation = SCRIPTS.ack.prepare_invoke();
    invocation
        .key(shared.keys.in_progress(&shared.identity))
        .key(shared.keys.stat("processed", None))
        .key(shared.keys.stat("processed", Some(&today)))
        .key(shared.keys.history())
        .key(shared.keys.workers(&shared.identity))
        // Sharded by queue, the jobs were taken off their queues' slots
        // already (`take_acknowledged`).
        .arg(if shared.is_reliable() && !shared.keys.is_sharded_by_queue() {
            "1"
        } else {
            "0"
        })
        .arg(shared.config.history_max())
        .arg(successes.len());
    for (delivery, _) in successes {
        invocation.arg(delivery.token);
    }
    for (delivery, finished_at) in successes {
        invocation.arg(history_entry(&delivery.job, delivery.started_at, *finished_at, None));
    }
    // Locks to release: (index of the job, 1-based; lock key; owner jid).
    let mut releases = Vec::new();
    for (index, (delivery, _)) in successes.iter().enumerate() {
        for lock in JobLocks::of(&delivery.job, &shared.keys).all() {
            releases.push((index + 1, lock.clone(), delivery.job.jid_str()));
        }
    }
    invocation.arg(releases.len());
    for (index, lock, owner) in releases {
        invocation.key(lock).arg(index).arg(owner);
    }
    invocation
        .arg(crate::heartbeat::PRESENCE_TTL_SECS)
        .arg(busy.started.len());
    for (token, json) in &busy.started {
        invocation.arg(token).arg(json);
    }
    invocation.arg(busy.ended.len());
    for token in &busy.ended {
        invocation.arg(token);
    }
    // Results of the jobs that keep them (result_ttl), with the ack.
    let results: Vec<(usize, &Delivery, f64, u64)> = successes
        .iter()
        .enumerate()
        .filter_map(|(index, (d, at))| d.job.result_ttl_secs().map(|ttl| (index + 1, d, *at, ttl)))
        .collect();
    invocation.arg(results.len());
    for (index, delivery, finished_at, ttl) in results {
        let jid = delivery.job.jid_str();
        invocation
            .key(shared.keys.result(jid))
            .key(shared.keys.result_ready(jid))
            .arg(index)
            .arg(ttl)
            .arg(results::succeeded(
                &delivery.job,
                delivery.returned.as_deref(),
                delivery.started_at,
                finished_at,
                &shared.identity,
            ));
    }
    // Jobs of a batch, counted there with their ack (and what they
    // returned, for a workflow step whose result the next one takes).
    let batched: Vec<(usize, &str, &Delivery)> = successes
        .iter()
        .enumerate()
        .filter_map(|(index, (d, _))| Some((index + 1, d.job.batch_id()?, d)))
        .collect();
    invocation.key(shared.keys.outbox()).arg(batched.len());
    if !batched.is_empty() {
        invocation.arg(shared.keys.batch_prefix()).arg(now());
        for (index, bid, delivery) in batched {
            let value = match (delivery.job.keeps_result_in_batch(), delivery.returned.as_deref()) {
                (true, Some(value)) => value.to_string(),
                (true, None) => "null".to_string(),
                (false, _) => String::new(),
            };
            invocation.arg(index).arg(bid).arg(delivery.job.jid_str()).arg(value);
        }
    }
    match metrics {
        Some(metrics) => metrics.append_to(&mut invocation, &shared.keys),
        None => {
            invocation.arg(0);
        }
    }
    let handed: Vec<String> = invocation.invoke_async(&mut shared.redis.conn()).await?;
    deliver_callbacks(shared, &handed).await;
    Ok(())
}

/// Pushes the batch callbacks a settle handed over to the outbox. A
/// failure leaves them there for recovery to push (the settle is written;
/// repeating it could count a job twice).
async fn deliver_callbacks(shared: &Shared, handed: &[String]) {
    if let Err(e) = crate::outbox::deliver(&shared.redis, &shared.keys, handed).await {
        tracing::warn!(
            "pushing {} batch callback(s) failed; recovery pushes them: {e}",
            handed.len()
        );
    }
}

/// Buries a payload that is not a runnable job, wrapped with its bytes kept
/// (see [`Job::unparseable`]), taking its `entry` off `owner`'s in-progress
/// key.
pub(crate) async fn bury_unparseable(
    shared: &Shared,
    owner: &str,
    entry: &str,
    queue: &str,
    raw: &[u8],
    reason: &str,
) -> redis::RedisResult<()> {
    let wrapper = Job::unparseable(raw, queue, reason);
    let at = now();
    let plan = FailurePlan {
        disposition: Disposition::Dead,
        score: at,
        payload: wrapper.to_json(),
        attempt: String::new(),
        started_at: at,
    };
    let failure = crate::handler::Failure::new("cogworker::UnparseablePayload", reason);
    let history = history_entry(&wrapper, at, at, Some(&failure));
    file(shared, owner, entry, queue, raw, &wrapper, &plan, &history).await
}

/// Sharded by queue: takes the successes off their queues' in-progress
/// hashes (on the queues' slots) and keeps those that were still held, for
/// `ack` to count and record on the namespace's slot. A job no longer held
/// was put back on its queue while it ran; its copy will run again.
async fn take_acknowledged(shared: &Shared, successes: Vec<(Delivery, f64)>) -> Vec<(Delivery, f64)> {
    let deliveries: Vec<(&str, u64)> = successes.iter().map(|(d, _)| (d.queue.as_str(), d.token)).collect();
    let done = Mutex::new(HashMap::new());
    persist(shared, "taking finished jobs off in progress", || {
        crate::in_progress::take_acknowledged(shared, &deliveries, &done)
    })
    .await;
    let taken = crate::in_progress::acknowledged(&deliveries, &done.into_inner().unwrap());
    successes
        .into_iter()
        .filter(|(delivery, _)| taken.contains(&delivery.token))
        .collect()
}

/// How long a filed failure's marker (sharded by queue) outlives a crash
/// between filing the job and taking its in-progress entry off: recovery
/// must see it (normally it is deleted at once).
const FILED_MARKER_TTL_SECS: u64 = 7 * 86_400;

/// Runs `fail.lua` for one job, taking `entry` (the payload `raw`, taken
/// from `queue`) off `owner`'s in-progress key.
///
/// Sharded by queue the entry is on the queue's slot, the retry and dead
/// sets on the namespace's: the job is filed first, with a marker, then its
/// entry is taken off, then the marker is deleted. Each step is safe to
/// repeat (`persist` retries the whole), and recovery takes an entry whose
/// marker it finds off instead of putting it back on its queue.
#[allow(clippy::too_many_arguments)]
async fn file(
    shared: &Shared,
    owner: &str,
    entry: &str,
    queue: &str,
    raw: &[u8],
    job: &Job,
    plan: &FailurePlan,
    history: &str,
) -> redis::RedisResult<()> {
    let at = now();
    let today = day_of(at);
    let target = match plan.disposition {
        Disposition::Retry => shared.keys.retry(),
        Disposition::Reschedule => shared.keys.schedule(),
        _ => shared.keys.dead(),
    };
    // A reschedule, an expiry or a cancellation is no failed execution:
    // no History entry; an expiry counts as expired, a cancellation as
    // cancelled, not failed.
    let not_run = matches!(
        plan.disposition,
        Disposition::Reschedule | Disposition::Expired | Disposition::ExpiredDead | Disposition::Cancelled
    );
    let history_max = if not_run { 0 } else { shared.config.history_max() };
    let stat = match plan.disposition {
        Disposition::Expired | Disposition::ExpiredDead => "expired",
        Disposition::Cancelled => "cancelled",
        _ => "failed",
    };
    let (dead_max, dead_min_score) = dead_bounds(&shared.config, at);
    let locks = JobLocks::of(job, &shared.keys);
    let sharded = shared.keys.is_sharded_by_queue() && entry != NOT_HELD;
    let held_at = shared.keys.in_progress_from(owner, queue);
    let filed_marker = shared.keys.filed(owner, entry);
    if sharded {
        let held: bool = redis::AsyncCommands::hexists(&mut shared.redis.conn(), &held_at, entry).await?;
        if !held {
            // Put back on its queue by shutdown or recovery (that copy
            // runs again), or this is a repeat and all is done.
            return Ok(());
        }
    }
    // Sharded, fail.lua takes nothing off (its in-progress key is this
    // empty one on the namespace's slot).
    let in_progress = shared.keys.in_progress(owner);
    let (entry_here, marker_ttl) = if sharded {
        (NOT_HELD, FILED_MARKER_TTL_SECS)
    } else {
        (entry, 0)
    };
    let run_lock_ttl = locks::retry_ttl(&shared.config, plan.score - at);
    let unique_ttl = locks::unique_retry_ttl(job, plan.score - at);
    let jid = job.jid_str();
    let (result_ttl, record, final_status) = match job.result_ttl_secs() {
        Some(ttl) => {
            let filed = Job::parse(plan.payload.as_bytes()).unwrap_or_else(|_| job.clone());
            let (record, final_status) = results::failed(&filed, plan.disposition, plan.started_at, at, owner);
            // A rescheduled job's record lasts while it waits, too.
            let wait = if plan.disposition == Disposition::Reschedule {
                (plan.score - at).max(0.0).ceil() as u64
            } else {
                0
            };
            (ttl + wait, record, final_status)
        }
        None => (0, String::new(), false),
    };
    let handed: Vec<String> = SCRIPTS
        .fail
        .key(&in_progress)
        .key(target)
        .key(shared.keys.stat(stat, None))
        .key(shared.keys.stat(stat, Some(&today)))
        .key(shared.keys.attempts(job.jid_str()))
        .key(shared.keys.history())
        .arg(entry_here)
        .arg(raw)
        .arg(plan.disposition.as_str())
        .arg(plan.score)
        .arg(&plan.payload)
        .arg(&plan.attempt)
        .arg(shared.config.dead_timeout_secs().ceil() as u64)
        .arg(history)
        .arg(history_max)
        .arg(dead_max)
        .arg(dead_min_score)
        .key(locks.run_lock.as_ref().unwrap_or(&in_progress))
        .key(locks.unique.as_ref().unwrap_or(&in_progress))
        .arg(if locks.run_lock.is_some() { "1" } else { "0" })
        .arg(if locks.unique.is_some() { "1" } else { "0" })
        .arg(job.jid_str())
        .arg(run_lock_ttl)
        .arg(unique_ttl)
        .key(shared.keys.result(jid))
        .key(shared.keys.result_ready(jid))
        .arg(result_ttl)
        .arg(record)
        .arg(if final_status { "1" } else { "0" })
        .key(&filed_marker)
        .arg(marker_ttl)
        .key(shared.keys.outbox())
        .arg(job.batch_id().unwrap_or(""))
        .arg(shared.keys.batch_prefix())
        .arg(at)
        .invoke_async(&mut shared.redis.conn())
        .await?;
    deliver_callbacks(shared, &handed).await;
    if sharded {
        let mut conn = shared.redis.conn();
        let _: i64 = redis::AsyncCommands::hdel(&mut conn, &held_at, entry).await?;
        let _: i64 = redis::AsyncCommands::del(&mut conn, &filed_marker).await?;
    }
    Ok(())
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
