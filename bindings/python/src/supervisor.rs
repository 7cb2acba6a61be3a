//! `_core.Supervisor`: the parent of a multi-process worker. The decisions
//! are the core's (`cogworker::host::supervisor`); Python forks.

use cogworker::host::supervisor::{self, Supervisor};
use pyo3::prelude::*;
use std::sync::Mutex;

use crate::errors;

#[pyclass(name = "Supervisor", module = "cogworker._core")]
pub struct PySupervisor {
    /// Locked by `run` only between its waits: signal handlers call
    /// `signal` while it waits.
    inner: Mutex<Supervisor>,
}

#[pymethods]
impl PySupervisor {
    #[new]
    fn new(processes: i64) -> PyResult<Self> {
        let inner = Supervisor::new(processes).map_err(errors::to_py)?;
        Ok(PySupervisor {
            inner: Mutex::new(inner),
        })
    }

    /// Runs the parent (the core's `Supervisor::run`) until its children
    /// have stopped; its exit status. `fork(index)` forks child `index` and
    /// returns its pid, or why the fork failed (a str: the core logs it and
    /// retries); the waits release the GIL and let the signal handlers run.
    fn run(&self, py: Python<'_>, fork: &Bound<'_, PyAny>) -> PyResult<i32> {
        Supervisor::run(
            &self.inner,
            |index| {
                let forked = fork.call1((index,))?;
                Ok(match forked.extract::<i64>() {
                    Ok(pid) => Ok(pid),
                    Err(_) => Err(forked.str()?.to_string()),
                })
            },
            |duration| {
                let seconds = Some(duration.as_secs_f64());
                crate::blocking::wait(py, seconds, cogworker::host::sleep_slice).map(drop)
            },
        )
    }

    /// A signal the parent caught, by name: passed on to the children.
    fn signal(&self, name: &str) -> PyResult<()> {
        let mut inner = self.inner.lock().unwrap_or_else(|p| p.into_inner());
        inner.signal(name).map_err(errors::to_py)
    }
}

/// In a child: logs that its parent is gone; its exit status.
#[pyfunction]
pub fn child_parent_gone(index: usize) -> i32 {
    supervisor::child_parent_gone(index)
}

/// In a child: logs what ended its worker; its exit status.
#[pyfunction]
pub fn child_failed(index: usize, error_class: &str, message: &str, backtrace: Vec<String>) -> i32 {
    supervisor::child_failed(index, error_class, message, &backtrace)
}

/// In a forked child: TERM when the parent dies; False if it already has.
#[pyfunction]
pub fn bind_to_parent(parent_pid: i64) -> bool {
    supervisor::bind_to_parent(parent_pid)
}
