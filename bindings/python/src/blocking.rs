//! The one way this binding blocks: run a core future on the process-global
//! (fork-aware) runtime and wait for it with the GIL released, in short
//! slices, checking for signals between them so Ctrl-C lands promptly.

use pyo3::exceptions::PyRuntimeError;
use pyo3::prelude::*;
use std::future::Future;
use std::time::Duration;

const SLICE: Duration = Duration::from_millis(100);

pub fn wait<F, T>(py: Python<'_>, future: F) -> PyResult<T>
where
    F: Future<Output = T> + Send + 'static,
    T: Send + 'static,
{
    let runtime = cogworker::runtime::global();
    let (tx, rx) = flume::bounded(1);
    let task = runtime.spawn(async move {
        let _ = tx.send(future.await);
    });
    loop {
        match py.detach(|| rx.recv_timeout(SLICE)) {
            Ok(value) => return Ok(value),
            Err(flume::RecvTimeoutError::Timeout) => {
                if let Err(interrupt) = py.check_signals() {
                    task.abort();
                    return Err(interrupt);
                }
            }
            Err(flume::RecvTimeoutError::Disconnected) => {
                return Err(PyRuntimeError::new_err(
                    "cogworker: the operation's task ended without a result",
                ))
            }
        }
    }
}

/// Runs `build` inside the runtime's context (connections are built lazily
/// on it) without blocking.
pub fn in_runtime<T>(build: impl FnOnce() -> T) -> T {
    let runtime = cogworker::runtime::global();
    let _entered = runtime.enter();
    build()
}
