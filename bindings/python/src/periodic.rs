//! `periodic_entry(cron, class, **options)`: a periodic entry built and
//! checked by the core from Python values (errors name the field).

use crate::convert;
use crate::errors::to_py;
use cogworker::host::{periodic_entry, HostValue};
use cogworker::Periodic;
use pyo3::prelude::*;
use pyo3::types::PyDict;

#[pyclass(name = "Periodic", module = "cogworker._core", frozen)]
pub struct PyPeriodic(pub Periodic);

#[pymethods]
impl PyPeriodic {
    /// The entry's id (the same for the same entry in any language).
    #[getter]
    fn pjid(&self) -> String {
        self.0.pjid()
    }

    /// The entry as registered: `cron`, `class`, `args`, `queue`, and
    /// `tz`, `unique`, `retry` when given.
    #[getter]
    fn entry<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        convert::to_py(py, &self.0.describe())
    }
}

/// The entry pushing `class_name` on every slot of `cron`; options `args`,
/// `queue`, `unique`, `tz`, `retry` (None: not given).
#[pyfunction]
#[pyo3(name = "periodic_entry", signature = (cron, class_name, **options))]
pub fn entry(cron: &str, class_name: &str, options: Option<&Bound<'_, PyDict>>) -> PyResult<PyPeriodic> {
    let options = options
        .into_iter()
        .flatten()
        .map(|(k, v)| Ok((k.extract()?, convert::value(&v))))
        .collect::<PyResult<Vec<(String, HostValue)>>>()?;
    periodic_entry(cron, class_name, &options)
        .map(PyPeriodic)
        .map_err(to_py)
}
