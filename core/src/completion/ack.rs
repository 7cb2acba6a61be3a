//! Successes acknowledged in one `ack.lua` call per pass: their in-progress
//! entries taken off, counted, results kept, and the batch callbacks
//! their settles handed over.

use super::{persist, BusyChanges};
use crate::delivery::Delivery;
use crate::job::now;
use crate::locks::JobLocks;
use crate::metrics::MetricsBatch;
use crate::results;
use crate::retry::{day_of, history_entry};
use crate::scripts::SCRIPTS;
use crate::shared::Shared;
use std::collections::{HashMap, HashSet};
use std::sync::Mutex;

pub(super) async fn ack(
    shared: &Shared,
    successes: &[(Delivery, f64)],
    busy: &BusyChanges,
    metrics: Option<&MetricsBatch>,
) -> redis::RedisResult<()> {
    let today = day_of(now());
    let mut invocation = SCRIPTS.ack.prepare_invoke();
    invocation
        .key(shared.keys.in_progress(&shared.identity))
        .key(shared.keys.stat("processed", None))
        .key(shared.keys.stat("processed", Some(&today)))
        .key(shared.keys.history())
        .key(shared.keys.workers(&shared.identity))
        // Sharded by queue, the jobs were taken off their queues' slots
        // already (`take_acknowledged`).
        .arg(if shared.is_reliable() && !shared.keys.is_sharded_by_queue() {
            "1"
        } else {
            "0"
        })
        .arg(shared.config.history_max())
        .arg(successes.len());
    for (delivery, _) in successes {
        invocation.arg(delivery.token);
    }
    for (delivery, finished_at) in successes {
        invocation.arg(history_entry(&delivery.job, delivery.started_at, *finished_at, None));
    }
    // Locks to release: (index of the job, 1-based; lock key; owner jid).
    let mut releases = Vec::new();
    for (index, (delivery, _)) in successes.iter().enumerate() {
        for lock in JobLocks::of(&delivery.job, &shared.keys).all() {
            releases.push((index + 1, lock.clone(), delivery.job.jid_str()));
        }
    }
    invocation.arg(releases.len());
    for (index, lock, owner) in releases {
        invocation.key(lock).arg(index).arg(owner);
    }
    invocation
        .arg(crate::heartbeat::PRESENCE_TTL_SECS)
        .arg(busy.started.len());
    for (token, json) in &busy.started {
        invocation.arg(token).arg(json);
    }
    invocation.arg(busy.ended.len());
    for token in &busy.ended {
        invocation.arg(token);
    }
    // Results of the jobs that keep them (result_ttl), with the ack.
    let results: Vec<(usize, &Delivery, f64, u64)> = successes
        .iter()
        .enumerate()
        .filter_map(|(index, (d, at))| d.job.result_ttl_secs().map(|ttl| (index + 1, d, *at, ttl)))
        .collect();
    invocation.arg(results.len());
    for (index, delivery, finished_at, ttl) in results {
        let jid = delivery.job.jid_str();
        invocation
            .key(shared.keys.result(jid))
            .key(shared.keys.result_ready(jid))
            .arg(index)
            .arg(ttl)
            .arg(results::succeeded(
                &delivery.job,
                delivery.returned.as_deref(),
                delivery.started_at,
                finished_at,
                &shared.identity,
            ));
    }
    // Jobs of a batch, counted there with their ack (and what they
    // returned, for a workflow step whose result the next one takes).
    let batched: Vec<(usize, &str, &Delivery)> = successes
        .iter()
        .enumerate()
        .filter_map(|(index, (d, _))| Some((index + 1, d.job.batch_id()?, d)))
        .collect();
    invocation.key(shared.keys.outbox()).arg(batched.len());
    if !batched.is_empty() {
        invocation.arg(shared.keys.batch_prefix()).arg(now());
        // Sharded by queue, each is taken off in progress after this
        // (on its queue's slot): marked here, in the step that counts it.
        match shared.keys.is_sharded_by_queue() && shared.is_reliable() {
            true => invocation
                .arg(shared.keys.filed(&shared.identity, ""))
                .arg(super::file::FILED_MARKER_TTL_SECS),
            false => invocation.arg("").arg(0),
        };
        for (index, bid, delivery) in batched {
            let value = match (delivery.job.keeps_result_in_batch(), delivery.returned.as_deref()) {
                (true, Some(value)) => value.to_string(),
                (true, None) => "null".to_string(),
                (false, _) => String::new(),
            };
            invocation.arg(index).arg(bid).arg(delivery.job.jid_str()).arg(value);
        }
    }
    match metrics {
        Some(metrics) => metrics.append_to(&mut invocation, &shared.keys),
        None => {
            invocation.arg(0);
        }
    }
    let handed: Vec<String> = invocation.invoke_async(&mut shared.redis.conn()).await?;
    deliver_callbacks(shared, &handed).await;
    Ok(())
}

/// Pushes the batch callbacks a settle handed over to the outbox. A
/// failure leaves them there for recovery to push (the settle is written;
/// repeating it could count a job twice).
pub(super) async fn deliver_callbacks(shared: &Shared, handed: &[String]) {
    if let Err(e) = crate::outbox::deliver(&shared.redis, &shared.keys, handed).await {
        tracing::warn!(
            target: super::TARGET,
            "pushing {} batch callback(s) failed; recovery pushes them: {e}",
            handed.len()
        );
    }
}

/// Sharded by queue: takes the successes off their queues' in-progress
/// hashes (on the queues' slots) and keeps those that were still held, for
/// `ack` to count and record on the namespace's slot. A job no longer held
/// was put back on its queue while it ran; its copy will run again.
///
/// A job of a batch goes the other way round, as a failure does
/// (completion/file.rs): kept if still held, counted and marked by `ack`,
/// and only then taken off ([`take_marked`]); so a crash between the two
/// steps neither loses its batch's count (taken off, never counted) nor
/// counts it twice (recovery takes a marked entry off instead of running
/// it again).
pub(super) async fn take_acknowledged(shared: &Shared, successes: Vec<(Delivery, f64)>) -> Vec<(Delivery, f64)> {
    let (batched, plain): (Vec<_>, Vec<_>) = successes
        .into_iter()
        .partition(|(delivery, _)| delivery.job.batch_id().is_some());
    let mut kept = still_held(shared, batched).await;
    let deliveries: Vec<(&str, u64)> = plain.iter().map(|(d, _)| (d.queue.as_str(), d.token)).collect();
    let taken = take_off(shared, &deliveries).await;
    kept.extend(
        plain
            .into_iter()
            .filter(|(delivery, _)| taken.contains(&delivery.token)),
    );
    kept
}

/// Of a batch's successes (sharded by queue), those their queues'
/// in-progress hashes still hold.
async fn still_held(shared: &Shared, batched: Vec<(Delivery, f64)>) -> Vec<(Delivery, f64)> {
    if batched.is_empty() {
        return batched;
    }
    let deliveries: Vec<(&str, u64)> = batched.iter().map(|(d, _)| (d.queue.as_str(), d.token)).collect();
    let held = persist(shared, "reading which finished jobs are held", || {
        crate::in_progress::still_held(shared, &deliveries)
    })
    .await
    .unwrap_or_default();
    batched
        .into_iter()
        .filter(|(delivery, _)| held.contains(&delivery.token))
        .collect()
}

/// Takes `deliveries` (`(queue, token)`) off their queues' in-progress
/// hashes, retried until written; returns the tokens that were still held.
async fn take_off(shared: &Shared, deliveries: &[(&str, u64)]) -> HashSet<u64> {
    let done = Mutex::new(HashMap::new());
    persist(shared, "taking finished jobs off in progress", || {
        crate::in_progress::take_acknowledged(shared, deliveries, &done)
    })
    .await;
    crate::in_progress::acknowledged(deliveries, &done.into_inner().unwrap())
}

/// Sharded by queue, after `ack` counted and marked them: takes a batch's
/// successes off their queues' in-progress hashes, then their markers.
pub(super) async fn take_marked(shared: &Shared, successes: &[(Delivery, f64)]) {
    let deliveries: Vec<(&str, u64)> = successes
        .iter()
        .filter(|(delivery, _)| delivery.job.batch_id().is_some())
        .map(|(d, _)| (d.queue.as_str(), d.token))
        .collect();
    if deliveries.is_empty() {
        return;
    }
    take_off(shared, &deliveries).await;
    let markers: Vec<String> = deliveries
        .iter()
        .map(|(_, token)| shared.keys.filed(&shared.identity, &token.to_string()))
        .collect();
    // Best effort: a marker left behind expires, and marks nothing held.
    if let Err(e) = redis::AsyncCommands::del::<_, i64>(&mut shared.redis.conn(), &markers).await {
        tracing::debug!(target: super::TARGET, "deleting {} acknowledgement marker(s) failed: {e}", markers.len());
    }
}
