//! Sharded by queue, each queue and its in-progress hash live on a slot of
//! their own, so a fetch runs `fetch_reliable.lua` once per queue it reads.
//! Reading every queue each time would make both a job's cost and an idle
//! worker's grow with the queues a process serves, so the fetch reads only
//! the queues that may hold jobs: those its last read of them left jobs on
//! (the read that filled the batch) or did not reach, and those a wake-up
//! named since (every push of ours onto an empty queue publishes its name,
//! and so do unpause and the requeues). A queue read empty is left alone
//! until a wake-up names it. What no wake-up announces (a raw `LPUSH`) is
//! found by the fallback poll: each time an idle wait runs out, one more
//! queue is read, the next in turn, so within queues ×
//! `fetch_idle_max_interval`. A (re)subscription to the wake channel (a
//! message may have been lost while it was down) and a failed fetch make
//! every queue a candidate again.

use super::reliable::pairs;
use super::Fetched;
use crate::config::QueueSpec;
use crate::error::Result;
use crate::scripts::SCRIPTS;
use crate::shared::Shared;
use crate::wakeups::Woken;
use std::collections::HashSet;

#[derive(Default)]
pub(crate) struct QueueReads {
    /// The queues that may hold jobs; `None` while that is unknown.
    maybe: Option<HashSet<String>>,
    /// The queue (its index in the configured list) the next poll reads.
    next_polled: usize,
}

impl QueueReads {
    /// The queues to read: those of `order` (every configured queue, in
    /// this fetch's order) that may hold jobs or that `woken` names, then,
    /// when `poll`, the next queue in turn.
    pub fn choose<'a>(
        &mut self,
        order: Vec<&'a str>,
        configured: &'a [QueueSpec],
        woken: Woken,
        poll: bool,
    ) -> Vec<&'a str> {
        let mut read = match (&self.maybe, woken) {
            (None, _) | (_, Woken::EveryQueue) => order,
            (Some(maybe), Woken::Queues(named)) => order
                .into_iter()
                .filter(|q| maybe.contains(*q) || named.contains(*q))
                .collect(),
        };
        if poll && !configured.is_empty() {
            let polled = configured[self.next_polled % configured.len()].name.as_str();
            self.next_polled = self.next_polled.wrapping_add(1);
            if !read.contains(&polled) {
                read.push(polled);
            }
        }
        read
    }

    /// `read` were read; of them, those in `left` may still hold jobs.
    pub fn record(&mut self, read: &[&str], left: &[&str]) {
        let maybe = self.maybe.get_or_insert_with(HashSet::new);
        for queue in read {
            maybe.remove(*queue);
        }
        maybe.extend(left.iter().map(|q| q.to_string()));
    }

    /// A fetch failed: what it read is unknown.
    pub fn forget(&mut self) {
        self.maybe = None;
    }
}

/// Reads `read` in order, one script per queue, until `max` jobs are
/// taken. Returns them, and the queues that may still hold jobs: the one
/// that filled the batch, and those not reached.
pub(crate) async fn fetch_queue_by_queue<'a>(
    shared: &Shared,
    read: &[&'a str],
    max: usize,
) -> Result<(Vec<Fetched>, Vec<&'a str>)> {
    let mut taken = Vec::new();
    for (i, name) in read.iter().enumerate() {
        let wanted = max - taken.len();
        if wanted == 0 {
            return Ok((taken, read[i.saturating_sub(1)..].to_vec()));
        }
        let first_token = shared.reserve_tokens(wanted);
        let mut invocation = SCRIPTS.fetch_reliable.prepare_invoke();
        invocation
            .key(shared.keys.pause_flag(name))
            .key(shared.keys.in_progress_from(&shared.identity, name))
            .arg(wanted)
            .arg(first_token);
        for list in shared.levels.lists(&shared.keys, name) {
            invocation.key(list).arg(*name);
        }
        // A grouped queue's ring and lists are on its slot too.
        if let Some(args) = super::reliable::grouped_args(shared, name, wanted) {
            invocation.arg(args);
        }
        let flat: Vec<Vec<u8>> = invocation.invoke_async(&mut shared.redis.conn()).await?;
        taken.extend(pairs(flat, first_token)?);
    }
    // Every queue was read; the last one may have filled the batch.
    let left = match read.last() {
        Some(last) if taken.len() == max => vec![*last],
        _ => Vec::new(),
    };
    Ok((taken, left))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn configured(names: &[&str]) -> Vec<QueueSpec> {
        names
            .iter()
            .map(|n| QueueSpec {
                name: n.to_string(),
                weight: 1,
            })
            .collect()
    }

    fn named(names: &[&str]) -> Woken {
        Woken::Queues(names.iter().map(|n| n.to_string()).collect())
    }

    #[test]
    fn reads_every_queue_until_it_knows_which_may_hold_jobs() {
        let queues = configured(&["a", "b", "c", "d"]);
        let order = || vec!["a", "b", "c", "d"];
        let mut reads = QueueReads::default();
        assert_eq!(reads.choose(order(), &queues, named(&[]), false), order());
        // "b" filled the batch; "c" and "d" were not reached.
        reads.record(&order(), &["b", "c", "d"]);
        assert_eq!(reads.choose(order(), &queues, named(&[]), false), ["b", "c", "d"]);
        reads.record(&["b", "c", "d"], &[]);
        assert!(
            reads.choose(order(), &queues, named(&[]), false).is_empty(),
            "all read empty"
        );
        assert_eq!(
            reads.choose(order(), &queues, named(&["c"]), false),
            ["c"],
            "a wake-up names one"
        );
        reads.record(&["c"], &[]);
        assert_eq!(reads.choose(order(), &queues, Woken::EveryQueue, false), order());
        reads.record(&order(), &[]);
        reads.forget();
        assert_eq!(
            reads.choose(order(), &queues, named(&[]), false),
            order(),
            "after a failed fetch"
        );
    }

    #[test]
    fn the_poll_reads_one_more_queue_in_turn() {
        let queues = configured(&["a", "b", "c"]);
        let order = || vec!["c", "b", "a"];
        let mut reads = QueueReads::default();
        reads.record(&order(), &[]);
        let polled: Vec<Vec<&str>> = (0..4)
            .map(|_| reads.choose(order(), &queues, named(&[]), true))
            .collect();
        assert_eq!(polled, [vec!["a"], vec!["b"], vec!["c"], vec!["a"]]);
        // A named queue first, in this fetch's order, then the polled one.
        assert_eq!(reads.choose(order(), &queues, named(&["a"]), true), ["a", "b"]);
        assert_eq!(reads.choose(order(), &queues, named(&["c"]), true), ["c"]);
    }
}
