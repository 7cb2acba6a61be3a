//! Hand-overs to queues on other slots (`shard_by_queue`). Jobs leave the
//! schedule, retry and dead sets, a periodic tick, or a unique push on the
//! namespace's slot; their queue lives on a slot of its own, which no
//! script can write in the same step. So a hand-over is two steps, each
//! atomic on its slot, and safe to repeat:
//!
//! 1. a script on the namespace's slot claims the job (`ZREM`, the unique
//!    lock, the periodic slot) and writes it to `NS:outbox` under a new
//!    hand-over id (`claim_to_outbox.lua`, `push_unique.lua`,
//!    `periodic_claim.lua`);
//! 2. [`deliver`] pushes it onto its queue with `push_once.lua`, which sets
//!    a marker per id on the queue's slot first, then deletes the entry.
//!
//! A crash between the two leaves the entry in the outbox, where every
//! process's recovery pass ([`deliver_all`]) finds it and repeats step 2;
//! the marker makes a repeat (or two processes delivering at once) push
//! nothing more. So a handed-over job is never lost and never pushed twice
//! while its marker lives ([`LANDED_TTL_SECS`], far longer than the
//! recovery interval).

use std::collections::BTreeMap;

use redis::AsyncCommands;

use crate::connection::Redis;
use crate::error::Result;
use crate::job::Job;
use crate::keys::Keys;
use crate::scripts::SCRIPTS;

/// How long a delivered hand-over's marker is kept: a repeat of it within
/// this time pushes nothing.
pub(crate) const LANDED_TTL_SECS: u64 = 3600;

/// A new hand-over id for the job `jid` (unique per hand-over: one job is
/// handed over again on each retry).
pub(crate) fn handover_id(jid: &str) -> String {
    format!("{jid}-{:016x}", rand::random::<u64>())
}

/// Pushes the outbox entries `ids` onto their queues and deletes them.
/// Returns the jobs pushed (an entry already delivered counts none).
pub(crate) async fn deliver(redis: &Redis, keys: &Keys, ids: &[String]) -> Result<usize> {
    if ids.is_empty() {
        return Ok(0);
    }
    let values: Vec<Option<Vec<u8>>> = redis::cmd("HMGET")
        .arg(keys.outbox())
        .arg(ids)
        .query_async(&mut redis.conn())
        .await?;
    let entries = ids
        .iter()
        .zip(values)
        .filter_map(|(id, value)| Some((id.clone(), value?)))
        .collect();
    deliver_entries(redis, keys, entries).await
}

/// `list_queues.lua` on the namespace's slot, ready for its `(queue,
/// member)` pairs: what every writer onto a queue's own slot lists first
/// (a hand-over here, a requeue, the API's group calls), since a script
/// there cannot reach the registry.
pub(crate) fn listing(keys: &Keys) -> redis::ScriptInvocation<'static> {
    let mut invocation = SCRIPTS.list_queues.prepare_invoke();
    invocation.key(keys.queues()).key(keys.priorities()).arg(keys.wake());
    invocation
}

/// [`listing`] of what `job` needs listed before it lands on `queue`'s
/// slot: the queue, its priority level and, grouped, the queue's group
/// memberships.
pub(crate) fn listing_of(keys: &Keys, queue: &str, job: &Job) -> redis::ScriptInvocation<'static> {
    let mut invocation = listing(keys);
    invocation
        .arg(queue)
        .arg(crate::priority::listed_member(queue, job.priority_level()));
    for member in crate::groups::members_for(job) {
        invocation.arg(queue).arg(member);
    }
    invocation
}

/// Delivers every entry of the outbox: the hand-overs a crash interrupted
/// (and any in flight, harmlessly).
pub(crate) async fn deliver_all(redis: &Redis, keys: &Keys) -> Result<usize> {
    let entries: Vec<(String, Vec<u8>)> = redis.conn().hgetall(keys.outbox()).await?;
    deliver_entries(redis, keys, entries).await
}

/// The hand-overs onto one list: their ids, and their payloads.
type HandOvers = (Vec<String>, Vec<Vec<u8>>);

async fn deliver_entries(redis: &Redis, keys: &Keys, entries: Vec<(String, Vec<u8>)>) -> Result<usize> {
    // Per queue, priority level and group (a list each).
    let mut by_queue: BTreeMap<crate::groups::ListOf, HandOvers> = BTreeMap::new();
    // Sharded by queue, what the registry lists before the jobs land in
    // their groups (push_once.lua runs on the queue's slot, which cannot
    // reach it): (queue, member).
    let sharded = keys.is_sharded_by_queue();
    let mut members: std::collections::BTreeSet<(String, String)> = Default::default();
    // The lists of sequences' jobs: a retry among them comes back to the
    // head of its key, ending its hold (push_once.lua).
    let mut sequences: std::collections::BTreeSet<crate::groups::ListOf> = Default::default();
    for (id, value) in entries {
        let Some(split) = value.iter().position(|&b| b == b'\n') else {
            tracing::error!("outbox entry {id} has no queue name (left in place)");
            continue;
        };
        let queue = String::from_utf8_lossy(&value[..split]).into_owned();
        let job = Job::parse(&value[split + 1..]).ok();
        if let Some(job) = job.as_ref().filter(|_| sharded) {
            members.extend(crate::groups::members_for(job).into_iter().map(|m| (queue.clone(), m)));
        }
        let (_, level, group, cap) = job.as_ref().map_or_else(
            || (String::new(), crate::priority::DEFAULT, None, None),
            crate::groups::list_of,
        );
        let list = (queue, level, group, cap);
        if job.as_ref().is_some_and(Job::in_sequence) {
            sequences.insert(list.clone());
        }
        let slot = by_queue.entry(list).or_default();
        slot.0.push(id);
        slot.1.push(value[split + 1..].to_vec());
    }
    if by_queue.is_empty() {
        return Ok(0);
    }
    // Named first (list_queues.lua): each queue and level is listed before a
    // job lands on it, from every hand-over (batch callbacks, workflow steps,
    // due jobs and unique pushes sharded by queue, periodic ticks).
    let mut listing = listing(keys);
    for (queue, level, ..) in by_queue.keys() {
        listing.arg(queue).arg(crate::priority::listed_member(queue, *level));
    }
    for (queue, member) in &members {
        listing.arg(queue).arg(member);
    }
    let _: usize = listing.invoke_async(&mut redis.conn()).await?;
    let mut pushed = 0;
    let day = crate::retry::day_of(crate::job::now());
    for (list, (ids, payloads)) in by_queue {
        let sequence = sequences.contains(&list);
        let (queue, level, group, limits) = list;
        let destination = crate::groups::Destination::of(keys, &queue, level, group.as_deref(), limits.as_deref());
        let mut invocation = SCRIPTS.push_once.prepare_invoke();
        invocation
            .key(&destination.list)
            .key(keys.queue_stat(&queue, "backlog_dropped", None))
            .key(keys.queue_stat(&queue, "backlog_dropped", Some(&day)));
        if sequence {
            invocation
                .key(keys.group_holds(&queue))
                .key(keys.group_running(&queue))
                .key(keys.group_parked(&queue));
        }
        for id in &ids {
            invocation.key(keys.landed(&queue, id));
        }
        invocation
            .arg(keys.wake())
            .arg(&queue)
            .arg(LANDED_TTL_SECS)
            .arg(&destination.ring)
            .arg(&destination.group)
            .arg(if sharded { String::new() } else { keys.priorities() })
            .arg(&destination.declared)
            .arg(&destination.limits)
            .arg(if sequence { "1" } else { "" });
        for payload in &payloads {
            invocation.arg(&payload[..]);
        }
        let n: usize = invocation.invoke_async(&mut redis.conn()).await?;
        pushed += n;
        let _: i64 = redis.conn().hdel(keys.outbox(), &ids).await?;
    }
    Ok(pushed)
}
