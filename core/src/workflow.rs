//! Workflows: steps that run one after another (a chain), jobs that run
//! side by side (a group), and a group followed by a step that takes all
//! their results (a chord), as in Celery's canvas, across languages: each
//! step is a job by handler name, run by whichever worker has it.
//!
//! A workflow is made of batches (see [`crate::batch`]), so it inherits
//! their exactly-once settle: each step is a batch, closed from the start
//! with its jobs counted in, whose success callbacks are the next step's
//! jobs. The script that acknowledges a step's last job hands the next
//! step over to the outbox in the same atomic step, once, whatever dies
//! when; a next step that takes the results gets them spliced in by that
//! script (as the jobs returned them, kept in the step batch's results).
//! Every step batch is a child of one batch for the whole workflow, whose
//! id is the workflow's: its status counts steps, and its callbacks (see
//! [`Workflow::in_batch`]) fire when every step has succeeded, or when one
//! died.
//!
//! Pushing one: every batch is written first (the later steps' jobs inside
//! them), then the first step's jobs. A crash in between leaves batches
//! that nothing runs, which expire; no step runs twice, none is lost once
//! the first step is pushed. A step that dies stops the workflow there:
//! the steps after it are never pushed (the workflow's `death` callbacks
//! run).

use crate::batch::{Batch, Splice};
use crate::client::Client;
use crate::error::{Error, Result};
use crate::job::{new_jid, now, Job};
use serde_json::{json, Value};

/// One step of a [`Workflow`]: a job, or a group of jobs run side by
/// side.
#[derive(Clone, Debug)]
pub struct Step {
    jobs: Vec<Job>,
    group: bool,
    takes_result: bool,
}

impl Step {
    /// One job.
    pub fn job(job: Job) -> Self {
        Step {
            jobs: vec![job],
            group: false,
            takes_result: false,
        }
    }

    /// Jobs that run side by side; the step is done when each has
    /// succeeded.
    pub fn group<I: IntoIterator<Item = Job>>(jobs: I) -> Self {
        Step {
            jobs: jobs.into_iter().collect(),
            group: true,
            takes_result: false,
        }
    }

    /// Its jobs get the previous step's result before their args: what
    /// the job returned, or after a group the list of what each returned,
    /// in the group's order.
    pub fn taking_result(mut self) -> Self {
        self.takes_result = true;
        self
    }
}

/// Steps to push as one workflow (see the module's docs), with
/// [`Client::push_workflow`].
#[derive(Clone, Debug)]
pub struct Workflow {
    /// The batch of the whole workflow: its description, callbacks,
    /// parent and lifetimes (which its steps' batches share).
    whole: Batch,
    steps: Vec<Step>,
}

/// A pushed workflow: its id (its batch's) and each step's.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PushedWorkflow {
    /// The workflow's batch ([`crate::Api::batch`] gives its status).
    pub id: String,
    /// Each step, in order.
    pub steps: Vec<PushedStep>,
}

/// A step of a pushed workflow.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PushedStep {
    /// Its batch.
    pub bid: String,
    /// Its jobs' ids, in order.
    pub jids: Vec<String>,
}

impl PushedWorkflow {
    /// As hosts get it: `{id, steps: [{bid, jids}]}`.
    pub fn to_json(&self) -> Value {
        let steps: Vec<Value> = self
            .steps
            .iter()
            .map(|step| json!({"bid": step.bid, "jids": step.jids}))
            .collect();
        json!({"id": self.id, "steps": steps})
    }
}

/// A workflow's description when none is given; [`Workflow::chain`],
/// [`Workflow::group`] and [`Workflow::chord`] are described by their
/// shape.
pub(crate) const DEFAULT_DESCRIPTION: &str = "workflow";
pub(crate) const CHAIN_DESCRIPTION: &str = "chain";
pub(crate) const CHORD_DESCRIPTION: &str = "chord";

impl Default for Workflow {
    /// An empty workflow described as `workflow`.
    fn default() -> Self {
        Workflow::new(DEFAULT_DESCRIPTION)
    }
}

impl Workflow {
    /// An empty workflow described as `description` (its batches are
    /// described by it).
    pub fn new(description: impl Into<String>) -> Self {
        Workflow::in_batch(Batch::new(description))
    }

    /// An empty workflow whose own batch is `batch`: its description, its
    /// callbacks ([`Batch::on`], with the workflow's status first:
    /// `success` once its last step succeeded, `death` when a step died and
    /// the workflow stopped), its parent and its lifetimes, which its
    /// steps' batches share.
    pub fn in_batch(batch: Batch) -> Self {
        Workflow {
            whole: batch,
            steps: Vec::new(),
        }
    }

    /// `jobs` one after another, each once the one before succeeded.
    pub fn chain<I: IntoIterator<Item = Job>>(jobs: I) -> Self {
        jobs.into_iter()
            .fold(Workflow::new(CHAIN_DESCRIPTION), |workflow, job| {
                workflow.then(Step::job(job))
            })
    }

    /// `jobs` side by side.
    pub fn group<I: IntoIterator<Item = Job>>(jobs: I) -> Self {
        Workflow::new("group").then(Step::group(jobs))
    }

    /// `jobs` side by side, then `callback` with the list of their results.
    pub fn chord<I: IntoIterator<Item = Job>>(jobs: I, callback: Job) -> Self {
        Workflow::new(CHORD_DESCRIPTION)
            .then(Step::group(jobs))
            .then(Step::job(callback).taking_result())
    }

    /// Adds `step` after the others.
    pub fn then(mut self, step: Step) -> Self {
        self.steps.push(step);
        self
    }

    /// Its own batch is `batch` (see [`Workflow::in_batch`]).
    pub fn batch(mut self, batch: Batch) -> Self {
        self.whole = batch;
        self
    }

    /// Each step's jobs, checked, with their ids and batch fields set.
    fn prepared(&mut self, bids: &[String], at: f64) -> Result<()> {
        if self.steps.is_empty() {
            return Err(Error::invalid_argument(
                "steps",
                "[]",
                "a workflow needs at least one step",
            ));
        }
        let takes: Vec<bool> = self.steps.iter().map(|step| step.takes_result).collect();
        for (index, step) in self.steps.iter_mut().enumerate() {
            let field = format!("steps[{index}]");
            if step.jobs.is_empty() {
                return Err(Error::invalid_argument(field, "[]", "a group needs at least one job"));
            }
            if index == 0 && step.takes_result {
                return Err(Error::invalid_argument(
                    format!("{field}.takes_result"),
                    "true",
                    "the first step has no step before it to take a result from",
                ));
            }
            for (position, job) in step.jobs.iter_mut().enumerate() {
                let field = if step.group {
                    format!("{field}[{position}]")
                } else {
                    field.clone()
                };
                if job.batch_id().is_some() {
                    return Err(Error::invalid_job(
                        format!("{field}.bid"),
                        "a workflow's jobs join its steps' batches, no other",
                    ));
                }
                job.prepare_for_push(at).map_err(|e| e.within(&field))?;
                if job.unique_for_secs().is_some() {
                    return Err(Error::invalid_job(
                        field,
                        "a workflow's jobs cannot be unique (unique_for)",
                    ));
                }
                if index > 0 && (job.run_at().is_some() || job.expiry().is_some()) {
                    return Err(Error::invalid_job(
                        field,
                        "a step after the first is pushed when its turn comes: no at, delay or expiry",
                    ));
                }
                job.set("bid", Value::from(bids[index].as_str()));
                if takes.get(index + 1) == Some(&true) {
                    job.set("batch_result", Value::Bool(true));
                }
            }
        }
        Ok(())
    }
}

impl Client {
    /// Pushes `workflow`: its first step now, each next step once the one
    /// before has succeeded (see [`Workflow`]).
    pub async fn push_workflow(&self, mut workflow: Workflow) -> Result<PushedWorkflow> {
        let at = now();
        let id = new_jid();
        let bids: Vec<String> = workflow.steps.iter().map(|_| new_jid()).collect();
        workflow.prepared(&bids, at)?;
        let count = workflow.steps.len();
        let mut whole = workflow.whole.clone();
        whole.bid = Some(id.clone());
        whole.kind = crate::batch::BatchKind::Workflow;
        whole.steps = bids.clone();
        // Each step's batch, with the next step as its success callback.
        let mut batches = Vec::with_capacity(count);
        for (index, step) in workflow.steps.iter().enumerate() {
            let mut batch = Batch::new(format!("{}: step {} of {count}", whole.description, index + 1))
                .ttl(whole.ttl)
                .keep_for(whole.keep_for)
                .parent(id.as_str());
            batch.bid = Some(bids[index].clone());
            batch.kind = crate::batch::BatchKind::Step;
            batch.units = step.jobs.len();
            if let Some(next) = workflow.steps.get(index + 1) {
                let splice = match (next.takes_result, step.group) {
                    (false, _) => Splice::Nothing,
                    (true, false) => Splice::Result,
                    (true, true) => Splice::Results,
                };
                if next.takes_result {
                    batch.members = step.jobs.iter().map(|job| job.jid_str().to_string()).collect();
                }
                for job in &next.jobs {
                    batch = batch.then(job.clone(), splice);
                }
            }
            batches.push(batch);
        }
        // The workflow's batch first: each step's counts itself in there.
        self.open_batch(whole).await?;
        for batch in batches {
            self.open_batch(batch).await?;
        }
        let steps = workflow
            .steps
            .iter()
            .zip(bids)
            .map(|(step, bid)| PushedStep {
                bid,
                jids: step.jobs.iter().map(|job| job.jid_str().to_string()).collect(),
            })
            .collect();
        let first = std::mem::take(&mut workflow.steps[0].jobs);
        self.push_counting(first, true).await?;
        Ok(PushedWorkflow { id, steps })
    }
}

/// Pushes a workflow as a host's `push_workflow` describes it: `steps` a
/// list whose items are a job's fields (`{class, args, queue, ...}`) or
/// `{group: [job fields...]}`, either with `takes_result: true`;
/// `callbacks` as a batch's (see [`crate::batch`]). Returns
/// `{id, steps: [{bid, jids}]}`. No `description`: [`DEFAULT_DESCRIPTION`].
pub(crate) async fn push_from_host(
    client: &Client,
    steps: Option<&Value>,
    description: Option<&str>,
    callbacks: Option<&Value>,
    parent: Option<&str>,
) -> Result<Value> {
    let Some(Value::Array(listed)) = steps else {
        let shown = steps.map_or_else(|| "nothing".to_string(), Value::to_string);
        return Err(Error::invalid_argument("steps", shown, "must be a list of steps"));
    };
    let mut whole = Batch::new(description.unwrap_or(DEFAULT_DESCRIPTION));
    if let Some(parent) = parent {
        whole = whole.parent(parent);
    }
    for (event, job) in crate::batch::callbacks_from_host(callbacks)? {
        whole = whole.on(event, job);
    }
    let mut workflow = Workflow::in_batch(whole);
    for (index, item) in listed.iter().enumerate() {
        workflow = workflow.then(step_from_host(item, &format!("steps[{index}]"))?);
    }
    Ok(client.push_workflow(workflow).await?.to_json())
}

pub(crate) const TAKES_RESULT: &str = "takes_result";
pub(crate) const GROUP: &str = "group";

/// A member of a group as a host gives it (`field` names it): a job's
/// fields, without `takes_result` (the group's is its members'), not a group.
pub(crate) fn group_member(member: &Value, field: &str) -> Result<serde_json::Map<String, Value>> {
    let Value::Object(fields) = member else {
        return Err(Error::invalid_argument(field, member, "must be a step of one job"));
    };
    if fields.contains_key(GROUP) {
        return Err(Error::invalid_argument(
            field,
            "a group",
            "a group's members are jobs: a group inside a group runs as one, so list its jobs",
        ));
    }
    if let Some(takes) = fields.get(TAKES_RESULT).filter(|takes| *takes != &Value::Bool(false)) {
        return Err(Error::invalid_argument(
            format!("{field}.{TAKES_RESULT}"),
            takes,
            "a group's jobs take the step before's result when the group does: give takes_result to the group",
        ));
    }
    let mut fields = fields.clone();
    fields.remove(TAKES_RESULT);
    Ok(fields)
}

fn step_from_host(item: &Value, field: &str) -> Result<Step> {
    let Value::Object(fields) = item else {
        return Err(Error::invalid_argument(
            field,
            item,
            "must be a map: a job's fields {class, args, ...} or {group: [...]}",
        ));
    };
    let mut fields = fields.clone();
    let takes_result = match fields.remove(TAKES_RESULT) {
        None | Some(Value::Null) | Some(Value::Bool(false)) => false,
        Some(Value::Bool(true)) => true,
        Some(other) => {
            return Err(Error::invalid_argument(
                format!("{field}.takes_result"),
                other,
                "must be true or false",
            ))
        }
    };
    let step = match fields.remove(GROUP) {
        None => Step::job(Job::from_value(Value::Object(fields)).map_err(|e| e.within(field))?),
        Some(Value::Array(members)) if fields.is_empty() => {
            let mut jobs = Vec::with_capacity(members.len());
            for (position, member) in members.iter().enumerate() {
                let within = format!("{field}.{GROUP}[{position}]");
                let member = Value::Object(group_member(member, &within)?);
                jobs.push(Job::from_value(member).map_err(|e| e.within(&within))?);
            }
            Step::group(jobs)
        }
        Some(other) => {
            return Err(Error::invalid_argument(
                format!("{field}.group"),
                other,
                "must be a list of jobs, alone in its step (with takes_result)",
            ))
        }
    };
    Ok(if takes_result { step.taking_result() } else { step })
}
