//! The reports of running jobs on their way to Redis, coalesced: a
//! handler's `progress` and `checkpoint` only note the latest of each job
//! here; the worker's report writer (`report_writer.rs`) takes what is
//! noted, writes it, then rests [`super::WRITE_INTERVAL`], so Redis sees
//! each job's latest report at most that often however fast it reports.
//! A process whose jobs report nothing never wakes the writer.

use std::collections::{HashMap, HashSet};
use std::sync::Mutex;
use tokio::sync::Notify;

/// What is waiting to be written.
#[derive(Default)]
pub(crate) struct Reports {
    pending: Mutex<Pending>,
    /// Something was noted (the writer waits on it).
    pub noted: Notify,
    /// Held while reports are written: the writer's pass and the settle
    /// pass's write of ended runs (`report_writer::write_ended`) never
    /// overlap, so an older report never lands after a newer one.
    pub writing: tokio::sync::Mutex<()>,
}

/// Reports noted and not yet written.
#[derive(Default)]
pub(crate) struct Pending {
    /// The deliveries (tokens) that reported progress (the latest report
    /// is in their busy entry).
    pub progress: HashSet<u64>,
    /// By jid: the last report of a run that ended, with its `state`, and
    /// its TTL in seconds.
    pub ended: HashMap<String, (String, u64)>,
    /// The deliveries (tokens) whose checkpoint changed.
    pub checkpoints: HashSet<u64>,
}

impl Pending {
    pub(crate) fn is_empty(&self) -> bool {
        self.progress.is_empty() && self.checkpoints.is_empty() && self.ended.is_empty()
    }
}

impl Reports {
    /// The delivery `token` reported progress.
    pub(crate) fn progress(&self, token: u64) {
        self.pending.lock().unwrap().progress.insert(token);
        self.noted.notify_one();
    }

    /// A run of `jid` ended; `record` is its last report with its `state`
    /// (kept `ttl` seconds).
    pub(crate) fn ended(&self, jid: &str, record: String, ttl: u64) {
        self.pending
            .lock()
            .unwrap()
            .ended
            .insert(jid.to_string(), (record, ttl));
        self.noted.notify_one();
    }

    /// The delivery `token` checkpointed.
    pub(crate) fn checkpoint(&self, token: u64) {
        self.pending.lock().unwrap().checkpoints.insert(token);
        self.noted.notify_one();
    }

    /// The last reports of the runs that ended, to write now (the rest
    /// stays noted for the writer).
    pub(crate) fn take_ended(&self) -> HashMap<String, (String, u64)> {
        std::mem::take(&mut self.pending.lock().unwrap().ended)
    }

    /// Is a run's last report waiting to be written?
    pub(crate) fn any_ended(&self) -> bool {
        !self.pending.lock().unwrap().ended.is_empty()
    }

    /// Everything noted, to write now.
    pub(crate) fn take(&self) -> Pending {
        std::mem::take(&mut *self.pending.lock().unwrap())
    }

    /// Puts back what a failed write did not write, unless a newer report
    /// of the same job came meanwhile.
    pub(crate) fn put_back(&self, unwritten: Pending) {
        let mut pending = self.pending.lock().unwrap();
        for (jid, record) in unwritten.ended {
            pending.ended.entry(jid).or_insert(record);
        }
        pending.progress.extend(unwritten.progress);
        pending.checkpoints.extend(unwritten.checkpoints);
        self.noted.notify_one();
    }
}
