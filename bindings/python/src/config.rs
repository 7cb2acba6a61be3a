//! `Config(**settings)`: every setting of docs/configuration.md, validated by the core's
//! setters; a bad name or value raises ConfigError naming it.

use crate::errors::{to_py, ConfigError};
use cogworker::{CatchUp, Config, FetchMode};
use pyo3::prelude::*;
use pyo3::types::PyDict;

#[pyclass(name = "Config", module = "cogworker._core", from_py_object)]
#[derive(Clone)]
pub struct PyConfig {
    pub inner: Config,
}

fn bad(field: &str, value: &Bound<'_, PyAny>, expected: &str) -> PyErr {
    let shown = value.repr().map(|r| r.to_string()).unwrap_or_else(|_| "?".into());
    ConfigError::new_err(format!("invalid config {field} = {shown}: {expected}"))
}

fn number(field: &str, value: &Bound<'_, PyAny>) -> PyResult<f64> {
    if value.is_instance_of::<pyo3::types::PyBool>() {
        return Err(bad(field, value, "must be a number of seconds"));
    }
    value
        .extract::<f64>()
        .map_err(|_| bad(field, value, "must be a number of seconds"))
}

fn strings(field: &str, value: &Bound<'_, PyAny>) -> PyResult<Vec<String>> {
    if value.is_instance_of::<pyo3::types::PyString>() {
        return Ok(vec![value.extract()?]);
    }
    let mut out = Vec::new();
    for item in value
        .try_iter()
        .map_err(|_| bad(field, value, "must be a list of strings"))?
    {
        let item = item?;
        if let Ok(s) = item.extract::<String>() {
            out.push(s);
        } else if let Ok((name, weight)) = item.extract::<(String, i64)>() {
            out.push(format!("{name},{weight}"));
        } else {
            return Err(bad(
                field,
                &item,
                "each entry must be \"name\", \"name,weight\" or (name, weight)",
            ));
        }
    }
    Ok(out)
}

impl PyConfig {
    pub fn set(&mut self, field: &str, value: &Bound<'_, PyAny>) -> PyResult<()> {
        let c = &mut self.inner;
        let result = match field {
            "redis_url" => {
                let url: String = value.extract().map_err(|_| bad(field, value, "must be a string"))?;
                c.set_redis_url(&url).map(drop)
            }
            "namespace" => {
                let ns: String = value.extract().map_err(|_| bad(field, value, "must be a string"))?;
                c.set_namespace(&ns).map(drop)
            }
            "concurrency" => {
                if value.is_instance_of::<pyo3::types::PyBool>() {
                    return Err(bad(field, value, "must be a whole number"));
                }
                let n: i64 = value
                    .extract()
                    .map_err(|_| bad(field, value, "must be a whole number"))?;
                c.set_concurrency(n).map(drop)
            }
            "queues" => c.set_queues(&strings(field, value)?).map(drop),
            "strict_queues" => c.set_queues_strict(&strings(field, value)?).map(drop),
            "fetch" => {
                let mode: String = value.extract().map_err(|_| bad(field, value, "must be a string"))?;
                mode.parse::<FetchMode>().map(|m| {
                    c.set_fetch(m);
                })
            }
            "periodic_catch_up" => {
                let mode: String = value.extract().map_err(|_| bad(field, value, "must be a string"))?;
                mode.parse::<CatchUp>().map(|m| {
                    c.set_periodic_catch_up(m);
                })
            }
            "labels" => {
                c.set_labels(&strings(field, value)?);
                Ok(())
            }
            "fetch_idle_max_interval" => c.set_fetch_idle_max_interval(number(field, value)?).map(drop),
            "orphan_threshold" => c.set_orphan_threshold(number(field, value)?).map(drop),
            "orphan_check_interval" => c.set_orphan_check_interval(number(field, value)?).map(drop),
            "shutdown_timeout" => c.set_shutdown_timeout(number(field, value)?).map(drop),
            "unique_lock_ttl" => c.set_unique_lock_ttl(number(field, value)?).map(drop),
            "heartbeat_interval" => c.set_heartbeat_interval(number(field, value)?).map(drop),
            "scheduler_poll_interval" => c.set_scheduler_poll_interval(number(field, value)?).map(drop),
            other => return Err(ConfigError::new_err(format!("unknown config setting {other:?}"))),
        };
        result.map_err(to_py)
    }
}

#[pymethods]
impl PyConfig {
    /// Defaults (with `redis_url` from COGWORKER_REDIS_URL / REDIS_URL),
    /// then each keyword setting applied and validated.
    #[new]
    #[pyo3(signature = (**settings))]
    fn new(settings: Option<&Bound<'_, PyDict>>) -> PyResult<Self> {
        let mut config = PyConfig {
            inner: Config::from_env().map_err(to_py)?,
        };
        if let Some(settings) = settings {
            for (key, value) in settings.iter() {
                let key: String = key.extract()?;
                if !value.is_none() {
                    config.set(&key, &value)?;
                }
            }
        }
        Ok(config)
    }

    #[getter]
    fn redis_url(&self) -> String {
        self.inner.redis_url_redacted()
    }
    #[getter]
    fn namespace(&self) -> String {
        self.inner.namespace().to_string()
    }
    #[getter]
    fn concurrency(&self) -> usize {
        self.inner.concurrency()
    }
    #[getter]
    fn queues(&self) -> Vec<(String, u32)> {
        self.inner.queues().iter().map(|q| (q.name.clone(), q.weight)).collect()
    }
    #[getter]
    fn shutdown_timeout(&self) -> f64 {
        self.inner.shutdown_timeout().as_secs_f64()
    }
    #[getter]
    fn fetch(&self) -> &'static str {
        match self.inner.fetch() {
            FetchMode::Reliable => "reliable",
            FetchMode::Basic => "basic",
        }
    }

    fn __repr__(&self) -> String {
        format!(
            "Config(redis_url={:?}, namespace={:?}, concurrency={}, queues={:?}, fetch={:?})",
            self.inner.redis_url_redacted(),
            self.inner.namespace(),
            self.inner.concurrency(),
            self.queues(),
            self.fetch()
        )
    }
}
