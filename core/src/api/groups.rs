//! A grouped queue's groups (see `groups.rs`): a page of them with their
//! backlog, turns, weight and pause; pause, resume and weigh one.

use super::Api;
use crate::error::{Error, Result};
use crate::scripts::SCRIPTS;
use redis::AsyncCommands;
use serde::Serialize;

/// One group of a queue.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct GroupInfo {
    /// The group's key.
    pub name: String,
    /// Its jobs waiting (at every priority level).
    pub size: u64,
    /// Its place in the turns: the jobs it was given, each counted
    /// 1/weight, from when it last got jobs (`None` while paused).
    pub turns: Option<f64>,
    /// Its weight: its turns against a group of weight 1 (1 when not set).
    pub weight: f64,
    /// Paused: no worker takes its jobs; they wait, counted.
    pub paused: bool,
}

/// The heaviest weight a group may be given.
pub const GROUP_WEIGHT_MAX: f64 = 1_000_000.0;

impl Api {
    /// The groups of queue `name` that have jobs or are paused, in the
    /// order their turns come (paused ones last); `start`, `count` page
    /// through.
    pub async fn groups(&self, name: &str, start: isize, count: isize) -> Result<Vec<GroupInfo>> {
        self.check_grouping(name, None)?;
        let keys = self.client.keys();
        let ring = keys.group_ring(name);
        let (start, count) = (start.max(0), count.max(0));
        if count == 0 {
            return Ok(Vec::new());
        }
        // The ring's "" is the queue's ungrouped jobs, not a group: the
        // page is of the groups around it.
        let mut conn = self.conn();
        let ungrouped: Option<isize> = conn.zrank(&ring, "").await?;
        let first = match ungrouped {
            Some(rank) if rank <= start => start + 1,
            _ => start,
        };
        let page: Vec<(String, String)> = conn.zrange_withscores(&ring, first, first + count).await?;
        let page: Vec<(String, String)> = page
            .into_iter()
            .filter(|(group, _)| !group.is_empty())
            .take(count as usize)
            .collect();
        if page.is_empty() {
            return Ok(Vec::new());
        }
        let listing = self.listing().await?;
        let levels = crate::priority::lists(keys, name, &listing.levels);
        let mut sizes = redis::pipe();
        for (group, _) in &page {
            for (_, level) in &levels {
                sizes.llen(format!("{}{group}", keys.group_list_prefix(name, *level)));
            }
        }
        let sizes: Vec<u64> = sizes.query_async(&mut conn).await?;
        let names: Vec<&String> = page.iter().map(|(group, _)| group).collect();
        let weights: Vec<Option<f64>> = redis::cmd("HMGET")
            .arg(keys.group_weights(name))
            .arg(&names)
            .query_async(&mut conn)
            .await?;
        Ok(page
            .iter()
            .enumerate()
            .map(|(i, (group, score))| GroupInfo {
                name: group.clone(),
                size: sizes[i * levels.len()..(i + 1) * levels.len()].iter().sum(),
                turns: score.parse::<f64>().ok().filter(|turns| turns.is_finite()),
                weight: weights[i].filter(|w| *w > 0.0).unwrap_or(1.0),
                paused: score == "inf",
            })
            .collect())
    }

    /// Stops workers taking group `group`'s jobs from queue `name` (jobs
    /// running go on); they wait, counted, until it is resumed. False when
    /// it was paused already.
    pub async fn pause_group(&self, name: &str, group: &str) -> Result<bool> {
        self.check_grouping(name, Some(group))?;
        let changed: i64 = self
            .group_control(name, group, "pause")
            .invoke_async(&mut self.conn())
            .await?;
        Ok(changed == 1)
    }

    /// Lets workers take group `group`'s jobs again: its turn comes next.
    /// False when it was not paused.
    pub async fn resume_group(&self, name: &str, group: &str) -> Result<bool> {
        self.check_grouping(name, Some(group))?;
        let keys = self.client.keys();
        let mut invocation = self.group_control(name, group, "resume");
        for level in 0..=crate::job::HIGHEST_PRIORITY {
            invocation.arg(format!("{}{group}", keys.group_list_prefix(name, level)));
        }
        let changed: i64 = invocation.invoke_async(&mut self.conn()).await?;
        Ok(changed == 1)
    }

    /// Gives group `group` of queue `name` `weight` turns for another's one
    /// (`None` or 1: the default). A weight must be more than 0 and at most
    /// [`GROUP_WEIGHT_MAX`].
    pub async fn set_group_weight(&self, name: &str, group: &str, weight: Option<f64>) -> Result<()> {
        self.check_grouping(name, Some(group))?;
        let weight = match weight {
            None => None,
            Some(w) if w.is_finite() && w > 0.0 && w <= GROUP_WEIGHT_MAX => Some(w).filter(|w| *w != 1.0),
            Some(w) => {
                return Err(Error::invalid_argument(
                    "weight",
                    w,
                    "must be a number more than 0 and at most 1000000",
                ))
            }
        };
        let mut invocation = self.group_control(name, group, "weight");
        invocation.arg(weight.map_or(String::new(), |w| w.to_string()));
        let _: i64 = invocation.invoke_async(&mut self.conn()).await?;
        Ok(())
    }

    /// `group_control.lua` for `group` of queue `name` in `mode`.
    fn group_control(&self, name: &str, group: &str, mode: &str) -> redis::ScriptInvocation<'static> {
        let keys = self.client.keys();
        let mut invocation = SCRIPTS.group_control.prepare_invoke();
        invocation
            .key(keys.group_ring(name))
            .key(keys.priorities())
            .key(keys.group_weights(name))
            .arg(mode)
            .arg(group)
            .arg(keys.wake())
            .arg(name);
        invocation
    }

    /// A queue's name and a group's key as a grouping call takes them.
    fn check_grouping(&self, name: &str, group: Option<&str>) -> Result<()> {
        crate::config::validate_queue_name(name).map_err(|reason| Error::invalid_argument("queue", name, reason))?;
        if let Some(group) = group.filter(|group| !crate::job::valid_group(group)) {
            return Err(Error::invalid_argument(
                "group",
                format!("{group:?}"),
                crate::job::GROUP_RULE,
            ));
        }
        if self.client.keys().is_sharded_by_queue() {
            return Err(Error::invalid_argument(
                "queue",
                name,
                "groups need queues on the namespace's slot (shard_by_queue is on)",
            ));
        }
        Ok(())
    }
}
