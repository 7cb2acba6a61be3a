//! `Client`: pushes job payloads built in Python (JSON text). The core
//! validates them and writes them; this only converts types.

use crate::blocking::{in_runtime, wait};
use crate::config::PyConfig;
use crate::errors::{to_py, InvalidJob};
use cogworker::runtime::ForkSafe;
use cogworker::{Client, Job};
use pyo3::prelude::*;
use std::sync::Arc;

#[pyclass(name = "Client", module = "cogworker._core")]
pub struct PyClient {
    config: cogworker::Config,
    /// Rebuilt in a forked child (the parent's connection is unusable there).
    client: ForkSafe<Client>,
}

impl PyClient {
    pub fn client(&self) -> PyResult<Arc<Client>> {
        self.client
            .get_or_try_init(|| in_runtime(|| Client::new(&self.config)))
            .map_err(to_py)
    }
}

fn parse_job(index: usize, text: &str) -> PyResult<Job> {
    let value: serde_json::Value =
        serde_json::from_str(text).map_err(|e| InvalidJob::new_err(format!("invalid job: jobs[{index}]: {e}")))?;
    Job::from_value(value).map_err(to_py)
}

#[pymethods]
impl PyClient {
    #[new]
    fn new(config: &PyConfig) -> Self {
        PyClient {
            config: config.inner.clone(),
            client: ForkSafe::new(),
        }
    }

    /// Pushes one job (JSON object text); returns its jid, or None for a
    /// unique job whose duplicate holds the lock.
    fn push(&self, py: Python<'_>, job_json: &str) -> PyResult<Option<String>> {
        let job = parse_job(0, job_json)?;
        let client = self.client()?;
        wait(py, async move { client.push(job).await })?.map_err(to_py)
    }

    /// Pushes many jobs in one round trip; nothing is written if any is invalid.
    fn push_bulk(&self, py: Python<'_>, jobs_json: Vec<String>) -> PyResult<Vec<Option<String>>> {
        let jobs = jobs_json
            .iter()
            .enumerate()
            .map(|(i, text)| parse_job(i, text))
            .collect::<PyResult<Vec<Job>>>()?;
        let client = self.client()?;
        wait(py, async move { client.push_bulk(jobs).await })?.map_err(to_py)
    }

    #[getter]
    fn namespace(&self) -> String {
        self.config.namespace().to_string()
    }
}
