//! Batches: jobs pushed as one unit (from any language, to any queue),
//! with callbacks pushed exactly once when the unit is done.
//!
//! A batch is a hash in Redis (scripts/batch/ lists its fields). Its
//! jobs carry its id as `bid`; a push that carries one counts the jobs into
//! the batch in the same script (`push.lua`), and the script that settles
//! a job (`ack.lua`, `fail.lua`, `kill.lua`, `drop_from_set.lua`) counts its
//! outcome there in the same atomic step. So a job is counted once however
//! often its process dies, and when the counts call for a callback, that
//! same step writes it to the outbox under a fixed hand-over id, from
//! which `outbox.rs` pushes it once (`push_once.lua`; recovery finishes a
//! push a crash interrupted).
//!
//! Events, as in Sidekiq Pro: `complete` once every job has run at least
//! once (failures included), `success` once every job has succeeded,
//! `death` when a job of the batch first dies. A callback is a job of the
//! user's (class, queue, args): it runs with the batch's status (JSON) as
//! its first argument, then the args it was given.
//!
//! A batch is open while its creator adds jobs, so that it cannot complete
//! between two pushes; [`OpenBatch::close`] lets it. A running job of the
//! batch may add more (it is itself still pending), through
//! [`Client::batch`]. A child batch (see [`Batch::parent`]) is one unit of
//! its parent: it completes there when it completes, succeeds when it
//! succeeds, dies when it dies.

use crate::client::Client;
use crate::error::{Error, Result};
use crate::job::{new_jid, now, Job};
use crate::scripts::SCRIPTS;
use serde_json::Value;

/// How long a batch's keys live after it was opened, and again after it
/// was closed, unless it succeeds first (30 days, Sidekiq Pro's figure).
pub const DEFAULT_BATCH_TTL_SECS: u64 = 30 * 86_400;
/// How long a batch's keys stay once it has succeeded, for its status to
/// be read (a day).
pub const DEFAULT_KEEP_FOR_SECS: u64 = 86_400;
/// How deep batches nest (a top batch is at depth 0).
pub const MAX_BATCH_DEPTH: u32 = 16;

/// What the argument a callback's status goes in holds until it is
/// spliced in (a string no user argument is).
const STATUS_PLACEHOLDER: &str = "\u{1}cogworker:batch-status\u{1}";

/// When a batch's callbacks run.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum BatchEvent {
    /// Every job has run at least once; some may have failed (and be
    /// retrying, or dead).
    Complete,
    /// Every job has succeeded (some perhaps after retries).
    Success,
    /// A job of the batch died (out of retries): once per batch.
    Death,
}

impl BatchEvent {
    /// Every event, in the order they usually fire.
    pub const ALL: [BatchEvent; 3] = [BatchEvent::Complete, BatchEvent::Success, BatchEvent::Death];

    /// Its name: `complete`, `success` or `death`.
    pub fn as_str(self) -> &'static str {
        match self {
            BatchEvent::Complete => "complete",
            BatchEvent::Success => "success",
            BatchEvent::Death => "death",
        }
    }

    /// The event named `name`.
    pub fn parse(name: &str) -> Result<Self> {
        BatchEvent::ALL
            .into_iter()
            .find(|event| event.as_str() == name)
            .ok_or_else(|| Error::invalid_argument("event", name, "must be complete, success or death"))
    }
}

/// What a callback gets before its own args (batch/ splices it in when
/// its event fires).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Splice {
    /// The batch's status (a callback the user set).
    Status,
    /// Nothing: its args as given (a workflow step after the last).
    Nothing,
    /// The one member's result (a workflow step after a job).
    Result,
    /// The members' results, as a list in their order (after a group).
    Results,
}

impl Splice {
    /// Its name in a callback's template (batch/); none for the status.
    fn as_str(self) -> Option<&'static str> {
        match self {
            Splice::Status => None,
            Splice::Nothing => Some("none"),
            Splice::Result => Some("result"),
            Splice::Results => Some("results"),
        }
    }
}

/// A batch to open: its description, callbacks and lifetimes. Open it
/// with [`Client::open_batch`].
#[derive(Clone, Debug)]
pub struct Batch {
    pub(crate) description: String,
    callbacks: Vec<(BatchEvent, Job, Splice)>,
    parent: Option<String>,
    pub(crate) ttl: u64,
    pub(crate) keep_for: u64,
    /// A workflow step's: its id, given.
    pub(crate) bid: Option<String>,
    /// A workflow step's: the jobs it will hand over, counted in at once,
    /// and the batch closed from the start.
    pub(crate) units: usize,
    /// A workflow step's: the jids whose results its callbacks take.
    pub(crate) members: Vec<String>,
    /// What it is: a batch, a workflow or a workflow's step (stored as
    /// `kind`, so that the dashboard lists steps on their workflow's page).
    pub(crate) kind: BatchKind,
    /// A workflow's: its steps' batch ids, in order (stored as `steps`).
    pub(crate) steps: Vec<String>,
}

/// What a batch is, as its hash's `kind` says (absent: a batch).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum BatchKind {
    /// A batch its creator opened.
    #[default]
    Batch,
    /// The batch of a whole workflow: its units are its steps.
    Workflow,
    /// The batch of one step of a workflow.
    Step,
}

impl BatchKind {
    /// As stored (`""` for a batch, whose hash has no `kind`).
    pub(crate) fn stored(self) -> &'static str {
        match self {
            BatchKind::Batch => "",
            BatchKind::Workflow => "workflow",
            BatchKind::Step => "step",
        }
    }

    /// From a hash's `kind` field.
    pub(crate) fn from_stored(kind: Option<&str>) -> Self {
        match kind {
            Some("workflow") => BatchKind::Workflow,
            Some("step") => BatchKind::Step,
            _ => BatchKind::Batch,
        }
    }
}

impl Batch {
    /// A batch described as `description` (shown on the dashboard and in
    /// its status), with no callbacks.
    pub fn new(description: impl Into<String>) -> Self {
        Batch {
            description: description.into(),
            callbacks: Vec::new(),
            parent: None,
            ttl: DEFAULT_BATCH_TTL_SECS,
            keep_for: DEFAULT_KEEP_FOR_SECS,
            bid: None,
            units: 0,
            members: Vec::new(),
            kind: BatchKind::Batch,
            steps: Vec::new(),
        }
    }

    /// Pushes `callback` (its class, queue, args and options) when
    /// `event` happens, with the batch's status put before its args. May
    /// be called several times, for several callbacks.
    pub fn on(mut self, event: BatchEvent, mut callback: Job) -> Self {
        callback.remove("bid");
        self.callbacks.push((event, callback, Splice::Status));
        self
    }

    /// A workflow step's callback: `job` (which may carry its own step's
    /// `bid`) pushed on success with `splice` before its args.
    pub(crate) fn then(mut self, job: Job, splice: Splice) -> Self {
        self.callbacks.push((BatchEvent::Success, job, splice));
        self
    }

    /// Makes this batch a unit of batch `parent` (which must exist, open
    /// or still pending: from a job of it, say).
    pub fn parent(mut self, parent: impl Into<String>) -> Self {
        self.parent = Some(parent.into());
        self
    }

    /// How long its keys live after it was closed, if it has not
    /// succeeded by then (whole seconds; default 30 days).
    pub fn ttl(mut self, seconds: u64) -> Self {
        self.ttl = seconds;
        self
    }

    /// How long its keys stay once it succeeded (default a day).
    pub fn keep_for(mut self, seconds: u64) -> Self {
        self.keep_for = seconds;
        self
    }

    fn validate(&self) -> Result<()> {
        if let Some(parent) = &self.parent {
            if !crate::job::valid_jid(parent) {
                return Err(Error::invalid_argument("parent", parent, crate::job::JID_RULE));
            }
        }
        for (name, seconds) in [("ttl", self.ttl), ("keep_for", self.keep_for)] {
            if seconds == 0 {
                return Err(Error::invalid_argument(name, seconds, "must be at least one second"));
            }
            // Past a year is a mistake (milliseconds, a sentinel); Redis
            // once refused it half-way through the open, a batch's hash
            // written without its TTL.
            if seconds as f64 > crate::job::LONGEST_SECS {
                return Err(Error::invalid_argument(
                    name,
                    seconds,
                    "must be at most a year (31536000 seconds)",
                ));
            }
        }
        Ok(())
    }

    /// Each event's callbacks as `scripts/batch/` stores them: a JSON list of
    /// `[queue, payload before the status, payload after it, jid, what
    /// goes between]` (the last left out for the status).
    fn callback_templates(&self, at: f64) -> Result<CallbackTemplates> {
        let quoted = serde_json::to_string(STATUS_PLACEHOLDER).expect("a string serializes");
        let mut by_event: std::collections::BTreeMap<BatchEvent, Vec<Value>> = Default::default();
        let mut waiting = Vec::new();
        for (index, (event, callback, splice)) in self.callbacks.iter().enumerate() {
            let field = format!("callbacks[{index}]");
            let mut args = Vec::new();
            if *splice != Splice::Nothing {
                args.push(Value::from(STATUS_PLACEHOLDER));
            }
            args.extend(callback.args_slice().iter().cloned());
            // A jid of its own unless given: the hand-over id is made of it.
            let mut job = callback.clone().field("args", Value::Array(args));
            job.prepare_for_push(at).map_err(|e| e.within(&field))?;
            if job.run_at().is_some() || job.unique_for_secs().is_some() {
                return Err(Error::invalid_job(
                    field,
                    "a callback is pushed when its event happens: no at, delay or unique_for",
                ));
            }
            // Stamped when it is handed over (batch/), not now.
            job.remove("enqueued_at");
            if let Some(ttl) = job.result_ttl_secs() {
                let (record, ttl) = crate::results::waiting(&job, at, ttl, self.ttl);
                waiting.push(serde_json::json!([job.jid_str(), record, ttl.to_string()]));
            }
            let payload = job.to_json();
            let (head, tail) = match splice {
                Splice::Nothing => (payload.as_str(), ""),
                _ => payload
                    .split_once(&quoted)
                    .ok_or_else(|| Error::invalid_job(&field, "its args could not take the status"))?,
            };
            let mut template = serde_json::json!([job.queue_name(), head, tail, job.jid_str()]);
            if let Some(what) = splice.as_str() {
                template.as_array_mut().expect("an array").push(Value::from(what));
            }
            by_event.entry(*event).or_default().push(template);
        }
        Ok(CallbackTemplates {
            by_event: by_event
                .into_iter()
                .map(|(event, list)| (event, Value::Array(list).to_string()))
                .collect(),
            waiting: match waiting.is_empty() {
                true => String::new(),
                false => Value::Array(waiting).to_string(),
            },
        })
    }
}

/// A batch's callbacks as `batch_open.lua` stores them.
struct CallbackTemplates {
    /// Per event, the JSON list of its callbacks' templates.
    by_event: Vec<(BatchEvent, String)>,
    /// `[[jid, record, ttl], ...]`: the `waiting` result record of each
    /// callback pushed with `result_ttl` ("" for none).
    waiting: String,
}

/// A batch jobs can be pushed into: one just opened (close it when every
/// job is pushed), or one a running job of it adds to.
#[derive(Clone)]
pub struct OpenBatch {
    client: Client,
    bid: String,
}

impl std::fmt::Debug for OpenBatch {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OpenBatch").field("bid", &self.bid).finish()
    }
}

impl OpenBatch {
    /// Its id (each job of it carries it as `bid`).
    pub fn bid(&self) -> &str {
        &self.bid
    }

    /// Pushes `job` into the batch; its jid, as [`Client::push`].
    pub async fn push(&self, job: Job) -> Result<Option<String>> {
        let mut jids = self.push_bulk(vec![job]).await?;
        Ok(jids.pop().expect("one job pushed"))
    }

    /// Pushes `jobs` into the batch in one round trip, as
    /// [`Client::push_bulk`].
    pub async fn push_bulk(&self, jobs: Vec<Job>) -> Result<Vec<Option<String>>> {
        let jobs = jobs
            .into_iter()
            .map(|job| job.field("bid", Value::from(self.bid.as_str())))
            .collect();
        self.client.push_bulk(jobs).await
    }

    /// Opens a child batch of this one (see [`Batch::parent`]).
    pub async fn open_child(&self, batch: Batch) -> Result<OpenBatch> {
        self.client.open_batch(batch.parent(self.bid.as_str())).await
    }

    /// Says every job is pushed: from now on the batch completes when its
    /// jobs have run (at once, if they all have).
    pub async fn close(&self) -> Result<()> {
        let keys = self.client.keys();
        let handed: Vec<String> = SCRIPTS
            .batch_close
            .key(keys.outbox())
            .arg(keys.batch_prefix())
            .arg(&self.bid)
            .arg(now())
            .invoke_async(&mut self.client.redis().conn())
            .await
            .map_err(Error::from_batch_script)?;
        // Should this fail, recovery pushes them.
        crate::outbox::deliver(self.client.redis(), self.client.keys(), &handed).await?;
        Ok(())
    }
}

impl Client {
    /// Opens `batch`: push its jobs through the [`OpenBatch`], then close
    /// it. Nothing completes it before then.
    pub async fn open_batch(&self, batch: Batch) -> Result<OpenBatch> {
        batch.validate()?;
        let at = now();
        let bid = batch.bid.clone().unwrap_or_else(new_jid);
        let keys = self.keys();
        let mut invocation = SCRIPTS.batch_open.prepare_invoke();
        invocation
            .key(keys.batches())
            .arg(keys.batch_prefix())
            .arg(&bid)
            .arg(at)
            .arg(batch.ttl)
            .arg(batch.keep_for)
            .arg(&batch.description)
            .arg(batch.parent.as_deref().unwrap_or(""))
            .arg(MAX_BATCH_DEPTH)
            // A workflow step: closed from the start, its jobs counted in.
            .arg(batch.units)
            .arg(if batch.bid.is_some() { "0" } else { "1" })
            .arg(if batch.members.is_empty() {
                String::new()
            } else {
                Value::from(batch.members.clone()).to_string()
            });
        let templates = batch.callback_templates(at)?;
        invocation.arg(keys.result("")).arg(&templates.waiting);
        invocation.arg(batch.kind.stored()).arg(if batch.steps.is_empty() {
            String::new()
        } else {
            Value::from(batch.steps.clone()).to_string()
        });
        for (event, callbacks) in templates.by_event {
            invocation.arg(event.as_str()).arg(callbacks);
        }
        let _: i64 = invocation
            .invoke_async(&mut self.redis().conn())
            .await
            .map_err(Error::from_batch_script)?;
        Ok(OpenBatch {
            client: self.clone(),
            bid,
        })
    }

    /// The batch `bid`, to push more jobs into (from a running job of it,
    /// which keeps it from completing meanwhile). Reads nothing: a push
    /// into a batch that does not exist fails.
    pub fn batch(&self, bid: &str) -> OpenBatch {
        OpenBatch {
            client: self.clone(),
            bid: bid.to_string(),
        }
    }
}

/// Opens a batch as a host's `open_batch` describes it: `callbacks` a list
/// of `{event, class, queue, args, ...}` (a job's fields, and the event
/// that pushes it). Returns its id.
pub(crate) async fn open_from_host(
    client: &Client,
    description: &str,
    callbacks: Option<&Value>,
    parent: Option<&str>,
    ttl: u64,
    keep_for: u64,
) -> Result<String> {
    let mut batch = Batch::new(description).ttl(ttl).keep_for(keep_for);
    if let Some(parent) = parent {
        batch = batch.parent(parent);
    }
    for (event, job) in callbacks_from_host(callbacks)? {
        batch = batch.on(event, job);
    }
    Ok(client.open_batch(batch).await?.bid)
}

/// The field of a host's callback that names its event (`host::workflow`
/// writes it, [`callbacks_from_host`] reads it).
pub(crate) const EVENT: &str = "event";

/// A host's list of callbacks, `[{event, class, queue, args, ...}]` (a
/// job's fields, and the event that pushes it); `None`: none.
pub(crate) fn callbacks_from_host(callbacks: Option<&Value>) -> Result<Vec<(BatchEvent, Job)>> {
    let listed = match callbacks {
        None => return Ok(Vec::new()),
        Some(Value::Array(list)) => list,
        Some(other) => return Err(Error::invalid_argument("callbacks", other, "must be a list")),
    };
    let mut parsed = Vec::with_capacity(listed.len());
    for (index, callback) in listed.iter().enumerate() {
        let field = format!("callbacks[{index}]");
        let Value::Object(fields) = callback else {
            return Err(Error::invalid_argument(
                field,
                callback,
                "must be a map: {event, class, queue, args, ...}",
            ));
        };
        let mut fields = fields.clone();
        let named = fields.remove(EVENT).unwrap_or(Value::Null);
        let event = named
            .as_str()
            .and_then(|name| BatchEvent::parse(name).ok())
            .ok_or_else(|| {
                // A name as written, anything else as JSON.
                let shown = named.as_str().map_or_else(|| named.to_string(), str::to_string);
                Error::invalid_argument(format!("{field}.event"), shown, "must be complete, success or death")
            })?;
        let job = Job::from_value(Value::Object(fields)).map_err(|e| e.within(&field))?;
        parsed.push((event, job));
    }
    Ok(parsed)
}
