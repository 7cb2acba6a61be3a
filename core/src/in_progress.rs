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

use std::collections::HashMap;

use redis::AsyncCommands;

use crate::error::Result;
use crate::shared::Shared;

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

/// Every job `identity` holds, as `(entry, payload)`, oldest first.
pub(crate) async fn held_by(shared: &Shared, identity: &str) -> Result<Vec<(String, Vec<u8>)>> {
    let key = shared.keys.in_progress(identity);
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
