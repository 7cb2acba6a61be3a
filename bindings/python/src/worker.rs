//! `Worker` and `Delivery`: the core's host worker. Python threads take
//! deliveries with `next_job` (the GIL released while waiting) and settle
//! each once with `complete`, `fail` or `abandon`; one collected unsettled
//! is abandoned by the core.

use crate::blocking;
use crate::config::PyConfig;
use crate::convert;
use crate::errors::to_py;
use crate::periodic::PyPeriodic;
use cogworker::host::{HostDelivery, HostFailure, HostWorker};
use cogworker::NextJob;
use pyo3::prelude::*;

/// `next_job` states (a private protocol with `cogworker/worker.py`).
const JOB: u8 = 0;
const IDLE: u8 = 1;
const STOPPED: u8 = 2;

#[pyclass(name = "Delivery", module = "cogworker._core")]
pub struct PyDelivery {
    delivery: HostDelivery,
    /// The job's `args` as a Python list, made when the slot takes it.
    args: Py<PyAny>,
}

impl PyDelivery {
    fn new(py: Python<'_>, delivery: HostDelivery) -> PyResult<Self> {
        let args = match delivery.with_args(|args| convert::list_to_py(py, args)) {
            Some(args) => args?.unbind(),
            None => pyo3::types::PyList::empty(py).into_any().unbind(),
        };
        Ok(PyDelivery { delivery, args })
    }
}

#[pymethods]
impl PyDelivery {
    /// `(class_name, jid, queue, retry_count, args)`.
    #[getter]
    fn info<'py>(&self, py: Python<'py>) -> (&str, &str, &str, u32, Bound<'py, PyAny>) {
        let info = &self.delivery.info;
        (
            &info.class,
            &info.jid,
            &info.queue,
            info.retry_count,
            self.args.bind(py).clone(),
        )
    }

    /// The whole job, a dict (every field, for middleware); None once
    /// settled.
    #[getter]
    fn payload<'py>(&self, py: Python<'py>) -> PyResult<Option<Bound<'py, PyAny>>> {
        self.delivery
            .with_payload(|fields| convert::map_to_py(py, fields))
            .transpose()
    }

    /// It goes on as a coroutine on the host's event loop: its thread slot
    /// is freed for another job at once.
    fn detach(&self) {
        self.delivery.detach();
    }

    /// Does the job keep its result (`result_ttl`)? Then call
    /// `complete_with(value)`.
    #[getter]
    fn wants_result(&self) -> bool {
        self.delivery.wants_result()
    }

    /// The job succeeded and returned `value`, kept as its result. Raises
    /// (without settling) if JSON cannot hold the value.
    fn complete_with(&self, value: &Bound<'_, PyAny>) -> PyResult<()> {
        self.delivery.complete_with(&convert::value(value)).map_err(to_py)
    }

    /// The job succeeded.
    fn complete(&self) -> PyResult<()> {
        self.delivery.complete().map_err(to_py)
    }

    /// The job failed. Each piece may be None (reading it raised);
    /// `retry_in` is what the retry hook returned; the core checks it.
    fn fail(
        &self,
        error_class: &Bound<'_, PyAny>,
        message: &Bound<'_, PyAny>,
        backtrace: &Bound<'_, PyAny>,
        retry_in: &Bound<'_, PyAny>,
    ) -> PyResult<()> {
        let [class, message, backtrace, retry] = [error_class, message, backtrace, retry_in].map(convert::value);
        self.delivery
            .fail(HostFailure::from_values(class, message, backtrace, retry))
            .map_err(to_py)
    }

    /// The handler ended without an outcome (`how` says how); nothing once
    /// settled.
    fn abandon(&self, how: &str) {
        self.delivery.abandon(how);
    }
}

fn state(py: Python<'_>, next: NextJob) -> PyResult<(u8, Option<PyDelivery>)> {
    Ok(match next {
        NextJob::Job(delivery) => (JOB, Some(PyDelivery::new(py, HostDelivery::new(delivery))?)),
        NextJob::Idle => (IDLE, None),
        NextJob::Stopped => (STOPPED, None),
    })
}

#[pyclass(name = "Worker", module = "cogworker._core")]
pub struct PyWorker(HostWorker);

#[pymethods]
impl PyWorker {
    /// `handlers`: the class names registered in Python (the only ones that
    /// run); `periodic`: the entries (`periodic_entry`).
    /// `client_middleware`: run the periodic jobs this worker pushes through
    /// the host's client middleware (``client_middleware`` events).
    #[new]
    #[pyo3(signature = (config, handlers, periodic, client_middleware=false))]
    fn new(
        config: &PyConfig,
        handlers: Vec<String>,
        periodic: Vec<PyRef<'_, PyPeriodic>>,
        client_middleware: bool,
    ) -> PyResult<Self> {
        let periodic: Vec<_> = periodic.iter().map(|entry| entry.0.clone()).collect();
        HostWorker::new(config.inner.clone(), &handlers, &periodic, client_middleware)
            .map(PyWorker)
            .map_err(to_py)
    }

    /// Starts the engine in the background; returns at once.
    fn start(&self) -> PyResult<()> {
        self.0.start().map_err(to_py)
    }

    /// Waits up to `timeout` seconds: `(0, delivery)`, `(1, None)` when idle,
    /// `(2, None)` when the worker is stopping.
    fn next_job(&self, py: Python<'_>, timeout: f64) -> PyResult<(u8, Option<PyDelivery>)> {
        let next = blocking::wait(py, Some(timeout), |slice| self.0.next_job(slice))?;
        state(py, next.unwrap_or(NextJob::Idle))
    }

    /// Waits up to `timeout` seconds for a worker event: `(name, job)`
    /// (a dict for "death" only), `("ended", None)` once the engine has
    /// shut down and every event was read, None meanwhile.
    fn next_event<'py>(&self, py: Python<'py>, timeout: f64) -> PyResult<Option<Event<'py>>> {
        let next = blocking::wait(py, Some(timeout), |slice| self.0.next_event(slice).into_parts())?;
        next.map(|parts| event(py, parts)).transpose()
    }

    /// As `next_event`, for the periodic jobs for the client middleware
    /// alone (`("client_middleware", job)`), on a thread of their own.
    fn next_client_middleware<'py>(&self, py: Python<'py>, timeout: f64) -> PyResult<Option<Event<'py>>> {
        let next = blocking::wait(py, Some(timeout), |slice| {
            self.0.next_client_middleware(slice).into_parts()
        })?;
        next.map(|parts| event(py, parts)).transpose()
    }

    /// The client middleware's answer for the periodic job `jid` (a
    /// ``client_middleware`` event): the job, or None to push nothing.
    #[pyo3(signature = (jid, job=None))]
    fn reply_client_middleware(&self, jid: &str, job: Option<&Bound<'_, PyAny>>) {
        let job = job.map(convert::value);
        self.0.reply_client_middleware(jid, job.as_ref());
    }

    /// The client middleware raised `error` (a description) on the periodic
    /// job `jid`: the engine pushes it as it was.
    fn client_middleware_raised(&self, jid: &str, error: &str) {
        self.0.client_middleware_raised(jid, error);
    }

    /// The next job if one is ready now (never blocks).
    fn try_next_job(&self, py: Python<'_>) -> PyResult<(u8, Option<PyDelivery>)> {
        state(py, self.0.try_next_job())
    }

    /// Waits up to `timeout` seconds for the engine to finish its shutdown;
    /// True once it has. Raises if it ended with an error.
    fn wait(&self, py: Python<'_>, timeout: f64) -> PyResult<bool> {
        let finished = blocking::wait(py, Some(timeout), |slice| self.0.finished(slice))?;
        Ok(finished.transpose().map_err(crate::errors::Error::new_err)?.is_some())
    }

    fn quiet(&self) {
        self.0.quiet();
    }

    fn stop(&self) {
        self.0.stop();
    }

    /// Running jobs shutdown put back on their queues (exit at once then).
    #[getter]
    fn given_back(&self) -> usize {
        self.0.given_back()
    }

    #[getter]
    fn identity(&self) -> &str {
        self.0.identity()
    }

    /// "running", "quiet" or "stopping".
    #[getter]
    fn lifecycle(&self) -> &'static str {
        self.0.lifecycle()
    }

    /// Logs the jobs running now (TTIN), in the engine's words.
    fn log_busy(&self) {
        self.0.log_busy();
    }

    /// A signal the worker command caught, by name; True: also log the
    /// threads' stacks (TTIN).
    fn signal(&self, name: &str) -> bool {
        self.0.signal(name)
    }

    /// After shutdown: join the slot threads? (Not when jobs were given back.)
    fn join_slots(&self) -> bool {
        self.0.join_slots()
    }

    /// After the joins: exit the process at once?
    fn exit_at_once(&self, all_joined: bool) -> bool {
        self.0.exit_at_once(all_joined)
    }

    fn busy<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        convert::to_py(py, &self.0.busy())
    }
}

/// A worker event as Python sees it: its name, and the job (a dict) for
/// "death" and "client_middleware".
type Event<'py> = (&'static str, Option<Bound<'py, PyAny>>);

fn event<'py>(py: Python<'py>, (name, job): (&'static str, Option<serde_json::Value>)) -> PyResult<Event<'py>> {
    Ok((name, job.map(|job| convert::to_py(py, &job)).transpose()?))
}
