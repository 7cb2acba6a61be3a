//! The ops API: what the Web UI and admin CLIs are built on. Queues (size,
//! latency, pause, clear), the schedule/retry/dead sets (page, find, retry
//! now, delete, kill), processes (list, quiet, stop) and stats. Reads page
//! with range queries; nothing loads a whole set.

mod batches;
mod cancel;
mod limiters;
mod metrics;

pub use batches::{BatchStatus, CallbackJob};
pub use limiters::LimiterInfo;

use crate::client::Client;
use crate::error::{Error, Result};
use crate::job::{float, now, Job};
use crate::retry::day_of;
use crate::scripts::SCRIPTS;
use redis::AsyncCommands;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::collections::{HashMap, HashSet};

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
    type Err = crate::Error;
    /// `scheduled` (or `schedule`), `retry`, `dead`.
    fn from_str(name: &str) -> Result<Self> {
        match name {
            "scheduled" | "schedule" => Ok(JobSet::Scheduled),
            "retry" => Ok(JobSet::Retry),
            "dead" => Ok(JobSet::Dead),
            other => Err(crate::Error::invalid_argument(
                "set",
                format!("{other:?}"),
                "must be \"scheduled\", \"retry\" or \"dead\"",
            )),
        }
    }
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

/// An entry of a job set: its score and the payload as stored. Serialized
/// as `{score, payload (text), job (parsed, or null)}`; read back from
/// `{score, payload}`.
#[derive(Clone, Debug, Deserialize)]
pub struct SetEntry {
    /// Run-at, retry-at or died-at (epoch seconds).
    pub score: f64,
    /// The payload's bytes.
    #[serde(rename = "payload", deserialize_with = "payload_bytes")]
    pub raw: Vec<u8>,
}

fn payload_bytes<'de, D: serde::Deserializer<'de>>(d: D) -> std::result::Result<Vec<u8>, D::Error> {
    String::deserialize(d).map(String::into_bytes)
}

impl Serialize for SetEntry {
    fn serialize<S: serde::Serializer>(&self, s: S) -> std::result::Result<S::Ok, S::Error> {
        use serde::ser::SerializeStruct;
        let mut entry = s.serialize_struct("SetEntry", 3)?;
        entry.serialize_field("score", &self.score)?;
        entry.serialize_field("payload", &String::from_utf8_lossy(&self.raw))?;
        entry.serialize_field("job", &self.job().map(Job::into_value))?;
        entry.end()
    }
}

impl SetEntry {
    /// The payload parsed, if it is a job.
    pub fn job(&self) -> Option<Job> {
        Job::parse(&self.raw).ok()
    }

    /// Its batch id and jid, as the scripts that settle an entry take
    /// them (`""` for a job in no batch).
    fn batch_unit(&self) -> (String, String) {
        self.job().map_or_else(Default::default, |job| {
            (job.batch_id().unwrap_or("").to_string(), job.jid_str().to_string())
        })
    }
}

/// A registered worker process.
#[derive(Clone, Debug, Serialize)]
pub struct ProcessInfo {
    /// `host:pid:random`.
    pub identity: String,
    /// `{hostname, pid, concurrency, queues, labels, version, started_at, ...}`.
    pub info: Value,
    /// Jobs running now.
    pub busy: u64,
    /// Quiet: taking no new jobs.
    pub quiet: bool,
    /// Its last heartbeat (epoch seconds).
    pub beat: f64,
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
}

/// A job running now.
#[derive(Clone, Debug, Serialize)]
pub struct BusyJob {
    /// The process running it.
    pub identity: String,
    /// The queue it came from.
    pub queue: String,
    /// When it started (epoch seconds).
    pub run_at: f64,
    /// Its payload.
    pub job: Value,
}

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

    /// Every queue ever pushed to, by name.
    pub async fn queues(&self) -> Result<Vec<QueueInfo>> {
        let keys = self.client.keys();
        let mut conn = self.conn();
        let mut names: Vec<String> = conn.smembers(keys.queues()).await?;
        names.sort();
        let paused: Vec<String> = conn.smembers(keys.paused_queues()).await?;
        let levels = self.levels_in_use().await?;
        let mut out = Vec::with_capacity(names.len());
        for name in names {
            out.push(self.queue_with(&name, &paused, &levels).await?);
        }
        Ok(out)
    }

    /// One queue.
    pub async fn queue(&self, name: &str) -> Result<QueueInfo> {
        let paused: Vec<String> = self.conn().smembers(self.client.keys().paused_queues()).await?;
        self.queue_with(name, &paused, &self.levels_in_use().await?).await
    }

    /// The priority levels in use, by queue (see `priority.rs`).
    async fn levels_in_use(&self) -> Result<HashMap<String, u16>> {
        let members: Vec<String> = self.conn().smembers(self.client.keys().priorities()).await?;
        Ok(crate::priority::from_members(&members))
    }

    /// The lists of queue `name`, in the order workers take from them.
    async fn lists_of(&self, name: &str) -> Result<Vec<String>> {
        let levels = self.levels_in_use().await?;
        let lists = crate::priority::lists(self.client.keys(), name, &levels);
        Ok(lists.into_iter().map(|(key, _)| key).collect())
    }

    /// A queue's size is that of all its lists (one per priority level in
    /// use), its latency that of its oldest job.
    async fn queue_with(&self, name: &str, paused: &[String], levels: &HashMap<String, u16>) -> Result<QueueInfo> {
        let mut pipe = redis::pipe();
        for (key, _) in crate::priority::lists(self.client.keys(), name, levels) {
            pipe.llen(&key).lindex(&key, -1);
        }
        let lists: Vec<(u64, Option<Vec<u8>>)> = pipe.query_async(&mut self.conn()).await?;
        let oldest_enqueued = lists
            .iter()
            .filter_map(|(_, oldest)| Job::parse(oldest.as_deref()?).ok())
            .filter_map(|job| job.get("enqueued_at").and_then(Value::as_f64))
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
        let lists = self.lists_of(name).await?;
        let mut pipe = redis::pipe();
        pipe.atomic();
        for key in &lists {
            pipe.llen(key);
        }
        pipe.unlink(&lists).ignore();
        let sizes: Vec<u64> = pipe.query_async(&mut self.conn()).await?;
        Ok(sizes.iter().sum())
    }
    /// Jobs on a queue in the order workers take them: highest priority
    /// level first, and within a level newest first (`start`, `count` page
    /// through).
    pub async fn queue_jobs(&self, name: &str, start: isize, count: isize) -> Result<Vec<Vec<u8>>> {
        let lists = self.lists_of(name).await?;
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

    /// Entries in `set`.
    pub async fn set_size(&self, set: JobSet) -> Result<u64> {
        Ok(self.conn().zcard(self.set_key(set)).await?)
    }
    /// A page of a set, latest score first.
    pub async fn set_page(&self, set: JobSet, start: isize, count: isize) -> Result<Vec<SetEntry>> {
        let entries: Vec<(Vec<u8>, f64)> = self
            .conn()
            .zrevrange_withscores(self.set_key(set), start, start + count - 1)
            .await?;
        Ok(entries
            .into_iter()
            .map(|(raw, score)| SetEntry { score, raw })
            .collect())
    }
    /// Finds a job in a set by jid (a scan; sets can be large). The jid
    /// follows a fixed `"jid":"` in the server-side pattern, so matching
    /// stays linear in each entry; it is at most [`SEARCH_TEXT_MAX`] long.
    pub async fn find_in_set(&self, set: JobSet, jid: &str) -> Result<Option<SetEntry>> {
        check_search_text("jid", jid)?;
        let pattern = format!("*\"jid\":\"{}\"*", glob_escape(jid));
        let found = self.scan_set(set, &pattern, 1, |job| job.jid_str() == jid).await?;
        Ok(found.into_iter().next())
    }

    /// Where the job `jid` waits, if in a set: the set (scheduled, then
    /// retry, then dead) and its entry. A job on a queue or running is in
    /// none of them.
    pub async fn locate(&self, jid: &str) -> Result<Option<(JobSet, SetEntry)>> {
        for set in [JobSet::Scheduled, JobSet::Retry, JobSet::Dead] {
            if let Some(entry) = self.find_in_set(set, jid).await? {
                return Ok(Some((set, entry)));
            }
        }
        Ok(None)
    }

    /// Up to `limit` entries whose class contains `text` (ASCII case
    /// ignored) or whose jid is `text`, newest first: one bounded step of
    /// [`Api::search_set_from`] from the start.
    pub async fn search_set(&self, set: JobSet, text: &str, limit: usize) -> Result<Vec<SetEntry>> {
        Ok(self.search_set_from(set, text, 0, limit).await?.found)
    }

    /// Searches `set` from rank `from` (newest first) for entries whose
    /// class contains `text` or whose jid is `text`, stopping at `limit`
    /// matches, after [`SEARCH_SCAN_MAX`] entries or [`SEARCH_TIME_MAX`]:
    /// the caller continues from `next`. Pages are read by rank and matched
    /// here, never by a server-side pattern, so a search costs Redis no
    /// more than showing the same pages (a `*text*` pattern over large
    /// entries once stalled Redis for seconds).
    pub async fn search_set_from(&self, set: JobSet, text: &str, from: u64, limit: usize) -> Result<SetSearch> {
        check_search_text("text", text)?;
        let needle = text.to_ascii_lowercase();
        self.search_newest(set, from, limit, |job| {
            job.jid_str() == text
                || job.class().to_ascii_lowercase().contains(&needle)
                || job.display_class().to_ascii_lowercase().contains(&needle)
        })
        .await
    }

    /// The job `jid` among the newest [`SEARCH_SCAN_MAX`] entries of `set`
    /// (one bounded step: what a web page may make Redis do; an app that
    /// must look through a whole set uses [`Api::find_in_set`]).
    pub async fn find_recent_in_set(&self, set: JobSet, jid: &str) -> Result<Option<SetEntry>> {
        check_search_text("jid", jid)?;
        let step = self.search_newest(set, 0, 1, |job| job.jid_str() == jid).await?;
        Ok(step.found.into_iter().next())
    }

    /// One bounded step through `set` from rank `from`, newest first: up to
    /// `limit` entries whose job `matches`.
    async fn search_newest(
        &self,
        set: JobSet,
        from: u64,
        limit: usize,
        matches: impl Fn(&Job) -> bool,
    ) -> Result<SetSearch> {
        let started = std::time::Instant::now();
        let mut found = Vec::new();
        let mut at = from;
        let end = from.saturating_add(SEARCH_SCAN_MAX);
        while at < end && found.len() < limit && started.elapsed() < SEARCH_TIME_MAX {
            let start = isize::try_from(at).unwrap_or(isize::MAX);
            let page = self.set_page(set, start, SEARCH_PAGE).await?;
            let read = page.len() as u64;
            for (index, entry) in page.into_iter().enumerate() {
                if entry.job().is_some_and(|job| matches(&job)) {
                    found.push(entry);
                    if found.len() >= limit {
                        return Ok(SetSearch {
                            found,
                            next: Some(at + index as u64 + 1),
                        });
                    }
                }
            }
            at += read;
            if read < SEARCH_PAGE as u64 {
                return Ok(SetSearch { found, next: None });
            }
        }
        Ok(SetSearch { found, next: Some(at) })
    }

    /// The entry of `set` at exactly `score` whose jid is `jid` (a range
    /// query: how the Web UI names an entry without its whole payload).
    pub async fn entry_at(&self, set: JobSet, score: f64, jid: &str) -> Result<Option<SetEntry>> {
        let entries: Vec<(Vec<u8>, f64)> = self
            .conn()
            .zrangebyscore_withscores(self.set_key(set), score, score)
            .await?;
        Ok(entries
            .into_iter()
            .map(|(raw, score)| SetEntry { score, raw })
            .find(|entry| entry.job().is_some_and(|job| job.jid_str() == jid)))
    }

    /// Deletes a whole set; returns how many entries it held. (`UNLINK`:
    /// Redis frees a large set in the background; `DEL` of a million
    /// entries blocked it for half a second.)
    pub async fn clear_set(&self, set: JobSet) -> Result<u64> {
        let key = self.set_key(set);
        let (size, _): (u64, i64) = redis::pipe()
            .atomic()
            .zcard(&key)
            .unlink(&key)
            .query_async(&mut self.conn())
            .await?;
        Ok(size)
    }

    async fn scan_set(
        &self,
        set: JobSet,
        pattern: &str,
        limit: usize,
        keep: impl Fn(&Job) -> bool,
    ) -> Result<Vec<SetEntry>> {
        let key = self.set_key(set);
        let mut conn = self.conn();
        let mut cursor: u64 = 0;
        let mut found = Vec::new();
        loop {
            let (next, page): (u64, Vec<(Vec<u8>, f64)>) = redis::cmd("ZSCAN")
                .arg(&key)
                .arg(cursor)
                .arg("MATCH")
                .arg(pattern)
                .arg("COUNT")
                .arg(1000)
                .query_async(&mut conn)
                .await?;
            for (raw, score) in page {
                if Job::parse(&raw).is_ok_and(|job| keep(&job)) {
                    found.push(SetEntry { score, raw });
                    if found.len() >= limit {
                        return Ok(found);
                    }
                }
            }
            if next == 0 {
                return Ok(found);
            }
            cursor = next;
        }
    }
    /// Deletes an entry; false if it was gone. A job of a batch will never
    /// run: it counts there as failed in the same step, so its batch can
    /// complete (a dead one was counted when it died).
    pub async fn delete_from_set(&self, set: JobSet, entry: &SetEntry) -> Result<bool> {
        self.drop_entry(set, entry, cancel::Dropped::Deleted).await
    }
    /// Moves an entry onto its queue now (atomic claim + push). False if it
    /// was gone or cannot be requeued (then it is left in place).
    pub async fn retry_now(&self, set: JobSet, entry: &SetEntry) -> Result<bool> {
        // The scheduler's rule: a usable queue (`default` when none is named).
        let Some(mut job) = crate::scheduler::requeueable(&entry.raw) else {
            return Ok(false);
        };
        if job.class() == crate::job::UNPARSEABLE_CLASS {
            return Ok(false);
        }
        job.remove("at");
        job.set("enqueued_at", float(now()));
        let due = crate::scheduler::Due::new(entry.raw.clone(), &job);
        let client = &self.client;
        let moved = crate::scheduler::move_to_queues(client.redis(), client.keys(), &self.set_key(set), &[due]).await?;
        Ok(moved == 1)
    }
    /// Retries every entry of a set now; returns how many moved. Each job
    /// there when it is called moves once: one that runs and lands in the
    /// set again meanwhile (a dead job that fails at once) is not retried a
    /// second time. A `ZSCAN` returns every entry present throughout, and
    /// the jids moved so far are skipped.
    pub async fn retry_all(&self, set: JobSet) -> Result<usize> {
        let key = self.set_key(set);
        let mut moved_jids: HashSet<String> = HashSet::new();
        let mut moved = 0;
        let mut cursor: u64 = 0;
        loop {
            let (next, page): (u64, Vec<(Vec<u8>, f64)>) = redis::cmd("ZSCAN")
                .arg(&key)
                .arg(cursor)
                .arg("COUNT")
                .arg(100)
                .query_async(&mut self.conn())
                .await?;
            for (raw, score) in page {
                let jid = Job::parse(&raw)
                    .map(|job| job.jid_str().to_string())
                    .unwrap_or_default();
                if moved_jids.contains(&jid) {
                    continue;
                }
                if self.retry_now(set, &SetEntry { score, raw }).await? {
                    moved += 1;
                    moved_jids.insert(jid);
                }
            }
            if next == 0 {
                return Ok(moved);
            }
            cursor = next;
        }
    }
    /// Moves an entry of the schedule or retry set to dead (atomically).
    /// A job of a batch dies there in the same step.
    pub async fn kill(&self, set: JobSet, entry: &SetEntry) -> Result<bool> {
        let (bid, jid) = entry.batch_unit();
        let keys = self.client.keys();
        let handed: Option<Vec<String>> = SCRIPTS
            .kill
            .key(self.set_key(set))
            .key(self.set_key(JobSet::Dead))
            .key(keys.outbox())
            .arg(&entry.raw[..])
            .arg(now())
            .arg(bid)
            .arg(jid)
            .arg(keys.batch_prefix())
            .invoke_async(&mut self.conn())
            .await?;
        self.settled_entry(handed).await
    }

    /// What a script that settled a set entry (`kill.lua`,
    /// `drop_from_set.lua`) answered: false when the entry was gone, else
    /// true once the batch callbacks it handed over are pushed (should the
    /// push fail, recovery pushes them).
    async fn settled_entry(&self, handed: Option<Vec<String>>) -> Result<bool> {
        let Some(handed) = handed else {
            return Ok(false);
        };
        let client = &self.client;
        crate::outbox::deliver(client.redis(), client.keys(), &handed).await?;
        Ok(true)
    }

    /// Live processes. A member whose process hash has expired (it died
    /// without cleaning up) is pruned from the set on the way.
    pub async fn processes(&self) -> Result<Vec<ProcessInfo>> {
        let keys = self.client.keys();
        let mut conn = self.conn();
        let mut identities: Vec<String> = conn.smembers(keys.processes()).await?;
        identities.sort();
        let mut out = Vec::new();
        for identity in identities {
            let fields: std::collections::HashMap<String, String> = conn.hgetall(keys.process(&identity)).await?;
            let Some(info) = fields.get("info") else {
                let _: i64 = conn.srem(keys.processes(), &identity).await?;
                continue;
            };
            out.push(ProcessInfo {
                info: serde_json::from_str(info).unwrap_or(Value::Null),
                busy: fields.get("busy").and_then(|b| b.parse().ok()).unwrap_or(0),
                quiet: fields.get("quiet").is_some_and(|q| q == "true"),
                beat: fields.get("beat").and_then(|b| b.parse().ok()).unwrap_or(0.0),
                identity,
            });
        }
        Ok(out)
    }
    /// The jobs running now, in every live process.
    pub async fn busy(&self) -> Result<Vec<BusyJob>> {
        self.busy_in(&self.processes().await?).await
    }
    /// The jobs running now in `processes`.
    async fn busy_in(&self, processes: &[ProcessInfo]) -> Result<Vec<BusyJob>> {
        let mut busy = Vec::new();
        for process in processes {
            let slots: Vec<(String, String)> = self
                .conn()
                .hgetall(self.client.keys().workers(&process.identity))
                .await?;
            for (_, entry) in slots {
                let entry: Value = serde_json::from_str(&entry).unwrap_or(Value::Null);
                busy.push(BusyJob {
                    identity: process.identity.clone(),
                    queue: entry["queue"].as_str().unwrap_or_default().to_string(),
                    run_at: entry["run_at"].as_f64().unwrap_or_default(),
                    job: entry["payload"].clone(),
                });
            }
        }
        busy.sort_by(|a, b| a.run_at.total_cmp(&b.run_at));
        Ok(busy)
    }
    /// Tells a process to stop taking jobs. Delivered even when the process
    /// is not subscribed at this instant (see `scripts/signal.lua`).
    pub async fn quiet_process(&self, identity: &str) -> Result<()> {
        self.signal_process(identity, "quiet").await
    }
    /// Tells a process to shut down, as [`Api::quiet_process`] does.
    pub async fn stop_process(&self, identity: &str) -> Result<()> {
        self.signal_process(identity, "stop").await
    }
    async fn signal_process(&self, identity: &str, command: &str) -> Result<()> {
        let keys = self.client.keys();
        let _: i64 = SCRIPTS
            .signal
            .key(keys.signals(identity))
            .arg(keys.signal(identity))
            .arg(command)
            .arg(crate::heartbeat::PRESENCE_TTL_SECS)
            .invoke_async(&mut self.conn())
            .await?;
        Ok(())
    }

    /// Processed and failed totals.
    pub async fn stats(&self) -> Result<Stats> {
        self.stats_for(None).await
    }
    /// Counts for one UTC day (`yyyy-mm-dd`), or the totals.
    pub async fn stats_for(&self, day: Option<&str>) -> Result<Stats> {
        let keys = self.client.keys();
        let counts: [Option<u64>; 4] = redis::pipe()
            .get(keys.stat("processed", day))
            .get(keys.stat("failed", day))
            .get(keys.stat("expired", day))
            .get(keys.stat("cancelled", day))
            .query_async(&mut self.conn())
            .await?;
        let [processed, failed, expired, cancelled] = counts.map(|count| count.unwrap_or(0));
        Ok(Stats {
            processed,
            failed,
            expired,
            cancelled,
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
    /// The kept outcome of a job pushed with `result_ttl`: `{status, jid,
    /// class, queue, retry_count, at, args, created_at}`, `started_at` and
    /// `worker` once it ran, plus `value` and `finished_at` (succeeded) or
    /// `error_class`/`error_message`/`error_backtrace` and `finished_at`
    /// (retrying, dead, failed), `due_at` (scheduled). `None` for a job without `result_ttl`, an unknown jid,
    /// or one whose result expired.
    pub async fn result(&self, jid: &str) -> Result<Option<Value>> {
        let keys = self.client.keys();
        // The record and whether the job was cancelled, in one round trip.
        let (raw, cancelled): (Option<Vec<u8>>, Option<f64>) = redis::pipe()
            .get(keys.result(jid))
            .zscore(keys.cancelled(), jid)
            .query_async(&mut self.conn())
            .await?;
        let Some(mut record) = raw.and_then(|r| serde_json::from_slice::<Value>(&r).ok()) else {
            return Ok(None);
        };
        record["status"] = Value::String(crate::results::current_status(&record, now()));
        if cancelled.is_some_and(|forget_after| forget_after > now()) {
            cancel::overlaid(&mut record);
        }
        Ok(Some(record))
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

    /// Recent executions, newest first (JSON entries).
    pub async fn history(&self, count: isize) -> Result<Vec<String>> {
        Ok(self.conn().lrange(self.client.keys().history(), 0, count - 1).await?)
    }

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
        let pattern = format!("{}*", glob_escape(prefix));
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

/// The longest text a search or a jid lookup takes.
pub const SEARCH_TEXT_MAX: usize = 200;
/// The most entries one search step reads before handing back `next`.
pub const SEARCH_SCAN_MAX: u64 = 50_000;
/// The longest one search step runs before handing back `next`.
pub const SEARCH_TIME_MAX: std::time::Duration = std::time::Duration::from_secs(1);
/// Entries read per range query while searching.
const SEARCH_PAGE: isize = 100;

/// One bounded step of a search through a set.
#[derive(Clone, Debug, Serialize)]
pub struct SetSearch {
    /// The matching entries, newest first.
    pub found: Vec<SetEntry>,
    /// The rank to continue from, or `None` when the set was searched to
    /// its end.
    pub next: Option<u64>,
}

fn check_search_text(field: &str, text: &str) -> Result<()> {
    if text.chars().count() > SEARCH_TEXT_MAX {
        let shown: String = text.chars().take(40).collect();
        return Err(Error::invalid_argument(
            field,
            format!("{shown}... ({} characters)", text.chars().count()),
            format!("is longer than {SEARCH_TEXT_MAX} characters"),
        ));
    }
    Ok(())
}

/// `text` with Redis glob specials escaped, for `SCAN MATCH`.
fn glob_escape(text: &str) -> String {
    let mut escaped = String::with_capacity(text.len());
    for c in text.chars() {
        if matches!(c, '*' | '?' | '[' | ']' | '\\') {
            escaped.push('\\');
        }
        escaped.push(c);
    }
    escaped
}
