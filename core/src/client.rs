//! Pushing jobs: one at a time, in bulk (one round trip), or scheduled.
//! Validation happens before anything is written: a bad job in a bulk push
//! writes none of them.

use crate::config::Config;
use crate::connection::Redis;
use crate::error::Result;
use crate::job::{float, now, Job};
use crate::keys::Keys;
use std::collections::BTreeMap;

/// Pushes jobs. Cheap to clone; all clones share one connection.
#[derive(Clone)]
pub struct Client {
    redis: Redis,
    keys: Keys,
}

impl Client {
    /// Needs to be called inside a tokio runtime; does not connect yet.
    pub fn new(config: &Config) -> Result<Self> {
        Ok(Client {
            redis: Redis::new(config)?,
            keys: Keys::new(config.namespace()),
        })
    }

    pub fn keys(&self) -> &Keys {
        &self.keys
    }

    pub(crate) fn redis(&self) -> &Redis {
        &self.redis
    }

    /// Pushes one job; returns its jid. A job whose `at` is in the future
    /// goes to the schedule.
    pub async fn push(&self, job: Job) -> Result<String> {
        let mut jids = self.push_bulk(vec![job]).await?;
        Ok(jids.pop().expect("one job pushed"))
    }

    /// Pushes many jobs in one round trip (one MULTI); returns their jids in
    /// order. Every job is validated first: on an error nothing is written.
    pub async fn push_bulk(&self, jobs: Vec<Job>) -> Result<Vec<String>> {
        let at = now();
        let mut jids = Vec::with_capacity(jobs.len());
        let mut immediate: BTreeMap<String, Vec<String>> = BTreeMap::new();
        let mut scheduled: Vec<(f64, String)> = Vec::new();
        for (index, mut job) in jobs.into_iter().enumerate() {
            job.prepare_for_push(at).map_err(|e| match e {
                crate::Error::InvalidJob { field, reason } if index > 0 => crate::Error::InvalidJob {
                    field: format!("jobs[{index}].{field}"),
                    reason,
                },
                other => other,
            })?;
            jids.push(job.jid_str().to_string());
            match job.run_at() {
                Some(run_at) if run_at > at => scheduled.push((run_at, job.to_json())),
                _ => {
                    job.remove("at");
                    job.set("enqueued_at", float(at));
                    immediate
                        .entry(job.queue_name().to_string())
                        .or_default()
                        .push(job.to_json());
                }
            }
        }
        let mut pipe = redis::pipe();
        pipe.atomic();
        for (queue, payloads) in &immediate {
            pipe.sadd(self.keys.queues(), queue).ignore();
            pipe.lpush(self.keys.queue(queue), payloads).ignore();
        }
        if !scheduled.is_empty() {
            let members: Vec<(f64, &str)> = scheduled.iter().map(|(s, p)| (*s, p.as_str())).collect();
            pipe.zadd_multiple(self.keys.schedule(), &members).ignore();
        }
        // A connection that died since the last call fails the first command
        // sent on it (the shared connection reconnects behind it): retry
        // once. At worst a push whose reply was lost is pushed twice, which
        // at-least-once delivery allows; a push must never be lost.
        match pipe.query_async::<()>(&mut self.redis.conn()).await {
            Err(e) if e.is_connection_dropped() || e.is_io_error() => {
                tracing::warn!("push failed ({e}); retrying once on a new connection");
                pipe.query_async::<()>(&mut self.redis.conn()).await?;
            }
            other => other?,
        }
        Ok(jids)
    }
}
