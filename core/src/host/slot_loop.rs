//! A host's slot thread and events thread, run here: the loops that take
//! deliveries and events, and the rule that settles each delivery exactly
//! once however its handler ended. The host supplies what only it can do —
//! wait with its interpreter lock released, call the handler, describe what
//! it raised — as closures; the bindings pass them from the host's own
//! objects, so that Python and Ruby share one loop and one settle rule.

use super::{HostDelivery, HostFailure, HostValue, HostWorker, NextEvent, RetryHint};
use crate::error::Error;
use crate::events::WorkerEvent;
use crate::time_limit::TimeLimit;
use crate::worker::NextJob;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

/// How long a slot or events wait lasts before the host gets its lock
/// back (to run its pending signals and interrupts).
pub const WAIT_SLICE: Duration = Duration::from_millis(500);

/// How a host thread blocks in the core's loops: the one thing about
/// waiting that only the binding knows (releasing the GIL or GVL, running
/// pending signals and interrupts between slices).
pub trait HostWait {
    /// What ends a wait early: a signal handler's exception, a killed
    /// thread.
    type Error;

    /// Calls `poll` (which blocks up to the time it is given, and yields
    /// when it has something) with the host's lock released, until it
    /// yields; `None` once `slice` has passed.
    fn wait<T: Send>(
        &mut self,
        slice: Duration,
        poll: impl FnMut(Duration) -> Option<T> + Send,
    ) -> std::result::Result<Option<T>, Self::Error>;

    /// The calling thread's name as the host calls it: a thread the host
    /// started has none Rust knows of, and the engine's lines written from
    /// it showed `[-]`. `None` leaves it so.
    fn thread_name(&self) -> Option<String> {
        None
    }
}

/// Names the calling host thread on the engine's lines (see
/// [`HostWait::thread_name`]), as each of the loops below begins.
fn name_this_thread(wait: &impl HostWait) {
    if let Some(name) = wait.thread_name() {
        crate::logging::name_host_thread(&name);
    }
}

/// How a host's handler call ended.
pub enum Ended<V, R> {
    /// It returned `V` (converted only when the job keeps its result).
    Returned(V),
    /// It raised `R`.
    Raised(R),
}

/// Who settles a delivery (see [`HostWorker::settle`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SettledBy {
    /// The slot whose `perform` just returned or raised.
    Slot,
    /// The host's event loop, where a coroutine handler ended.
    EventLoop,
}

/// A failure as the host describes it, after its error handlers ran.
pub struct Described {
    /// What the core records.
    pub failure: HostFailure,
    /// The worker stops gracefully after it (Python's `SystemExit` and
    /// `KeyboardInterrupt`, Ruby's `exit`).
    pub stops_worker: bool,
}

impl HostWorker {
    /// Runs one host slot thread until the worker stops: takes deliveries
    /// (`wait` blocks up to its slice with the host's lock released; a job
    /// ready now is taken without releasing it) and hands each to `job`.
    /// An error from either ends the slot with it (an interrupt, a killed
    /// thread); the delivery it held is abandoned by its owner.
    pub fn run_slot<W: HostWait>(
        &self,
        wait: &mut W,
        mut job: impl FnMut(HostDelivery) -> std::result::Result<(), W::Error>,
    ) -> std::result::Result<(), W::Error> {
        name_this_thread(wait);
        let _running = self.slots.enter();
        loop {
            let next = match self.try_next_job() {
                NextJob::Idle => wait.wait(WAIT_SLICE, |s| self.next_job(s))?.unwrap_or(NextJob::Idle),
                ready => ready,
            };
            match next {
                NextJob::Job(delivery) => job(HostDelivery::new(delivery))?,
                NextJob::Idle => {}
                NextJob::Stopped => return Ok(()),
            }
        }
    }

    /// Settles `delivery` by how its handler ended, once: success (with
    /// the value kept when the job keeps its result), or the failure
    /// `describe` makes of what was raised (it runs the host's error
    /// handlers and retry hook). A value JSON cannot hold fails the job:
    /// `describe` gets the core's error, converted by `error`. Whatever
    /// happens here, the delivery ends settled or abandoned (`describe`
    /// returns `None` when describing raised). `by` says who settles: a
    /// slot leaves a delivery its `perform` handed to the host's event loop
    /// ([`HostDelivery::detach`]) to that loop.
    pub fn settle<V, R>(
        &self,
        by: SettledBy,
        delivery: &HostDelivery,
        ended: Ended<V, R>,
        value: impl FnOnce(V) -> HostValue,
        error: impl FnOnce(Error) -> R,
        describe: impl FnOnce(R) -> Option<Described>,
    ) {
        let raised = match ended {
            Ended::Returned(_) if by == SettledBy::Slot && delivery.is_detached() => None,
            Ended::Returned(_) if delivery.is_settled() => None,
            Ended::Returned(returned) if delivery.wants_result() => {
                delivery.complete_with(&value(returned)).err().map(error)
            }
            Ended::Returned(_) => delivery.complete().err().map(error),
            Ended::Raised(raised) => Some(raised),
        };
        let Some(raised) = raised else {
            return;
        };
        if delivery.is_cancelled() {
            // Filed as cancelled whatever it raised (mostly the stop
            // itself: CancelledError, or what a job raises on seeing the
            // flag): no error for the host's error handlers to report, no
            // retry for its retry hook to time.
            let cancelled = HostFailure {
                class: Some(crate::retry::CANCELLED.to_string()),
                message: Some("cancelled".to_string()),
                ..HostFailure::default()
            };
            let _ = delivery.fail(cancelled);
            return;
        }
        let Some(described) = describe(raised) else {
            delivery.abandon("describing its failure raised");
            return;
        };
        let error_class = described.failure.class.clone().unwrap_or_default();
        if delivery.fail(described.failure).is_ok() && described.stops_worker {
            let info = &delivery.info;
            tracing::warn!(
                "{error_class} raised by {} jid={}: stopping the worker gracefully",
                info.class,
                info.jid
            );
            self.stop();
        }
    }

    /// Runs the host's hooks on worker events until the engine has shut
    /// down and every event was handled: `dispatch(name, job)` runs the
    /// hooks registered for the event's name ([`WorkerEvent::name`]);
    /// `job` is the dead job for `"death"`. An error from a wait or from
    /// `dispatch` ends the loop with it.
    pub fn run_hooks<W: HostWait>(
        &self,
        wait: &mut W,
        mut dispatch: impl FnMut(&'static str, Option<serde_json::Value>) -> std::result::Result<(), W::Error>,
    ) -> std::result::Result<(), W::Error> {
        self.run_events(
            wait,
            |s| self.next_event(s),
            |event| match event {
                WorkerEvent::Died { job } => dispatch("death", Some(job)),
                event => dispatch(event.name(), None),
            },
        )
    }

    /// Runs the host's client middleware on the periodic jobs this worker
    /// pushes until the engine has shut down: `push(job)` answers with the
    /// job to push, `None` to push nothing, or what it raised (then the
    /// job is pushed as it was). An error from a wait or from `push` (a
    /// killed thread) ends the loop with it. Returns at once when the host
    /// has no client middleware.
    pub fn run_client_middleware<W: HostWait>(
        &self,
        wait: &mut W,
        mut push: impl FnMut(
            &serde_json::Value,
        ) -> std::result::Result<std::result::Result<Option<HostValue>, String>, W::Error>,
    ) -> std::result::Result<(), W::Error> {
        self.run_events(
            wait,
            |s| self.next_client_middleware(s),
            |event| {
                if let WorkerEvent::ClientMiddleware { job } = event {
                    let answer = push(&job)?;
                    self.answer_client_middleware(&job, answer);
                }
                Ok(())
            },
        )
    }

    /// Runs the host's timekeeper thread until the engine has shut down:
    /// when a job's time limit passes while its handler runs on a host
    /// thread, `interrupt(thread)` raises the host's timeout exception in
    /// that thread (`thread`: the id the slot gave
    /// [`HostDelivery::perform`]). Called with the host's lock held, so a
    /// handler that has returned since is never interrupted. In a child of
    /// `-p N`, `retry_hook(class, retry_count)` first asks the job's retry
    /// hook what a timeout means (what it returns, as a failure's), kept
    /// for the filing the core makes if the handler will not stop. An error
    /// from a wait, `retry_hook` or `interrupt` ends the loop with it.
    pub fn run_timekeeper<W: HostWait>(
        &self,
        wait: &mut W,
        mut retry_hook: impl FnMut(&str, u32) -> std::result::Result<RetryHint, W::Error>,
        mut interrupt: impl FnMut(u64) -> std::result::Result<(), W::Error>,
    ) -> std::result::Result<(), W::Error> {
        name_this_thread(wait);
        // Joined with the events threads (see `join`).
        let _running = self.event_threads.enter();
        loop {
            if self.ended.load(Ordering::SeqCst) {
                return Ok(()); // without releasing the host's lock again
            }
            let polled = wait.wait(WAIT_SLICE, |slice| match self.next_overdue(slice) {
                NextEvent::Idle => None,
                overdue => Some(overdue),
            })?;
            match polled {
                Some(NextEvent::Overdue(limit)) => {
                    if TimeLimit::asks_hook_when_passed() {
                        // Asked now, while the host can run it: a handler
                        // that will not stop is filed by the core alone.
                        let said = retry_hook(limit.job_class(), limit.retry_count())?;
                        let whose = format!("{} (past its time limit)", limit.job_class());
                        limit.set_hook_retry_in(said.seconds(&whose));
                    }
                    if let Some(thread) = limit.running_on() {
                        interrupt(thread)?;
                    }
                }
                Some(NextEvent::Ended) => return Ok(()),
                _ => {}
            }
        }
    }

    fn run_events<W: HostWait>(
        &self,
        wait: &mut W,
        next: impl Fn(Duration) -> NextEvent + Sync,
        mut handle: impl FnMut(WorkerEvent) -> std::result::Result<(), W::Error>,
    ) -> std::result::Result<(), W::Error> {
        name_this_thread(wait);
        let _running = self.event_threads.enter();
        loop {
            let polled = wait.wait(WAIT_SLICE, |s| match next(s) {
                NextEvent::Idle => None,
                event => Some(event),
            })?;
            match polled.unwrap_or(NextEvent::Idle) {
                NextEvent::Event(event) => handle(event)?,
                NextEvent::Idle | NextEvent::Overdue(_) => {}
                NextEvent::Ended => return Ok(()),
            }
        }
    }

    /// After the engine's shutdown, blocks (call it with the host's lock
    /// released) until the slot threads (`slots`: see
    /// [`HostWorker::join_slots`]) and the events threads have returned
    /// from their loops, or `timeout` passes; whether every slot did.
    pub fn join(&self, timeout: Duration, slots: bool) -> bool {
        let deadline = Instant::now() + timeout;
        let slots_done = !slots || self.slots.wait_until_none(deadline);
        // The shutdown hooks run on the events thread: it gets the rest.
        self.event_threads.wait_until_none(deadline);
        slots_done && self.slots.running() == 0
    }
}

/// How many host threads are inside one of the loops above.
#[derive(Default)]
pub(super) struct Running {
    count: std::sync::atomic::AtomicUsize,
    changed: (std::sync::Mutex<()>, std::sync::Condvar),
}

/// One thread inside; leaves when dropped (also by a panic or an error).
pub(super) struct Inside<'a>(&'a Running);

impl Running {
    fn enter(&self) -> Inside<'_> {
        self.count.fetch_add(1, Ordering::SeqCst);
        Inside(self)
    }

    pub(super) fn running(&self) -> usize {
        self.count.load(Ordering::SeqCst)
    }

    fn wait_until_none(&self, deadline: Instant) -> bool {
        let (lock, changed) = &self.changed;
        let mut guard = lock.lock().unwrap_or_else(|p| p.into_inner());
        while self.running() > 0 {
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return false;
            }
            guard = changed.wait_timeout(guard, left).unwrap_or_else(|p| p.into_inner()).0;
        }
        true
    }
}

impl Drop for Inside<'_> {
    fn drop(&mut self) {
        let (lock, changed) = &self.0.changed;
        let _guard = lock.lock().unwrap_or_else(|p| p.into_inner());
        self.0.count.fetch_sub(1, Ordering::SeqCst);
        changed.notify_all();
    }
}
