//! Batch callbacks and workflow parts, made by the core
//! (`cogworker::host::workflow`): Python values in, dicts and lists out.

use crate::client::request;
use crate::convert;
use crate::errors::to_py;
use cogworker::host::{prepared, workflow};
use pyo3::prelude::*;
use pyo3::types::PyDict;

/// A batch's callback: `class_name(*args)` with push `options`, pushed on
/// `event`; refused once the batch is `opened`.
#[pyfunction]
#[pyo3(signature = (event, class_name, args, opened, **options))]
pub fn batch_callback<'py>(
    py: Python<'py>,
    event: &str,
    class_name: &str,
    args: &Bound<'py, PyAny>,
    opened: bool,
    options: Option<&Bound<'py, PyDict>>,
) -> PyResult<Bound<'py, PyAny>> {
    let job = prepared(request(class_name, args, options)?).map_err(to_py)?;
    convert::to_py(py, &workflow::callback(event, job, opened).map_err(to_py)?)
}

/// The jids of `callbacks` pushed on `event`.
#[pyfunction]
pub fn callback_jids(callbacks: &Bound<'_, PyAny>, event: &str) -> PyResult<Vec<String>> {
    workflow::callback_jids_of(&convert::value(callbacks), event).map_err(to_py)
}

/// A workflow step of one job, `class_name(*args)` with push `options`.
#[pyfunction]
#[pyo3(signature = (class_name, args, takes_result, **options))]
pub fn workflow_step<'py>(
    py: Python<'py>,
    class_name: &str,
    args: &Bound<'py, PyAny>,
    takes_result: bool,
    options: Option<&Bound<'py, PyDict>>,
) -> PyResult<Bound<'py, PyAny>> {
    let job = prepared(request(class_name, args, options)?).map_err(to_py)?;
    convert::to_py(py, &workflow::step(job, takes_result))
}

/// `steps` run side by side as one step.
#[pyfunction]
pub fn workflow_group<'py>(
    py: Python<'py>,
    steps: &Bound<'py, PyAny>,
    takes_result: bool,
) -> PyResult<Bound<'py, PyAny>> {
    convert::to_py(
        py,
        &workflow::group_of(&convert::value(steps), takes_result).map_err(to_py)?,
    )
}

/// `(steps, description)` of a workflow of `shape` (workflow, chain, chord).
#[pyfunction]
#[pyo3(signature = (shape, steps, callback=None, description=None))]
pub fn workflow_shaped<'py>(
    py: Python<'py>,
    shape: &str,
    steps: &Bound<'py, PyAny>,
    callback: Option<&Bound<'py, PyAny>>,
    description: Option<&str>,
) -> PyResult<(Bound<'py, PyAny>, String)> {
    let callback = callback.map(convert::value);
    let (steps, description) =
        workflow::shaped_of(shape, &convert::value(steps), callback.as_ref(), description).map_err(to_py)?;
    Ok((convert::to_py(py, &serde_json::Value::Array(steps))?, description))
}
