//! The engine's log lines handed to Python's `logging` for a worker
//! embedded in an application (see `cogworker::host::logs` in the core).

use crate::blocking;
use pyo3::prelude::*;
use pyo3::types::PyDict;

/// Sends the engine's log lines to Python (drained by `run_log_forwarding`)
/// unless this process chose a format already (the CLI's): true if so.
#[pyfunction]
pub fn init_log_forwarding() -> bool {
    cogworker::host::init_log_forwarding()
}

/// Runs this thread as the log thread until `stop_log_forwarding`:
/// `emit(level, target, thread, message, fields)` for each line (an emit
/// that raises is reported as unraisable, and the next line goes on).
#[pyfunction]
pub fn run_log_forwarding(py: Python<'_>, emit: &Bound<'_, PyAny>) -> PyResult<()> {
    cogworker::host::run_log_forwarding(&mut blocking::Blocking(py), |line| {
        let fields = PyDict::new(py);
        for (name, value) in &line.fields {
            fields.set_item(name, value)?;
        }
        let args = (line.level, line.target, line.thread, line.message, fields);
        if let Err(error) = emit.call1(args) {
            error.write_unraisable(py, Some(emit));
        }
        Ok(())
    })
}

/// Ends `run_log_forwarding` once the lines queued are emitted.
#[pyfunction]
pub fn stop_log_forwarding() {
    cogworker::host::stop_log_forwarding();
}
