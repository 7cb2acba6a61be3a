//! `WebServer`: the core's dashboard served on the global runtime, for
//! `cogworker web`. Waits release the GIL.

use crate::config::PyConfig;
use crate::errors::to_py;
use cogworker::web::{BackgroundWeb, WebOptions};
use pyo3::prelude::*;
use std::time::Duration;

const SLICE: Duration = Duration::from_millis(100);

#[pyclass(name = "WebServer", module = "cogworker._core")]
pub struct PyWebServer {
    inner: BackgroundWeb,
}

#[pymethods]
impl PyWebServer {
    /// Binds `host:port` and starts serving; `auth` is `user:password`.
    #[new]
    #[pyo3(signature = (config, host="127.0.0.1", port=7890, auth=None))]
    fn new(py: Python<'_>, config: &PyConfig, host: &str, port: u16, auth: Option<&str>) -> PyResult<Self> {
        let mut options = WebOptions::default();
        options.set_bind(host, port).map_err(to_py)?;
        if let Some(auth) = auth {
            options.set_credentials(auth).map_err(to_py)?;
        }
        let config = config.inner.clone();
        let inner = py.detach(|| BackgroundWeb::start(&config, &options)).map_err(to_py)?;
        Ok(PyWebServer { inner })
    }

    /// `http://host:port/`.
    #[getter]
    fn url(&self) -> String {
        format!("http://{}/", self.inner.address())
    }

    fn stop(&self) {
        self.inner.stop();
    }

    /// Waits up to `timeout` seconds for the server to end; True once it has.
    fn wait(&self, py: Python<'_>, timeout: f64) -> PyResult<bool> {
        let mut left = Duration::from_secs_f64(timeout.max(0.0));
        loop {
            let slice = left.min(SLICE);
            match py.detach(|| self.inner.wait(slice)) {
                Some(result) => return result.map(|()| true).map_err(to_py),
                None if left > slice => {
                    left -= slice;
                    py.check_signals()?;
                }
                None => return Ok(false),
            }
        }
    }
}
