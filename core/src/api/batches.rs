//! The ops API's view of batches (`Api::batch`, `Api::batches`): each
//! one's counts, failed jobs, times and callbacks, as its hash says now
//! (`crate::batch` is how they are counted).

use super::{check_search_text, Api};
use crate::batch::{BatchEvent, BatchKind};
use crate::error::Result;
use redis::AsyncCommands;
use serde::Serialize;
use std::collections::HashMap;

/// A batch as every client, the dashboard and `/metrics` show it.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct BatchStatus {
    /// Its id.
    pub bid: String,
    /// What its creator called it.
    pub description: String,
    /// Jobs (and child batches) it holds.
    pub total: u64,
    /// Those that have not succeeded yet.
    pub pending: u64,
    /// Those that failed and have not succeeded since, by jid (a child
    /// batch as `batch:<id>`): `failed` or `dead`.
    pub failures: Vec<(String, String)>,
    /// How many of those died.
    pub dead: u64,
    /// Still open: its creator has not closed it, so it cannot complete.
    pub open: bool,
    /// The batch it is a unit of.
    pub parent: Option<String>,
    /// When it was opened, completed, succeeded and first had a job die
    /// (epoch seconds).
    pub created_at: f64,
    /// When every job had run at least once.
    pub completed_at: Option<f64>,
    /// When every job had succeeded.
    pub succeeded_at: Option<f64>,
    /// When a job of it first died.
    pub died_at: Option<f64>,
    /// Each event with callbacks: the event, how many callbacks, and
    /// whether they have been pushed.
    pub callbacks: Vec<(String, usize, bool)>,
    /// Each callback: its event, class, queue and jid.
    pub callback_jobs: Vec<CallbackJob>,
    /// A batch, a workflow, or a workflow's step.
    pub kind: BatchKind,
    /// A workflow's steps' batch ids, in order (empty for other kinds).
    pub steps: Vec<String>,
}

/// One callback of a batch, as its template in the batch's hash says.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct CallbackJob {
    /// `complete`, `success` or `death`.
    pub event: String,
    /// The handler it is pushed for.
    pub class: String,
    /// The queue it is pushed onto.
    pub queue: String,
    /// The jid it runs as.
    pub jid: String,
}

/// The callbacks of one event from their templates (`[queue, payload
/// before the status, payload after it, jid, what goes between]`, see
/// `batch.rs`): the payload is read back with `null` where the status goes.
fn callback_jobs_of(event: &str, templates: &str) -> Vec<CallbackJob> {
    let Ok(templates) = serde_json::from_str::<Vec<Vec<serde_json::Value>>>(templates) else {
        return Vec::new();
    };
    let text = |item: &[serde_json::Value], at: usize| item.get(at).and_then(|v| v.as_str()).unwrap_or("").to_string();
    templates
        .iter()
        .map(|item| {
            let between = if text(item, 4) == "none" { "" } else { "null" };
            let payload = format!("{}{between}{}", text(item, 1), text(item, 2));
            let class = serde_json::from_str::<serde_json::Value>(&payload)
                .ok()
                .and_then(|job| job["class"].as_str().map(str::to_string))
                .unwrap_or_default();
            CallbackJob {
                event: event.to_string(),
                class,
                queue: text(item, 0),
                jid: text(item, 3),
            }
        })
        .collect()
}

impl BatchStatus {
    /// `complete`, `success`, `dead` (a job died, not all succeeded),
    /// `open` or `pending`: the one word the dashboard shows.
    pub fn state(&self) -> &'static str {
        if self.succeeded_at.is_some() {
            "success"
        } else if self.died_at.is_some() {
            "dead"
        } else if self.completed_at.is_some() {
            "complete"
        } else if self.open {
            "open"
        } else {
            "pending"
        }
    }

    /// As JSON for the hosts: every field, and `state`.
    pub fn to_json(&self) -> serde_json::Value {
        let mut value = serde_json::to_value(self).expect("a status serializes");
        value["state"] = serde_json::Value::from(self.state());
        value
    }

    fn from_hash(bid: &str, fields: &HashMap<String, String>, failures: Vec<(String, String)>) -> Self {
        let number = |name: &str| fields.get(name).and_then(|v| v.parse::<i64>().ok()).unwrap_or(0).max(0) as u64;
        let time = |name: &str| fields.get(name).and_then(|v| v.parse::<f64>().ok());
        let (mut callbacks, mut callback_jobs) = (Vec::new(), Vec::new());
        for event in BatchEvent::ALL {
            let Some(list) = fields.get(&format!("callbacks:{}", event.as_str())) else {
                continue;
            };
            let jobs = callback_jobs_of(event.as_str(), list);
            let fired = fields.contains_key(&format!("fired:{}", event.as_str()));
            callbacks.push((event.as_str().to_string(), jobs.len(), fired));
            callback_jobs.extend(jobs);
        }
        BatchStatus {
            bid: bid.to_string(),
            description: fields.get("description").cloned().unwrap_or_default(),
            total: number("total"),
            pending: number("pending"),
            failures,
            dead: number("dead"),
            open: fields.get("open").is_some_and(|o| o == "1"),
            parent: fields.get("parent").filter(|p| !p.is_empty()).cloned(),
            created_at: time("created_at").unwrap_or(0.0),
            completed_at: time("completed_at"),
            succeeded_at: time("succeeded_at"),
            died_at: time("died_at"),
            callbacks,
            callback_jobs,
            kind: BatchKind::from_stored(fields.get("kind").map(String::as_str)),
            steps: fields
                .get("steps")
                .and_then(|steps| serde_json::from_str(steps).ok())
                .unwrap_or_default(),
        }
    }
}

impl Api {
    /// The batch `bid`, or `None` if there is none (never opened, or its
    /// keys expired).
    pub async fn batch(&self, bid: &str) -> Result<Option<BatchStatus>> {
        check_search_text("bid", bid)?;
        let keys = self.keys();
        let (fields, failures): (HashMap<String, String>, Vec<(String, String)>) = redis::pipe()
            .hgetall(keys.batch(bid))
            .hgetall(keys.batch_failures(bid))
            .query_async(&mut self.conn())
            .await?;
        if fields.is_empty() {
            return Ok(None);
        }
        let mut failures = failures;
        failures.sort();
        Ok(Some(BatchStatus::from_hash(bid, &fields, failures)))
    }

    /// How many batches completed, succeeded and had a job die, ever
    /// (counted when their callbacks are handed over; `complete`,
    /// `success`, `death`).
    pub async fn batch_events(&self) -> Result<Vec<(&'static str, u64)>> {
        let keys = self.keys();
        let mut pipe = redis::pipe();
        for event in BatchEvent::ALL {
            pipe.get(keys.stat(&format!("batches_{}", event.as_str()), None));
        }
        let counts: Vec<Option<u64>> = pipe.query_async(&mut self.conn()).await?;
        Ok(BatchEvent::ALL
            .iter()
            .zip(counts)
            .map(|(event, count)| (event.as_str(), count.unwrap_or(0)))
            .collect())
    }

    /// The newest `limit` batches, newest first. An id whose batch has
    /// expired is taken off the list on the way.
    pub async fn batches(&self, limit: usize) -> Result<Vec<BatchStatus>> {
        self.batches_where(limit, |_| true).await
    }

    /// The newest `limit` batches and workflows, without the batches of
    /// workflows' steps (each workflow's page lists its own): what the
    /// dashboard's Batches page shows.
    pub async fn batches_and_workflows(&self, limit: usize) -> Result<Vec<BatchStatus>> {
        self.batches_where(limit, |status| status.kind != BatchKind::Step).await
    }

    async fn batches_where(&self, limit: usize, listed: impl Fn(&BatchStatus) -> bool) -> Result<Vec<BatchStatus>> {
        let keys = self.keys();
        let mut found = Vec::new();
        let mut offset = 0isize;
        let page = limit.clamp(1, 100) as isize;
        while found.len() < limit {
            let ids: Vec<String> = self.conn().zrevrange(keys.batches(), offset, offset + page - 1).await?;
            if ids.is_empty() {
                break;
            }
            offset += ids.len() as isize;
            for bid in ids {
                match self.batch(&bid).await? {
                    Some(status) if found.len() < limit && listed(&status) => found.push(status),
                    Some(_) => {}
                    None => {
                        let _: i64 = self.conn().zrem(keys.batches(), &bid).await?;
                        offset -= 1;
                    }
                }
            }
        }
        Ok(found)
    }
}
