//! Following a job while it runs (docs/long-jobs.md): its progress
//! reports as they are written, then its outcome, from pub/sub on the
//! channel its reports are published on and, for a job that keeps its
//! result (`result_ttl`), the list its final outcome is announced on.
//! Nothing polls.

use super::Api;
use crate::error::{Error, Result};
use futures_util::StreamExt;
use serde_json::Value;
use std::collections::VecDeque;
use std::future::Future;
use std::pin::Pin;

/// What a [`Watch`] yields.
#[derive(Clone, Debug, PartialEq)]
pub enum WatchEvent {
    /// A progress report: `{jid, percent, message, data, at}`, and `state`
    /// (`succeeded`, `failed`, `interrupted`, `cancelled`) on the last
    /// report of a run that ended.
    Progress(Value),
    /// The end: the job's kept result record (as [`Api::result`] gives it)
    /// once final; for a job without `result_ttl`, the last report of the
    /// run that succeeded, failed or was cancelled (a retry may follow a
    /// failure: keep a result to follow a job through its retries).
    Finished(Value),
}

/// A wait for a kept result to be final ([`Api::wait_result`]).
type OutcomeWait = Pin<Box<dyn Future<Output = Result<Option<Value>>> + Send>>;

/// A job being followed; see [`Api::watch`].
pub struct Watch {
    api: Api,
    jid: String,
    messages: redis::aio::PubSubStream,
    /// It keeps a result record: its end is that record becoming final.
    keeps_result: bool,
    /// The wait for that (stays alive across calls of `next`).
    outcome: Option<OutcomeWait>,
    events: VecDeque<WatchEvent>,
    last_report: Option<Value>,
    /// The kept result came out final while the job's last report, with
    /// its run's state, was still on its way (another task writes it):
    /// waited for until then.
    closing: Option<(Value, tokio::time::Instant)>,
    finished: bool,
}

/// How long one wait for a kept result's final outcome blocks before it
/// looks again.
const OUTCOME_SLICE_SECS: f64 = 60.0;
/// How long the end waits for the run's last report (written at most
/// [`crate::long_jobs::WRITE_INTERVAL`] after it ended).
const LAST_REPORT_WAIT: std::time::Duration = std::time::Duration::from_millis(750);

impl Api {
    /// Follows job `jid`: its progress reports as they are written, then
    /// its end (see [`WatchEvent`]). Subscribed before it reads where the
    /// job stands, so no report between the two is missed. A job that
    /// neither keeps a result nor has reported yet is waited for: bound
    /// the wait with the timeout of [`Watch::next`].
    pub async fn watch(&self, jid: &str) -> Result<Watch> {
        let channel = self.client.keys().progress(jid);
        let mut pubsub = self.client.redis().pubsub().await?;
        pubsub.subscribe(&channel).await?;
        let record = self.result(jid).await?;
        let report = match &record {
            Some(record) => record.get("progress").cloned(),
            None => self.progress(jid).await?,
        };
        let mut watch = Watch {
            api: self.clone(),
            jid: jid.to_string(),
            messages: pubsub.into_on_message(),
            keeps_result: record.is_some(),
            outcome: None,
            events: VecDeque::new(),
            last_report: None,
            closing: None,
            finished: false,
        };
        if let Some(report) = report {
            watch.on_report(report);
        }
        if let Some(record) = record.filter(is_final) {
            watch.finish_with_result(record);
        }
        Ok(watch)
    }
}

fn is_final(record: &Value) -> bool {
    record["status"]
        .as_str()
        .is_some_and(|status| crate::results::FINAL.contains(&status))
}

impl Watch {
    /// The job followed.
    pub fn jid(&self) -> &str {
        &self.jid
    }

    /// The next event, waiting for it; `None` once the job's end was
    /// given.
    pub async fn next(&mut self) -> Result<Option<WatchEvent>> {
        loop {
            if let Some(event) = self.events.pop_front() {
                return Ok(Some(event));
            }
            if self.finished {
                return Ok(None);
            }
            if let Some((_, until)) = &self.closing {
                let until = *until;
                tokio::select! {
                    biased;
                    message = self.messages.next() => self.on_message(message)?,
                    _ = tokio::time::sleep_until(until) => {
                        let (record, _) = self.closing.take().expect("closing");
                        self.finish(record);
                    }
                }
                continue;
            }
            if self.keeps_result && self.outcome.is_none() {
                let (api, jid) = (self.api.clone(), self.jid.clone());
                self.outcome = Some(Box::pin(async move { api.wait_result(&jid, OUTCOME_SLICE_SECS).await }));
            }
            let outcome = async {
                match self.outcome.as_mut() {
                    Some(outcome) => outcome.await,
                    None => std::future::pending().await,
                }
            };
            tokio::select! {
                // A report already here goes before the end.
                biased;
                message = self.messages.next() => self.on_message(message)?,
                record = outcome => {
                    self.outcome = None;
                    match record? {
                        Some(record) if is_final(&record) => self.finish_with_result(record),
                        Some(_) => {}
                        // Its result expired or was never kept after all.
                        None => self.keeps_result = false,
                    }
                }
            }
        }
    }

    fn on_message(&mut self, message: Option<redis::Msg>) -> Result<()> {
        let Some(message) = message else {
            return Err(Error::Redis(redis::RedisError::from((
                redis::ErrorKind::Io,
                "the watch's subscription ended",
            ))));
        };
        let payload: Vec<u8> = message.get_payload()?;
        if let Ok(report) = serde_json::from_slice::<Value>(&payload) {
            self.on_report(report);
        }
        Ok(())
    }

    /// The kept result is final: the end, once the run's last report (if
    /// it reported) is given.
    fn finish_with_result(&mut self, record: Value) {
        if let Some(report) = record.get("progress").cloned() {
            self.on_report(report);
        }
        let awaited = self
            .last_report
            .as_ref()
            .is_some_and(|report| report.get("state").is_none());
        if awaited {
            self.closing = Some((record, tokio::time::Instant::now() + LAST_REPORT_WAIT));
        } else {
            self.finish(record);
        }
    }

    /// The events as a stream, ending after the job's end.
    pub fn into_stream(self) -> impl futures_util::Stream<Item = Result<WatchEvent>> + Send {
        futures_util::stream::unfold(Some(self), |watch| async move {
            let mut watch = watch?;
            match watch.next().await {
                Ok(Some(event)) => Some((Ok(event), Some(watch))),
                Ok(None) => None,
                Err(error) => Some((Err(error), None)),
            }
        })
    }

    fn on_report(&mut self, report: Value) {
        // A run's end republishes its last report, with its state.
        if self.last_report.as_ref() == Some(&report) {
            return;
        }
        self.last_report = Some(report.clone());
        let ended = report["state"]
            .as_str()
            .is_some_and(|state| ["succeeded", "failed", "cancelled"].contains(&state));
        self.events.push_back(WatchEvent::Progress(report.clone()));
        if self.closing.is_some() && report.get("state").is_some() {
            let (record, _) = self.closing.take().expect("closing");
            self.finish(record);
        } else if ended && !self.keeps_result {
            self.finish(report);
        }
    }

    fn finish(&mut self, end: Value) {
        if !self.finished {
            self.finished = true;
            self.events.push_back(WatchEvent::Finished(end));
        }
    }
}
