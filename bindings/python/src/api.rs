//! `Api`: every ops-API call by name (the core's table), and the admin
//! commands. Arguments arrive as Python values; results leave as Python
//! values (dicts, lists, ...).

use crate::blocking::{finish, run};
use crate::client::PyClient;
use crate::config::PyConfig;
use crate::convert;
use crate::errors::to_py;
use cogworker::host::{admin, api_calls as calls, Session};
use pyo3::prelude::*;
use std::sync::Arc;

#[pyclass(name = "Api", module = "cogworker._core")]
pub struct PyApi(Arc<Session>);

#[pymethods]
impl PyApi {
    #[new]
    fn new(config: &PyConfig) -> Self {
        PyApi(Arc::new(Session::new(config.inner.clone())))
    }

    /// The ops API on `client`'s session: its configuration and its
    /// connection (no connection of its own).
    #[staticmethod]
    fn of_client(client: &PyClient) -> Self {
        PyApi(client.0.clone())
    }

    /// Runs the API call `name` with positional `args`; its result.
    fn call<'py>(&self, py: Python<'py>, name: String, args: &Bound<'py, PyAny>) -> PyResult<Bound<'py, PyAny>> {
        let args = cogworker::host::HostValue::json_list(&convert::values(args)?, &name).map_err(to_py)?;
        let result = finish(py, |first| {
            self.0
                .start_api(|api| async move { calls::call(&api, &name, args).await }, first)
        })?;
        convert::to_py(py, &result)
    }

    /// Follows job `jid` (docs/long-jobs.md): subscribed when this returns.
    fn watch(&self, py: Python<'_>, jid: String) -> PyResult<PyWatch> {
        let api = self.0.api().map_err(to_py)?;
        let watch = run(py, self.0.naming_redis(cogworker::host::HostWatch::start(api, jid)))?;
        Ok(PyWatch(watch))
    }

    /// Runs an admin command; the text to print.
    #[pyo3(signature = (command, arg=None))]
    fn admin(&self, py: Python<'_>, command: String, arg: Option<String>) -> PyResult<String> {
        let api = self.0.api().map_err(to_py)?;
        run(
            py,
            self.0
                .naming_redis(async move { admin::run(&api, &command, arg.as_deref()).await }),
        )
    }
}

/// A job being followed: `next(timeout)` gives `(kind, value)` events.
#[pyclass(name = "Watch", module = "cogworker._core")]
pub struct PyWatch(cogworker::host::HostWatch);

#[pymethods]
impl PyWatch {
    /// The next event, `("progress", report)` or `("finished", end)`,
    /// waiting up to `timeout` seconds (None: until it comes); None once
    /// the end was given or the timeout passed.
    #[pyo3(signature = (timeout=None))]
    fn next<'py>(&self, py: Python<'py>, timeout: Option<f64>) -> PyResult<Option<(&'static str, Bound<'py, PyAny>)>> {
        let timeout = timeout.map(|t| std::time::Duration::from_secs_f64(t.clamp(0.0, 1e9)));
        let event = run(py, self.0.clone().next(timeout))?;
        event
            .map(|(kind, value)| Ok((kind, convert::to_py(py, &value)?)))
            .transpose()
    }
}

/// `(name, params, help)` of every API call.
#[pyfunction]
pub fn api_calls() -> Vec<(&'static str, Vec<&'static str>, &'static str)> {
    calls::CALLS
        .iter()
        .map(|c| (c.name, c.params.to_vec(), c.help))
        .collect()
}

/// `(name, argument or None, help)` of every admin command.
#[pyfunction]
pub fn admin_commands() -> Vec<(&'static str, Option<&'static str>, &'static str)> {
    admin::COMMANDS.iter().map(|c| (c.name, c.arg, c.help)).collect()
}
