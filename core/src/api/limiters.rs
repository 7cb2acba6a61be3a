//! The ops API's view of the rate limiters (`Api::limiters`): each one's
//! definition, what it has given out now, and how many checks it refused;
//! what they are and how they decide is `crate::limiter`.

use super::Api;
use crate::error::Result;
use redis::AsyncCommands;
use serde::Serialize;
use std::collections::HashMap;

/// A rate limiter as the dashboard, `/metrics` and the admin API show it.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct LimiterInfo {
    /// Its name.
    pub name: String,
    /// `concurrent`, `bucket`, `window` or `leaky`.
    pub kind: String,
    /// How many it allows (at once, or per interval).
    pub limit: u64,
    /// The interval in seconds (none for `concurrent`).
    pub interval: Option<f64>,
    /// What it has given out now: leases held (concurrent), grants in this
    /// interval (bucket) or the last one (window), units of the burst in
    /// use (leaky).
    pub in_use: u64,
    /// Jobs (and `acquire` calls) it turned away since it was first
    /// defined, each counted once per wait however often it looked.
    pub refused: u64,
}

impl Api {
    /// Every rate limiter defined, by name.
    pub async fn limiters(&self) -> Result<Vec<LimiterInfo>> {
        let keys = self.keys();
        let mut names: Vec<String> = self.conn().smembers(keys.limiters()).await?;
        names.sort();
        let now = crate::clock::now(self.client.redis()).await?;
        let mut found = Vec::with_capacity(names.len());
        for name in names {
            let definition: HashMap<String, String> = self.conn().hgetall(keys.limiter(&name)).await?;
            let (Some(kind), Some(limit)) = (
                definition.get("kind").cloned(),
                definition.get("limit").and_then(|l| l.parse::<u64>().ok()),
            ) else {
                continue;
            };
            let number = |field: &str| definition.get(field).and_then(|v| v.parse::<f64>().ok());
            let interval = number("interval").filter(|i| *i > 0.0);
            let state = keys.limiter_state(&name, &kind);
            let in_use = match (kind.as_str(), interval) {
                ("concurrent", _) => self.conn().zcount(&state, format!("({now}"), "+inf").await?,
                ("window", Some(interval)) => {
                    self.conn()
                        .zcount(&state, format!("({}", now - interval), "+inf")
                        .await?
                }
                ("bucket", Some(interval)) => {
                    let (bucket, count): (Option<f64>, Option<u64>) = redis::pipe()
                        .hget(&state, "bucket")
                        .hget(&state, "count")
                        .query_async(&mut self.conn())
                        .await?;
                    if bucket == Some((now / interval).floor()) {
                        count.unwrap_or(0)
                    } else {
                        0
                    }
                }
                ("leaky", Some(interval)) => {
                    let due: Option<f64> = self.conn().get(&state).await?;
                    let step = interval / limit.max(1) as f64;
                    due.map_or(0, |due| ((due - now) / step).ceil().clamp(0.0, limit as f64) as u64)
                }
                _ => 0,
            };
            found.push(LimiterInfo {
                refused: number("over").map_or(0, |o| o as u64),
                name,
                kind,
                limit,
                interval,
                in_use,
            });
        }
        Ok(found)
    }
}
