//! `Client`: pushes jobs. Arguments are converted to JSON here; the job is
//! built, validated and written by the core.

use crate::blocking::finish;
use crate::config::PyConfig;
use crate::convert;
use crate::errors::to_py;
use cogworker::host::{
    carry_trace_context, payload_job, prepared, push_through, HostValue, PushRequest, Session, COMPUTED_OPTIONS,
    COMPUTED_STAND_IN,
};
use cogworker::{Client, Job};
use pyo3::prelude::*;
use pyo3::types::PyDict;
use std::collections::HashMap;
use std::sync::Arc;

/// `class_name(*args)` with keyword options (the core's push options).
pub(crate) fn request(class_name: &str, args: &Bound<'_, PyAny>, options: Option<&Bound<'_, PyDict>>) -> PyResult<Job> {
    let named = computed(convert::named(options)?, options, |function| {
        let args = args.try_iter()?.collect::<PyResult<Vec<_>>>()?;
        let value = function.call1(pyo3::types::PyTuple::new(function.py(), args)?)?;
        Ok(convert::value(&value))
    })?;
    PushRequest::job(class_name, &convert::values(args)?, &named).map_err(to_py)
}

/// `named` with each option the core lets be computed
/// (`COMPUTED_OPTIONS`: `group=lambda account_id, *_: f"acct:{account_id}"`)
/// that `options` gives as a function replaced by what `call` makes of it.
fn computed(
    mut named: Vec<(String, HostValue)>,
    options: Option<&Bound<'_, PyDict>>,
    call: impl Fn(&Bound<'_, PyAny>) -> PyResult<HostValue>,
) -> PyResult<Vec<(String, HostValue)>> {
    let Some(options) = options else { return Ok(named) };
    for name in COMPUTED_OPTIONS {
        if let Some(function) = options.get_item(name)?.filter(|f| f.is_callable()) {
            let value = call(&function)?;
            named.retain(|(given, _)| given != name);
            named.push((name.to_string(), value));
        }
    }
    Ok(named)
}

/// Checks a class's declared push options where they are written (a
/// misspelt or bad one raises there): a computed option, with no args to
/// call it with, stands as the core's `COMPUTED_STAND_IN`.
#[pyfunction]
#[pyo3(signature = (class_name, **options))]
pub fn check_options(class_name: &str, options: Option<&Bound<'_, PyDict>>) -> PyResult<()> {
    let named = computed(convert::named(options)?, options, |_| {
        Ok(HostValue::Text(COMPUTED_STAND_IN.to_string()))
    })?;
    PushRequest::job(class_name, &[], &named).map_err(to_py)?;
    Ok(())
}

/// The job `class_name(*args)` would be (a dict), validated and filled as a
/// push fills it: what client middleware sees and the testing modes record.
#[pyfunction]
#[pyo3(signature = (class_name, args, **options))]
pub fn prepare_job<'py>(
    py: Python<'py>,
    class_name: &str,
    args: &Bound<'py, PyAny>,
    options: Option<&Bound<'py, PyDict>>,
) -> PyResult<Bound<'py, PyAny>> {
    let job = prepared(request(class_name, args, options)?).map_err(to_py)?;
    convert::to_py(py, &job.into_value())
}

/// A raw payload (a dict with at least `class`) checked and filled the same way.
#[pyfunction]
pub fn prepare_payload<'py>(py: Python<'py>, payload: &Bound<'py, PyAny>) -> PyResult<Bound<'py, PyAny>> {
    let job = payload_job(&convert::value(payload), "job")
        .and_then(prepared)
        .map_err(to_py)?;
    convert::to_py(py, &job.into_value())
}

/// One job per args tuple in `args_list`, each as `request` builds it.
fn requests(class_name: &str, args_list: &Bound<'_, PyAny>, options: Option<&Bound<'_, PyDict>>) -> PyResult<Vec<Job>> {
    args_list
        .try_iter()?
        .map(|args| request(class_name, &args?, options))
        .collect()
}

#[pyclass(name = "Client", module = "cogworker._core")]
pub struct PyClient(pub Arc<Session>);

impl PyClient {
    fn push_jobs(&self, py: Python<'_>, jobs: Vec<Job>) -> PyResult<Vec<Option<String>>> {
        let push = |client: Client| async move { client.push_bulk(jobs).await };
        finish(py, |first| self.0.start(push, first))
    }

    /// The core's push order (`push_through`): `middleware(job)` (a dict;
    /// returns it or None), then a testing mode's record, where inline
    /// mode's `run(job)` runs it, or one round trip.
    fn push_through(
        &self,
        py: Python<'_>,
        jobs: Vec<Job>,
        middleware: Option<&Bound<'_, PyAny>>,
        run: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Vec<Option<String>>> {
        let middleware = middleware.map(|middleware| {
            move |job: Job| -> PyResult<Option<Job>> {
                let passed = middleware.call1((convert::to_py(py, &job.into_value())?,))?;
                if passed.is_none() {
                    return Ok(None);
                }
                payload_job(&convert::value(&passed), "job").map(Some).map_err(to_py)
            }
        });
        let run = |job: serde_json::Value| -> PyResult<()> {
            let run = run.ok_or_else(|| pyo3::exceptions::PyRuntimeError::new_err("inline mode: no runner given"))?;
            run.call1((convert::to_py(py, &job)?,)).map(drop)
        };
        push_through(jobs, middleware, run, |jobs| self.push_jobs(py, jobs), to_py)
    }
}

#[pymethods]
impl PyClient {
    #[new]
    fn new(config: &PyConfig) -> Self {
        PyClient(Arc::new(Session::new(config.inner.clone())))
    }

    /// One job per args tuple, in one round trip; nothing is written if any
    /// is invalid. Through the client `middleware` when given, and recorded
    /// in a testing mode (inline mode: `run(job)` runs each).
    #[pyo3(signature = (class_name, args_list, middleware=None, run=None, **options))]
    fn push_many(
        &self,
        py: Python<'_>,
        class_name: &str,
        args_list: &Bound<'_, PyAny>,
        middleware: Option<&Bound<'_, PyAny>>,
        run: Option<&Bound<'_, PyAny>>,
        options: Option<&Bound<'_, PyDict>>,
    ) -> PyResult<Vec<Option<String>>> {
        let jobs = requests(class_name, args_list, options)?;
        self.push_through(py, jobs, middleware, run)
    }

    /// `push_many` without waiting: returns at once, and `done(error,
    /// jids)` is called once the push is written or has failed (`error`:
    /// the exception, or None). It is called on a thread of the engine's
    /// own, never a runtime worker (it needs the GIL), for an asyncio
    /// future to be settled with no thread of the app's waiting.
    #[pyo3(signature = (class_name, args_list, done, **options))]
    fn push_many_then(
        &self,
        class_name: &str,
        args_list: &Bound<'_, PyAny>,
        done: Py<PyAny>,
        options: Option<&Bound<'_, PyDict>>,
    ) -> PyResult<()> {
        let jobs = requests(class_name, args_list, options)?;
        let client = self.0.client().map_err(to_py)?;
        let push = self.0.naming_redis(async move { client.push_bulk(jobs).await });
        cogworker::runtime::global().spawn(async move {
            let pushed = push.await;
            tokio::task::spawn_blocking(move || {
                Python::attach(|py| {
                    let called = match pushed {
                        Ok(jids) => done.call1(py, (py.None(), jids)),
                        Err(error) => done.call1(py, (to_py(error).into_value(py), py.None())),
                    };
                    if let Err(error) = called {
                        error.write_unraisable(py, Some(done.bind(py)));
                    }
                })
            });
        });
        Ok(())
    }

    /// queued, scheduled, running, retrying, dead, succeeded, failed or
    /// unknown, on this client's connection.
    fn status(&self, py: Python<'_>, jid: String) -> PyResult<String> {
        finish(py, |first| {
            self.0.start_api(|api| async move { api.status(&jid).await }, first)
        })
    }

    /// Cancels the job `jid`; says where it was (see `Api::cancel`).
    fn cancel(&self, py: Python<'_>, jid: String) -> PyResult<String> {
        finish(py, |first| {
            self.0.start_api(|api| async move { api.cancel(&jid).await }, first)
        })
    }

    /// What the job came to, as the core decides it: `("succeeded",
    /// value)`, `("failed", record)` or `("pending", status)`; `wait`
    /// seconds for a final outcome.
    #[pyo3(signature = (jid, wait=None))]
    fn result<'py>(
        &self,
        py: Python<'py>,
        jid: String,
        wait: Option<f64>,
    ) -> PyResult<(&'static str, Bound<'py, PyAny>)> {
        let outcome = finish(py, |first| {
            self.0
                .start_api(|api| async move { api.outcome(&jid, wait).await }, first)
        })?;
        crate::testing::outcome(py, outcome)
    }

    /// Raw payloads (dicts with at least `class`), in one round trip;
    /// `middleware` and `run` as for `push_many`; `context`: the push
    /// span's trace context, for those that carry none of their own.
    #[pyo3(signature = (payloads, middleware=None, run=None, context=None))]
    fn push_payloads(
        &self,
        py: Python<'_>,
        payloads: &Bound<'_, PyAny>,
        middleware: Option<&Bound<'_, PyAny>>,
        run: Option<&Bound<'_, PyAny>>,
        context: Option<HashMap<String, String>>,
    ) -> PyResult<Vec<Option<String>>> {
        let mut jobs = payloads
            .try_iter()?
            .enumerate()
            .map(|(i, payload)| payload_job(&convert::value(&payload?), &format!("jobs[{i}]")).map_err(to_py))
            .collect::<PyResult<Vec<Job>>>()?;
        carry_trace_context(&mut jobs, &context.unwrap_or_default());
        self.push_through(py, jobs, middleware, run)
    }
}
