//! Time limits: a job pushed with `timeout` (seconds) whose handler is
//! still running that long after it began is told to stop, and fails as
//! [`TIMEOUT_CLASS`] (retried by its policy) however its handler then ends.
//!
//! How it is told depends on who runs it: a Rust handler's future is
//! dropped where it waits (`processor.rs`); a host's coroutine is cancelled
//! by the host's event loop, which looks when the count of interruptions
//! ([`crate::host::HostWorker::interruptions`]) changes; a host's plain handler gets an exception raised in its thread
//! by the host's timekeeper thread ([`crate::host::HostWorker::run_timekeeper`]).
//! A handler that cannot be interrupted (a blocking call in C) runs on;
//! its job is filed when it ends, so it never runs twice at once. If it is
//! still running [`crate::config::Config::timeout_grace`] after its limit, a child
//! of `cogworker -p N` files it as timed out and ends itself (its other
//! running jobs go back to their queues) for its parent to replace; any
//! other process says so in its log, once.
//!
//! Jobs without a `timeout` pay nothing: no entry, no timer.

use crate::handler::Failure;
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, Weak};
use std::time::{Duration, Instant};
use tokio::sync::Notify;

/// `error_class` of a job that ran past its time limit.
pub const TIMEOUT_CLASS: &str = "cogworker::Timeout";

/// The exit status of a `-p N` child that ended itself because a job
/// would not stop (its parent starts another).
pub const OVERRUN_EXIT_STATUS: i32 = 75;

/// Set in a child of `-p N`, which its parent replaces when it ends: a
/// job that will not stop past its time limit ends it.
pub(crate) static ENDS_PROCESS_ON_OVERRUN: AtomicBool = AtomicBool::new(false);

/// This process is a child of `-p N` (see [`ENDS_PROCESS_ON_OVERRUN`]).
pub(crate) fn end_process_on_overrun() {
    ENDS_PROCESS_ON_OVERRUN.store(true, Ordering::SeqCst);
}

/// One running job's time limit.
#[derive(Debug)]
pub struct TimeLimit {
    seconds: f64,
    deadline: Instant,
    /// The job's class and failures so far: what its retry hook is asked
    /// with when the limit passes (see [`TimeLimit::hook_retry_in`]).
    class: String,
    retry_count: u32,
    /// What the job's retry hook said of a timeout, asked by the host when
    /// the limit passed (`-p N` children only): a job whose handler will not
    /// stop is filed by the core, which cannot call the hook then.
    hook_retry_in: Mutex<Option<f64>>,
    /// The limit passed: the job was told, and fails as timed out.
    expired: AtomicBool,
    /// Its handler's host thread (the host's own id for it) while the
    /// handler runs there; 0 otherwise.
    running_on: AtomicU64,
}

impl TimeLimit {
    /// A limit of `seconds` from now. A push and a worker's parse bound
    /// `timeout` (see `job/numbers.rs`); a limit no clock can reach is
    /// still no reason to panic, so it never passes.
    pub(crate) fn starting_now(seconds: f64, class: &str, retry_count: u32) -> Self {
        let now = Instant::now();
        let far = now + Duration::from_secs(crate::job::LONGEST_SECS as u64 * 100);
        let deadline = Duration::try_from_secs_f64(seconds)
            .ok()
            .and_then(|limit| now.checked_add(limit))
            .unwrap_or(far);
        TimeLimit {
            seconds,
            deadline,
            class: class.to_string(),
            retry_count,
            hook_retry_in: Mutex::new(None),
            expired: AtomicBool::new(false),
            running_on: AtomicU64::new(0),
        }
    }

    /// How long it is (a limit no clock can reach: a very long time).
    pub fn duration(&self) -> Duration {
        Duration::try_from_secs_f64(self.seconds).unwrap_or(Duration::MAX)
    }

    /// When it passes.
    pub fn deadline(&self) -> Instant {
        self.deadline
    }

    /// Has it passed (the job fails as timed out, however it ends)?
    pub fn is_expired(&self) -> bool {
        self.expired.load(Ordering::SeqCst)
    }

    /// Marks it passed; true the first time.
    pub(crate) fn expire(&self) -> bool {
        !self.expired.swap(true, Ordering::SeqCst)
    }

    /// The handler runs on host thread `thread` (non-zero) until
    /// [`TimeLimit::left_handler`].
    pub(crate) fn entered_handler(&self, thread: u64) {
        self.running_on.store(thread, Ordering::SeqCst);
    }

    /// The handler returned or raised.
    pub(crate) fn left_handler(&self) {
        self.running_on.store(0, Ordering::SeqCst);
    }

    /// The host thread running its handler now, if one is.
    pub fn running_on(&self) -> Option<u64> {
        Some(self.running_on.load(Ordering::SeqCst)).filter(|thread| *thread != 0)
    }

    /// The job's class (its retry hook's).
    pub fn job_class(&self) -> &str {
        &self.class
    }

    /// The job's failures so far, as its retry hook is given them.
    pub fn retry_count(&self) -> u32 {
        self.retry_count
    }

    /// Keeps what the job's retry hook said of this timeout (seconds; `None`
    /// for the default backoff), for a filing the core makes alone.
    pub fn set_hook_retry_in(&self, seconds: Option<f64>) {
        *self.hook_retry_in.lock().unwrap_or_else(|p| p.into_inner()) = seconds;
    }

    fn hook_retry_in(&self) -> Option<f64> {
        *self.hook_retry_in.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Is the hook asked when the limit passes (a `-p N` child ends itself
    /// on a job that will not stop, and files it without the host)?
    pub fn asks_hook_when_passed() -> bool {
        ENDS_PROCESS_ON_OVERRUN.load(Ordering::SeqCst)
    }

    /// `seconds` as the log and the failure say it.
    pub(crate) fn shown(&self) -> String {
        shown_seconds(self.seconds)
    }

    /// What is recorded of a job that ran past it: the handler's backtrace
    /// (where it was stopped) when it raised.
    pub(crate) fn failure(&self, ended: Option<Failure>) -> Failure {
        match ended {
            // Already said, by the watch that ended the process.
            Some(timed_out) if timed_out.class == TIMEOUT_CLASS => timed_out,
            ended => {
                let message = format!("ran past its time limit of {}", self.shown());
                let mut failure = Failure::new(TIMEOUT_CLASS, message);
                match ended {
                    Some(ended) => {
                        failure.backtrace = ended.backtrace;
                        failure.retry_in = ended.retry_in;
                    }
                    None => failure.retry_in = self.hook_retry_in(),
                }
                failure
            }
        }
    }
}

/// The time limits of the jobs host threads run now, each with where its
/// delivery is kept (`H`: the watch settles it from there when the
/// process must end), watched by one task (`worker/overrun.rs`).
pub(crate) struct TimeLimits<H> {
    watched: Mutex<BTreeMap<(Instant, u64), Watched<H>>>,
    next_id: AtomicU64,
    /// The number of entries at which those of settled jobs are dropped
    /// (a job that ends early leaves its entry until its deadline).
    prune_at: AtomicU64,
    /// An earlier deadline was added.
    changed: Notify,
    /// How many limits have passed: a host's event loop looks at its
    /// coroutines when this changes.
    expired: AtomicU64,
    overdue: Overdue,
}

/// Entries before the first look for settled ones.
const PRUNE_FIRST: u64 = 1024;

impl<H> Default for TimeLimits<H> {
    fn default() -> Self {
        TimeLimits {
            watched: Mutex::default(),
            next_id: AtomicU64::new(0),
            prune_at: AtomicU64::new(PRUNE_FIRST),
            changed: Notify::new(),
            expired: AtomicU64::new(0),
            overdue: Overdue::default(),
        }
    }
}

struct Watched<H> {
    limit: Weak<TimeLimit>,
    holder: Weak<H>,
    /// The grace after the limit: the second look.
    past_grace: bool,
}

/// The limits that passed, for the host's timekeeper thread (`None`:
/// wake it, the engine has shut down).
struct Overdue {
    tx: flume::Sender<Option<Arc<TimeLimit>>>,
    rx: flume::Receiver<Option<Arc<TimeLimit>>>,
}

impl Default for Overdue {
    fn default() -> Self {
        let (tx, rx) = flume::unbounded();
        Overdue { tx, rx }
    }
}

/// What the watch found at a deadline: a job still running whose limit
/// passed (it was told), or, `past_grace`, whose grace after it passed too.
pub(crate) struct Passed<H> {
    pub limit: Arc<TimeLimit>,
    pub holder: Arc<H>,
    pub past_grace: bool,
}

impl<H> TimeLimits<H> {
    /// Watches `limit` of the delivery `holder` keeps (until both are gone).
    pub fn watch(&self, limit: &Arc<TimeLimit>, holder: &Arc<H>) {
        self.insert(limit.deadline, Arc::downgrade(limit), Arc::downgrade(holder), false);
    }

    fn insert(&self, at: Instant, limit: Weak<TimeLimit>, holder: Weak<H>, past_grace: bool) {
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        let mut watched = self.watched.lock().unwrap();
        if watched.len() as u64 >= self.prune_at.load(Ordering::Relaxed) {
            // Those whose delivery or limit is gone (settled, collected):
            // amortized, the next look waits until the map has doubled.
            watched.retain(|_, w| w.holder.strong_count() > 0 && w.limit.strong_count() > 0);
            self.prune_at
                .store((watched.len() as u64 * 2).max(PRUNE_FIRST), Ordering::Relaxed);
        }
        let earliest = watched.keys().next().is_none_or(|(first, _)| at < *first);
        watched.insert(
            (at, id),
            Watched {
                limit,
                holder,
                past_grace,
            },
        );
        drop(watched);
        if earliest {
            self.changed.notify_one();
        }
    }

    /// How many limits have passed in this process.
    pub fn expired(&self) -> u64 {
        self.expired.load(Ordering::Relaxed)
    }

    /// `limit` passed before its handler began: the timekeeper hears of it
    /// again.
    pub fn tell_again(&self, limit: &Arc<TimeLimit>) {
        let _ = self.overdue.tx.send(Some(limit.clone()));
    }

    /// Wakes the host's timekeeper at once (the engine has shut down).
    pub fn wake_timekeeper(&self) {
        let _ = self.overdue.tx.send(None);
    }

    /// Blocks up to `timeout` for a limit that passed while its handler
    /// may still run on a host thread (for the host's timekeeper); `None`
    /// once `timeout` passed or [`TimeLimits::wake_timekeeper`] was called.
    pub fn next_overdue(&self, timeout: Duration) -> Option<Arc<TimeLimit>> {
        self.overdue.rx.recv_timeout(timeout).ok().flatten()
    }

    /// Waits for the next deadline that finds a job still running (not
    /// `settled`), and says what passed; `grace` is how long a job may run
    /// past its limit.
    pub async fn next_passed(&self, grace: Duration, settled: impl Fn(&H) -> bool) -> Passed<H> {
        loop {
            let changed = self.changed.notified();
            let first = self.watched.lock().unwrap().keys().next().copied();
            match first {
                Some((at, _)) if at <= Instant::now() => {}
                Some((at, _)) => {
                    tokio::select! {
                        _ = tokio::time::sleep_until(at.into()) => {}
                        _ = changed => {}
                    }
                    continue;
                }
                None => {
                    changed.await;
                    continue;
                }
            }
            let Some((_, due)) = self.watched.lock().unwrap().pop_first() else {
                continue;
            };
            let (Some(limit), Some(holder)) = (due.limit.upgrade(), due.holder.upgrade()) else {
                continue;
            };
            if settled(&holder) {
                continue;
            }
            if due.past_grace {
                return Passed {
                    limit,
                    holder,
                    past_grace: true,
                };
            }
            limit.expire();
            self.expired.fetch_add(1, Ordering::Relaxed);
            let _ = self.overdue.tx.send(Some(limit.clone()));
            self.insert(limit.deadline + grace, due.limit, due.holder, true);
            return Passed {
                limit,
                holder,
                past_grace: false,
            };
        }
    }
}

/// `5s`, `1.5s`: seconds as a log line says them.
pub(crate) fn shown_seconds(seconds: f64) -> String {
    let text = format!("{seconds:.3}");
    format!("{}s", text.trim_end_matches('0').trim_end_matches('.'))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_entries_of_settled_jobs_are_dropped_long_before_their_deadlines() {
        let limits: TimeLimits<()> = TimeLimits::default();
        let running = (Arc::new(TimeLimit::starting_now(3600.0, "A", 0)), Arc::new(()));
        limits.watch(&running.0, &running.1);
        for _ in 0..10_000 {
            // A job that ended at once: its limit and holder are gone.
            limits.watch(&Arc::new(TimeLimit::starting_now(3600.0, "A", 0)), &Arc::new(()));
        }
        let left = limits.watched.lock().unwrap().len();
        assert!(left < 2 * PRUNE_FIRST as usize, "{left} entries kept");
        let kept = limits
            .watched
            .lock()
            .unwrap()
            .values()
            .any(|w| w.limit.strong_count() > 0);
        assert!(kept, "the running job's entry stays");
    }
}
