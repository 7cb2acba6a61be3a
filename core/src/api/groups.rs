//! A grouped queue's groups (see `groups.rs`): a page of them with their
//! backlog, turns, weight, pause and cap; pause, resume, weigh and cap one.

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
    /// Its concurrency cap: at most that many of its jobs run at once,
    /// fleet-wide (its own, else the one its jobs declare, `group_cap`,
    /// else the queue's default for every group).
    pub cap: Option<u64>,
    /// Its jobs running now, counted against its cap (0 without a cap).
    pub running: u64,
    /// At its cap with jobs waiting: out of the turns until one ends.
    pub parked: bool,
    /// The rate its jobs declare (`group_rate`): at most that many of its
    /// jobs start per `rate_period` seconds, fleet-wide.
    pub rate: Option<u64>,
    /// The period of its rate, in seconds.
    pub rate_period: Option<f64>,
    /// How its rate counts: `window`, `bucket` or `leaky` (see
    /// [`crate::RATE_KINDS`]).
    pub rate_kind: Option<String>,
    /// Out of its rate with jobs waiting: off the turns until then (epoch
    /// seconds), when its next period begins.
    pub waiting_until: Option<f64>,
}

/// A grouped queue's groups in brief, with a bounded number of them named
/// (for Prometheus' labels: see `web/prometheus.rs`).
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct GroupSummary {
    /// How many groups have jobs (in the turns, parked at their cap, or
    /// waiting out their rate) or are paused.
    pub groups: u64,
    /// The groups with the most jobs waiting, most first (of the first
    /// [`GROUPS_SUMMARIZED`] in turn order).
    pub top: Vec<GroupInfo>,
    /// The jobs waiting in every other group.
    pub other: u64,
}

/// How many groups a summary reads, in turn order, to find its top ones:
/// a scrape's cost stays bounded however many groups a queue has.
pub const GROUPS_SUMMARIZED: isize = 1000;

/// A rate: its limit, its period (seconds) and how it counts (an index of
/// [`crate::RATE_KINDS`]).
type Rate = (u64, f64, usize);

/// A group's rate: one set for it through the API, else the one its jobs
/// declare (`[cap, rate, period, rate kind]`), else the API's default.
fn rate_of(own: Option<Rate>, declared: [Option<f64>; 4], default: Option<Rate>) -> Option<Rate> {
    let declared = declared[1].map(|rate| {
        (
            rate as u64,
            declared[2].unwrap_or(1.0),
            declared[3].map_or(0, |kind| kind as usize),
        )
    });
    own.or(declared).or(default)
}

/// A rate as `group_control.lua` and the fetch keep it: `"<limit> <period>
/// <kind>"` (the kind absent from one set before kinds: a window).
fn parse_rate(text: &str) -> Option<Rate> {
    let mut parts = text.split(' ');
    let limit = parts.next()?.parse().ok()?;
    let period = parts.next()?.parse().ok()?;
    let kind = parts.next().map_or(Some(0), |kind| kind.parse().ok())?;
    Some((limit, period, kind))
}

/// The heaviest weight a group may be given.
pub const GROUP_WEIGHT_MAX: f64 = 1_000_000.0;

pub use crate::job::GROUP_CAP_MAX;

impl Api {
    /// The groups of queue `name` that have jobs or are paused, in the
    /// order their turns come (paused ones last), then those parked at
    /// their cap, then those waiting out their rate's period; `start`,
    /// `count` page through.
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
        let in_ring: isize = conn.zcard::<_, isize>(&ring).await? - isize::from(ungrouped.is_some());
        let first = match ungrouped {
            Some(rank) if rank <= start => start + 1,
            _ => start,
        };
        // (group, its score in the ring, when its rate's period ends)
        let mut page: Vec<(String, Option<String>, Option<f64>)> = if start < in_ring {
            let turns: Vec<(String, String)> = conn.zrange_withscores(&ring, first, first + count).await?;
            turns
                .into_iter()
                .filter(|(group, _)| !group.is_empty())
                .take(count as usize)
                .map(|(group, score)| (group, Some(score), None))
                .collect()
        } else {
            Vec::new()
        };
        if (page.len() as isize) < count {
            let mut parked: Vec<String> = conn.smembers(keys.group_parked(name)).await?;
            parked.sort();
            let waiting: Vec<(String, f64)> = conn.zrange_withscores(keys.group_timers(name), 0, -1).await?;
            let off_the_turns = parked
                .into_iter()
                .map(|group| (group, None, None))
                .chain(waiting.into_iter().map(|(group, until)| (group, None, Some(until))));
            let skip = (start - in_ring).max(0) as usize;
            let room = count as usize - page.len();
            page.extend(off_the_turns.skip(skip).take(room));
        }
        if page.is_empty() {
            return Ok(Vec::new());
        }
        let listing = self.listing().await?;
        let levels = crate::priority::lists(keys, name, &listing.levels);
        let mut sizes = redis::pipe();
        for (group, ..) in &page {
            for (_, level) in &levels {
                sizes.llen(keys.group_list(name, *level, group));
            }
        }
        let sizes: Vec<u64> = sizes.query_async(&mut conn).await?;
        let names: Vec<&String> = page.iter().map(|(group, ..)| group).collect();
        let numbers = |key: String, fields: Vec<&str>| redis::cmd("HMGET").arg(key).arg(fields).clone();
        let weights: Vec<Option<f64>> = numbers(keys.group_weights(name), names.iter().map(|n| n.as_str()).collect())
            .query_async(&mut conn)
            .await?;
        let mut cap_fields = vec![""];
        cap_fields.extend(names.iter().map(|n| n.as_str()));
        let caps: Vec<Option<u64>> = numbers(keys.group_caps(name), cap_fields)
            .query_async(&mut conn)
            .await?;
        // A declared limit is "<cap> <rate> <period> <backlog> <drop>
        // <rate kind>", 0 for none (a kind of 0 read as none: a window).
        let declared: Vec<Option<String>> =
            numbers(keys.group_declared(name), names.iter().map(|n| n.as_str()).collect())
                .query_async(&mut conn)
                .await?;
        let declared: Vec<[Option<f64>; 4]> = declared
            .iter()
            .map(|limits| {
                let parts: Vec<Option<f64>> = limits
                    .as_deref()
                    .unwrap_or("")
                    .split(' ')
                    .map(|part| part.parse::<f64>().ok().filter(|n| *n > 0.0))
                    .collect();
                let at = |i: usize| parts.get(i).copied().flatten();
                [at(0), at(1), at(2), at(5)]
            })
            .collect();
        // A rate set through the API: "<limit> <period>" (field "": the default).
        let mut rate_fields = vec![""];
        rate_fields.extend(names.iter().map(|n| n.as_str()));
        let rates: Vec<Option<String>> = numbers(keys.group_rates(name), rate_fields)
            .query_async(&mut conn)
            .await?;
        let rates: Vec<Option<Rate>> = rates.iter().map(|rate| parse_rate(rate.as_deref()?)).collect();
        let running: Vec<Option<u64>> = numbers(keys.group_running(name), names.iter().map(|n| n.as_str()).collect())
            .query_async(&mut conn)
            .await?;
        Ok(page
            .iter()
            .enumerate()
            .map(|(i, (group, score, until))| GroupInfo {
                name: group.clone(),
                size: sizes[i * levels.len()..(i + 1) * levels.len()].iter().sum(),
                turns: score
                    .as_deref()
                    .and_then(|s| s.parse::<f64>().ok())
                    .filter(|turns| turns.is_finite()),
                weight: weights[i].filter(|w| *w > 0.0).unwrap_or(1.0),
                paused: score.as_deref() == Some("inf"),
                cap: caps[i + 1].or(declared[i][0].map(|cap| cap as u64)).or(caps[0]),
                running: running[i].unwrap_or(0),
                parked: score.is_none() && until.is_none(),
                rate: rate_of(rates[i + 1], declared[i], rates[0]).map(|(limit, ..)| limit),
                rate_period: rate_of(rates[i + 1], declared[i], rates[0]).map(|(_, period, _)| period),
                rate_kind: rate_of(rates[i + 1], declared[i], rates[0])
                    .and_then(|(.., kind)| crate::job::RATE_KINDS.get(kind))
                    .map(|kind| kind.to_string()),
                waiting_until: *until,
            })
            .collect())
    }

    /// Queue `name`'s groups in brief: how many, the `top` with the most
    /// jobs waiting, and the jobs of all the others; `None` for a queue
    /// without groups.
    pub async fn group_summary(&self, name: &str, top: usize) -> Result<Option<GroupSummary>> {
        self.check_grouping(name, None)?;
        let keys = self.client.keys();
        let (in_ring, ungrouped_member, parked, waiting): (u64, Option<f64>, u64, u64) = redis::pipe()
            .zcard(keys.group_ring(name))
            .zscore(keys.group_ring(name), "")
            .scard(keys.group_parked(name))
            .zcard(keys.group_timers(name))
            .query_async(&mut self.conn())
            .await?;
        let groups = in_ring - u64::from(ungrouped_member.is_some()) + parked + waiting;
        if groups == 0 {
            return Ok(None);
        }
        let mut read = self.groups(name, 0, GROUPS_SUMMARIZED).await?;
        read.sort_by(|a, b| b.size.cmp(&a.size).then_with(|| a.name.cmp(&b.name)));
        read.truncate(top);
        // The queue's own lists hold its ungrouped jobs; its groups, the rest.
        let listing = self.listing().await?;
        let mut sizes = redis::pipe();
        for (list, _) in crate::priority::lists(keys, name, &listing.levels) {
            sizes.llen(list);
        }
        let own: Vec<u64> = sizes.query_async(&mut self.conn()).await?;
        let total = self.queue(name).await?.size;
        let named: u64 = read.iter().map(|group| group.size).sum();
        let other = total.saturating_sub(own.iter().sum::<u64>() + named);
        Ok(Some(GroupSummary {
            groups,
            top: read,
            other,
        }))
    }

    /// Stops workers taking group `group`'s jobs from queue `name` (jobs
    /// running go on); they wait, counted, until it is resumed. False when
    /// it was paused already.
    pub async fn pause_group(&self, name: &str, group: &str) -> Result<bool> {
        self.check_grouping(name, Some(group))?;
        self.list_first_on_a_shard(name, crate::groups::grouped_member(name))
            .await?;
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
        self.list_first_on_a_shard(name, crate::groups::grouped_member(name))
            .await?;
        let keys = self.client.keys();
        let mut invocation = self.group_control(name, group, "resume");
        for level in 0..=crate::job::HIGHEST_PRIORITY {
            invocation.arg(keys.group_list(name, level, group));
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
        self.list_first_on_a_shard(name, crate::groups::weighted_member(name))
            .await?;
        let mut invocation = self.group_control(name, group, "weight");
        invocation.arg(weight.map_or(String::new(), |w| w.to_string()));
        let _: i64 = invocation.invoke_async(&mut self.conn()).await?;
        Ok(())
    }

    /// Lets at most `cap` jobs of group `group` of queue `name` run at
    /// once, fleet-wide (`group` `None`: every group's default; `cap`
    /// `None`: no cap). A group at its cap waits without holding a worker
    /// slot: it is out of the turns until one of its jobs ends. A cap is a
    /// whole number from 1 to [`GROUP_CAP_MAX`]; kept by reliable fetch
    /// (basic fetch does not count).
    pub async fn set_group_cap(&self, name: &str, group: Option<&str>, cap: Option<u64>) -> Result<()> {
        self.check_grouping(name, group)?;
        if let Some(cap) = cap.filter(|cap| !(1..=GROUP_CAP_MAX).contains(cap)) {
            return Err(Error::invalid_argument(
                "cap",
                cap,
                "must be a whole number from 1 to 1000000",
            ));
        }
        self.list_first_on_a_shard(name, crate::groups::capped_member(name))
            .await?;
        let mut invocation = self.group_control(name, group.unwrap_or(""), "cap");
        invocation.arg(cap.map_or(String::new(), |cap| cap.to_string()));
        let _: i64 = invocation.invoke_async(&mut self.conn()).await?;
        Ok(())
    }

    /// Lets at most `limit` jobs of group `group` of queue `name` start per
    /// `period` seconds, fleet-wide (`group` `None`: every group's default;
    /// `rate` `None`: no rate set here). A group out of its rate waits off
    /// the turns, without holding a worker slot, until its period ends. A
    /// rate set here comes before the one its jobs declare (`group_rate`).
    pub async fn set_group_rate(&self, name: &str, group: Option<&str>, rate: Option<(u64, f64)>) -> Result<()> {
        self.set_group_rate_counted(name, group, rate, "window").await
    }

    /// [`Api::set_group_rate`] counted as `kind` says: `"window"`,
    /// `"bucket"` or `"leaky"` (see [`crate::RATE_KINDS`]).
    pub async fn set_group_rate_counted(
        &self,
        name: &str,
        group: Option<&str>,
        rate: Option<(u64, f64)>,
        kind: &str,
    ) -> Result<()> {
        self.check_grouping(name, group)?;
        let Some(kind_index) = crate::job::RATE_KINDS.iter().position(|known| *known == kind) else {
            return Err(Error::invalid_argument("kind", kind, crate::job::RATE_KIND_RULE));
        };
        if let Some((limit, period)) = rate {
            if !(1..=GROUP_CAP_MAX).contains(&limit) {
                return Err(Error::invalid_argument(
                    "rate",
                    limit,
                    "must be a whole number from 1 to 1000000",
                ));
            }
            if !(period > 0.0 && period <= crate::job::LONGEST_SECS) {
                return Err(Error::invalid_argument(
                    "period",
                    period,
                    "must be a number of seconds, more than 0 and at most 31536000 (a year)",
                ));
            }
        }
        self.list_first_on_a_shard(name, crate::groups::rated_member(name))
            .await?;
        let mut invocation = self.group_control(name, group.unwrap_or(""), "rate");
        invocation.arg(rate.map_or(String::new(), |(limit, period)| {
            format!("{limit} {period} {kind_index}")
        }));
        let _: i64 = invocation.invoke_async(&mut self.conn()).await?;
        Ok(())
    }

    /// `group_control.lua` for `group` of queue `name` in `mode`.
    fn group_control(&self, name: &str, group: &str, mode: &str) -> redis::ScriptInvocation<'static> {
        let keys = self.client.keys();
        let mut invocation = SCRIPTS.group_control.prepare_invoke();
        // Sharded by queue, the ring again (see list_first_on_a_shard).
        let registry = match keys.is_sharded_by_queue() {
            true => keys.group_ring(name),
            false => keys.priorities(),
        };
        invocation
            .key(keys.group_ring(name))
            .key(registry)
            .key(keys.group_weights(name))
            .key(keys.group_caps(name))
            .key(keys.group_parked(name))
            .key(keys.group_rates(name))
            .key(keys.group_timers(name))
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
        Ok(())
    }

    /// Sharded by queue, `group_control.lua` runs on the queue's slot,
    /// which cannot reach the registry: `member` is listed first, on the
    /// namespace's slot (a listing whose change then does nothing is
    /// harmless).
    async fn list_first_on_a_shard(&self, name: &str, member: String) -> Result<()> {
        let keys = self.client.keys();
        if !keys.is_sharded_by_queue() {
            return Ok(());
        }
        let _: usize = crate::outbox::listing(keys)
            .arg(name)
            .arg(member)
            .invoke_async(&mut self.conn())
            .await?;
        Ok(())
    }
}
