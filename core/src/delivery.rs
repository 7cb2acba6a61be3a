//! A job handed to a slot, and the promise that it settles exactly once.
//!
//! A [`Delivery`] is settled by consuming it: [`Delivery::complete`],
//! [`Delivery::fail`] or [`Delivery::abandon`]. One that is dropped unsettled
//! (a handler thread killed, a host object collected, a panic unwinding
//! through a slot) is abandoned by its `Drop`: the job is filed as failed
//! with `error_class` [`HANDLER_ABORTED`], or, while the process is going
//! down, left for shutdown's requeue. Either way its slot and busy entry are
//! freed, so no way of ending leaks a slot or strands a job.

use crate::handler::{Failure, Outcome};
use crate::job::{self, Job};
use crate::shared::Shared;
use crate::time_limit::TimeLimit;
use std::sync::Arc;

/// `error_class` of a job whose handler ended without reporting an outcome.
pub const HANDLER_ABORTED: &str = "cogworker::HandlerAborted";

/// A job taken for a slot of this process, with what is needed to settle it.
pub struct Delivery {
    pub(crate) token: u64,
    pub(crate) queue: String,
    /// The payload exactly as fetched: the in-progress list holds these bytes.
    pub(crate) raw: Vec<u8>,
    pub(crate) job: Job,
    pub(crate) started_at: f64,
    /// Handed to a slot (a dropped delivery that never started is given
    /// back, not failed).
    pub(crate) started: bool,
    /// Moved off its thread slot to a host's event loop (see
    /// [`Delivery::detach`]).
    pub(crate) detached: bool,
    /// What the handler returned, as JSON, for a job with `result_ttl`.
    pub(crate) returned: Option<Box<serde_json::Value>>,
    /// The stalls noticed when the fetch took it (see [`crate::stall`]).
    pub(crate) fetched_at: u64,
    /// The capacity taken from the limiters the job declared (see
    /// [`crate::admission`]), freed the moment it settles.
    pub(crate) leases: Vec<crate::limiter::Lease>,
    /// Its time limit (a job with `timeout`), from when a slot began it.
    pub(crate) time_limit: Option<Arc<TimeLimit>>,
    /// Its failures so far, as its layout counts them (see sidekiq.rs):
    /// what its retry hook is given.
    pub(crate) failures: u32,
    /// Who settles it; `None` once it is settled or given back.
    owner: Option<Arc<Shared>>,
}

/// Where a host's running delivery is kept ([`crate::host::HostDelivery`]),
/// shared with the watch over time limits (see `worker/overrun.rs`).
pub(crate) type Holder = std::sync::Mutex<Option<Delivery>>;

/// What a host-language slot needs to run a delivery, read once when the
/// slot takes it.
#[derive(Clone, Debug, PartialEq)]
pub struct DeliveryInfo {
    /// The handler name.
    pub class: String,
    /// The job id.
    pub jid: String,
    /// The queue the job came from.
    pub queue: String,
    /// Failures so far.
    pub retry_count: u32,
    /// It keeps its outcome (`result_ttl`): the host passes the handler's
    /// value to `complete_with`.
    pub wants_result: bool,
}

impl Delivery {
    pub(crate) fn new(owner: Arc<Shared>, token: u64, queue: String, raw: Vec<u8>, job: Job) -> Self {
        let failures = crate::sidekiq::failures_so_far(&job, owner.keys.is_sidekiq());
        Delivery {
            token,
            queue,
            raw,
            job,
            started_at: 0.0,
            started: false,
            detached: false,
            returned: None,
            fetched_at: owner.stall.stalls(),
            leases: Vec::new(),
            time_limit: None,
            failures,
            owner: Some(owner),
        }
    }

    /// The job.
    pub fn job(&self) -> &Job {
        &self.job
    }
    /// The queue it was taken from.
    pub fn queue(&self) -> &str {
        &self.queue
    }
    /// Its failures so far (0 on a first run), as its retry hook is given
    /// them in either layout.
    pub fn failures(&self) -> u32 {
        self.failures
    }
    /// The payload's bytes as stored.
    pub fn raw(&self) -> &[u8] {
        &self.raw
    }
    /// What a host slot needs to run it.
    pub fn info(&self) -> DeliveryInfo {
        DeliveryInfo {
            class: self.job.class().to_string(),
            jid: self.job.jid_str().to_string(),
            queue: self.queue.clone(),
            retry_count: self.failures,
            wants_result: self.wants_result(),
        }
    }

    /// The job goes on as a coroutine on the host's event loop: its thread
    /// slot is freed at once (the worker fetches another job for it), and
    /// the delivery still counts as running (busy, waited for at shutdown)
    /// until it settles. The host bounds how many it runs
    /// (`async_concurrency`).
    pub fn detach(&mut self) {
        if let Some(owner) = self.owner.clone() {
            owner.detach(self);
        }
    }

    /// The job succeeded.
    pub fn complete(self) {
        self.settle(Outcome::Success);
    }

    /// The job succeeded and returned `value`: kept as its result when it
    /// has `result_ttl` (see [`Delivery::wants_result`]).
    pub fn complete_with(mut self, value: serde_json::Value) {
        self.returned = Some(Box::new(value));
        self.settle(Outcome::Success);
    }

    /// Does the job keep its outcome (`result_ttl`), or its batch what it
    /// returns (a workflow step whose result the next one takes)? Hosts
    /// convert a handler's return value only then.
    pub fn wants_result(&self) -> bool {
        self.job.result_ttl_secs().is_some() || self.job.keeps_result_in_batch()
    }

    /// The job failed: the core records it and retries, buries or discards it.
    pub fn fail(self, failure: Failure) {
        self.settle(Outcome::Failure(failure));
    }

    /// Was the job cancelled (`Api::cancel`)? A host's running job reads
    /// it to stop early; however its handler then ends, the job is filed
    /// as cancelled.
    pub fn is_cancelled(&self) -> bool {
        self.owner
            .as_ref()
            .is_some_and(|owner| owner.cancellations.contains(self.job.jid_str()))
    }

    /// The job's handle on itself while it runs (progress, checkpoint,
    /// stopping; see [`crate::long_jobs`]); `None` once settled.
    pub fn running(&self) -> Option<crate::long_jobs::Running> {
        let owner: Arc<dyn crate::long_jobs::Control> = self.owner.clone()?;
        let jid = self.job.jid_str().to_string();
        Some(crate::long_jobs::Running::new(owner, self.token, jid))
    }

    /// Who settles it (`None` once settled).
    pub(crate) fn owner(&self) -> Option<&Arc<Shared>> {
        self.owner.as_ref()
    }

    /// Settles with `outcome` (a job cancelled while it ran: as cancelled,
    /// and one past its time limit as timed out, whatever the outcome).
    pub fn settle(mut self, outcome: Outcome) {
        if self.is_cancelled() {
            self.cancel();
            return;
        }
        let outcome = match (self.time_limit.as_ref().filter(|limit| limit.is_expired()), outcome) {
            (Some(limit), Outcome::Failure(failure)) => Outcome::Failure(limit.failure(Some(failure))),
            (Some(limit), Outcome::Success) => Outcome::Failure(limit.failure(None)),
            (None, outcome) => outcome,
        };
        self.leases.clear();
        if let Some(owner) = self.owner.take() {
            owner.finish(self, outcome);
        }
    }

    /// The handler ended without an outcome (`how` says how: a thread
    /// killed, an object collected): filed as failed with `error_class`
    /// [`HANDLER_ABORTED`], or left for shutdown's requeue while stopping.
    pub fn abandon(mut self, how: &str) {
        self.leases.clear();
        if let Some(owner) = self.owner.take() {
            owner.abandon(self, how);
        }
    }

    /// It was not started by its `expires_at`: dropped (or filed in dead,
    /// as the job asks) unrun, counted as expired.
    pub(crate) fn expire(self) {
        self.set_aside(Completion::Expired);
    }

    /// It was cancelled (`Api::cancel`): dropped unrun when taken, or
    /// stopped while it ran; not retried, counted as cancelled.
    pub(crate) fn cancel(self) {
        self.set_aside(Completion::Cancelled);
    }

    /// A limiter it declared (`limiter`) had no capacity: it goes back to
    /// the schedule, due when capacity is expected (`retry_in`, if known),
    /// not run and not counted as a failure.
    pub(crate) fn over_limit(self, limiter: &str, retry_in: Option<std::time::Duration>) {
        let limiter = limiter.to_string();
        self.set_aside(move |delivery| Completion::OverLimit {
            delivery,
            limiter,
            retry_in,
        });
    }

    /// It will not run here: the completion task files it as `completion`
    /// (made of it) says; its leases and its slot are freed now.
    fn set_aside(mut self, completion: impl FnOnce(Delivery) -> Completion) {
        self.leases.clear();
        if let Some(owner) = self.owner.take() {
            let (token, detached) = (self.token, self.detached);
            owner.set_aside(token, detached, completion(self));
        }
    }

    /// Shutdown takes back a delivery no slot started: the slot is freed
    /// and the payload returned, to be requeued.
    pub(crate) fn give_back(mut self) -> Vec<u8> {
        if let Some(owner) = self.owner.take() {
            owner.release_slot();
        }
        std::mem::take(&mut self.raw)
    }

    pub(crate) fn mark_started(&mut self) {
        self.started = true;
        self.started_at = job::now();
        self.time_limit = self
            .job
            .timeout_secs()
            .map(|secs| Arc::new(TimeLimit::starting_now(secs, self.job.class(), self.failures)));
    }

    /// The same delivery with its fields moved out of `self`, which is
    /// left inert (its `Drop` does nothing).
    fn take_out(&mut self) -> Delivery {
        Delivery {
            token: self.token,
            queue: std::mem::take(&mut self.queue),
            raw: std::mem::take(&mut self.raw),
            job: std::mem::replace(&mut self.job, Job::placeholder()),
            started_at: self.started_at,
            started: self.started,
            detached: self.detached,
            returned: self.returned.take(),
            fetched_at: self.fetched_at,
            leases: std::mem::take(&mut self.leases),
            time_limit: self.time_limit.take(),
            failures: self.failures,
            owner: None,
        }
    }
}

impl std::fmt::Debug for Delivery {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Delivery")
            .field("job", &self.job)
            .field("queue", &self.queue)
            .field("started", &self.started)
            .field("settled", &self.owner.is_none())
            .finish()
    }
}

impl Drop for Delivery {
    fn drop(&mut self) {
        self.leases.clear();
        if let Some(owner) = self.owner.take() {
            let delivery = self.take_out();
            owner.abandon(delivery, "dropped without being completed or failed");
        }
    }
}

/// What the completion task settles.
pub(crate) enum Completion {
    Done {
        delivery: Delivery,
        outcome: Outcome,
        finished_at: f64,
    },
    /// Over a limiter it declared: back to the schedule (or, past
    /// `over_limit_max` times, failed).
    OverLimit {
        delivery: Delivery,
        limiter: String,
        retry_in: Option<std::time::Duration>,
    },
    /// Not started by its `expires_at`: dropped, or filed in dead.
    Expired(Delivery),
    /// Cancelled: dropped unrun, or stopped while it ran.
    Cancelled(Delivery),
    /// Not a runnable job: bury its bytes in `dead`.
    Bury {
        queue: String,
        raw: Vec<u8>,
        reason: String,
        /// Its in-progress field (reliable fetch).
        token: Option<u64>,
    },
    /// A job taken here that will not run here after all: back on its queue.
    Requeue {
        token: u64,
        queue: String,
        raw: Vec<u8>,
        job: Job,
    },
    /// A slot started a periodic job: shorten the run lock it owns (key,
    /// owner jid) to its running TTL.
    RunLockStarted { lock: String, jid: String },
    /// A job with `result_ttl` began: its `running` record (key, JSON, TTL),
    /// written before anything else of the batch (its outcome comes later).
    ResultStarted { key: String, record: String, ttl: u64 },
    /// Reply once everything sent before this has been written to Redis.
    Flush(tokio::sync::oneshot::Sender<()>),
}
