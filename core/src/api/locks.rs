//! Held locks (unique jobs', periodic entries' runs) and the periodic
//! entries the live processes registered.

use super::Api;
use crate::error::Result;
use redis::AsyncCommands;
use serde::Serialize;
use serde_json::Value;

/// A held lock: a unique job's (`name` = digest) or a periodic entry's run
/// lock (`name` = pjid), with the jid owning it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct LockInfo {
    /// The digest or pjid.
    pub name: String,
    /// The jid holding it.
    pub owner: String,
    /// Seconds left (-1: no expiry).
    pub ttl: i64,
}

/// A periodic entry as the live processes report it, with its state.
#[derive(Clone, Debug)]
pub struct PeriodicInfo {
    /// `{pjid, cron, class, queue, until_executed}` as reported.
    pub entry: Value,
    /// The entry's stable id.
    pub pjid: String,
    /// The last slot claimed (epoch seconds), if any.
    pub last_slot: Option<i64>,
    /// The run lock's owner while an `until_executed` run is pending.
    pub running: Option<String>,
}

impl Serialize for PeriodicInfo {
    /// The entry's fields, plus `pjid`, `last_slot` and `running`.
    fn serialize<S: serde::Serializer>(&self, s: S) -> std::result::Result<S::Ok, S::Error> {
        let mut entry = match &self.entry {
            Value::Object(fields) => fields.clone(),
            _ => serde_json::Map::new(),
        };
        entry.insert("pjid".into(), Value::String(self.pjid.clone()));
        entry.insert("last_slot".into(), self.last_slot.into());
        entry.insert("running".into(), self.running.clone().into());
        entry.serialize(s)
    }
}

impl Api {
    /// Held unique-job locks (at most `limit`; a scan, not a full load).
    pub async fn unique_locks(&self, limit: usize) -> Result<Vec<LockInfo>> {
        let prefix = self.client.keys().unique("");
        self.locks(&prefix, limit).await
    }

    /// Removes a unique lock (an operator's override): a job with that
    /// digest can be pushed again. True if there was one.
    pub async fn clear_unique_lock(&self, digest: &str) -> Result<bool> {
        let removed: i64 = self.conn().del(self.client.keys().unique(digest)).await?;
        Ok(removed > 0)
    }

    /// Held periodic run locks (`until_executed` runs pending or running).
    pub async fn periodic_locks(&self, limit: usize) -> Result<Vec<LockInfo>> {
        let prefix = self.client.keys().periodic_running("");
        self.locks(&prefix, limit).await
    }

    /// The periodic entries the live processes tick for, with the last
    /// slot claimed and the run lock's owner.
    pub async fn periodic(&self) -> Result<Vec<PeriodicInfo>> {
        let mut entries: Vec<PeriodicInfo> = Vec::new();
        for process in self.processes().await? {
            let listed = process.info.get("periodic").and_then(Value::as_array).cloned();
            for entry in listed.unwrap_or_default() {
                let Some(pjid) = entry.get("pjid").and_then(Value::as_str) else {
                    continue;
                };
                if entries.iter().all(|e| e.pjid != pjid) {
                    entries.push(PeriodicInfo {
                        pjid: pjid.to_string(),
                        entry: entry.clone(),
                        last_slot: None,
                        running: None,
                    });
                }
            }
        }
        let keys = self.client.keys();
        for info in &mut entries {
            let (last_slot, running): (Option<i64>, Option<String>) = redis::pipe()
                .get(keys.periodic_last_slot(&info.pjid))
                .get(keys.periodic_running(&info.pjid))
                .query_async(&mut self.conn())
                .await?;
            info.last_slot = last_slot;
            info.running = running;
        }
        Ok(entries)
    }

    async fn locks(&self, prefix: &str, limit: usize) -> Result<Vec<LockInfo>> {
        let mut conn = self.conn();
        let pattern = format!("{}*", super::sets::glob_escape(prefix));
        let mut names = Vec::new();
        let mut cursor: u64 = 0;
        loop {
            // On the node holding the namespace (in a cluster, its slot's owner).
            let scan = redis::cmd("SCAN")
                .arg(cursor)
                .arg("MATCH")
                .arg(&pattern)
                .arg("COUNT")
                .arg(1000)
                .clone();
            let (next, batch): (u64, Vec<String>) = self.client.redis().on_namespace_node(&scan).await?;
            names.extend(batch);
            cursor = next;
            if cursor == 0 || names.len() >= limit {
                break;
            }
        }
        names.truncate(limit);
        let mut locks = Vec::with_capacity(names.len());
        for key in names {
            let (owner, ttl): (Option<String>, i64) = redis::pipe().get(&key).ttl(&key).query_async(&mut conn).await?;
            if let Some(owner) = owner {
                let name = key.strip_prefix(prefix).unwrap_or(&key).to_string();
                locks.push(LockInfo { name, owner, ttl });
            }
        }
        Ok(locks)
    }
}
