//! The one way this binding blocks: a core wait with the GIL released,
//! looking for signals (Ctrl-C) between short slices.

use cogworker::host::{self, Waited};
use pyo3::prelude::*;
use std::time::Duration;

/// `poll` (blocking up to the time it is given) until it yields: `None`
/// once `timeout` (seconds; `None`: forever) passes. A signal handler that
/// raises (KeyboardInterrupt) ends the wait with its exception.
pub fn wait<T: Send>(
    py: Python<'_>,
    timeout: Option<f64>,
    poll: impl FnMut(Duration) -> Option<T> + Send,
) -> PyResult<Option<T>> {
    let deadline = host::deadline_after(timeout).map_err(crate::errors::to_py)?;
    let mut raised = None;
    let waited = py.detach(|| {
        host::wait(deadline, poll, || {
            raised = Python::attach(|py| py.check_signals().err());
            raised.is_some()
        })
    });
    match waited {
        Waited::Ready(value) => Ok(Some(value)),
        Waited::TimedOut => Ok(None),
        Waited::Interrupted => Err(raised.expect("an interrupted wait has its exception")),
    }
}

/// The core's slot and events loops wait as above ([`host::HostWait`]).
pub struct Blocking<'py>(pub Python<'py>);

impl host::HostWait for Blocking<'_> {
    type Error = PyErr;

    fn wait<T: Send>(
        &mut self,
        slice: Duration,
        poll: impl FnMut(Duration) -> Option<T> + Send,
    ) -> PyResult<Option<T>> {
        wait(self.0, Some(slice.as_secs_f64()), poll)
    }

    /// `threading.current_thread().name`.
    fn thread_name(&self) -> Option<String> {
        let thread = self.0.import("threading").ok()?.call_method0("current_thread").ok()?;
        thread.getattr("name").ok()?.extract().ok()
    }
}

/// Runs a core operation to completion, waiting as above.
pub fn run<F, T>(py: Python<'_>, future: F) -> PyResult<T>
where
    F: std::future::Future<Output = cogworker::Result<T>> + Send + 'static,
    T: Send + 'static,
{
    finish(py, |first| host::start(future, first))
}

/// [`run`] for an operation `start` begins (given how long it may run on
/// this thread): `host::start`, or `Session::start` on a lane.
pub fn finish<T: Send>(py: Python<'_>, start: impl FnOnce(Duration) -> host::Started<T> + Send) -> PyResult<T> {
    // Run on this thread with the GIL released; one that takes longer goes
    // on where Ctrl-C can end the wait.
    let result = match py.detach(|| start(host::ON_CALLING_THREAD)) {
        Ok(result) => result,
        Err(mut pending) => wait(py, None, |slice| pending.poll(slice))?.expect("a wait without deadline yields"),
    };
    result.map_err(crate::errors::to_py)
}
