//! Live worker processes, the jobs they run, and quieting or stopping one.

use super::Api;
use crate::error::Result;
use crate::scripts::SCRIPTS;
use redis::AsyncCommands;
use serde::Serialize;
use serde_json::Value;

/// A registered worker process.
#[derive(Clone, Debug, Serialize)]
pub struct ProcessInfo {
    /// `host:pid:random`.
    pub identity: String,
    /// `{hostname, pid, concurrency, queues, labels, version, started_at, ...}`.
    pub info: Value,
    /// Jobs running now.
    pub busy: u64,
    /// Quiet: taking no new jobs.
    pub quiet: bool,
    /// Its last heartbeat (epoch seconds).
    pub beat: f64,
}

/// A job running now.
#[derive(Clone, Debug, Serialize)]
pub struct BusyJob {
    /// The process running it.
    pub identity: String,
    /// The queue it came from.
    pub queue: String,
    /// When it started (epoch seconds).
    pub run_at: f64,
    /// Its payload.
    pub job: Value,
    /// Its last progress report, if it reported (see [`crate::long_jobs`]).
    pub progress: Option<Value>,
}

impl Api {
    /// Live processes. A member whose process hash has expired (it died
    /// without cleaning up) is pruned from the set on the way.
    pub async fn processes(&self) -> Result<Vec<ProcessInfo>> {
        let keys = self.client.keys();
        let mut conn = self.conn();
        let mut identities: Vec<String> = conn.smembers(keys.processes()).await?;
        identities.sort();
        let mut out = Vec::new();
        for identity in identities {
            let fields: std::collections::HashMap<String, String> = conn.hgetall(keys.process(&identity)).await?;
            let Some(info) = fields.get("info") else {
                let _: i64 = conn.srem(keys.processes(), &identity).await?;
                continue;
            };
            out.push(ProcessInfo {
                info: serde_json::from_str(info).unwrap_or(Value::Null),
                busy: fields.get("busy").and_then(|b| b.parse().ok()).unwrap_or(0),
                quiet: fields.get("quiet").is_some_and(|q| q == "true"),
                beat: fields.get("beat").and_then(|b| b.parse().ok()).unwrap_or(0.0),
                identity,
            });
        }
        Ok(out)
    }
    /// The jobs running now, in every live process.
    pub async fn busy(&self) -> Result<Vec<BusyJob>> {
        self.busy_in(&self.processes().await?).await
    }
    /// The jobs running now in `processes`.
    pub(super) async fn busy_in(&self, processes: &[ProcessInfo]) -> Result<Vec<BusyJob>> {
        let mut busy = Vec::new();
        for process in processes {
            let slots: Vec<(String, String)> = self
                .conn()
                .hgetall(self.client.keys().workers(&process.identity))
                .await?;
            for (_, entry) in slots {
                let entry: Value = serde_json::from_str(&entry).unwrap_or(Value::Null);
                busy.push(BusyJob {
                    identity: process.identity.clone(),
                    queue: entry["queue"].as_str().unwrap_or_default().to_string(),
                    run_at: entry["run_at"].as_f64().unwrap_or_default(),
                    // A Sidekiq process writes the payload as a string of JSON.
                    job: match &entry["payload"] {
                        Value::String(text) => serde_json::from_str(text).unwrap_or(Value::Null),
                        payload => payload.clone(),
                    },
                    progress: None,
                });
            }
        }
        busy.sort_by(|a, b| a.run_at.total_cmp(&b.run_at));
        // Their progress reports, in one round trip.
        if !busy.is_empty() {
            let keys: Vec<String> = busy
                .iter()
                .map(|b| self.client.keys().progress(b.job["jid"].as_str().unwrap_or_default()))
                .collect();
            let reports: Vec<Option<Vec<u8>>> = redis::cmd("MGET").arg(&keys).query_async(&mut self.conn()).await?;
            for (job, report) in busy.iter_mut().zip(reports) {
                job.progress = report.and_then(|r| serde_json::from_slice(&r).ok());
            }
        }
        Ok(busy)
    }
    /// Tells a process to stop taking jobs. Delivered even when the process
    /// is not subscribed at this instant (see `scripts/signal.lua`).
    pub async fn quiet_process(&self, identity: &str) -> Result<()> {
        self.signal_process(identity, "quiet").await
    }
    /// Tells a process to shut down, as [`Api::quiet_process`] does.
    pub async fn stop_process(&self, identity: &str) -> Result<()> {
        self.signal_process(identity, "stop").await
    }
    async fn signal_process(&self, identity: &str, command: &str) -> Result<()> {
        let keys = self.client.keys();
        // Sidekiq's layout speaks Sidekiq's signals: the process may be one.
        let (command, push) = match (keys.is_sidekiq(), command) {
            (true, "quiet") => ("TSTP", "LPUSH"),
            (true, _) => ("TERM", "LPUSH"),
            (false, command) => (command, "RPUSH"),
        };
        let _: i64 = SCRIPTS
            .signal
            .key(keys.signals(identity))
            .arg(keys.signal(identity))
            .arg(command)
            .arg(crate::heartbeat::PRESENCE_TTL_SECS)
            .arg(push)
            .invoke_async(&mut self.conn())
            .await?;
        Ok(())
    }
}
