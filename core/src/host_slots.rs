//! Where the fetch loop leaves deliveries for host-language threads, and
//! which thread takes each.
//!
//! Python and Ruby threads share one interpreter lock (GIL, GVL). Ten
//! threads each woken for one short job spend their time handing that lock
//! around: on a 2-core machine, 10 Python threads drained 14–15k no-op jobs/s
//! where one thread drained 22–25k (the Python benchmark, back to back).
//! So a thread is woken for a delivery only when it can help:
//!
//! - A thread back from a job takes the next ready one without sleeping.
//! - An idle thread is woken at once when no thread is running a job, and
//!   for every delivery while the jobs are long (over [`LONG_JOB`]: a job
//!   that waits on I/O gets its own thread, as before).
//! - Otherwise a delivery is left [`GRACE`] for a running thread to come
//!   back for it; past that, an idle thread takes it.
//! - A thread back from a job while others run rests if the next delivery
//!   is not due yet: threads woken by a burst (or by a stall) stop taking
//!   turns at the lock once fewer keep up.
//!
//! Which thread is running is kept per OS thread (Python and Ruby threads
//! are OS threads): a thread that took a job runs it until it asks for the
//! next one, or until it exits.

use crate::delivery::Delivery;
use std::cell::RefCell;
use std::collections::VecDeque;
use std::sync::{Arc, Condvar, Mutex, MutexGuard, Weak};
use std::time::{Duration, Instant};

/// How long a delivery is left for a running thread before an idle thread
/// is woken for it: the most latency this adds to a job, under load only.
const GRACE: Duration = Duration::from_millis(1);

/// Jobs that take longer than this on average (measured on a thread that
/// ran alone, so not waiting for the lock) are not waited for: each
/// delivery wakes an idle thread at once, and no thread rests. Short jobs
/// of a few tens of microseconds are what make threads take turns at the
/// lock; a job that waits half a millisecond on I/O is worth a thread.
const LONG_JOB: Duration = Duration::from_micros(250);

/// Weight of the latest job in the running average of job times.
const WEIGHT: f64 = 1.0 / 8.0;

thread_local! {
    /// The slots this thread took its current job from, and when.
    static HOLDING: RefCell<Option<Holding>> = const { RefCell::new(None) };
}

/// What a thread's job was taken from, told when the thread is back.
trait TakenFrom: Send + Sync {
    fn came_back(&self, since: Instant);
}

/// A thread's current job; dropped (the thread exits) it counts as back.
struct Holding {
    slots: Option<Weak<dyn TakenFrom>>,
    since: Instant,
}

impl Holding {
    /// Is this a job of `slots`? Then its start, for the caller to count
    /// it, and the drop does nothing. (Another worker's is dropped here:
    /// it hears the thread came back.)
    fn disarm_for<T: Send + 'static>(mut self, slots: &Arc<HostSlots<T>>) -> Option<Instant> {
        let own = self
            .slots
            .as_ref()
            .is_some_and(|weak| std::ptr::addr_eq(weak.as_ptr(), Arc::as_ptr(slots)));
        own.then(|| {
            self.slots = None;
            self.since
        })
    }
}

impl Drop for Holding {
    fn drop(&mut self) {
        if let Some(slots) = self.slots.take().and_then(|weak| weak.upgrade()) {
            slots.came_back(self.since);
        }
    }
}

/// The deliveries waiting for a host thread. (Generic for its tests.)
pub(crate) struct HostSlots<T = Delivery> {
    state: Mutex<State<T>>,
    changed: Condvar,
}

struct State<T> {
    /// Each with the time it was left here.
    ready: VecDeque<(T, Instant)>,
    /// How long the first one is left for running threads ([`GRACE`]).
    grace: Duration,
    /// Threads that took a job and have not asked for the next one.
    running: usize,
    /// Threads waiting in [`HostSlots::take`].
    idle: usize,
    /// Wake-ups sent and not yet used by an idle thread.
    wakes: usize,
    /// An idle thread waits for the first delivery to be due.
    timing: bool,
    /// Running average of the time a job keeps its thread (s), measured
    /// on threads that ran alone.
    job_time: f64,
    closed: bool,
}

impl<T> State<T> {
    /// Are jobs long (their threads not back soon: not worth waiting for)?
    fn long_jobs(&self) -> bool {
        self.job_time > LONG_JOB.as_secs_f64()
    }

    /// When the first ready delivery is due for an idle thread.
    fn first_due(&self) -> Option<Instant> {
        let (_, since) = self.ready.front()?;
        if self.running == 0 || self.long_jobs() {
            Some(*since)
        } else {
            Some(*since + self.grace)
        }
    }

    fn came_back(&mut self, since: Instant) {
        self.running = self.running.saturating_sub(1);
        // Only a thread that ran alone measures the job itself: beside
        // others it also waited for the lock.
        if self.running == 0 {
            let took = since.elapsed().as_secs_f64();
            self.job_time += (took - self.job_time) * WEIGHT;
        }
    }
}

impl<T: Send + 'static> TakenFrom for HostSlots<T> {
    fn came_back(&self, since: Instant) {
        self.lock().came_back(since);
    }
}

impl HostSlots<Delivery> {
    pub(crate) fn new() -> Arc<Self> {
        Self::with_grace(GRACE)
    }
}

impl<T: Send + 'static> HostSlots<T> {
    fn with_grace(grace: Duration) -> Arc<Self> {
        Arc::new(HostSlots {
            state: Mutex::new(State {
                ready: VecDeque::new(),
                grace,
                running: 0,
                idle: 0,
                wakes: 0,
                timing: false,
                job_time: 0.0,
                closed: false,
            }),
            changed: Condvar::new(),
        })
    }

    fn lock(&self) -> MutexGuard<'_, State<T>> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Leaves `delivery` for a thread; handed back once closed.
    pub(crate) fn push(&self, delivery: T) -> Result<(), T> {
        let mut state = self.lock();
        if state.closed {
            return Err(delivery);
        }
        state.ready.push_back((delivery, Instant::now()));
        self.wake(&mut state);
        Ok(())
    }

    /// Wakes the idle threads the ready deliveries need: one each while
    /// jobs are long; else one, which takes the first delivery at once if
    /// no thread is running, or waits for it to be due. (Any thread awake
    /// takes a delivery that is due.)
    fn wake(&self, state: &mut State<T>) {
        let wanted = if state.ready.is_empty() || state.idle == 0 {
            0
        } else if state.long_jobs() {
            state.ready.len().min(state.idle)
        } else {
            usize::from(state.running == 0 || !state.timing)
        };
        while state.wakes < wanted {
            state.wakes += 1;
            self.changed.notify_one();
        }
    }

    /// When the calling thread's job from here began, if it was running
    /// one: it is back. (Taken before this lock: another worker's job,
    /// dropped here, takes that worker's lock.)
    fn back(self: &Arc<Self>) -> Option<Instant> {
        HOLDING.with(|h| h.borrow_mut().take()).and_then(|h| h.disarm_for(self))
    }

    fn hold(self: &Arc<Self>, state: &mut State<T>) {
        state.running += 1;
        let taken: Arc<dyn TakenFrom> = self.clone();
        let holding = Holding {
            slots: Some(Arc::downgrade(&taken)),
            since: Instant::now(),
        };
        // Nothing is held now: `back` ran first.
        HOLDING.with(|h| *h.borrow_mut() = Some(holding));
    }

    /// The first ready delivery, if this thread should take it (never
    /// waits). Called by a thread back from a job, this is how it goes on
    /// without sleeping. While other threads run and the delivery is not
    /// yet due for an idle thread, it rests instead (`None`: it will wait
    /// in [`HostSlots::take`]): those others keep up, or the delivery
    /// falls due and it is woken again. This sheds the threads a burst
    /// woke once they would only take turns at the lock.
    pub(crate) fn try_take(self: &Arc<Self>) -> Option<T> {
        let back = self.back();
        let mut state = self.lock();
        if let Some(since) = back {
            state.came_back(since);
            let due = state.first_due()?;
            if state.running > 0 && Instant::now() < due {
                return None;
            }
        }
        let (delivery, _) = state.ready.pop_front()?;
        self.hold(&mut state);
        Some(delivery)
    }

    /// Waits up to `timeout` for a delivery this idle thread should take.
    pub(crate) fn take(self: &Arc<Self>, timeout: Duration) -> Option<T> {
        let back = self.back();
        let deadline = Instant::now() + timeout;
        let mut state = self.lock();
        if let Some(since) = back {
            state.came_back(since);
        }
        state.idle += 1;
        let mut timing = false;
        let taken = loop {
            if state.closed {
                break None;
            }
            let now = Instant::now();
            let mut wait_until = deadline;
            if let Some(due) = state.first_due() {
                if now >= due {
                    break state.ready.pop_front().map(|(delivery, _)| delivery);
                }
                if timing || !state.timing {
                    // This thread waits for the first delivery to be due.
                    timing = true;
                    state.timing = true;
                    wait_until = wait_until.min(due);
                }
            } else if timing {
                timing = false;
                state.timing = false;
            }
            if now >= deadline {
                break None;
            }
            state = self
                .changed
                .wait_timeout(state, wait_until - now)
                .unwrap_or_else(|p| p.into_inner())
                .0;
            state.wakes = state.wakes.saturating_sub(1);
        };
        state.idle -= 1;
        if timing {
            state.timing = false;
        }
        if taken.is_some() {
            self.hold(&mut state);
        }
        // What is left may need another thread, or one to wait for it.
        self.wake(&mut state);
        taken
    }

    /// Every delivery no thread has taken yet, taken back (the slots stay
    /// open).
    pub(crate) fn take_waiting(&self) -> Vec<T> {
        self.lock().ready.drain(..).map(|(delivery, _)| delivery).collect()
    }

    /// No more deliveries: every waiting thread is woken, and what was
    /// never taken is handed back.
    pub(crate) fn close(&self) -> Vec<T> {
        let mut state = self.lock();
        state.closed = true;
        self.changed.notify_all();
        state.ready.drain(..).map(|(delivery, _)| delivery).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::thread;

    /// A grace no test waits out: a delivery an idle thread took within it
    /// was due at once.
    const NEVER: Duration = Duration::from_secs(60);

    fn wait_until(what: &str, mut done: impl FnMut() -> bool) {
        let deadline = Instant::now() + Duration::from_secs(10);
        while !done() {
            assert!(Instant::now() < deadline, "timed out waiting until {what}");
            thread::sleep(Duration::from_millis(1));
        }
    }

    fn idle_thread(slots: &Arc<HostSlots<u32>>, timeout: Duration) -> thread::JoinHandle<Option<u32>> {
        let idle_before = slots.lock().idle;
        let waiting = slots.clone();
        let handle = thread::spawn(move || waiting.take(timeout));
        wait_until("the thread waits", || slots.lock().idle > idle_before);
        handle
    }

    /// Another thread takes the first delivery and runs it until
    /// released; its join gives the job it took.
    fn another_thread_runs_a_job(
        slots: &Arc<HostSlots<u32>>,
    ) -> (std::sync::mpsc::Sender<()>, thread::JoinHandle<Option<u32>>) {
        let (release, released) = std::sync::mpsc::channel::<()>();
        let other = slots.clone();
        let running = thread::spawn(move || {
            let job = other.try_take();
            released.recv().unwrap();
            job
        });
        wait_until("the other thread runs a job", || slots.lock().running == 1);
        (release, running)
    }

    #[test]
    fn with_no_thread_running_an_idle_thread_takes_a_delivery_at_once() {
        let slots = HostSlots::with_grace(NEVER);
        let idle = idle_thread(&slots, Duration::from_secs(10));
        slots.push(7).unwrap();
        assert_eq!(idle.join().unwrap(), Some(7));
    }

    #[test]
    fn a_delivery_is_left_for_the_running_thread_which_goes_on_with_it() {
        let slots = HostSlots::with_grace(NEVER);
        slots.push(1).unwrap();
        assert_eq!(slots.try_take(), Some(1));
        let idle = idle_thread(&slots, Duration::from_millis(300));
        slots.push(2).unwrap();
        assert_eq!(idle.join().unwrap(), None, "the idle thread was not woken for it");
        assert_eq!(
            slots.try_take(),
            Some(2),
            "back from its job, the running thread takes it"
        );
        assert_eq!(slots.lock().running, 1);
    }

    #[test]
    fn past_its_grace_a_delivery_wakes_an_idle_thread() {
        let grace = Duration::from_millis(20);
        let slots = HostSlots::with_grace(grace);
        slots.push(1).unwrap();
        assert_eq!(slots.try_take(), Some(1)); // and never comes back
        let idle = idle_thread(&slots, Duration::from_secs(10));
        let pushed = Instant::now();
        slots.push(2).unwrap();
        assert_eq!(idle.join().unwrap(), Some(2));
        assert!(pushed.elapsed() >= grace, "taken after {:?}", pushed.elapsed());
    }

    #[test]
    fn while_jobs_are_long_each_delivery_wakes_a_thread_at_once() {
        let slots = HostSlots::with_grace(NEVER);
        slots.push(1).unwrap();
        assert_eq!(slots.try_take(), Some(1));
        thread::sleep(LONG_JOB * 20);
        slots.push(2).unwrap();
        assert_eq!(slots.try_take(), Some(2), "back, it goes on with the next");
        let idle = idle_thread(&slots, Duration::from_secs(10));
        slots.push(3).unwrap();
        assert_eq!(idle.join().unwrap(), Some(3));
    }

    #[test]
    fn a_thread_back_while_others_run_rests_until_the_next_falls_due() {
        let slots = HostSlots::with_grace(NEVER);
        for job in 1..=3 {
            slots.push(job).unwrap();
        }
        let (release, running) = another_thread_runs_a_job(&slots);
        assert_eq!(slots.try_take(), Some(2), "a thread not back from a job takes one");
        assert_eq!(slots.try_take(), None, "back while the other runs, it rests");
        assert_eq!(slots.lock().ready.len(), 1);
        release.send(()).unwrap();
        assert_eq!(running.join().unwrap(), Some(1));
        assert_eq!(slots.try_take(), Some(3), "alone, it goes on");
    }

    #[test]
    fn only_a_thread_that_ran_alone_measures_its_job() {
        let slots = HostSlots::with_grace(NEVER);
        slots.push(1).unwrap();
        slots.push(2).unwrap();
        let (release, running) = another_thread_runs_a_job(&slots);
        assert_eq!(slots.try_take(), Some(2));
        thread::sleep(LONG_JOB * 20); // beside the other: maybe waiting for the lock
        assert_eq!(slots.try_take(), None);
        assert_eq!(slots.lock().job_time, 0.0);
        release.send(()).unwrap();
        running.join().unwrap(); // back alone: its job counts
        assert!(slots.lock().long_jobs());
    }

    #[test]
    fn a_thread_that_exits_with_its_job_counts_as_back() {
        let slots = HostSlots::with_grace(NEVER);
        slots.push(1).unwrap();
        let taker = slots.clone();
        assert_eq!(thread::spawn(move || taker.try_take()).join().unwrap(), Some(1));
        assert_eq!(slots.lock().running, 0);
    }

    #[test]
    fn a_thread_moving_to_another_worker_counts_as_back_in_the_first() {
        let (first, second) = (HostSlots::with_grace(NEVER), HostSlots::with_grace(NEVER));
        first.push(1).unwrap();
        second.push(2).unwrap();
        assert_eq!(first.try_take(), Some(1));
        assert_eq!(second.try_take(), Some(2));
        assert_eq!((first.lock().running, second.lock().running), (0, 1));
    }

    #[test]
    fn closing_wakes_the_idle_threads_and_hands_back_what_is_left() {
        let slots = HostSlots::with_grace(NEVER);
        slots.push(1).unwrap();
        assert_eq!(slots.try_take(), Some(1));
        let idle = idle_thread(&slots, Duration::from_secs(10));
        slots.push(2).unwrap();
        assert_eq!(slots.close(), vec![2]);
        assert_eq!(idle.join().unwrap(), None);
        assert_eq!(slots.push(3), Err(3));
    }
}
