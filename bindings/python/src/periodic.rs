//! `periodic_entry(cron, class, declared, **options)`: a periodic entry built and
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
/// `queue`, `unique`, `tz`, `retry` (None: not given), and the handler's
/// `declared` push options, of which the core takes what an entry takes.
#[pyfunction]
#[pyo3(name = "periodic_entry", signature = (cron, class_name, declared, **options))]
pub fn entry(
    cron: &str,
    class_name: &str,
    declared: Option<&Bound<'_, PyDict>>,
    options: Option<&Bound<'_, PyDict>>,
) -> PyResult<PyPeriodic> {
    let pairs = |dict: Option<&Bound<'_, PyDict>>| {
        dict.into_iter()
            .flatten()
            .map(|(k, v)| Ok((k.extract()?, convert::value(&v))))
            .collect::<PyResult<Vec<(String, HostValue)>>>()
    };
    periodic_entry(cron, class_name, &pairs(options)?, &pairs(declared)?)
        .map(PyPeriodic)
        .map_err(to_py)
}
