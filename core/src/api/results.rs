//! What a job came to, as its kept result record says (`result_ttl`):
//! read, awaited, and as every language answers `result(jid)`.

use super::Api;
use crate::error::Result;
use crate::job::now;
use serde_json::Value;

impl Api {
    /// The kept outcome of a job pushed with `result_ttl`: `{status, jid,
    /// class, queue, retry_count, at, args, created_at}`, `started_at` and
    /// `worker` once it ran, plus `value` and `finished_at` (succeeded) or
    /// `error_class`/`error_message`/`error_backtrace` and `finished_at`
    /// (retrying, dead, failed), `due_at` (scheduled), and `progress`
    /// (see [`Api::progress`]) once it reported some. `None` for a job without `result_ttl`, an unknown jid,
    /// or one whose result expired.
    pub async fn result(&self, jid: &str) -> Result<Option<Value>> {
        let keys = self.client.keys();
        // The record, whether the job was cancelled and its last progress
        // report, in one round trip.
        let (raw, cancelled, progress): (Option<Vec<u8>>, Option<f64>, Option<Vec<u8>>) = redis::pipe()
            .get(keys.result(jid))
            .zscore(keys.cancelled(), jid)
            .get(keys.progress(jid))
            .query_async(&mut self.conn())
            .await?;
        let Some(mut record) = raw.and_then(|r| serde_json::from_slice::<Value>(&r).ok()) else {
            return Ok(None);
        };
        record["status"] = Value::String(crate::results::current_status(&record, now()));
        if let Some(progress) = progress.and_then(|p| serde_json::from_slice::<Value>(&p).ok()) {
            record["progress"] = progress;
        }
        if cancelled.is_some_and(|forget_after| forget_after > now()) {
            super::cancel::overlaid(&mut record);
        }
        Ok(Some(record))
    }

    /// The last progress a job reported (see [`crate::long_jobs`]):
    /// `{jid, percent, message, data, at}`, kept as long as its result
    /// (`result_ttl`), else a day after the report; `None` if it reported
    /// none.
    pub async fn progress(&self, jid: &str) -> Result<Option<Value>> {
        let raw: Option<Vec<u8>> =
            redis::AsyncCommands::get(&mut self.conn(), self.client.keys().progress(jid)).await?;
        Ok(raw.and_then(|r| serde_json::from_slice(&r).ok()))
    }

    /// `queued`, `scheduled`, `waiting` (a batch callback or a later
    /// workflow step, not yet handed over), `running`, `retrying`, `dead`,
    /// `succeeded`, `failed`, `expired`, `cancelled`, or `unknown` (no
    /// result kept: pushed without `result_ttl`, never pushed, or expired):
    /// one `GET`, no scan.
    pub async fn status(&self, jid: &str) -> Result<String> {
        Ok(self
            .result(jid)
            .await?
            .map(|r| r["status"].as_str().unwrap_or("unknown").to_string())
            .unwrap_or_else(|| "unknown".to_string()))
    }

    /// Waits up to `timeout` seconds for the job's outcome to be final
    /// (`succeeded`, `failed`, `dead`): blocked on its ready list (`BLMOVE`
    /// onto itself, so every waiter wakes), not polling. Returns the record
    /// as [`Api::result`] does, final or, at the timeout, as it stands; at
    /// once `None` when no record is kept (pushed without `result_ttl`,
    /// never pushed, or expired), since none will come.
    pub async fn wait_result(&self, jid: &str, timeout: f64) -> Result<Option<Value>> {
        let limit = std::time::Duration::from_secs_f64(timeout.clamp(0.0, 86_400.0));
        let deadline = std::time::Instant::now() + limit;
        let ready = self.client.keys().result_ready(jid);
        // One blocking connection for the whole wait, made when first needed.
        let mut blocking = None;
        loop {
            let record = self.result(jid).await?;
            let done = record
                .as_ref()
                .and_then(|r| r["status"].as_str())
                .is_some_and(|s| crate::results::FINAL.contains(&s));
            let left = deadline.saturating_duration_since(std::time::Instant::now());
            // No record: none will come (a push with `result_ttl` and a
            // batch's open write one as the jid is known), so no wait.
            if done || left.is_zero() || record.is_none() {
                return Ok(record);
            }
            // Whole slices of at most 5 s: BLMOVE's timeout is in seconds
            // with decimals; a slice that ends looks at the record again.
            let slice = left.min(std::time::Duration::from_secs(5));
            if blocking.is_none() {
                blocking = Some(
                    self.client
                        .redis()
                        .blocking(limit.min(std::time::Duration::from_secs(5)))
                        .await?,
                );
            }
            let conn = &mut blocking.as_mut().expect("made above").conn;
            let _: Option<Vec<u8>> = redis::cmd("BLMOVE")
                .arg(&ready)
                .arg(&ready)
                .arg("RIGHT")
                .arg("LEFT")
                .arg(slice.as_secs_f64().max(0.01))
                .query_async(conn)
                .await?;
        }
    }

    /// What a job pushed with `result_ttl` came to, as every language
    /// answers `result(jid)`: with `wait` (seconds), waits that long for a
    /// final outcome ([`Api::wait_result`]).
    pub async fn outcome(&self, jid: &str, wait: Option<f64>) -> Result<crate::results::JobOutcome> {
        let record = match wait {
            None => self.result(jid).await?,
            Some(timeout) => self.wait_result(jid, timeout).await?,
        };
        Ok(crate::results::JobOutcome::of(record))
    }
}
