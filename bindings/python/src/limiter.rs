//! `Limiter` and `Lease`: a rate limiter defined from Python values
//! (checked, and written to Redis on first use, by the core) and the
//! capacity it takes, waited for with the GIL released.

use crate::blocking::run;
use crate::client::PyClient;
use crate::convert;
use crate::errors::to_py;
use cogworker::host::{HostLimiter, HostValue, Session};
use cogworker::Lease;
use pyo3::prelude::*;
use pyo3::types::PyDict;
use std::sync::{Arc, Mutex};

#[pyclass(frozen, name = "Limiter", module = "cogworker._core")]
pub struct PyLimiter {
    limiter: HostLimiter,
    session: Arc<Session>,
}

#[pymethods]
impl PyLimiter {
    /// A limiter of `kind` (concurrent, bucket, window, leaky) on
    /// `client`'s Redis; `options`: interval, lease_ttl, wait.
    #[new]
    #[pyo3(signature = (client, kind, name, limit, **options))]
    fn new(
        client: &PyClient,
        kind: &str,
        name: &str,
        limit: &Bound<'_, PyAny>,
        options: Option<&Bound<'_, PyDict>>,
    ) -> PyResult<Self> {
        let named = convert::named(options)?;
        let session = client.0.clone();
        let limiter = HostLimiter::new(&session, kind, name, &convert::value(limit), &named).map_err(to_py)?;
        let defining = limiter.clone();
        run(limit.py(), async move { defining.define().await })?;
        Ok(PyLimiter { limiter, session })
    }

    #[getter]
    fn name(&self) -> String {
        self.limiter.limit().name().to_string()
    }

    #[getter]
    fn kind(&self) -> &'static str {
        self.limiter.limit().kind().name()
    }

    #[getter]
    fn limit(&self) -> u32 {
        self.limiter.limit().kind().limit()
    }

    /// Takes capacity, waiting up to `wait` (seconds or a timedelta; None:
    /// the limiter's own wait); raises `OverLimit` when none came.
    #[pyo3(signature = (wait=None))]
    fn acquire(&self, py: Python<'_>, wait: Option<&Bound<'_, PyAny>>) -> PyResult<PyLease> {
        let (limiter, wait) = (self.limiter.clone(), wait.map_or(HostValue::Null, convert::value));
        let lease = run(
            py,
            self.session.naming_redis(async move { limiter.acquire(&wait).await }),
        )?;
        Ok(PyLease(Mutex::new(Some(lease))))
    }
}

/// Capacity taken from a limiter: a concurrent limiter's place, held
/// until released (or until this object is dropped).
#[pyclass(frozen, name = "Lease", module = "cogworker._core")]
pub struct PyLease(Mutex<Option<Lease>>);

#[pymethods]
impl PyLease {
    /// Gives the capacity back (a second call does nothing).
    fn release(&self, py: Python<'_>) -> PyResult<()> {
        let Some(lease) = self.0.lock().unwrap().take() else {
            return Ok(());
        };
        run(py, async move {
            lease.release().await;
            Ok(())
        })
    }
}
