//! Queues: their sizes and latencies (every priority level and group
//! counted), pause, clear, and a page of a queue's jobs.

use super::Api;
use crate::error::Result;
use crate::job::{now, Job};
use redis::AsyncCommands;
use serde::Serialize;
use std::collections::{HashMap, HashSet};

/// What the registry of a namespace's lists says (see [`Api::listing`]).
pub(super) struct Listing {
    pub levels: HashMap<String, u16>,
    pub grouped: HashSet<String>,
}

/// A queue's state.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct QueueInfo {
    /// The queue's name.
    pub name: String,
    /// Jobs waiting on it.
    pub size: u64,
    /// Seconds the oldest job has waited (0 when empty).
    pub latency: f64,
    /// Paused: no worker takes from it.
    pub paused: bool,
}

impl Api {
    /// Every queue ever pushed to, by name.
    pub async fn queues(&self) -> Result<Vec<QueueInfo>> {
        let keys = self.client.keys();
        let mut conn = self.conn();
        let mut names: Vec<String> = conn.smembers(keys.queues()).await?;
        names.sort();
        let paused: Vec<String> = conn.smembers(keys.paused_queues()).await?;
        let listing = self.listing().await?;
        let mut out = Vec::with_capacity(names.len());
        for name in names {
            out.push(self.queue_with(&name, &paused, &listing).await?);
        }
        Ok(out)
    }

    /// One queue.
    pub async fn queue(&self, name: &str) -> Result<QueueInfo> {
        let paused: Vec<String> = self.conn().smembers(self.client.keys().paused_queues()).await?;
        self.queue_with(name, &paused, &self.listing().await?).await
    }

    /// The priority levels in use, by queue, and the grouped queues (one
    /// registry lists both: see `priority.rs`, `groups.rs`).
    pub(super) async fn listing(&self) -> Result<Listing> {
        let members: Vec<String> = self.conn().smembers(self.client.keys().priorities()).await?;
        Ok(Listing {
            levels: crate::priority::from_members(&members),
            grouped: members
                .iter()
                .filter_map(|m| match crate::groups::parse_member(m)? {
                    crate::groups::Listed::Grouped(queue) => Some(queue.to_string()),
                    crate::groups::Listed::Weighted(_)
                    | crate::groups::Listed::Capped(_)
                    | crate::groups::Listed::Rated(_) => None,
                })
                .collect(),
        })
    }

    /// The lists of queue `name`: its own, in the order workers take from
    /// them, then each group's that has jobs (in turn order, then those
    /// parked at their cap and those waiting out their rate's period), and
    /// its ring when it is grouped.
    async fn lists_with(&self, name: &str, listing: &Listing) -> Result<(Vec<String>, Option<String>)> {
        let keys = self.client.keys();
        let levels = crate::priority::lists(keys, name, &listing.levels);
        let mut lists: Vec<String> = levels.iter().map(|(key, _)| key.clone()).collect();
        if !listing.grouped.contains(name) {
            return Ok((lists, None));
        }
        let ring = keys.group_ring(name);
        let (mut groups, parked, waiting): (Vec<String>, Vec<String>, Vec<String>) = redis::pipe()
            .zrange(&ring, 0, -1)
            .smembers(keys.group_parked(name))
            .zrange(keys.group_timers(name), 0, -1)
            .query_async(&mut self.conn())
            .await?;
        for group in parked.into_iter().chain(waiting) {
            if !groups.contains(&group) {
                groups.push(group);
            }
        }
        for group in groups.iter().filter(|group| !group.is_empty()) {
            for (_, level) in &levels {
                lists.push(keys.group_list(name, *level, group));
            }
        }
        Ok((lists, Some(ring)))
    }

    /// A queue's size is that of all its lists (one per priority level in
    /// use, and per group), its latency that of its oldest job.
    async fn queue_with(&self, name: &str, paused: &[String], listing: &Listing) -> Result<QueueInfo> {
        let mut pipe = redis::pipe();
        for key in self.lists_with(name, listing).await?.0 {
            pipe.llen(&key).lindex(&key, -1);
        }
        let lists: Vec<(u64, Option<Vec<u8>>)> = pipe.query_async(&mut self.conn()).await?;
        let oldest_enqueued = lists
            .iter()
            .filter_map(|(_, oldest)| Job::parse(oldest.as_deref()?).ok())
            .filter_map(|job| job.get("enqueued_at").and_then(crate::sidekiq::epoch_seconds))
            .min_by(f64::total_cmp);
        Ok(QueueInfo {
            name: name.to_string(),
            size: lists.iter().map(|(size, _)| size).sum(),
            latency: oldest_enqueued.map_or(0.0, |at| (now() - at).max(0.0)),
            paused: paused.iter().any(|p| p == name),
        })
    }

    /// Stops every worker taking from `name` (within a second).
    pub async fn pause_queue(&self, name: &str) -> Result<()> {
        let keys = self.client.keys();
        // Sharded by queue, fetches read the flag on the queue's slot; the
        // namespace's set is what the dashboard lists. The flag goes first.
        if keys.is_sharded_by_queue() {
            let _: i64 = self.conn().sadd(keys.pause_flag(name), name).await?;
        }
        let _: i64 = self.conn().sadd(keys.paused_queues(), name).await?;
        Ok(())
    }
    /// Lets workers take from `name` again.
    pub async fn unpause_queue(&self, name: &str) -> Result<()> {
        let keys = self.client.keys();
        if keys.is_sharded_by_queue() {
            let _: i64 = self.conn().srem(keys.pause_flag(name), name).await?;
        }
        let _: i64 = self.conn().srem(keys.paused_queues(), name).await?;
        // Its idle workers wait for a wake-up, not on the queue.
        let _: i64 = self.conn().publish(self.client.keys().wake(), name).await?;
        Ok(())
    }
    /// Deletes every job on the queue (at every priority level); returns
    /// how many.
    pub async fn clear_queue(&self, name: &str) -> Result<u64> {
        let (lists, ring) = self.lists_with(name, &self.listing().await?).await?;
        let mut pipe = redis::pipe();
        pipe.atomic();
        for key in &lists {
            pipe.llen(key);
        }
        pipe.unlink(&lists).ignore();
        if let Some(ring) = ring {
            // With its groups' jobs go their turns, the record of those
            // parked or waiting out a period, and what their jobs declared
            // (a push declares it again); running jobs keep their leases.
            let keys = self.client.keys();
            pipe.unlink(&[
                ring,
                keys.group_parked(name),
                keys.group_timers(name),
                keys.group_declared(name),
            ])
            .ignore();
        }
        let sizes: Vec<u64> = pipe.query_async(&mut self.conn()).await?;
        Ok(sizes.iter().sum())
    }
    /// Jobs on a queue: its own in the order workers take them, highest
    /// priority level first and within a level newest first, then each
    /// group's the same way (`start`, `count` page through).
    pub async fn queue_jobs(&self, name: &str, start: isize, count: isize) -> Result<Vec<Vec<u8>>> {
        let (lists, _) = self.lists_with(name, &self.listing().await?).await?;
        let mut conn = self.conn();
        if let [only] = lists.as_slice() {
            return Ok(conn.lrange(only, start, start + count - 1).await?);
        }
        let mut sizes = redis::pipe();
        for key in &lists {
            sizes.llen(key);
        }
        let sizes: Vec<isize> = sizes.query_async(&mut conn).await?;
        let (mut skip, mut wanted) = (start.max(0), count.max(0));
        let mut jobs = Vec::new();
        for (key, size) in lists.iter().zip(sizes) {
            if wanted == 0 {
                break;
            }
            if skip >= size {
                skip -= size;
                continue;
            }
            let page: Vec<Vec<u8>> = conn.lrange(key, skip, skip + wanted - 1).await?;
            wanted -= page.len() as isize;
            jobs.extend(page);
            skip = 0;
        }
        Ok(jobs)
    }
}
