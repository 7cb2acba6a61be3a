//! `Cogworker::Native::Api`: the ops API for Ruby. Results come back as
//! JSON text (parsed in `lib/cogworker/api.rb`).

use crate::client::{in_runtime, wait};
use crate::config::from_hash;
use crate::errors::{raise, to_ruby};
use cogworker::runtime::ForkSafe;
use cogworker::{Api, Client, JobSet, SetEntry};
use magnus::{Error, RHash, Ruby};
use serde_json::{json, Value};
use std::future::Future;
use std::sync::Arc;

#[magnus::wrap(class = "Cogworker::Native::Api", free_immediately, size)]
pub struct RbApi {
    config: cogworker::Config,
    api: ForkSafe<Api>,
}

fn job_set(ruby: &Ruby, name: &str) -> Result<JobSet, Error> {
    match name {
        "scheduled" | "schedule" => Ok(JobSet::Scheduled),
        "retry" => Ok(JobSet::Retry),
        "dead" => Ok(JobSet::Dead),
        other => Err(raise(
            ruby,
            "ConfigError",
            format!("unknown job set {other:?}: expected scheduled, retry or dead"),
        )),
    }
}

fn entry_json(entry: &SetEntry) -> Value {
    json!({"score": entry.score, "payload": String::from_utf8_lossy(&entry.raw)})
}

impl RbApi {
    pub fn new(ruby: &Ruby, settings: RHash) -> Result<Self, Error> {
        Ok(RbApi {
            config: from_hash(ruby, settings)?,
            api: ForkSafe::new(),
        })
    }

    fn run<F, Fut, T>(&self, ruby: &Ruby, op: F) -> Result<T, Error>
    where
        F: FnOnce(Arc<Api>) -> Fut,
        Fut: Future<Output = cogworker::Result<T>> + Send + 'static,
        T: Send + 'static,
    {
        let api = self
            .api
            .get_or_try_init(|| in_runtime(|| Client::new(&self.config).map(Api::new)))
            .map_err(|e| to_ruby(ruby, e))?;
        wait(op(api))
            .ok_or_else(|| raise(ruby, "Error", "operation ended without a result"))?
            .map_err(|e| to_ruby(ruby, e))
    }

    pub fn queues_json(ruby: &Ruby, rb_self: &Self) -> Result<String, Error> {
        let queues = rb_self.run(ruby, |api| async move { api.queues().await })?;
        let list: Vec<Value> = queues
            .into_iter()
            .map(|q| json!({"name": q.name, "size": q.size, "latency": q.latency, "paused": q.paused}))
            .collect();
        Ok(Value::Array(list).to_string())
    }
    pub fn pause_queue(ruby: &Ruby, rb_self: &Self, name: String) -> Result<(), Error> {
        rb_self.run(ruby, |api| async move { api.pause_queue(&name).await })
    }
    pub fn unpause_queue(ruby: &Ruby, rb_self: &Self, name: String) -> Result<(), Error> {
        rb_self.run(ruby, |api| async move { api.unpause_queue(&name).await })
    }
    pub fn clear_queue(ruby: &Ruby, rb_self: &Self, name: String) -> Result<u64, Error> {
        rb_self.run(ruby, |api| async move { api.clear_queue(&name).await })
    }
    pub fn set_size(ruby: &Ruby, rb_self: &Self, set: String) -> Result<u64, Error> {
        let set = job_set(ruby, &set)?;
        rb_self.run(ruby, |api| async move { api.set_size(set).await })
    }
    pub fn set_page_json(
        ruby: &Ruby,
        rb_self: &Self,
        set: String,
        start: isize,
        count: isize,
    ) -> Result<String, Error> {
        let set = job_set(ruby, &set)?;
        let page = rb_self.run(ruby, |api| async move { api.set_page(set, start, count).await })?;
        Ok(Value::Array(page.iter().map(entry_json).collect()).to_string())
    }
    pub fn find_json(ruby: &Ruby, rb_self: &Self, set: String, jid: String) -> Result<Option<String>, Error> {
        let set = job_set(ruby, &set)?;
        let entry = rb_self.run(ruby, |api| async move { api.find_in_set(set, &jid).await })?;
        Ok(entry.map(|e| entry_json(&e).to_string()))
    }
    pub fn retry_now(ruby: &Ruby, rb_self: &Self, set: String, payload: String, score: f64) -> Result<bool, Error> {
        let set = job_set(ruby, &set)?;
        let entry = SetEntry {
            score,
            raw: payload.into_bytes(),
        };
        rb_self.run(ruby, |api| async move { api.retry_now(set, &entry).await })
    }
    pub fn retry_all(ruby: &Ruby, rb_self: &Self, set: String) -> Result<usize, Error> {
        let set = job_set(ruby, &set)?;
        rb_self.run(ruby, |api| async move { api.retry_all(set).await })
    }
    pub fn clear_set(ruby: &Ruby, rb_self: &Self, set: String) -> Result<u64, Error> {
        let set = job_set(ruby, &set)?;
        rb_self.run(ruby, |api| async move { api.clear_set(set).await })
    }
    pub fn delete(ruby: &Ruby, rb_self: &Self, set: String, payload: String, score: f64) -> Result<bool, Error> {
        let set = job_set(ruby, &set)?;
        let entry = SetEntry {
            score,
            raw: payload.into_bytes(),
        };
        rb_self.run(ruby, |api| async move { api.delete_from_set(set, &entry).await })
    }
    pub fn kill(ruby: &Ruby, rb_self: &Self, set: String, payload: String, score: f64) -> Result<bool, Error> {
        let set = job_set(ruby, &set)?;
        let entry = SetEntry {
            score,
            raw: payload.into_bytes(),
        };
        rb_self.run(ruby, |api| async move { api.kill(set, &entry).await })
    }
    pub fn processes_json(ruby: &Ruby, rb_self: &Self) -> Result<String, Error> {
        let processes = rb_self.run(ruby, |api| async move { api.processes().await })?;
        let list: Vec<Value> = processes
            .into_iter()
            .map(|p| json!({"identity": p.identity, "info": p.info, "busy": p.busy, "quiet": p.quiet, "beat": p.beat}))
            .collect();
        Ok(Value::Array(list).to_string())
    }
    pub fn quiet_process(ruby: &Ruby, rb_self: &Self, identity: String) -> Result<(), Error> {
        rb_self.run(ruby, |api| async move { api.quiet_process(&identity).await })
    }
    pub fn stop_process(ruby: &Ruby, rb_self: &Self, identity: String) -> Result<(), Error> {
        rb_self.run(ruby, |api| async move { api.stop_process(&identity).await })
    }
    /// `[processed, failed]` totals, or for one UTC day `yyyy-mm-dd`.
    pub fn stats(ruby: &Ruby, rb_self: &Self, day: Option<String>) -> Result<(u64, u64), Error> {
        let stats = rb_self.run(ruby, |api| async move { api.stats_for(day.as_deref()).await })?;
        Ok((stats.processed, stats.failed))
    }
    pub fn attempts(ruby: &Ruby, rb_self: &Self, jid: String) -> Result<Vec<String>, Error> {
        rb_self.run(ruby, |api| async move { api.attempts(&jid).await })
    }
    /// Held unique locks as JSON: `[{digest, jid, ttl}]`.
    pub fn unique_locks_json(ruby: &Ruby, rb_self: &Self, limit: usize) -> Result<String, Error> {
        let locks = rb_self.run(ruby, |api| async move { api.unique_locks(limit).await })?;
        let list: Vec<Value> = locks
            .into_iter()
            .map(|l| json!({"digest": l.name, "jid": l.owner, "ttl": l.ttl}))
            .collect();
        Ok(Value::Array(list).to_string())
    }
    pub fn clear_unique_lock(ruby: &Ruby, rb_self: &Self, digest: String) -> Result<bool, Error> {
        rb_self.run(ruby, |api| async move { api.clear_unique_lock(&digest).await })
    }
    /// Periodic entries of the live processes as JSON, each with `pjid`,
    /// `last_slot` and `running`.
    pub fn periodic_json(ruby: &Ruby, rb_self: &Self) -> Result<String, Error> {
        let entries = rb_self.run(ruby, |api| async move { api.periodic().await })?;
        let list: Vec<Value> = entries
            .into_iter()
            .map(|p| {
                let mut entry = p.entry;
                entry["pjid"] = json!(p.pjid);
                entry["last_slot"] = json!(p.last_slot);
                entry["running"] = json!(p.running);
                entry
            })
            .collect();
        Ok(Value::Array(list).to_string())
    }
}
