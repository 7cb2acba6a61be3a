//! The ops API: what the Web UI and admin CLIs are built on. Queues (size,
//! latency, pause, clear), the schedule/retry/dead sets (page, find, retry
//! now, delete, kill), processes (list, quiet, stop) and stats. Reads page
//! with range queries; nothing loads a whole set.

//!
//! One file per concept, as Sidekiq's api.rb is split by class: `queues`,
//! `sets` (and their bounded search), `processes`, `results`, `locks` (and
//! periodic entries), `batches`, `limiters`, `metrics`, `cancel`, `groups`
//! (a grouped queue's groups); this one
//! holds the [`Api`] itself, the sets' names and the stats.

mod batches;
mod cancel;
mod flow_keys;
mod groups;
mod limiters;
mod locks;
mod metrics;
mod processes;
mod queues;
mod results;
mod sets;
mod watch;

pub use batches::{BatchStatus, CallbackJob};
pub use flow_keys::{FlowKey, FLOW_KEYS_MAX};
pub use groups::{GroupInfo, GroupSummary, GROUPS_SUMMARIZED, GROUP_CAP_MAX, GROUP_WEIGHT_MAX};
pub use limiters::LimiterInfo;
pub use locks::{LockInfo, PeriodicInfo};
pub use processes::{BusyJob, ProcessInfo};
pub use queues::QueueInfo;
use sets::check_search_text;
pub use sets::{SetEntry, SetSearch, SEARCH_SCAN_MAX, SEARCH_TEXT_MAX, SEARCH_TIME_MAX};
pub use watch::{Watch, WatchEvent};

use crate::client::Client;
use crate::error::Result;
use crate::job::now;
use crate::retry::day_of;
use redis::AsyncCommands;
use serde::Serialize;

/// One of the sorted sets of jobs.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum JobSet {
    /// Jobs pushed to run later (`NS:schedule`).
    Scheduled,
    /// Failed jobs waiting for their retry.
    Retry,
    /// Jobs out of retries.
    Dead,
}

impl std::str::FromStr for JobSet {
    type Err = crate::error::Error;
    /// `scheduled` (or `schedule`), `retry`, `dead`.
    fn from_str(name: &str) -> Result<Self> {
        match name {
            "scheduled" | "schedule" => Ok(JobSet::Scheduled),
            "retry" => Ok(JobSet::Retry),
            "dead" => Ok(JobSet::Dead),
            other => Err(crate::error::Error::invalid_argument(
                "set",
                format!("{other:?}"),
                "must be \"scheduled\", \"retry\" or \"dead\"",
            )),
        }
    }
}

/// Processed, failed and expired counts.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct Stats {
    /// Jobs that succeeded.
    pub processed: u64,
    /// Failed attempts.
    pub failed: u64,
    /// Jobs dropped unstarted past their `expires_at`.
    pub expired: u64,
    /// Jobs cancelled (`Api::cancel`) and filed as such.
    pub cancelled: u64,
    /// Debounced pushes that collapsed into their key's pending job
    /// (see [`crate::flow`]).
    pub collapsed: u64,
    /// Throttled pushes dropped before their key's next window.
    pub throttled: u64,
    /// Waiting jobs replaced by a push of their key (`replace`).
    pub replaced: u64,
    /// Waiting jobs a group's backlog cap dropped to make room for newer
    /// ones (`group_backlog_full: "drop_oldest"`).
    pub backlog_dropped: u64,
}

/// Ops over one namespace, through a [`Client`]'s connection.
#[derive(Clone)]
pub struct Api {
    client: Client,
}

impl Api {
    /// The API over `client`'s connection and namespace.
    pub fn new(client: Client) -> Self {
        Api { client }
    }

    pub(crate) fn conn(&self) -> crate::connection::Conn {
        self.client.redis().conn()
    }

    pub(crate) fn client(&self) -> &Client {
        &self.client
    }

    pub(crate) fn keys(&self) -> &crate::keys::Keys {
        self.client.keys()
    }

    fn set_key(&self, set: JobSet) -> String {
        let keys = self.client.keys();
        match set {
            JobSet::Scheduled => keys.schedule(),
            JobSet::Retry => keys.retry(),
            JobSet::Dead => keys.dead(),
        }
    }

    /// Processed and failed totals.
    pub async fn stats(&self) -> Result<Stats> {
        self.stats_for(None).await
    }
    /// Counts for one UTC day (`yyyy-mm-dd`), or the totals.
    pub async fn stats_for(&self, day: Option<&str>) -> Result<Stats> {
        let keys = self.client.keys();
        let counts: [Option<u64>; 8] = redis::pipe()
            .get(keys.stat("processed", day))
            .get(keys.stat("failed", day))
            .get(keys.stat("expired", day))
            .get(keys.stat("cancelled", day))
            .get(keys.stat("collapsed", day))
            .get(keys.stat("throttled", day))
            .get(keys.stat("replaced", day))
            .get(keys.stat("backlog_dropped", day))
            .query_async(&mut self.conn())
            .await?;
        let [processed, failed, expired, cancelled, collapsed, throttled, mut replaced, mut backlog_dropped] =
            counts.map(|count| count.unwrap_or(0));
        if keys.is_sharded_by_queue() {
            // Sharded by queue, each queue counts these on its own slot
            // (push_once.lua, push_replace.lua).
            let queues: Vec<String> = self.conn().smembers(keys.queues()).await?;
            for queue in queues {
                let counts: [Option<u64>; 2] = redis::pipe()
                    .get(keys.queue_stat(&queue, "replaced", day))
                    .get(keys.queue_stat(&queue, "backlog_dropped", day))
                    .query_async(&mut self.conn())
                    .await?;
                replaced += counts[0].unwrap_or(0);
                backlog_dropped += counts[1].unwrap_or(0);
            }
        }
        Ok(Stats {
            processed,
            failed,
            expired,
            cancelled,
            collapsed,
            throttled,
            replaced,
            backlog_dropped,
        })
    }
    /// Processed and failed today (UTC).
    pub async fn stats_today(&self) -> Result<Stats> {
        self.stats_for(Some(&day_of(now()))).await
    }
    /// Failed attempts of one job, oldest first (JSON entries).
    pub async fn attempts(&self, jid: &str) -> Result<Vec<String>> {
        Ok(self.conn().lrange(self.client.keys().attempts(jid), 0, -1).await?)
    }

    /// Recent executions, newest first (JSON entries).
    pub async fn history(&self, count: isize) -> Result<Vec<String>> {
        Ok(self.conn().lrange(self.client.keys().history(), 0, count - 1).await?)
    }
}
