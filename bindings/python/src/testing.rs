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

/// Classes with recorded jobs.
#[pyfunction]
pub fn testing_classes() -> Vec<String> {
    testing::classes()
}

/// Takes the oldest recorded job of `class_name`, or None.
#[pyfunction]
pub fn testing_take<'py>(py: Python<'py>, class_name: &str) -> PyResult<Option<Bound<'py, PyAny>>> {
    testing::take_oldest(class_name)
        .map(|job| convert::to_py(py, &job))
        .transpose()
}

/// Forgets the recorded jobs of `class_name` (everything: None).
#[pyfunction]
#[pyo3(signature = (class_name=None))]
pub fn testing_clear(class_name: Option<&str>) {
    testing::clear(class_name);
}

/// A job run in a testing mode returned `value`, or raised
/// (`error_class`, `error_message` given).
#[pyfunction]
#[pyo3(signature = (job, value, error_class=None, error_message=None))]
pub fn testing_settled(
    job: &Bound<'_, PyAny>,
    value: &Bound<'_, PyAny>,
    error_class: Option<String>,
    error_message: Option<String>,
) -> PyResult<()> {
    let job = convert::value(job).to_json("job").map_err(to_py)?;
    let outcome = match error_class {
        Some(class) => Err((class, error_message.unwrap_or_default())),
        None => Ok(convert::value(value).to_json("result").map_err(to_py)?),
    };
    testing::settled(&job, outcome);
    Ok(())
}

/// `result(jid)` in a testing mode, as `Client.result` shapes it.
#[pyfunction]
pub fn testing_result<'py>(py: Python<'py>, jid: &str) -> PyResult<(&'static str, Bound<'py, PyAny>)> {
    outcome(py, testing::result(jid))
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
