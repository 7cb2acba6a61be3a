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

/// A core operation running on the global runtime (see [`spawn`]).
pub struct Pending<T>(flume::Receiver<Result<T>>);

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
    Pending(rx)
}

impl<T> Pending<T> {
    /// Blocks up to `slice` for the result.
    pub fn poll(&self, slice: Duration) -> Option<Result<T>> {
        match self.0.recv_timeout(slice) {
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
        let pending = spawn(async { Ok(7) });
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
