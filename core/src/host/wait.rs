//! The one way a binding blocks: in short slices, asking between slices
//! whether the host wants to stop waiting (Python: a signal handler raised;
//! Ruby: the unblock function fired), so Ctrl-C, `Thread#kill` and process
//! exit never wait out a long block.

use crate::error::{Error, Result};
use std::future::Future;
use std::time::{Duration, Instant};

/// How a [`wait`] ended.
#[derive(Debug, PartialEq, Eq)]
pub enum Waited<T> {
    /// The value arrived.
    Ready(T),
    /// The deadline passed first.
    TimedOut,
    /// The host asked to stop waiting.
    Interrupted,
}

/// Longest single block between two looks at `interrupted`.
const SLICE: Duration = Duration::from_millis(50);

/// Calls `poll` (which blocks up to the time it is given and returns
/// `Some` once the value is there) until it yields, `deadline` passes
/// (`None`: no deadline) or `interrupted()` says to stop.
pub fn wait<T>(
    deadline: Option<Instant>,
    mut poll: impl FnMut(Duration) -> Option<T>,
    mut interrupted: impl FnMut() -> bool,
) -> Waited<T> {
    loop {
        let slice = match deadline {
            Some(deadline) => deadline.saturating_duration_since(Instant::now()).min(SLICE),
            None => SLICE,
        };
        if let Some(value) = poll(slice) {
            return Waited::Ready(value);
        }
        if deadline.is_some_and(|d| Instant::now() >= d) {
            return Waited::TimedOut;
        }
        if interrupted() {
            return Waited::Interrupted;
        }
    }
}

/// A [`wait`] poll that only sleeps its slice: waiting with it is a sleep
/// the host can interrupt, and its signal handlers run between slices.
pub fn sleep_slice(slice: Duration) -> Option<()> {
    std::thread::sleep(slice);
    None
}

/// The deadline `timeout` seconds from now for [`wait`], whatever number a
/// host passes: `None` (forever) for `None`, an infinite or an
/// unrepresentably long timeout; now for zero or a negative one; an
/// error naming `timeout` for NaN.
pub fn deadline_after(timeout: Option<f64>) -> Result<Option<Instant>> {
    let Some(seconds) = timeout else {
        return Ok(None);
    };
    if seconds.is_nan() {
        return Err(Error::invalid_argument(
            "timeout",
            seconds,
            "must be a number of seconds, not NaN",
        ));
    }
    let now = Instant::now();
    Ok(Duration::try_from_secs_f64(seconds.max(0.0))
        .ok()
        .and_then(|duration| now.checked_add(duration)))
}

/// What starting a core operation gives: its result, or the operation
/// still running.
pub type Started<T> = std::result::Result<Result<T>, Pending<T>>;

/// A core operation still running: on the global runtime (see [`spawn`]),
/// or on the calling thread's lane (see `lanes.rs`), which [`Pending::poll`]
/// drives.
pub struct Pending<T>(Running<T>);

enum Running<T> {
    OnRuntime(flume::Receiver<Result<T>>),
    OnLane(Box<super::lanes::LaneCall<T>>),
}

/// Starts `future` on the process-global runtime; poll its result with
/// [`Pending::poll`] inside [`wait`].
pub fn spawn<F, T>(future: F) -> Pending<T>
where
    F: Future<Output = Result<T>> + Send + 'static,
    T: Send + 'static,
{
    let (tx, rx) = flume::bounded(1);
    crate::runtime::global().spawn(async move {
        let _ = tx.send(future.await);
    });
    Pending(Running::OnRuntime(rx))
}

/// How long the bindings run a core operation on the calling thread
/// ([`start`]) before waiting for it where the host can interrupt the wait:
/// most operations (a push, a status read: one round trip) finish within
/// it, and a host's signals wait at most this long.
pub const ON_CALLING_THREAD: Duration = Duration::from_millis(2);

/// A core operation run on the calling (host) thread for up to `first`,
/// with no hop to a runtime thread and back: a push or a status read then
/// costs its round trip to Redis and little else. One still running after
/// `first` goes on on the global runtime, to be waited for in [`wait`]
/// (which a host can interrupt); so does any operation started on a thread
/// that is itself inside a runtime.
pub fn start<F, T>(future: F, first: Duration) -> Started<T>
where
    F: Future<Output = Result<T>> + Send + 'static,
    T: Send + 'static,
{
    if tokio::runtime::Handle::try_current().is_ok() {
        return Err(spawn(future));
    }
    let mut future = Box::pin(future);
    // The timer is made inside `block_on`, where the runtime is current.
    let run_first = async { tokio::time::timeout(first, &mut future).await };
    match crate::runtime::global().block_on(run_first) {
        Ok(result) => Ok(result),
        Err(_) => Err(spawn(future)),
    }
}

impl<T> Pending<T> {
    pub(crate) fn on_lane(call: super::lanes::LaneCall<T>) -> Self {
        Pending(Running::OnLane(Box::new(call)))
    }

    /// Blocks up to `slice` for the result.
    pub fn poll(&mut self, slice: Duration) -> Option<Result<T>> {
        let receiver = match &mut self.0 {
            Running::OnRuntime(receiver) => receiver,
            Running::OnLane(call) => return call.poll(slice),
        };
        match receiver.recv_timeout(slice) {
            Ok(result) => Some(result),
            Err(flume::RecvTimeoutError::Timeout) => None,
            Err(flume::RecvTimeoutError::Disconnected) => Some(Err(Error::Redis(redis::RedisError::from(
                std::io::Error::other("the operation ended without a result"),
            )))),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ready_timed_out_or_interrupted() {
        let mut pending = spawn(async { Ok(7) });
        let got = wait(None, |slice| pending.poll(slice), || false);
        assert!(matches!(got, Waited::Ready(Ok(7))));
        let (_sender, never) = flume::bounded::<()>(1);
        let deadline = Instant::now() + Duration::from_millis(120);
        assert_eq!(
            wait(Some(deadline), |s| never.recv_timeout(s).ok(), || false),
            Waited::TimedOut
        );
        assert!(Instant::now() >= deadline);
        let mut asked = 0;
        let started = Instant::now();
        let got = wait(
            None,
            |s| never.recv_timeout(s).ok(),
            || {
                asked += 1;
                asked == 3
            },
        );
        assert_eq!(got, Waited::Interrupted);
        assert!(started.elapsed() < Duration::from_secs(1));
    }

    #[test]
    fn an_operation_runs_on_the_calling_thread_then_goes_on_on_the_runtime() {
        let caller = std::thread::current().id();
        let quick = start(
            async move { Ok(std::thread::current().id()) },
            Duration::from_millis(50),
        );
        assert_eq!(quick.ok().unwrap().unwrap(), caller, "run here, no hop");

        // Still running after `first`: not lost, finished on the runtime.
        let slow = start(
            async {
                tokio::time::sleep(Duration::from_millis(30)).await;
                Ok(std::thread::current().id())
            },
            Duration::from_millis(1),
        );
        let Err(mut pending) = slow else {
            panic!("still running after 1 ms")
        };
        let finished = match wait(None, |slice| pending.poll(slice), || false) {
            Waited::Ready(result) => result.unwrap(),
            other => panic!("{other:?}"),
        };
        assert_ne!(finished, caller);

        // From inside a runtime (block_on would panic there): spawned.
        crate::runtime::global().block_on(async {
            assert!(start(async { Ok(1) }, Duration::from_millis(50)).is_err());
        });
    }

    #[test]
    fn any_timeout_a_host_passes_gives_a_deadline_or_a_named_error() {
        assert_eq!(deadline_after(None).unwrap(), None);
        assert_eq!(deadline_after(Some(f64::INFINITY)).unwrap(), None);
        assert_eq!(deadline_after(Some(1e300)).unwrap(), None);
        let now = Instant::now();
        assert!(deadline_after(Some(-5.0)).unwrap().unwrap() <= Instant::now());
        assert!(deadline_after(Some(f64::NEG_INFINITY)).unwrap().unwrap() >= now);
        assert!(deadline_after(Some(2.0)).unwrap().unwrap() > now + Duration::from_secs(1));
        let err = deadline_after(Some(f64::NAN)).unwrap_err().to_string();
        assert!(err.contains("timeout"), "{err}");
    }
}
