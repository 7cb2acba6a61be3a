//! Cancellation, as a worker hears of it: `Api::cancel` lists the jid in
//! `NS:cancelled` (a sorted set scored by when the entry may go) and says
//! `"cancel <jid>"` on the wake channel every process already listens to.
//! Each process keeps the cancelled jids in memory (read when it starts
//! and whenever it subscribes again, then from the messages), so a job
//! taken later is dropped unrun, and a running one is told: a Rust
//! handler's future is dropped at once; a host's slot reads the flag. No
//! job pays a Redis round trip for it: the check is a lookup in memory.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use tokio::sync::Notify;

/// What a process hears on the wake channel when a job is cancelled: this,
/// then its jid.
pub(crate) const WAKE_PREFIX: &str = "cancel ";

/// How long a cancellation is remembered (a job cancelled while it waits
/// longer than this in a queue may still run).
pub(crate) const REMEMBERED_SECS: f64 = 7.0 * 86_400.0;

/// How many cancellations are remembered at most, the newest: in Redis
/// and in each process's memory (about 13 MB at most in each; 300,000
/// cancels once cost every worker 35 MB and Redis 39 MB for a week). A job
/// whose cancellation was pushed out by 100,000 newer ones may still run.
pub const REMEMBERED_MAX: usize = 100_000;

/// The cancelled jids this process knows of, and the running jobs that
/// want to hear of theirs.
#[derive(Default)]
pub(crate) struct Cancellations {
    inner: Mutex<Inner>,
    /// Has any job been cancelled? (Until one is, a look costs a load.)
    any: AtomicBool,
    /// How many cancellations this process has heard of: a host that must
    /// look at its running jobs looks only when this changed.
    heard: AtomicU64,
}

#[derive(Default)]
struct Inner {
    /// Each cancelled jid, with when this process heard of it.
    jids: HashMap<String, Instant>,
    running: HashMap<String, Arc<Notify>>,
}

impl Inner {
    /// Keeps the `kept` cancellations heard last.
    fn forget_all_but_newest(&mut self, kept: usize) {
        let mut heard: Vec<Instant> = self.jids.values().copied().collect();
        let Some(cut) = heard.len().checked_sub(kept).filter(|cut| *cut > 0) else {
            return;
        };
        let (_, oldest_kept, _) = heard.select_nth_unstable(cut);
        let oldest_kept = *oldest_kept;
        self.jids.retain(|_, at| *at >= oldest_kept);
    }
}

impl Cancellations {
    /// Adds cancelled `jids` (a running one is told). Every 1,024th
    /// forgets those older than [`REMEMBERED_SECS`], as Redis does.
    pub fn learn<S: AsRef<str>>(&self, jids: &[S]) {
        if jids.is_empty() {
            return;
        }
        self.any.store(true, Ordering::Relaxed);
        self.heard.fetch_add(jids.len() as u64, Ordering::Relaxed);
        let mut inner = self.inner.lock().unwrap();
        for jid in jids {
            let jid = jid.as_ref();
            if let Some(running) = inner.running.get(jid) {
                running.notify_one();
            }
            inner.jids.insert(jid.to_string(), Instant::now());
            if inner.jids.len() % 1024 == 0 {
                let remembered = Duration::from_secs_f64(REMEMBERED_SECS);
                inner.jids.retain(|_, heard| heard.elapsed() < remembered);
            }
            // With some slack, so the cut is made once per 12,500 new ones.
            if inner.jids.len() > REMEMBERED_MAX + REMEMBERED_MAX / 8 {
                inner.forget_all_but_newest(REMEMBERED_MAX);
            }
        }
    }

    /// A wake-channel message: when it cancels a job, learns it; true if it
    /// was one.
    pub fn learn_message(&self, message: &str) -> bool {
        match message.strip_prefix(WAKE_PREFIX) {
            Some(jid) if !jid.is_empty() => {
                self.learn(&[jid]);
                true
            }
            _ => false,
        }
    }

    /// How many cancellations this process has heard of so far.
    pub fn heard(&self) -> u64 {
        self.heard.load(Ordering::Relaxed)
    }

    /// Was `jid` cancelled?
    pub fn contains(&self, jid: &str) -> bool {
        self.any.load(Ordering::Relaxed) && self.inner.lock().unwrap().jids.contains_key(jid)
    }

    /// While the returned watch lives, a cancellation of `jid` wakes
    /// `notify` (a slot's own, made once: a job pays no allocation for it;
    /// at once if `jid` is cancelled already).
    pub fn watch(self: &Arc<Self>, jid: &str, notify: &Arc<Notify>) -> Watch {
        let notify = notify.clone();
        let mut inner = self.inner.lock().unwrap();
        if inner.jids.contains_key(jid) {
            notify.notify_one();
        }
        inner.running.insert(jid.to_string(), notify.clone());
        Watch {
            cancellations: self.clone(),
            jid: jid.to_string(),
            notify,
        }
    }
}

/// A running job's ear for its cancellation.
pub(crate) struct Watch {
    cancellations: Arc<Cancellations>,
    jid: String,
    notify: Arc<Notify>,
}

impl Watch {
    /// Until the job is cancelled. (The slot's notify may hold a wake-up
    /// meant for its previous job, cancelled as it ended: that one is
    /// passed over.)
    pub async fn cancelled(&self) {
        loop {
            self.notify.notified().await;
            if self.cancellations.contains(&self.jid) {
                return;
            }
        }
    }
}

impl Drop for Watch {
    fn drop(&mut self) {
        let mut inner = self.cancellations.inner.lock().unwrap();
        if inner
            .running
            .get(&self.jid)
            .is_some_and(|n| Arc::ptr_eq(n, &self.notify))
        {
            inner.running.remove(&self.jid);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_running_job_hears_of_its_cancellation_and_later_ones_are_known() {
        let cancellations = Arc::new(Cancellations::default());
        let slot = Arc::new(Notify::new());
        let watch = cancellations.watch("a", &slot);
        assert!(!cancellations.learn_message("mail"));
        assert!(cancellations.learn_message("cancel a"));
        tokio::time::timeout(Duration::from_secs(1), watch.cancelled())
            .await
            .unwrap();
        assert!(cancellations.contains("a") && !cancellations.contains("b"));
        // Cancelled before it began: its watch fires at once.
        drop(watch);
        let early = cancellations.watch("a", &Arc::new(Notify::new()));
        tokio::time::timeout(Duration::from_secs(1), early.cancelled())
            .await
            .unwrap();
        drop(early);
        assert!(cancellations.inner.lock().unwrap().running.is_empty());
    }

    #[test]
    fn at_most_the_newest_cancellations_are_kept_in_memory() {
        let cancellations = Cancellations::default();
        let total = REMEMBERED_MAX * 3;
        for chunk in (0..total).collect::<Vec<_>>().chunks(10_000) {
            let jids: Vec<String> = chunk.iter().map(|i| format!("j{i}")).collect();
            cancellations.learn(&jids);
        }
        let kept = cancellations.inner.lock().unwrap().jids.len();
        assert!(
            (REMEMBERED_MAX..=REMEMBERED_MAX + REMEMBERED_MAX / 8).contains(&kept),
            "{kept}"
        );
        assert!(
            cancellations.contains(&format!("j{}", total - 1)),
            "the newest is known"
        );
        assert!(!cancellations.contains("j0"), "the oldest is forgotten");
    }
}
