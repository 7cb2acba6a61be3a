//! `Worker` and `Delivery`: the core's host worker. Python threads take
//! deliveries with `next_job` (the GIL released while waiting) and settle
//! each once with `complete`, `fail` or `abandon`; one collected unsettled
//! is abandoned by the core.

use crate::blocking;
use crate::config::PyConfig;
use crate::convert;
use crate::errors::to_py;
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
    /// The job's `args` as JSON text (Python's `json.loads` makes its
    /// values), read when the slot takes it.
    args_json: String,
}

impl PyDelivery {
    fn new(delivery: HostDelivery) -> Self {
        let args_json = delivery
            .with_args(|args| serde_json::to_string(args).unwrap_or_else(|_| "[]".into()))
            .unwrap_or_else(|| "[]".into());
        PyDelivery { delivery, args_json }
    }
}

#[pymethods]
impl PyDelivery {
    /// `(class_name, jid, queue, retry_count, args_json)`.
    #[getter]
    fn info(&self) -> (&str, &str, &str, u32, &str) {
        let info = &self.delivery.info;
        (&info.class, &info.jid, &info.queue, info.retry_count, &self.args_json)
    }

    /// The whole job as JSON text (every field, for middleware); None once
    /// settled.
    #[getter]
    fn payload_json(&self) -> Option<String> {
        self.delivery.payload_json()
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

fn state(next: NextJob) -> (u8, Option<PyDelivery>) {
    match next {
        NextJob::Job(delivery) => (JOB, Some(PyDelivery::new(HostDelivery::new(delivery)))),
        NextJob::Idle => (IDLE, None),
        NextJob::Stopped => (STOPPED, None),
    }
}

#[pyclass(name = "Worker", module = "cogworker._core")]
pub struct PyWorker(HostWorker);

#[pymethods]
impl PyWorker {
    /// `handlers`: the class names registered in Python (the only ones that
    /// run); `periodic`: entries as JSON text.
    /// `client_middleware`: run the periodic jobs this worker pushes through
    /// the host's client middleware (``client_middleware`` events).
    #[new]
    #[pyo3(signature = (config, handlers, periodic, client_middleware=false))]
    fn new(config: &PyConfig, handlers: Vec<String>, periodic: Vec<String>, client_middleware: bool) -> PyResult<Self> {
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
        Ok(state(next.unwrap_or(NextJob::Idle)))
    }

    /// Waits up to `timeout` seconds for a worker event: `(name, job_json)`
    /// (`job_json` for "death" only), `("ended", None)` once the engine has
    /// shut down and every event was read, None meanwhile.
    fn next_event(&self, py: Python<'_>, timeout: f64) -> PyResult<Option<(&'static str, Option<String>)>> {
        blocking::wait(py, Some(timeout), |slice| self.0.next_event(slice).into_parts())
    }

    /// As `next_event`, for the periodic jobs for the client middleware
    /// alone (`("client_middleware", job_json)`), on a thread of their own.
    fn next_client_middleware(&self, py: Python<'_>, timeout: f64) -> PyResult<Option<(&'static str, Option<String>)>> {
        blocking::wait(py, Some(timeout), |slice| {
            self.0.next_client_middleware(slice).into_parts()
        })
    }

    /// The client middleware's answer for the periodic job `jid` (a
    /// ``client_middleware`` event): its JSON, or None to push nothing.
    #[pyo3(signature = (jid, job=None))]
    fn reply_client_middleware(&self, jid: &str, job: Option<String>) {
        self.0.reply_client_middleware(jid, job);
    }

    /// The next job if one is ready now (never blocks).
    fn try_next_job(&self) -> (u8, Option<PyDelivery>) {
        state(self.0.try_next_job())
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

    /// The jobs running now, as JSON text.
    fn busy_json(&self) -> String {
        self.0.busy_json()
    }
}
