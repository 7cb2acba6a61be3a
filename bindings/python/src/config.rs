//! `Config(**settings)`: each setting converted and handed to the core's
//! settings table, which validates it (ConfigError names it and the value).

use crate::convert;
use crate::errors::to_py;
use cogworker::Config;
use pyo3::prelude::*;
use pyo3::types::PyDict;

#[pyclass(name = "Config", module = "cogworker._core", from_py_object)]
#[derive(Clone)]
pub struct PyConfig {
    pub inner: Config,
}

#[pymethods]
impl PyConfig {
    /// Defaults (`redis_url` from COGWORKER_REDIS_URL / REDIS_URL), then each
    /// keyword setting (None values skipped).
    #[new]
    #[pyo3(signature = (**settings))]
    fn new(settings: Option<&Bound<'_, PyDict>>) -> PyResult<Self> {
        let mut inner = Config::from_env().map_err(to_py)?;
        for (name, value) in settings.into_iter().flatten() {
            if !value.is_none() {
                inner
                    .set(&name.extract::<String>()?, &convert::value(&value))
                    .map_err(to_py)?;
            }
        }
        inner.validate().map_err(to_py)?;
        Ok(PyConfig { inner })
    }

    /// A setting's current value (a password in redis_url masked).
    fn get<'py>(&self, py: Python<'py>, name: &str) -> PyResult<Bound<'py, PyAny>> {
        let value = self.inner.get(name).and_then(|v| v.to_json(name)).map_err(to_py)?;
        convert::to_py(py, &value)
    }

    fn __repr__(&self) -> String {
        format!(
            "Config(redis_url={:?}, namespace={:?})",
            self.inner.redis_url_redacted(),
            self.inner.namespace()
        )
    }
}
