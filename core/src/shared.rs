//! State shared by every part of one worker process: settings, identity,
//! lifecycle (running → quiet → stopping), the handler names it may run,
//! the busy slots, and the count of jobs taken but not yet finished that
//! bounds how many more to fetch. Deliveries are begun, settled and
//! abandoned here.

use crate::config::{Config, FetchMode};
use crate::connection::Redis;
use crate::delivery::Completion;
use crate::delivery::{self, Delivery};
use crate::events::{Events, WorkerEvent};
use crate::handler::{Failure, Outcome};
use crate::job::{self, Job};
use crate::keys::Keys;
use crate::periodic::PeriodicPushes;
use crate::read_ahead::ReadAhead;
use crate::wakeups::Wakeups;
use serde_json::Value;
use std::collections::{HashMap, HashSet};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use tokio::sync::{watch, Notify};

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
/// Where a worker process is in its life.
pub enum Lifecycle {
    /// Taking and running jobs.
    Running,
    /// Takes no new jobs; running ones go on.
    Quiet,
    /// Shutting down.
    Stopping,
}

/// One busy slot, as shown in the workers hash and the TTIN dump.
#[derive(Clone, Debug)]
pub struct BusyEntry {
    /// The queue it came from.
    pub queue: String,
    /// The handler name.
    pub class: String,
    /// The job id.
    pub jid: String,
    /// The payload as stored.
    pub raw: Vec<u8>,
    /// When it started (epoch seconds).
    pub run_at: f64,
    /// The periodic run lock the job owns (kept alive by the heartbeat).
    pub(crate) run_lock: Option<String>,
    /// The job, with its latest checkpoint (see [`crate::long_jobs`]).
    pub(crate) job: Job,
    /// It checkpointed: it settles with this entry's job and payload.
    pub(crate) checkpointed: bool,
    /// It asked to be put back when it ends ([`crate::long_jobs::Running::interrupt`]).
    pub(crate) interrupted: bool,
    /// Its latest progress report and that report's TTL in seconds, once it
    /// reported (see [`crate::long_jobs`]).
    pub(crate) progress: Option<(String, u64)>,
    /// Its time limit, if it has one (it is `stopping` near its end).
    pub(crate) time_limit: Option<Arc<crate::time_limit::TimeLimit>>,
}

impl BusyEntry {
    /// `{queue, payload, run_at}` with the payload embedded as JSON.
    pub(crate) fn to_json(&self) -> String {
        let payload: Value = serde_json::from_slice(&self.raw).unwrap_or(Value::Null);
        serde_json::json!({"queue": self.queue, "payload": payload, "run_at": job::float(self.run_at)}).to_string()
    }
}

/// How a run of a job ended, as its last progress report says.
#[derive(Clone, Copy)]
enum RunEnd {
    Succeeded,
    Failed,
    Interrupted,
    Cancelled,
}

impl RunEnd {
    fn name(self) -> &'static str {
        match self {
            RunEnd::Succeeded => "succeeded",
            RunEnd::Failed => "failed",
            RunEnd::Interrupted => "interrupted",
            RunEnd::Cancelled => "cancelled",
        }
    }
}

pub(crate) struct Shared {
    pub config: Config,
    pub keys: Keys,
    pub redis: Redis,
    pub identity: String,
    pub started_at: f64,
    reliable: AtomicBool,
    lifecycle: watch::Sender<Lifecycle>,
    busy: Mutex<HashMap<u64, BusyEntry>>,
    next_token: AtomicU64,
    outstanding: AtomicUsize,
    /// The last fetch found jobs ([`Shared::jobs_flowing`]).
    flowing: AtomicBool,
    /// How many jobs may be held beyond the slots ([`Shared::prefetch`]).
    pub read_ahead: ReadAhead,
    /// Deliveries moved off their thread slot to a host's event loop.
    detached: AtomicUsize,
    pub capacity_freed: Notify,
    /// A push found one of this process's queues empty (a message on the
    /// wake channel), or the channel was (re)subscribed: fetch again.
    pub wakeups: Wakeups,
    /// The priority levels in use of the queues, as far as this process
    /// has heard (see `priority.rs`).
    pub levels: crate::priority::Levels,
    /// The cancelled jobs this process has heard of (see `cancel.rs`).
    pub cancellations: Arc<crate::cancel::Cancellations>,
    /// The time limits of the jobs host threads run (see `time_limit.rs`).
    pub time_limits: crate::time_limit::TimeLimits<crate::delivery::Holder>,
    /// A job would not stop past its time limit: this `-p N` child stops
    /// at once and ends (see [`Shared::end_process`]).
    ending: AtomicBool,
    pub completions: flume::Sender<Completion>,
    /// Set once the first orphan-recovery pass has completed.
    pub recovered_once: AtomicBool,
    /// Set by shutdown just before it requeues what is unfinished: how many
    /// jobs were still running then. Their outcomes are not this process's
    /// to write any more ([`Shared::finish`] drops them).
    given_back: std::sync::OnceLock<usize>,
    /// Whether this process stalled while it held jobs (see [`crate::stall`]).
    pub stall: crate::stall::StallWatch,
    /// The periodic entries this process ticks for and what their pushes
    /// go through (the ticker's; see [`PeriodicPushes`]).
    pub periodic: PeriodicPushes,
    /// The handler names this process runs (the allow-list): a job of any
    /// other class is failed as [`crate::handler::UNKNOWN_HANDLER`], never run.
    handlers: HashSet<String>,
    /// For the application's hooks.
    pub events: Events,
    /// The engine's own worker (`cogworker bench`): no `done` line per
    /// success and its lifecycle lines at DEBUG, so that its thousands of
    /// no-op jobs and its start and stop do not bury the table it prints.
    /// Warnings and failures are still logged.
    pub quiet: bool,
    /// Rate limiters every job of a class runs within (see
    /// [`crate::admission`]); empty for most workers.
    pub class_limits: HashMap<String, Vec<String>>,
    /// Running jobs' progress and checkpoints, on their way to Redis.
    pub reports: crate::long_jobs::Reports,
}

impl Shared {
    pub fn new(
        config: Config,
        redis: Redis,
        completions: flume::Sender<Completion>,
        periodic: PeriodicPushes,
        handlers: HashSet<String>,
        events: Events,
    ) -> Self {
        let identity = format!("{}:{}:{}", hostname(), std::process::id(), &job::new_jid()[..8]);
        let stall = crate::stall::StallWatch::new(std::time::Duration::from_secs_f64(config.orphan_threshold()));
        Shared {
            keys: Keys::for_config(&config),
            reliable: AtomicBool::new(config.fetch() == FetchMode::Reliable),
            config,
            redis,
            identity,
            started_at: job::now(),
            lifecycle: watch::channel(Lifecycle::Running).0,
            busy: Mutex::new(HashMap::new()),
            next_token: AtomicU64::new(1),
            outstanding: AtomicUsize::new(0),
            flowing: AtomicBool::new(false),
            read_ahead: ReadAhead::default(),
            detached: AtomicUsize::new(0),
            capacity_freed: Notify::new(),
            wakeups: Wakeups::default(),
            levels: Default::default(),
            cancellations: Default::default(),
            time_limits: Default::default(),
            ending: AtomicBool::new(false),
            completions,
            recovered_once: AtomicBool::new(false),
            given_back: std::sync::OnceLock::new(),
            stall,
            periodic,
            handlers,
            events,
            quiet: false,
            class_limits: HashMap::new(),
            reports: Default::default(),
        }
    }

    pub fn is_reliable(&self) -> bool {
        self.reliable.load(Ordering::SeqCst)
    }
    pub fn set_basic_fetch(&self) {
        self.reliable.store(false, Ordering::SeqCst);
    }

    pub fn lifecycle(&self) -> Lifecycle {
        *self.lifecycle.borrow()
    }
    /// Moves forward only: quiet never undoes a stop.
    pub fn advance(&self, to: Lifecycle) {
        let advanced = self.lifecycle.send_if_modified(|now| {
            if to > *now {
                *now = to;
                true
            } else {
                false
            }
        });
        if advanced {
            self.events.emit(match to {
                Lifecycle::Stopping => WorkerEvent::Shutdown,
                _ => WorkerEvent::Quiet,
            });
        }
    }
    pub fn is_quiet(&self) -> bool {
        self.lifecycle() >= Lifecycle::Quiet
    }
    /// Shutdown gives back the jobs still running: from now on their
    /// outcomes are dropped. Returns how many were running.
    pub(crate) fn give_back_running(&self) -> usize {
        *self.given_back.get_or_init(|| self.busy_count())
    }
    /// [`Shared::give_back_running`]'s count, once shutdown has done it.
    pub fn given_back(&self) -> Option<usize> {
        self.given_back.get().copied()
    }
    /// Stops at once (no wait for running jobs: they go back to their
    /// queues) and ends the process when stopped (see `time_limit.rs`).
    pub(crate) fn end_process(&self) {
        self.ending.store(true, Ordering::SeqCst);
        self.advance(Lifecycle::Stopping);
    }
    /// Must the process end once stopped ([`Shared::end_process`])?
    pub fn is_ending(&self) -> bool {
        self.ending.load(Ordering::SeqCst)
    }
    pub fn is_stopping(&self) -> bool {
        self.lifecycle() >= Lifecycle::Stopping
    }
    pub fn watch(&self) -> watch::Receiver<Lifecycle> {
        self.lifecycle.subscribe()
    }
    /// Resolves once the lifecycle has reached `at_least`.
    pub async fn reached(&self, at_least: Lifecycle) {
        let mut rx = self.watch();
        let _ = rx.wait_for(|now| *now >= at_least).await;
    }

    /// Nothing taken here is unsettled: no thread slot's job, no coroutine's.
    pub fn is_idle(&self) -> bool {
        self.outstanding.load(Ordering::SeqCst) == 0 && self.detached.load(Ordering::SeqCst) == 0
    }

    /// Did the last fetch find jobs? Then more are on their way, though
    /// every slot may be idle for the fetch's round trip (see
    /// `completion::LINGER`).
    pub fn jobs_flowing(&self) -> bool {
        self.flowing.load(Ordering::Relaxed)
    }

    /// The fetch loop says what its last fetch found.
    pub(crate) fn set_jobs_flowing(&self, found: bool) {
        self.flowing.store(found, Ordering::Relaxed);
    }

    /// See [`Delivery::detach`].
    pub(crate) fn detach(&self, delivery: &mut Delivery) {
        if !delivery.detached {
            delivery.detached = true;
            self.detached.fetch_add(1, Ordering::SeqCst);
            self.release_slot();
        }
    }

    /// Frees what a delivery held: its thread slot, or (`detached`) its
    /// place among the detached.
    fn release(&self, detached: bool) {
        if detached {
            self.detached.fetch_sub(1, Ordering::SeqCst);
            self.capacity_freed.notify_one();
        } else {
            self.release_slot();
        }
    }

    /// How many more jobs the fetch may take now: the slots, plus, when
    /// `read_ahead`, the jobs it may read ahead ([`Shared::prefetch`]),
    /// less those taken and not yet settled.
    pub fn free_slots(&self, read_ahead: bool) -> usize {
        let room = self.config.concurrency() + if read_ahead { self.prefetch() } else { 0 };
        room.saturating_sub(self.outstanding.load(Ordering::SeqCst))
    }

    /// How many jobs beyond `concurrency` this process may hold, taken and
    /// waiting for a slot (with reliable fetch and `prefetch` on; see
    /// [`crate::read_ahead`]). A job read ahead is in progress (recovered
    /// if the process dies) and given back at shutdown like any job no
    /// slot began.
    pub fn prefetch(&self) -> usize {
        if !self.config.prefetch() || !self.is_reliable() {
            return 0;
        }
        self.read_ahead.allowance(self.config.concurrency())
    }

    /// Jobs taken and not yet settled (running, or waiting for a slot).
    pub fn held(&self) -> usize {
        self.outstanding.load(Ordering::SeqCst)
    }

    /// Are jobs waiting here for a slot (more taken than slots)?
    pub fn holds_read_ahead(&self) -> bool {
        self.held() > self.config.concurrency()
    }

    /// The free slots worth a fetch: one, or with jobs read ahead, a third
    /// of those, so the fetch takes batches while the jobs waiting keep
    /// the slots busy (a fetch per job freed would cost a round trip each,
    /// and from a host thread a thread switch to wake the fetch).
    pub fn refill_at(&self) -> usize {
        (self.prefetch() / 3).max(1)
    }

    /// A fetched, parsed job becomes a delivery owed to a slot, under the
    /// token its fetch recorded it with (reliable fetch), else a fresh one.
    pub fn new_delivery(self: &Arc<Self>, queue: String, raw: Vec<u8>, job: Job, token: Option<u64>) -> Delivery {
        self.outstanding.fetch_add(1, Ordering::SeqCst);
        let token = token.unwrap_or_else(|| self.reserve_tokens(1));
        Delivery::new(self.clone(), token, queue, raw, job)
    }

    /// `count` delivery tokens, never handed out again in this process;
    /// returns the first.
    pub fn reserve_tokens(&self, count: usize) -> u64 {
        self.next_token.fetch_add(count as u64, Ordering::Relaxed)
    }

    /// Is `class` one of this process's handlers?
    pub fn runs(&self, class: &str) -> bool {
        self.handlers.contains(class)
    }

    /// A slot begins `delivery`: it becomes busy. A job no handler here is
    /// registered for is failed at once instead (`None`).
    pub fn begin(&self, mut delivery: Delivery) -> Option<Delivery> {
        if self.stall.held_through_stall(delivery.fetched_at) {
            // The others may have taken it back while this process was
            // frozen or cut off: not started here. Given back unstarted,
            // it returns to its queue only if still this process's (the
            // give-back checks that, atomically).
            tracing::warn!(
                jid = delivery.job.jid_str(),
                class = delivery.job.display_class(),
                "held through a stall of this process (no heartbeat for longer than orphan_threshold): \
                 given back, not started"
            );
            delivery.abandon("held through a stall");
            return None;
        }
        delivery.mark_started();
        if !self.runs(delivery.job.class()) {
            let failure = crate::handler::unknown_handler(&delivery.job);
            delivery.fail(failure);
            return None;
        }
        let job = &delivery.job;
        // At debug: a line per job at info is the `done` (or `failed`) one;
        // two would cost a tenth of the drain rate.
        tracing::debug!(
            jid = job.jid_str(),
            class = job.display_class(),
            queue = job.queue_name(),
            "start"
        );
        let entry = BusyEntry {
            queue: delivery.queue.clone(),
            class: delivery.job.class().to_string(),
            jid: delivery.job.jid_str().to_string(),
            raw: delivery.raw.clone(),
            run_at: delivery.started_at,
            run_lock: delivery
                .job
                .run_lock_pjid()
                .map(|pjid| self.keys.periodic_running(pjid)),
            job: delivery.job.clone(),
            checkpointed: false,
            interrupted: false,
            progress: None,
            time_limit: delivery.time_limit.clone(),
        };
        if let Some(lock) = entry.run_lock.clone() {
            let jid = entry.jid.clone();
            let _ = self.completions.send(Completion::RunLockStarted { lock, jid });
        }
        self.busy.lock().unwrap().insert(delivery.token, entry);
        if let Some(ttl) = delivery.job.result_ttl_secs() {
            let (record, ttl) = crate::results::running(&delivery.job, delivery.started_at, ttl, &self.identity);
            let key = self.keys.result(delivery.job.jid_str());
            let _ = self.completions.send(Completion::ResultStarted { key, record, ttl });
        }
        Some(delivery)
    }

    /// `delivery` ended with `outcome`: free the slot, hand the outcome over
    /// to be written to Redis. (Called by [`Delivery::settle`].)
    pub(crate) fn finish(&self, mut delivery: Delivery, outcome: Outcome) {
        let (token, detached) = (delivery.token, delivery.detached);
        if self.given_back().is_some() {
            // Shutdown has put it back on its queue: it runs again, once,
            // elsewhere; this run's outcome must not count as well.
            tracing::warn!(
                jid = delivery.job.jid_str(),
                class = delivery.job.display_class(),
                "ended after shutdown gave it back; its outcome is not recorded (it runs again)"
            );
            self.busy.lock().unwrap().remove(&token);
            return self.release(detached);
        }
        let (interrupted, report) = self.take_reports(&mut delivery);
        let interrupted = interrupted && matches!(outcome, Outcome::Success);
        let state = match (&outcome, interrupted) {
            (_, true) => RunEnd::Interrupted,
            (Outcome::Success, _) => RunEnd::Succeeded,
            (Outcome::Failure(_), _) => RunEnd::Failed,
        };
        self.report_end(delivery.job.jid_str(), report, state);
        if interrupted {
            // Interrupted to resume later: back on its queue with its
            // cursor, neither a success nor a failure.
            let Delivery { queue, raw, job, .. } = &mut delivery;
            let requeue = Completion::Requeue {
                token,
                queue: std::mem::take(queue),
                raw: std::mem::take(raw),
                job: std::mem::replace(job, Job::placeholder()),
            };
            return self.set_aside(token, detached, requeue);
        }
        let finished_at = job::now();
        if delivery.started && !detached {
            self.read_ahead.job_finished(finished_at - delivery.started_at);
        }
        // The outcome is queued before the slot is freed: shutdown waits for
        // free slots, then flushes, so it never requeues a job whose
        // success is still on its way.
        if self
            .completions
            .send(Completion::Done {
                delivery,
                outcome,
                finished_at,
            })
            .is_err()
        {
            // The completion task is gone (after shutdown requeued
            // everything): this job is already back on its queue.
            tracing::debug!("completion after shutdown dropped; the job was requeued");
        }
        self.busy.lock().unwrap().remove(&token);
        self.release(detached);
    }

    /// The delivery `token` will not run here (it expired, or was over a
    /// limiter it declared; see [`Delivery::expire`],
    /// [`Delivery::over_limit`]): `completion` files it, and its slot is
    /// freed.
    pub(crate) fn set_aside(&self, token: u64, detached: bool, completion: Completion) {
        if let Completion::Cancelled(delivery) = &completion {
            self.end_progress(token, delivery.job.jid_str(), RunEnd::Cancelled);
        }
        if self.completions.send(completion).is_err() {
            tracing::debug!("a job set aside after shutdown: requeued with the rest");
        }
        self.busy.lock().unwrap().remove(&token);
        self.release(detached);
    }

    /// `delivery` was abandoned (see [`Delivery::abandon`]): its slot and
    /// busy entry are freed, and the job is
    /// - put back on its queue if no slot began it;
    /// - left on the in-progress list for shutdown's requeue if the process
    ///   is stopping (reliable fetch; with basic fetch memory holds the only
    ///   copy, so it is put back);
    /// - otherwise filed as failed ([`delivery::HANDLER_ABORTED`]).
    pub(crate) fn abandon(&self, mut delivery: Delivery, how: &str) {
        if delivery.started && !self.is_stopping() {
            tracing::warn!("{} abandoned by its handler ({how}); filed as failed", delivery.job);
            let failure = Failure::new(
                delivery::HANDLER_ABORTED,
                format!("the handler ended without reporting success or failure: {how}"),
            );
            return self.finish(delivery, Outcome::Failure(failure));
        }
        self.take_reports(&mut delivery);
        self.busy.lock().unwrap().remove(&delivery.token);
        self.release(delivery.detached);
        if delivery.started && self.is_reliable() {
            return;
        }
        let Delivery {
            token, queue, raw, job, ..
        } = &delivery;
        let requeue = Completion::Requeue {
            token: *token,
            queue: queue.clone(),
            raw: raw.clone(),
            job: job.clone(),
        };
        if self.completions.send(requeue).is_err() {
            // Shutdown has finished: it requeued this job with the rest.
            tracing::debug!("{job} given back after shutdown, which requeued it");
        }
    }

    /// A delivery that will never run here (given back at shutdown).
    /// The fetch is woken once enough slots are free for a batch (each
    /// wake-up from a host thread costs a thread switch), and for every
    /// slot freed once the process is quiet (shutdown waits for them).
    pub fn release_slot(&self) {
        self.outstanding.fetch_sub(1, Ordering::SeqCst);
        if self.free_slots(true) >= self.refill_at() || self.is_quiet() {
            self.capacity_freed.notify_one();
        }
    }

    /// `f` of the busy entry of delivery `token`, while it runs.
    pub(crate) fn with_busy<R>(&self, token: u64, f: impl FnOnce(&mut BusyEntry) -> R) -> Option<R> {
        self.busy.lock().unwrap().get_mut(&token).map(f)
    }

    /// What a running delivery changed of itself (see [`crate::long_jobs`]),
    /// read in one look at its busy entry: a checkpointed job and its
    /// payload replace the ones it was fetched with, so a retry or a
    /// give-back carries the cursor. Returns whether it asked to be put
    /// back ([`crate::long_jobs::Running::interrupt`]), and its last
    /// progress report, taken (see [`Shared::report_end`]).
    fn take_reports(&self, delivery: &mut Delivery) -> (bool, Option<(String, u64)>) {
        let mut busy = self.busy.lock().unwrap();
        let Some(entry) = busy.get_mut(&delivery.token) else {
            return (false, None);
        };
        if entry.checkpointed {
            delivery.job = entry.job.clone();
            delivery.raw = entry.job.to_json().into_bytes();
        }
        (entry.interrupted, entry.progress.take())
    }

    /// A run of a job that reported progress ended: its last report,
    /// with how the run ended (`state`), is written once more, for
    /// watchers (see [`crate::long_jobs`]).
    fn end_progress(&self, token: u64, jid: &str, state: RunEnd) {
        let report = self.with_busy(token, |entry| entry.progress.take()).flatten();
        self.report_end(jid, report, state);
    }

    /// [`Shared::end_progress`] with the report already taken.
    fn report_end(&self, jid: &str, report: Option<(String, u64)>, state: RunEnd) {
        let Some((record, ttl)) = report else {
            return;
        };
        let mut record: Value = serde_json::from_str(&record).unwrap_or_else(|_| serde_json::json!({}));
        record["state"] = Value::String(state.name().to_string());
        self.reports.ended(jid, record.to_string(), ttl);
    }

    pub fn busy_snapshot(&self) -> Vec<(u64, BusyEntry)> {
        let busy = self.busy.lock().unwrap();
        let mut entries: Vec<(u64, BusyEntry)> = busy.iter().map(|(k, v)| (*k, v.clone())).collect();
        entries.sort_by_key(|(token, _)| *token);
        entries
    }
    /// The workers-hash entries (token, JSON) of the jobs running since
    /// `started_by` (epoch seconds) or earlier that `recorded` lacks, and
    /// the tokens of `recorded` no longer running.
    pub(crate) fn busy_changes(&self, recorded: &HashSet<u64>, started_by: f64) -> (Vec<(u64, String)>, Vec<u64>) {
        let busy = self.busy.lock().unwrap();
        let started = busy
            .iter()
            .filter(|(token, entry)| entry.run_at <= started_by && !recorded.contains(token))
            .map(|(token, entry)| (*token, entry.to_json()))
            .collect();
        let gone = recorded
            .iter()
            .filter(|token| !busy.contains_key(token))
            .copied()
            .collect();
        (started, gone)
    }

    pub fn busy_count(&self) -> usize {
        self.busy.lock().unwrap().len()
    }
}

/// Sleeps for `duration` unless the lifecycle reaches `until` first.
/// Returns true if interrupted.
pub(crate) async fn sleep_unless(shared: &Shared, duration: std::time::Duration, until: Lifecycle) -> bool {
    tokio::select! {
        _ = tokio::time::sleep(duration) => false,
        _ = shared.reached(until) => true,
    }
}

/// `base` ± `spread` (a fraction), so a fleet does not poll in step.
pub(crate) fn jittered(base: std::time::Duration, spread: f64) -> std::time::Duration {
    let factor = 1.0 + spread * (rand::random::<f64>() * 2.0 - 1.0);
    base.mul_f64(factor.max(0.05))
}

/// This machine's name (`gethostname(2)`), as shown for the process.
pub(crate) fn hostname() -> String {
    let mut buffer = [0u8; 256];
    // SAFETY: the buffer is valid for its length; gethostname writes at most
    // that many bytes and we read up to the first NUL within it.
    let rc = unsafe { libc::gethostname(buffer.as_mut_ptr().cast(), buffer.len()) };
    if rc != 0 {
        return "localhost".to_string();
    }
    let end = buffer.iter().position(|&b| b == 0).unwrap_or(buffer.len());
    String::from_utf8_lossy(&buffer[..end]).into_owned()
}
