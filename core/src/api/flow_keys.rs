//! The flow keys with state (see `flow.rs`): each debounced, throttled or
//! replacing class, queue and key whose state has not expired, with what
//! its next push would find, read from the index the flow pushes write
//! (`NS:flow_keys`, see `scripts/flow_index.lua`).

use super::Api;
use crate::error::Result;
use redis::AsyncCommands;
use serde::Serialize;

/// One flow key's state.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct FlowKey {
    /// `debounce`, `throttle` or `replace`.
    pub mode: String,
    /// The queue its pushes go to.
    pub queue: String,
    /// Their class.
    pub class: String,
    /// Their flow key.
    pub key: String,
    /// Debounce: the jid of the burst's job. Replace: the jid of the key's
    /// job (still waiting while `waiting`).
    pub jid: Option<String>,
    /// Debounce: when the burst began (epoch seconds).
    pub began: Option<f64>,
    /// Debounce: when the burst's job is due, while it is scheduled (`None`:
    /// it came due, and the next push begins a new burst). Throttle: when
    /// the key's next window opens (a push before it is delayed to it or
    /// dropped).
    pub due: Option<f64>,
    /// Replace: the key's job still waits on its queue, so a push now
    /// replaces it.
    pub waiting: Option<bool>,
    /// When the key's state expires (epoch seconds).
    pub expires_at: f64,
}

/// The most flow keys one call reads.
pub const FLOW_KEYS_MAX: usize = 1000;

/// Replace: how far into its list the key's job is looked for (from the
/// end pushed to), so a listing stays cheap beside a long queue: a job
/// deeper in a longer list is shown as `waiting: None` (not known).
const REPLACE_LOOKUP_DEPTH: usize = 1000;

impl Api {
    /// Up to `count` (at most [`FLOW_KEYS_MAX`]) flow keys with state, the
    /// latest to expire first (about: the latest pushed). Three round
    /// trips, whatever the count.
    pub async fn flow_keys(&self, count: usize) -> Result<Vec<FlowKey>> {
        let keys = self.keys();
        let mut conn = self.conn();
        let now = crate::clock::now(self.client().redis()).await?;
        let listed: Vec<(String, f64)> = conn
            .zrevrangebyscore_limit_withscores(
                keys.flow_keys(),
                "+inf",
                format!("({now:.6}"),
                0,
                count.min(FLOW_KEYS_MAX) as isize,
            )
            .await?;
        let mut found: Vec<(FlowKey, String)> = listed
            .into_iter()
            .filter_map(|(member, expires_at)| {
                let (mode, queue, class, key) =
                    serde_json::from_str::<(String, String, String, String)>(&member).ok()?;
                let digest = crate::job::keyed_digest(&class, &queue, &key);
                let entry = FlowKey {
                    mode,
                    queue,
                    class,
                    key,
                    jid: None,
                    began: None,
                    due: None,
                    waiting: None,
                    expires_at,
                };
                matches!(entry.mode.as_str(), "debounce" | "throttle" | "replace").then_some((entry, digest))
            })
            .collect();
        // Each key's state: the burst (jid, its payload, when it began),
        // the next window, or the waiting job (jid, payload, its list).
        let mut states = redis::pipe();
        for (entry, digest) in &found {
            match entry.mode.as_str() {
                "debounce" => states
                    .cmd("HMGET")
                    .arg(keys.debounce(digest))
                    .arg(&["jid", "payload", "first"]),
                "throttle" => states.cmd("GET").arg(keys.throttle(digest)),
                _ => states
                    .cmd("HMGET")
                    .arg(keys.replace(&entry.queue, digest))
                    .arg(&["jid", "payload", "list"]),
            };
        }
        let states: Vec<redis::Value> = if found.is_empty() {
            Vec::new()
        } else {
            states.query_async(&mut conn).await?
        };
        // Then where the burst's job is scheduled, or whether the key's job
        // still waits on its list.
        let mut lookups = redis::pipe();
        let mut looked_up = Vec::new();
        for ((entry, _), state) in found.iter_mut().zip(states) {
            if entry.mode == "throttle" {
                let opens: Option<f64> = redis::from_redis_value(state).unwrap_or(None);
                entry.due = opens.filter(|opens| *opens > now);
                looked_up.push(false);
                continue;
            }
            let (jid, payload, third): (Option<String>, Option<String>, Option<String>) =
                redis::from_redis_value(state).unwrap_or((None, None, None));
            entry.jid = jid;
            match (entry.mode.as_str(), payload, third) {
                ("debounce", Some(payload), first) => {
                    entry.began = first.and_then(|first| first.parse().ok());
                    lookups.zscore(keys.schedule(), payload);
                    looked_up.push(true);
                }
                ("replace", Some(payload), Some(list)) => {
                    lookups
                        .llen(&list)
                        .cmd("LPOS")
                        .arg(&list)
                        .arg(payload)
                        .arg("MAXLEN")
                        .arg(REPLACE_LOOKUP_DEPTH);
                    looked_up.push(true);
                }
                _ => looked_up.push(false),
            }
        }
        let mut answers: std::vec::IntoIter<redis::Value> = if looked_up.contains(&true) {
            lookups.query_async::<Vec<redis::Value>>(&mut conn).await?.into_iter()
        } else {
            Vec::new().into_iter()
        };
        for ((entry, _), looked) in found.iter_mut().zip(looked_up) {
            if !looked {
                continue;
            }
            if entry.mode == "debounce" {
                entry.due = answers.next().and_then(|v| redis::from_redis_value(v).ok()).flatten();
            } else {
                let length: usize = answers
                    .next()
                    .and_then(|v| redis::from_redis_value(v).ok())
                    .unwrap_or(0);
                let at: Option<i64> = answers.next().and_then(|v| redis::from_redis_value(v).ok()).flatten();
                entry.waiting = match at {
                    Some(_) => Some(true),
                    None if length <= REPLACE_LOOKUP_DEPTH => Some(false),
                    None => None,
                };
            }
        }
        Ok(found.into_iter().map(|(entry, _)| entry).collect())
    }
}
