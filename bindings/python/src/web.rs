//! `WebServer`: the core's dashboard served on the global runtime, for
//! `cogworker web`; `RedisServer`: the core's private test server.

use crate::blocking;
use crate::config::PyConfig;
use crate::errors::to_py;
use cogworker::host::web_args;
use cogworker::redis_server::RedisServer;
use cogworker::web::{BackgroundWeb, WebOptions};
use pyo3::prelude::*;

#[pyclass(name = "WebServer", module = "cogworker._core")]
pub struct PyWebServer {
    inner: BackgroundWeb,
}

#[pymethods]
impl PyWebServer {
    /// `cogworker web` or `cogworker metrics` (`command`), with the flags
    /// `given` (each with its texts, as `command_flags` lists them): binds
    /// and starts serving; the core reads the flags and fills in what is
    /// not given from the environment.
    #[new]
    fn new(py: Python<'_>, config: &PyConfig, command: &str, given: Vec<(String, Vec<String>)>) -> PyResult<Self> {
        let args = web_args(command, &given).map_err(to_py)?;
        let options = WebOptions::from_cli(&args).map_err(to_py)?;
        let inner = py
            .detach(|| BackgroundWeb::start(&config.inner, &options))
            .map_err(to_py)?;
        Ok(PyWebServer { inner })
    }

    /// `http://host:port/`.
    #[getter]
    fn url(&self) -> String {
        self.inner.url()
    }

    /// The line the CLI prints once it listens.
    #[getter]
    fn address_line(&self) -> String {
        self.inner.address_line()
    }

    fn stop(&self) {
        self.inner.stop();
    }

    /// On TERM or INT (`signal`, by name): says so and stops.
    fn stop_on_signal(&self, signal: &str) {
        self.inner.stop_on_signal(signal);
    }

    /// Waits up to `timeout` seconds for the server to end; True once it has.
    fn wait(&self, py: Python<'_>, timeout: f64) -> PyResult<bool> {
        let ended = blocking::wait(py, Some(timeout), |slice| self.inner.wait(slice))?;
        Ok(ended.transpose().map_err(to_py)?.is_some())
    }
}

#[pyclass(name = "RedisServer", module = "cogworker._core")]
pub struct PyRedisServer(RedisServer);

#[pymethods]
impl PyRedisServer {
    /// Starts `redis-server` with `extra` arguments on `port` (default: a
    /// free one).
    #[new]
    #[pyo3(signature = (extra, port=None))]
    fn new(py: Python<'_>, extra: Vec<String>, port: Option<u16>) -> PyResult<Self> {
        let extra: Vec<&str> = extra.iter().map(String::as_str).collect();
        let server = py.detach(|| RedisServer::start_at(port, &extra));
        server.map(PyRedisServer).map_err(to_py)
    }

    /// `(url, port, data directory)`.
    #[getter]
    fn info(&self) -> (String, u16, String) {
        (self.0.url(), self.0.port(), self.0.dir().display().to_string())
    }

    /// Starts it again after `kill` (same port and data directory).
    fn spawn(&self, py: Python<'_>) -> PyResult<()> {
        py.detach(|| self.0.spawn()).map_err(to_py)
    }

    /// SIGKILL, and waits for the exit.
    fn kill(&self) {
        self.0.kill();
    }
}
