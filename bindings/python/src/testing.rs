//! The testing modes' state, kept by the core (`cogworker::host::testing`):
//! `cogworker/testing.py` calls these and runs the jobs.

use crate::convert;
use crate::errors::to_py;
use cogworker::host::testing::{self, TestingMode};
use cogworker::JobOutcome;
use pyo3::prelude::*;
use pyo3::IntoPyObjectExt;

/// Switches to `mode` ("fake", "inline" or None); returns the mode before.
#[pyfunction]
#[pyo3(signature = (mode=None))]
pub fn set_testing_mode(mode: Option<&str>) -> PyResult<Option<&'static str>> {
    let mode = TestingMode::parse(mode).map_err(to_py)?;
    Ok(testing::set_mode(mode).map(TestingMode::name))
}

/// "fake", "inline", or None.
#[pyfunction]
pub fn testing_mode() -> Option<&'static str> {
    testing::mode().map(TestingMode::name)
}

/// The recorded jobs of `class_name` (every class: None), oldest first.
#[pyfunction]
#[pyo3(signature = (class_name=None))]
pub fn testing_jobs<'py>(py: Python<'py>, class_name: Option<&str>) -> PyResult<Vec<Bound<'py, PyAny>>> {
    testing::jobs(class_name)
        .iter()
        .map(|job| convert::to_py(py, job))
        .collect()
}

/// Runs the oldest recorded job of `class_name` with `run(job)`; its
/// value. IndexError when none is recorded.
#[pyfunction]
pub fn testing_perform_one<'py>(
    py: Python<'py>,
    class_name: &str,
    run: &Bound<'py, PyAny>,
) -> PyResult<Bound<'py, PyAny>> {
    testing::perform_one(class_name, |job| run.call1((convert::to_py(py, &job)?,))).unwrap_or_else(|| {
        Err(pyo3::exceptions::PyIndexError::new_err(testing::nothing_recorded(
            class_name,
        )))
    })
}

/// Runs the recorded jobs of `class_name` (every class: None) with
/// `run(job)`, jobs they push included, until none is left; how many ran.
#[pyfunction]
#[pyo3(signature = (run, class_name=None))]
pub fn testing_drain(py: Python<'_>, run: &Bound<'_, PyAny>, class_name: Option<&str>) -> PyResult<usize> {
    testing::drain(class_name, |job| run.call1((convert::to_py(py, &job)?,)).map(drop))
}

/// Runs `job` with `call()` (the handler), keeping its outcome when the
/// job keeps its result; returns its value, or raises what it raised.
#[pyfunction]
pub fn testing_run<'py>(
    py: Python<'py>,
    job: &Bound<'py, PyAny>,
    call: &Bound<'py, PyAny>,
) -> PyResult<Bound<'py, PyAny>> {
    let job = convert::value(job).to_json("job").map_err(to_py)?;
    testing::run(
        &job,
        || call.call0(),
        |value| convert::value(value).to_json("result").map_err(to_py),
        |error| crate::errors::describe_parts(py, error),
    )
}

/// Forgets the recorded jobs of `class_name` (everything: None).
#[pyfunction]
#[pyo3(signature = (class_name=None))]
pub fn testing_clear(class_name: Option<&str>) {
    testing::clear(class_name);
}

/// `result(jid)` in a testing mode, as `Client.result` shapes it.
#[pyfunction]
pub fn testing_result<'py>(py: Python<'py>, jid: &str) -> PyResult<(&'static str, Bound<'py, PyAny>)> {
    outcome(py, testing::result(jid))
}

/// Raises the core's error for a job of a class no handler is registered
/// for (`InvalidArgument` on field `class`).
#[pyfunction]
pub fn testing_unknown_class(class_name: &str) -> PyResult<()> {
    Err(to_py(testing::unknown_class(class_name)))
}

/// `status(jid)` in a testing mode.
#[pyfunction]
pub fn testing_status(jid: &str) -> String {
    testing::status(jid)
}

/// `("succeeded", value)`, `("failed", record)` or `("pending", status)`.
pub fn outcome<'py>(py: Python<'py>, outcome: JobOutcome) -> PyResult<(&'static str, Bound<'py, PyAny>)> {
    Ok(match outcome {
        JobOutcome::Succeeded(value) => ("succeeded", convert::to_py(py, &value)?),
        JobOutcome::Failed(record) => ("failed", convert::to_py(py, &record)?),
        JobOutcome::Pending(status) => ("pending", status.into_bound_py_any(py)?),
    })
}
