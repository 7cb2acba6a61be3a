//! `_core.Supervisor`: the parent of a multi-process worker. The decisions
//! are the core's (`cogworker::host::supervisor`); Python forks.

use cogworker::host::supervisor::{self, Supervisor};
use pyo3::prelude::*;

use crate::errors;

#[pyclass(name = "Supervisor", module = "cogworker._core")]
pub struct PySupervisor {
    inner: Supervisor,
}

#[pymethods]
impl PySupervisor {
    #[new]
    fn new(processes: i64) -> PyResult<Self> {
        let inner = Supervisor::new(processes).map_err(errors::to_py)?;
        Ok(PySupervisor { inner })
    }

    /// `(indexes to fork now, exit status or None, seconds to sleep)`.
    fn poll(&mut self) -> (Vec<usize>, Option<i32>, f64) {
        let poll = self.inner.poll();
        (poll.spawn, poll.exit, poll.wait.as_secs_f64())
    }

    fn started(&mut self, index: usize, pid: i64) {
        self.inner.started(index, pid);
    }

    fn fork_failed(&mut self, index: usize, reason: &str) {
        self.inner.fork_failed(index, reason);
    }

    fn signal(&mut self, name: &str) -> PyResult<()> {
        self.inner.signal(name).map_err(errors::to_py)
    }
}

/// In a forked child: TERM when the parent dies; False if it already has.
#[pyfunction]
pub fn bind_to_parent(parent_pid: i64) -> bool {
    supervisor::bind_to_parent(parent_pid)
}
