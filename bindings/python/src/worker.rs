//! `Worker`: the core's worker in host-slot mode. Python threads take jobs
//! with `next_job` (the GIL released while waiting) and settle them with
//! `complete` / `fail` (never blocking). Everything about what happens to
//! a job — retry, dead, acknowledgement — is decided by the core.

use crate::blocking::in_runtime;
use crate::config::PyConfig;
use crate::errors::to_py;
use cogworker::{Delivery, DeliveryInfo, Failure, Lifecycle, NextJob, Outcome, Periodic, Worker, WorkerHandle};
use pyo3::exceptions::PyRuntimeError;
use pyo3::prelude::*;
use pyo3::types::PyDict;
use std::sync::Mutex;
use std::time::Duration;

/// `next_job` states (a private protocol with `cogworker/worker.py`).
const JOB: u8 = 0;
const IDLE: u8 = 1;
const STOPPED: u8 = 2;

const SLICE: Duration = Duration::from_millis(100);

#[pyclass(name = "Delivery", module = "cogworker._core")]
pub struct PyDelivery {
    inner: Mutex<Option<Delivery>>,
    info: DeliveryInfo,
}

#[pymethods]
impl PyDelivery {
    #[getter]
    fn class_name(&self) -> &str {
        &self.info.class
    }
    #[getter]
    fn jid(&self) -> &str {
        &self.info.jid
    }
    #[getter]
    fn queue(&self) -> &str {
        &self.info.queue
    }
    #[getter]
    fn retry_count(&self) -> u32 {
        self.info.retry_count
    }
    #[getter]
    fn args_json(&self) -> &str {
        &self.info.args_json
    }

    /// The whole payload as stored (JSON text).
    #[getter]
    fn job_json(&self) -> PyResult<String> {
        let guard = self.inner.lock().unwrap();
        let delivery = guard.as_ref().ok_or_else(settled)?;
        Ok(String::from_utf8_lossy(delivery.raw()).into_owned())
    }

    fn __repr__(&self) -> String {
        format!(
            "<Delivery {} jid={} queue={}>",
            self.info.class, self.info.jid, self.info.queue
        )
    }
}

fn settled() -> PyErr {
    PyRuntimeError::new_err("this job was already completed")
}

impl PyDelivery {
    fn new(delivery: Delivery) -> Self {
        PyDelivery {
            info: delivery.info(),
            inner: Mutex::new(Some(delivery)),
        }
    }

    fn take(&self) -> PyResult<Delivery> {
        self.inner.lock().unwrap().take().ok_or_else(settled)
    }
}

#[pyclass(name = "Worker", module = "cogworker._core")]
pub struct PyWorker {
    handle: WorkerHandle,
    pending: Mutex<Option<Worker>>,
    finished_tx: flume::Sender<Result<(), String>>,
    finished_rx: flume::Receiver<Result<(), String>>,
}

fn state(next: NextJob) -> (u8, Option<PyDelivery>) {
    match next {
        NextJob::Job(delivery) => (JOB, Some(PyDelivery::new(delivery))),
        NextJob::Idle => (IDLE, None),
        NextJob::Stopped => (STOPPED, None),
    }
}

#[pymethods]
impl PyWorker {
    /// `periodic`: entries as JSON text; `classes`: the handler names
    /// registered in Python (periodic classes are resolved against them).
    #[new]
    #[pyo3(signature = (config, periodic=Vec::new(), classes=Vec::new()))]
    fn new(config: &PyConfig, periodic: Vec<String>, classes: Vec<String>) -> PyResult<Self> {
        let mut builder = Worker::builder(config.inner.clone()).host_slots().host_classes(classes);
        for entry in &periodic {
            builder = builder.periodic(Periodic::from_json(entry).map_err(to_py)?);
        }
        let worker = in_runtime(|| builder.build()).map_err(to_py)?;
        let (finished_tx, finished_rx) = flume::bounded(1);
        Ok(PyWorker {
            handle: worker.handle(),
            pending: Mutex::new(Some(worker)),
            finished_tx,
            finished_rx,
        })
    }

    /// Starts the engine (heartbeat, fetch, scheduler, recovery) in the
    /// background; returns at once.
    fn start(&self) -> PyResult<()> {
        let worker = self
            .pending
            .lock()
            .unwrap()
            .take()
            .ok_or_else(|| PyRuntimeError::new_err("worker already started"))?;
        let done = self.finished_tx.clone();
        cogworker::runtime::global().spawn(async move {
            let result = worker.run().await.map_err(|e| e.to_string());
            let _ = done.send(result);
        });
        Ok(())
    }

    /// Waits up to `timeout` seconds for a job: `(0, delivery)`, `(1, None)`
    /// when idle, `(2, None)` when the worker is stopping.
    fn next_job(&self, py: Python<'_>, timeout: f64) -> PyResult<(u8, Option<PyDelivery>)> {
        let mut left = Duration::from_secs_f64(timeout.max(0.0));
        loop {
            let slice = left.min(SLICE);
            let next = py.detach(|| self.handle.next_job(slice));
            match next {
                NextJob::Idle if left > slice => {
                    left -= slice;
                    py.check_signals()?;
                }
                other => return Ok(state(other)),
            }
        }
    }

    /// The next job if one is ready now (never blocks).
    fn try_next_job(&self) -> (u8, Option<PyDelivery>) {
        state(self.handle.try_next_job())
    }

    /// The job succeeded.
    fn complete(&self, delivery: &PyDelivery) -> PyResult<()> {
        self.handle.complete(delivery.take()?, Outcome::Success);
        Ok(())
    }

    /// The job failed: the core records it and retries, buries or discards
    /// it. `error_class` and `message` are bytes (any encoding; made valid
    /// UTF-8 by the core).
    #[pyo3(signature = (delivery, error_class, message, backtrace, retry_in=None))]
    fn fail(
        &self,
        delivery: &PyDelivery,
        error_class: &[u8],
        message: &[u8],
        backtrace: Vec<String>,
        retry_in: Option<f64>,
    ) -> PyResult<()> {
        let mut failure = Failure::from_bytes(error_class, message).with_backtrace(backtrace);
        failure.retry_in = retry_in;
        self.handle.complete(delivery.take()?, Outcome::Failure(failure));
        Ok(())
    }

    fn quiet(&self) {
        self.handle.quiet();
    }

    fn stop(&self) {
        self.handle.stop();
    }

    #[getter]
    fn identity(&self) -> String {
        self.handle.identity().to_string()
    }

    /// "running", "quiet" or "stopping".
    #[getter]
    fn lifecycle(&self) -> &'static str {
        match self.handle.lifecycle() {
            Lifecycle::Running => "running",
            Lifecycle::Quiet => "quiet",
            Lifecycle::Stopping => "stopping",
        }
    }

    /// The jobs running now: dicts with class, jid, queue, run_at.
    fn busy<'py>(&self, py: Python<'py>) -> PyResult<Vec<Bound<'py, PyDict>>> {
        self.handle
            .busy()
            .into_iter()
            .map(|entry| {
                let d = PyDict::new(py);
                d.set_item("class", entry.class)?;
                d.set_item("jid", entry.jid)?;
                d.set_item("queue", entry.queue)?;
                d.set_item("run_at", entry.run_at)?;
                Ok(d)
            })
            .collect()
    }

    /// Waits up to `timeout` seconds for the engine to finish its shutdown.
    /// True once it has; raises if it ended with an error.
    fn wait(&self, py: Python<'_>, timeout: f64) -> PyResult<bool> {
        let mut left = Duration::from_secs_f64(timeout.max(0.0));
        loop {
            let slice = left.min(SLICE);
            match py.detach(|| self.finished_rx.recv_timeout(slice)) {
                Ok(Ok(())) => {
                    // Let later waits see it finished too.
                    let _ = self.finished_tx.try_send(Ok(()));
                    return Ok(true);
                }
                Ok(Err(message)) => return Err(crate::errors::Error::new_err(message)),
                Err(flume::RecvTimeoutError::Timeout) if left > slice => {
                    left -= slice;
                    py.check_signals()?;
                }
                Err(_) => return Ok(false),
            }
        }
    }
}
