//! How a process records the jobs it holds (reliable fetch): the hash
//! `NS:in_progress:<identity>`, one field per delivery, named by the
//! delivery's token (reserved before the fetch, see `fetch_reliable.lua`),
//! the payload as fetched as its value. Acknowledging a batch is then two
//! commands whatever its size, where a list cost one `LREM` (O(length)) per
//! job, and identical payloads never stand for one another.
//!
//! Processes of earlier releases kept a list of payloads under the same key;
//! recovery still reads those. The scripts that take one job off name it
//! by its *entry* (`in_progress.lua`): the field, [`LIST_ENTRY`], or
//! [`NOT_HELD`].
//!
//! Sharded by queue, a process has one such hash per queue, on the queue's
//! slot (`{NS:<q>}:in_progress:<identity>`), and a held job is found by its
//! queue and its entry.

use std::collections::{BTreeSet, HashMap, HashSet};
use std::sync::Mutex;

use redis::AsyncCommands;

use crate::error::Result;
use crate::scripts::SCRIPTS;
use crate::shared::Shared;

/// A job a process holds in progress.
pub(crate) struct Held {
    /// The queue whose in-progress hash holds it (sharded by queue), or ""
    /// (one hash for all queues).
    pub queue: String,
    pub entry: String,
    pub raw: Vec<u8>,
}

/// A job recorded nowhere (basic fetch: it exists only in memory).
pub(crate) const NOT_HELD: &str = "-";
/// A job on an in-progress list of an earlier release, found by payload.
pub(crate) const LIST_ENTRY: &str = "*";

/// The entry of this process's delivery `token`.
pub(crate) fn own_entry(shared: &Shared, token: u64) -> String {
    if shared.is_reliable() {
        token.to_string()
    } else {
        NOT_HELD.to_string()
    }
}

/// Every job `identity` holds, oldest first (per queue, sharded by queue).
pub(crate) async fn held_by(shared: &Shared, identity: &str) -> Result<Vec<Held>> {
    if !shared.keys.is_sharded_by_queue() {
        let held = held_in(shared, &shared.keys.in_progress(identity)).await?;
        return Ok(held
            .into_iter()
            .map(|(entry, raw)| Held {
                queue: String::new(),
                entry,
                raw,
            })
            .collect());
    }
    let mut held = Vec::new();
    for queue in queues_that_may_hold(shared).await? {
        for (entry, raw) in held_in(shared, &shared.keys.in_progress_from(identity, &queue)).await? {
            held.push(Held {
                queue: queue.clone(),
                entry,
                raw,
            });
        }
    }
    Ok(held)
}

/// Sharded by queue: the queues whose in-progress hashes a process may
/// have, i.e. every queue listed (a worker lists its queues when it starts)
/// and this process's own.
pub(crate) async fn queues_that_may_hold(shared: &Shared) -> Result<BTreeSet<String>> {
    let listed: Vec<String> = shared.redis.conn().smembers(shared.keys.queues()).await?;
    let own = shared.config.queues().iter().map(|q| q.name.clone());
    Ok(listed.into_iter().chain(own).collect())
}

/// Sharded by queue: how many jobs `identity` holds in the queues' hashes.
pub(crate) async fn count_held(shared: &Shared, identity: &str) -> Result<u64> {
    let mut count = 0;
    for queue in queues_that_may_hold(shared).await? {
        let n: u64 = shared
            .redis
            .conn()
            .hlen(shared.keys.in_progress_from(identity, &queue))
            .await?;
        count += n;
    }
    Ok(count)
}

/// Sharded by queue: takes this process's acknowledged deliveries
/// (`(queue, token)`) off their queues' in-progress hashes, one script per
/// queue. `done` records each queue's answer (the tokens no longer held),
/// so a retry after a partial failure repeats only the queues left.
pub(crate) async fn take_acknowledged(
    shared: &Shared,
    deliveries: &[(&str, u64)],
    done: &Mutex<HashMap<String, Vec<u64>>>,
) -> redis::RedisResult<()> {
    for (queue, tokens) in by_queue(deliveries) {
        if done.lock().unwrap().contains_key(queue) {
            continue;
        }
        let missing: Vec<u64> = SCRIPTS
            .take_held
            .key(shared.keys.in_progress_from(&shared.identity, queue))
            .arg(&tokens)
            .invoke_async(&mut shared.redis.conn())
            .await?;
        done.lock().unwrap().insert(queue.to_string(), missing);
    }
    Ok(())
}

/// Sharded by queue: which of this process's deliveries (`(queue,
/// token)`) their queues' in-progress hashes still hold, one `HMGET` per
/// queue.
pub(crate) async fn still_held(shared: &Shared, deliveries: &[(&str, u64)]) -> redis::RedisResult<HashSet<u64>> {
    let mut held = HashSet::new();
    for (queue, tokens) in by_queue(deliveries) {
        let values: Vec<Option<Vec<u8>>> = redis::cmd("HMGET")
            .arg(shared.keys.in_progress_from(&shared.identity, queue))
            .arg(&tokens)
            .query_async(&mut shared.redis.conn())
            .await?;
        held.extend(tokens.iter().zip(values).filter(|(_, v)| v.is_some()).map(|(t, _)| *t));
    }
    Ok(held)
}

/// The tokens of `deliveries` (`(queue, token)`), by queue.
fn by_queue<'a>(deliveries: &[(&'a str, u64)]) -> HashMap<&'a str, Vec<u64>> {
    let mut by_queue: HashMap<&str, Vec<u64>> = HashMap::new();
    for (queue, token) in deliveries {
        by_queue.entry(queue).or_default().push(*token);
    }
    by_queue
}

/// Of `deliveries`, the tokens [`take_acknowledged`] took off: their
/// queue's script ran and they were still held.
pub(crate) fn acknowledged(deliveries: &[(&str, u64)], done: &HashMap<String, Vec<u64>>) -> HashSet<u64> {
    deliveries
        .iter()
        .filter(|(queue, token)| done.get(*queue).is_some_and(|missing| !missing.contains(token)))
        .map(|(_, token)| *token)
        .collect()
}

/// The entries of one in-progress key, as `(entry, payload)`, oldest first.
async fn held_in(shared: &Shared, key: &str) -> Result<Vec<(String, Vec<u8>)>> {
    let key = key.to_string();
    let mut conn = shared.redis.conn();
    let kind: String = conn.key_type(&key).await?;
    Ok(match kind.as_str() {
        "hash" => {
            let fields: HashMap<String, Vec<u8>> = conn.hgetall(&key).await?;
            let mut held: Vec<(String, Vec<u8>)> = fields.into_iter().collect();
            held.sort_by_key(|(field, _)| field.parse::<u64>().unwrap_or(u64::MAX));
            held
        }
        "list" => {
            // Newest on the left.
            let payloads: Vec<Vec<u8>> = conn.lrange(&key, 0, -1).await?;
            payloads
                .into_iter()
                .rev()
                .map(|raw| (LIST_ENTRY.to_string(), raw))
                .collect()
        }
        _ => Vec::new(),
    })
}
