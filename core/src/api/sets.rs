//! The schedule, retry and dead sets: pages by range query, bounded
//! searches, and what is done to an entry (retry now, delete, kill).

use super::{Api, JobSet};
use crate::error::{Error, Result};
use crate::job::{now, Job};
use crate::scripts::SCRIPTS;
use redis::AsyncCommands;
use serde::{Deserialize, Serialize};
use std::collections::HashSet;

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
    pub(super) fn batch_unit(&self) -> (String, String) {
        self.job().map_or_else(Default::default, |job| {
            (job.batch_id().unwrap_or("").to_string(), job.jid_str().to_string())
        })
    }
}

impl Api {
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
        self.drop_entry(set, entry, super::cancel::Dropped::Deleted).await
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
        self.client.keys().stamp_enqueued(&mut job, now());
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
    pub(super) async fn settled_entry(&self, handed: Option<Vec<String>>) -> Result<bool> {
        let Some(handed) = handed else {
            return Ok(false);
        };
        let client = &self.client;
        crate::outbox::deliver(client.redis(), client.keys(), &handed).await?;
        Ok(true)
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

pub(super) fn check_search_text(field: &str, text: &str) -> Result<()> {
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
pub(super) fn glob_escape(text: &str) -> String {
    let mut escaped = String::with_capacity(text.len());
    for c in text.chars() {
        if matches!(c, '*' | '?' | '[' | ']' | '\\') {
            escaped.push('\\');
        }
        escaped.push(c);
    }
    escaped
}
