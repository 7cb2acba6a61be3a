//! State shared by every part of one worker process: settings, identity,
//! lifecycle (running → quiet → stopping), the busy slots, and the count of
//! jobs taken but not yet finished that bounds how many more to fetch.

use crate::config::{Config, FetchMode};
use crate::connection::Redis;
use crate::handler::Outcome;
use crate::job::{self, Job};
use crate::keys::Keys;
use crate::periodic::Periodic;
use serde_json::Value;
use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::Mutex;
use tokio::sync::{watch, Notify};

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Lifecycle {
    Running,
    /// Takes no new jobs; running ones go on.
    Quiet,
    /// Shutting down.
    Stopping,
}

/// A job handed to a slot: the parsed job plus what is needed to settle it.
#[derive(Debug)]
pub struct Delivery {
    pub(crate) token: u64,
    pub(crate) queue: String,
    /// The payload exactly as fetched: the in-progress list holds these bytes.
    pub(crate) raw: Vec<u8>,
    pub(crate) job: Job,
    pub(crate) started_at: f64,
}

impl Delivery {
    pub fn job(&self) -> &Job {
        &self.job
    }
    pub fn queue(&self) -> &str {
        &self.queue
    }
    pub fn raw(&self) -> &[u8] {
        &self.raw
    }
}

/// What a host-language slot needs to run a delivery, read once when the
/// slot takes it (the delivery itself is kept until it is settled).
#[derive(Clone, Debug, PartialEq)]
pub struct DeliveryInfo {
    pub class: String,
    pub jid: String,
    pub queue: String,
    pub retry_count: u32,
    /// The job's `args` as JSON text.
    pub args_json: String,
}

impl Delivery {
    pub fn info(&self) -> DeliveryInfo {
        DeliveryInfo {
            class: self.job.class().to_string(),
            jid: self.job.jid_str().to_string(),
            queue: self.queue.clone(),
            retry_count: self.job.retry_count(),
            args_json: serde_json::to_string(self.job.args_slice()).unwrap_or_else(|_| "[]".into()),
        }
    }
}

/// One busy slot, as shown in the workers hash and the TTIN dump.
#[derive(Clone, Debug)]
pub struct BusyEntry {
    pub queue: String,
    pub class: String,
    pub jid: String,
    pub raw: Vec<u8>,
    pub run_at: f64,
    /// The periodic run lock the job owns (kept alive by the heartbeat).
    pub(crate) run_lock: Option<String>,
}

impl BusyEntry {
    /// `{queue, payload, run_at}` with the payload embedded as JSON.
    pub(crate) fn to_json(&self) -> String {
        let payload: Value = serde_json::from_slice(&self.raw).unwrap_or(Value::Null);
        serde_json::json!({"queue": self.queue, "payload": payload, "run_at": job::float(self.run_at)}).to_string()
    }
}

/// What the completion task settles.
pub(crate) enum Completion {
    Done {
        delivery: Delivery,
        outcome: Outcome,
        finished_at: f64,
    },
    /// Not a runnable job: bury its bytes in `dead`.
    Bury {
        queue: String,
        raw: Vec<u8>,
        reason: String,
    },
    /// A slot started a job owning a periodic run lock: shorten the lock to
    /// its running TTL.
    Started { run_lock: String, jid: String },
    /// Reply once everything sent before this has been written to Redis.
    Flush(tokio::sync::oneshot::Sender<()>),
}

pub(crate) struct Shared {
    pub config: Config,
    pub keys: Keys,
    pub redis: Redis,
    pub identity: String,
    pub started_at: f64,
    reliable: AtomicBool,
    lifecycle: watch::Sender<Lifecycle>,
    busy: Mutex<HashMap<u64, BusyEntry>>,
    next_token: AtomicU64,
    outstanding: AtomicUsize,
    pub capacity_freed: Notify,
    pub completions: flume::Sender<Completion>,
    /// Set once the first orphan-recovery pass has completed.
    pub recovered_once: AtomicBool,
    /// The periodic entries this process ticks for.
    pub periodic: Vec<Periodic>,
}

impl Shared {
    pub fn new(config: Config, redis: Redis, completions: flume::Sender<Completion>, periodic: Vec<Periodic>) -> Self {
        let identity = format!(
            "{}:{}:{}",
            crate::heartbeat::hostname(),
            std::process::id(),
            &job::new_jid()[..8]
        );
        Shared {
            keys: Keys::new(config.namespace()),
            reliable: AtomicBool::new(config.fetch() == FetchMode::Reliable),
            config,
            redis,
            identity,
            started_at: job::now(),
            lifecycle: watch::channel(Lifecycle::Running).0,
            busy: Mutex::new(HashMap::new()),
            next_token: AtomicU64::new(1),
            outstanding: AtomicUsize::new(0),
            capacity_freed: Notify::new(),
            completions,
            recovered_once: AtomicBool::new(false),
            periodic,
        }
    }

    pub fn is_reliable(&self) -> bool {
        self.reliable.load(Ordering::SeqCst)
    }
    pub fn set_basic_fetch(&self) {
        self.reliable.store(false, Ordering::SeqCst);
    }

    pub fn lifecycle(&self) -> Lifecycle {
        *self.lifecycle.borrow()
    }
    /// Moves forward only: quiet never undoes a stop.
    pub fn advance(&self, to: Lifecycle) {
        self.lifecycle.send_if_modified(|now| {
            if to > *now {
                *now = to;
                true
            } else {
                false
            }
        });
    }
    pub fn is_quiet(&self) -> bool {
        self.lifecycle() >= Lifecycle::Quiet
    }
    pub fn is_stopping(&self) -> bool {
        self.lifecycle() >= Lifecycle::Stopping
    }
    pub fn watch(&self) -> watch::Receiver<Lifecycle> {
        self.lifecycle.subscribe()
    }
    /// Resolves once the lifecycle has reached `at_least`.
    pub async fn reached(&self, at_least: Lifecycle) {
        let mut rx = self.watch();
        let _ = rx.wait_for(|now| *now >= at_least).await;
    }

    pub fn free_slots(&self) -> usize {
        self.config
            .concurrency()
            .saturating_sub(self.outstanding.load(Ordering::SeqCst))
    }

    /// A fetched, parsed job becomes a delivery owed to a slot.
    pub fn new_delivery(&self, queue: String, raw: Vec<u8>, job: Job) -> Delivery {
        self.outstanding.fetch_add(1, Ordering::SeqCst);
        Delivery {
            token: self.next_token.fetch_add(1, Ordering::Relaxed),
            queue,
            raw,
            job,
            started_at: 0.0,
        }
    }

    /// A slot starts running `delivery`.
    pub fn start(&self, delivery: &mut Delivery) {
        delivery.started_at = job::now();
        let entry = BusyEntry {
            queue: delivery.queue.clone(),
            class: delivery.job.class().to_string(),
            jid: delivery.job.jid_str().to_string(),
            raw: delivery.raw.clone(),
            run_at: delivery.started_at,
            run_lock: delivery
                .job
                .run_lock_pjid()
                .map(|pjid| self.keys.periodic_running(pjid)),
        };
        if let Some(run_lock) = entry.run_lock.clone() {
            let jid = entry.jid.clone();
            let _ = self.completions.send(Completion::Started { run_lock, jid });
        }
        self.busy.lock().unwrap().insert(delivery.token, entry);
    }

    /// A slot finished `delivery`: free the slot, hand the outcome over to be
    /// written to Redis.
    pub fn finish(&self, delivery: Delivery, outcome: Outcome) {
        self.busy.lock().unwrap().remove(&delivery.token);
        self.release_slot();
        let finished_at = job::now();
        if self
            .completions
            .send(Completion::Done {
                delivery,
                outcome,
                finished_at,
            })
            .is_err()
        {
            // The completion task is gone (after shutdown requeued
            // everything): this job is already back on its queue.
            tracing::debug!("completion after shutdown dropped; the job was requeued");
        }
    }

    /// A delivery that will never run here (given back at shutdown).
    pub fn release_slot(&self) {
        self.outstanding.fetch_sub(1, Ordering::SeqCst);
        self.capacity_freed.notify_one();
    }

    pub fn busy_snapshot(&self) -> Vec<(u64, BusyEntry)> {
        let busy = self.busy.lock().unwrap();
        let mut entries: Vec<(u64, BusyEntry)> = busy.iter().map(|(k, v)| (*k, v.clone())).collect();
        entries.sort_by_key(|(token, _)| *token);
        entries
    }
    pub fn busy_count(&self) -> usize {
        self.busy.lock().unwrap().len()
    }
}

/// Sleeps for `duration` unless the lifecycle reaches `until` first.
/// Returns true if interrupted.
pub(crate) async fn sleep_unless(shared: &Shared, duration: std::time::Duration, until: Lifecycle) -> bool {
    tokio::select! {
        _ = tokio::time::sleep(duration) => false,
        _ = shared.reached(until) => true,
    }
}

/// `base` ± `spread` (a fraction), so a fleet does not poll in step.
pub(crate) fn jittered(base: std::time::Duration, spread: f64) -> std::time::Duration {
    let factor = 1.0 + spread * (rand::random::<f64>() * 2.0 - 1.0);
    base.mul_f64(factor.max(0.05))
}
