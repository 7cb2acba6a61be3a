//! `Cogworker::Native::Client`: pushes job payloads built in Ruby (JSON
//! text). The core validates and writes them.

use crate::config::from_hash;
use crate::errors::{raise, to_ruby};
use crate::nogvl::without_gvl;
use cogworker::runtime::ForkSafe;
use cogworker::{Client, Job};
use magnus::{Error, RHash, Ruby};
use std::future::Future;
use std::sync::Arc;

#[magnus::wrap(class = "Cogworker::Native::Client", free_immediately, size)]
pub struct RbClient {
    config: cogworker::Config,
    client: ForkSafe<Client>,
}

/// Runs a core future on the global runtime and waits for it without the
/// GVL (bounded by the core's own timeouts).
pub fn wait<F, T>(future: F) -> Option<T>
where
    F: Future<Output = T> + Send + 'static,
    T: Send + 'static,
{
    let runtime = cogworker::runtime::global();
    let (tx, rx) = flume::bounded(1);
    runtime.spawn(async move {
        let _ = tx.send(future.await);
    });
    loop {
        // An interrupt (Ctrl-C) is handled by Ruby after the result is in:
        // the push itself is bounded by the connection's timeouts.
        match without_gvl(|_| rx.recv_timeout(std::time::Duration::from_millis(100))) {
            Some(Ok(value)) => return Some(value),
            Some(Err(flume::RecvTimeoutError::Disconnected)) => return None,
            _ => {}
        }
    }
}

pub fn in_runtime<T>(build: impl FnOnce() -> T) -> T {
    let runtime = cogworker::runtime::global();
    let _entered = runtime.enter();
    build()
}

fn parse_job(ruby: &Ruby, index: usize, text: &str) -> Result<Job, Error> {
    let value: serde_json::Value = serde_json::from_str(text)
        .map_err(|e| raise(ruby, "InvalidJob", format!("invalid job: jobs[{index}]: {e}")))?;
    Job::from_value(value).map_err(|e| to_ruby(ruby, e))
}

impl RbClient {
    pub fn new(ruby: &Ruby, settings: RHash) -> Result<Self, Error> {
        Ok(RbClient {
            config: from_hash(ruby, settings)?,
            client: ForkSafe::new(),
        })
    }

    fn client(&self, ruby: &Ruby) -> Result<Arc<Client>, Error> {
        self.client
            .get_or_try_init(|| in_runtime(|| Client::new(&self.config)))
            .map_err(|e| to_ruby(ruby, e))
    }

    pub fn push(ruby: &Ruby, rb_self: &Self, job_json: String) -> Result<Option<String>, Error> {
        let job = parse_job(ruby, 0, &job_json)?;
        let client = rb_self.client(ruby)?;
        wait(async move { client.push(job).await })
            .ok_or_else(|| raise(ruby, "Error", "push task ended without a result"))?
            .map_err(|e| to_ruby(ruby, e))
    }

    pub fn push_bulk(ruby: &Ruby, rb_self: &Self, jobs_json: Vec<String>) -> Result<Vec<Option<String>>, Error> {
        let jobs = jobs_json
            .iter()
            .enumerate()
            .map(|(i, text)| parse_job(ruby, i, text))
            .collect::<Result<Vec<Job>, Error>>()?;
        let client = rb_self.client(ruby)?;
        wait(async move { client.push_bulk(jobs).await })
            .ok_or_else(|| raise(ruby, "Error", "push task ended without a result"))?
            .map_err(|e| to_ruby(ruby, e))
    }
}
