//! `Api`: the ops API (queues, job sets, processes, stats) for Python.
//! Entries come back as plain dicts; payloads as JSON text.

use crate::blocking::{in_runtime, wait};
use crate::config::PyConfig;
use crate::errors::{to_py, ConfigError};
use cogworker::runtime::ForkSafe;
use cogworker::{Api, Client, JobSet, SetEntry};
use pyo3::prelude::*;
use pyo3::types::PyDict;
use std::sync::Arc;

#[pyclass(name = "Api", module = "cogworker._core")]
pub struct PyApi {
    config: cogworker::Config,
    api: ForkSafe<Api>,
}

/// `(entry JSON, pjid, last_slot, run-lock owner)`.
type PeriodicRow = (String, String, Option<i64>, Option<String>);

fn job_set(name: &str) -> PyResult<JobSet> {
    match name {
        "scheduled" | "schedule" => Ok(JobSet::Scheduled),
        "retry" => Ok(JobSet::Retry),
        "dead" => Ok(JobSet::Dead),
        other => Err(ConfigError::new_err(format!(
            "unknown job set {other:?}: expected \"scheduled\", \"retry\" or \"dead\""
        ))),
    }
}

fn entry_dict<'py>(py: Python<'py>, entry: &SetEntry) -> PyResult<Bound<'py, PyDict>> {
    let d = PyDict::new(py);
    d.set_item("score", entry.score)?;
    d.set_item("payload", String::from_utf8_lossy(&entry.raw).into_owned())?;
    Ok(d)
}

fn entry_from(payload: &str, score: f64) -> SetEntry {
    SetEntry {
        score,
        raw: payload.as_bytes().to_vec(),
    }
}

impl PyApi {
    fn api(&self) -> PyResult<Arc<Api>> {
        self.api
            .get_or_try_init(|| in_runtime(|| Client::new(&self.config).map(Api::new)))
            .map_err(to_py)
    }

    fn run<F, Fut, T>(&self, py: Python<'_>, op: F) -> PyResult<T>
    where
        F: FnOnce(Arc<Api>) -> Fut,
        Fut: std::future::Future<Output = cogworker::Result<T>> + Send + 'static,
        T: Send + 'static,
    {
        let api = self.api()?;
        wait(py, op(api))?.map_err(to_py)
    }
}

#[pymethods]
impl PyApi {
    #[new]
    fn new(config: &PyConfig) -> Self {
        PyApi {
            config: config.inner.clone(),
            api: ForkSafe::new(),
        }
    }

    /// Every known queue: dicts with name, size, latency, paused.
    fn queues<'py>(&self, py: Python<'py>) -> PyResult<Vec<Bound<'py, PyDict>>> {
        let queues = self.run(py, |api| async move { api.queues().await })?;
        queues
            .into_iter()
            .map(|q| {
                let d = PyDict::new(py);
                d.set_item("name", q.name)?;
                d.set_item("size", q.size)?;
                d.set_item("latency", q.latency)?;
                d.set_item("paused", q.paused)?;
                Ok(d)
            })
            .collect()
    }
    fn pause_queue(&self, py: Python<'_>, name: String) -> PyResult<()> {
        self.run(py, |api| async move { api.pause_queue(&name).await })
    }
    fn unpause_queue(&self, py: Python<'_>, name: String) -> PyResult<()> {
        self.run(py, |api| async move { api.unpause_queue(&name).await })
    }
    fn clear_queue(&self, py: Python<'_>, name: String) -> PyResult<u64> {
        self.run(py, |api| async move { api.clear_queue(&name).await })
    }
    fn set_size(&self, py: Python<'_>, set: &str) -> PyResult<u64> {
        let set = job_set(set)?;
        self.run(py, |api| async move { api.set_size(set).await })
    }
    /// A page of a set, latest first: dicts with score and payload.
    #[pyo3(signature = (set, start=0, count=50))]
    fn set_page<'py>(
        &self,
        py: Python<'py>,
        set: &str,
        start: isize,
        count: isize,
    ) -> PyResult<Vec<Bound<'py, PyDict>>> {
        let set = job_set(set)?;
        let entries = self.run(py, |api| async move { api.set_page(set, start, count).await })?;
        entries.iter().map(|e| entry_dict(py, e)).collect()
    }
    fn find<'py>(&self, py: Python<'py>, set: &str, jid: String) -> PyResult<Option<Bound<'py, PyDict>>> {
        let set = job_set(set)?;
        let entry = self.run(py, |api| async move { api.find_in_set(set, &jid).await })?;
        entry.map(|e| entry_dict(py, &e)).transpose()
    }
    fn retry_now(&self, py: Python<'_>, set: &str, payload: &str, score: f64) -> PyResult<bool> {
        let (set, entry) = (job_set(set)?, entry_from(payload, score));
        self.run(py, |api| async move { api.retry_now(set, &entry).await })
    }
    fn retry_all(&self, py: Python<'_>, set: &str) -> PyResult<usize> {
        let set = job_set(set)?;
        self.run(py, |api| async move { api.retry_all(set).await })
    }
    fn delete(&self, py: Python<'_>, set: &str, payload: &str, score: f64) -> PyResult<bool> {
        let (set, entry) = (job_set(set)?, entry_from(payload, score));
        self.run(py, |api| async move { api.delete_from_set(set, &entry).await })
    }
    fn kill(&self, py: Python<'_>, set: &str, payload: &str, score: f64) -> PyResult<bool> {
        let (set, entry) = (job_set(set)?, entry_from(payload, score));
        self.run(py, |api| async move { api.kill(set, &entry).await })
    }
    /// Live processes: dicts with identity, info (JSON text), busy, quiet, beat.
    fn processes<'py>(&self, py: Python<'py>) -> PyResult<Vec<Bound<'py, PyDict>>> {
        let processes = self.run(py, |api| async move { api.processes().await })?;
        processes
            .into_iter()
            .map(|p| {
                let d = PyDict::new(py);
                d.set_item("identity", p.identity)?;
                d.set_item("info", p.info.to_string())?;
                d.set_item("busy", p.busy)?;
                d.set_item("quiet", p.quiet)?;
                d.set_item("beat", p.beat)?;
                Ok(d)
            })
            .collect()
    }
    fn quiet_process(&self, py: Python<'_>, identity: String) -> PyResult<()> {
        self.run(py, |api| async move { api.quiet_process(&identity).await })
    }
    fn stop_process(&self, py: Python<'_>, identity: String) -> PyResult<()> {
        self.run(py, |api| async move { api.stop_process(&identity).await })
    }
    /// `(processed, failed)` totals, or for one UTC day `yyyy-mm-dd`.
    #[pyo3(signature = (day=None))]
    fn stats(&self, py: Python<'_>, day: Option<String>) -> PyResult<(u64, u64)> {
        let stats = self.run(py, |api| async move { api.stats_for(day.as_deref()).await })?;
        Ok((stats.processed, stats.failed))
    }
    fn attempts(&self, py: Python<'_>, jid: String) -> PyResult<Vec<String>> {
        self.run(py, |api| async move { api.attempts(&jid).await })
    }
    #[pyo3(signature = (count=50))]
    fn history(&self, py: Python<'_>, count: isize) -> PyResult<Vec<String>> {
        self.run(py, |api| async move { api.history(count).await })
    }
    fn clear_set(&self, py: Python<'_>, set: &str) -> PyResult<u64> {
        let set = job_set(set)?;
        self.run(py, |api| async move { api.clear_set(set).await })
    }
    /// Held unique locks: `(digest, owner jid, ttl)`.
    #[pyo3(signature = (limit=1000))]
    fn unique_locks(&self, py: Python<'_>, limit: usize) -> PyResult<Vec<(String, String, i64)>> {
        let locks = self.run(py, |api| async move { api.unique_locks(limit).await })?;
        Ok(locks.into_iter().map(|l| (l.name, l.owner, l.ttl)).collect())
    }
    fn clear_unique_lock(&self, py: Python<'_>, digest: String) -> PyResult<bool> {
        self.run(py, |api| async move { api.clear_unique_lock(&digest).await })
    }
    /// Periodic entries of the live processes:
    /// `(entry JSON, pjid, last_slot, run-lock owner)`.
    fn periodic(&self, py: Python<'_>) -> PyResult<Vec<PeriodicRow>> {
        let entries = self.run(py, |api| async move { api.periodic().await })?;
        Ok(entries
            .into_iter()
            .map(|p| (p.entry.to_string(), p.pjid, p.last_slot, p.running))
            .collect())
    }
}
