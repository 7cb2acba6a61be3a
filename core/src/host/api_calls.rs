//! Every ops-API call by name, for the host languages: one row per call
//! ([`CALLS`]: its name, parameters and what it does) and one entry point,
//! [`call`], that takes JSON arguments and returns JSON. The Python and
//! Ruby `Api` classes are generated from this table, so a call added here
//! (and to [`Api`]) is there in both languages.

use crate::api::{Api, JobSet, SetEntry};
use crate::error::{Error, Result};
use futures_util::future::BoxFuture;
use serde_json::{json, Value};

type Handler = for<'a> fn(&'a Api, &'a Args) -> BoxFuture<'a, Result<Value>>;

/// One call of the ops API.
pub struct ApiCall {
    /// Its name (a method name in Python and Ruby).
    pub name: &'static str,
    /// Its parameters, in order; `name=default` for an optional one.
    pub params: &'static [&'static str],
    /// What it does and returns.
    pub help: &'static str,
    run: Handler,
}

fn to_json<T: serde::Serialize>(value: T) -> Result<Value> {
    Ok(serde_json::to_value(value).expect("API results serialize"))
}

macro_rules! call {
    ($name:literal, [$($param:literal),*], $help:literal, |$api:ident, $args:ident| $body:expr) => {
        ApiCall {
            name: $name,
            params: &[$($param),*],
            help: $help,
            run: |$api, $args| {
                Box::pin(async move {
                    let value = $body;
                    to_json(value)
                })
            },
        }
    };
}

/// Every call, in the order the docs list them.
pub const CALLS: &[ApiCall] = &[
    call!(
        "queues",
        [],
        "every known queue: [{name, size, latency, paused}]",
        |api, _a| { api.queues().await? }
    ),
    call!(
        "queue",
        ["name"],
        "one queue: {name, size, latency, paused}",
        |api, a| { api.queue(a.text(0)?).await? }
    ),
    call!(
        "queue_jobs",
        ["name", "start=0", "count=50"],
        "jobs waiting on a queue, newest first",
        |api, a| {
            let raw = api.queue_jobs(a.text(0)?, a.int(1, 0)?, a.int(2, 50)?).await?;
            raw.iter()
                .map(|r| serde_json::from_slice(r).unwrap_or(Value::Null))
                .collect::<Vec<Value>>()
        }
    ),
    call!(
        "groups",
        ["name", "start=0", "count=50"],
        "a grouped queue's groups that have jobs or are paused, in turn order: [{name, size, turns, weight, paused}]",
        |api, a| { api.groups(a.text(0)?, a.int(1, 0)?, a.int(2, 50)?).await? }
    ),
    call!(
        "pause_group",
        ["name", "group"],
        "stop workers taking one group's jobs from a queue (true: it was not paused)",
        |api, a| { api.pause_group(a.text(0)?, a.text(1)?).await? }
    ),
    call!(
        "resume_group",
        ["name", "group"],
        "let workers take a paused group's jobs again, its turn next (true: it was paused)",
        |api, a| { api.resume_group(a.text(0)?, a.text(1)?).await? }
    ),
    call!(
        "set_group_weight",
        ["name", "group", "weight=null"],
        "give a group that many turns for another's one (null or 1: the default)",
        |api, a| {
            let weight = a.optional(2, Value::as_f64, "must be a number")?;
            api.set_group_weight(a.text(0)?, a.text(1)?, weight).await?
        }
    ),
    call!(
        "set_group_cap",
        ["name", "group=null", "cap=null"],
        "let at most cap jobs of a group (null: every group's default) run at once, fleet-wide (cap null: no cap)",
        |api, a| {
            let cap = a.optional(2, Value::as_u64, "must be a whole number from 1 to 1000000")?;
            api.set_group_cap(a.text(0)?, a.optional_text(1)?, cap).await?
        }
    ),
    call!(
        "set_group_rate",
        ["name", "group=null", "rate=null", "period=1", "kind=\"window\""],
        "let at most rate jobs of a group (null: every group's default) start per period seconds, fleet-wide (rate null: none set), counted by window, bucket or leaky",
        |api, a| {
            let limit = a.optional(2, Value::as_u64, "must be a whole number from 1 to 1000000")?;
            let period = a.optional(3, Value::as_f64, "must be a number of seconds")?.unwrap_or(1.0);
            let kind = a.optional_text(4)?.unwrap_or("window");
            api.set_group_rate_counted(a.text(0)?, a.optional_text(1)?, limit.map(|limit| (limit, period)), kind)
                .await?
        }
    ),
    call!(
        "flow_keys",
        ["count=100"],
        "the debounced, throttled and replacing keys with state, latest first: [{mode, queue, class, key, jid, began, due, waiting, expires_at}]",
        |api, a| {
            let count = usize::try_from(a.int(0, 100)?).unwrap_or(0);
            api.flow_keys(count).await?
        }
    ),
    call!(
        "pause_queue",
        ["name"],
        "stop every worker taking from a queue",
        |api, a| { api.pause_queue(a.text(0)?).await? }
    ),
    call!(
        "unpause_queue",
        ["name"],
        "let workers take from a queue again",
        |api, a| { api.unpause_queue(a.text(0)?).await? }
    ),
    call!(
        "clear_queue",
        ["name"],
        "delete every job on a queue; returns how many",
        |api, a| { api.clear_queue(a.text(0)?).await? }
    ),
    call!("set_size", ["set"], "entries in scheduled, retry or dead", |api, a| {
        api.set_size(a.set(0)?).await?
    }),
    call!(
        "entries",
        ["set", "start=0", "count=50"],
        "a page of a set, latest first: [{score, payload, job}]",
        |api, a| { api.set_page(a.set(0)?, a.int(1, 0)?, a.int(2, 50)?).await? }
    ),
    call!(
        "find",
        ["set", "jid"],
        "the entry of a set with this jid, or null",
        |api, a| { api.find_in_set(a.set(0)?, a.text(1)?).await? }
    ),
    call!(
        "locate",
        ["jid"],
        "the set a job waits in and its entry: {set, score, payload, job}, or null",
        |api, a| {
            let found = api.locate(a.text(0)?).await?;
            found.map(|(set, entry)| {
                let mut located = serde_json::to_value(entry).expect("entries serialize");
                located["set"] = json!(set);
                located
            })
        }
    ),
    call!(
        "search",
        ["set", "text", "limit=50"],
        "entries whose class contains text",
        |api, a| {
            let limit = usize::try_from(a.int(2, 50)?).unwrap_or(0);
            api.search_set(a.set(0)?, a.text(1)?, limit).await?
        }
    ),
    call!(
        "retry_now",
        ["set", "entry"],
        "move an entry onto its queue now; false if it was gone",
        |api, a| { api.retry_now(a.set(0)?, &a.entry(1)?).await? }
    ),
    call!(
        "retry_all",
        ["set"],
        "move every entry of a set onto its queue; returns how many",
        |api, a| { api.retry_all(a.set(0)?).await? }
    ),
    call!(
        "delete",
        ["set", "entry"],
        "delete an entry; false if it was gone",
        |api, a| { api.delete_from_set(a.set(0)?, &a.entry(1)?).await? }
    ),
    call!(
        "kill",
        ["set", "entry"],
        "move an entry of scheduled or retry to dead",
        |api, a| { api.kill(a.set(0)?, &a.entry(1)?).await? }
    ),
    call!(
        "clear_set",
        ["set"],
        "delete every entry of a set; returns how many",
        |api, a| { api.clear_set(a.set(0)?).await? }
    ),
    call!(
        "processes",
        [],
        "live worker processes: [{identity, info, busy, quiet, beat}]",
        |api, _a| { api.processes().await? }
    ),
    call!(
        "busy",
        [],
        "the jobs running now: [{identity, queue, run_at, job}]",
        |api, _a| { api.busy().await? }
    ),
    call!(
        "quiet_process",
        ["identity"],
        "tell a process to stop taking jobs",
        |api, a| { api.quiet_process(a.text(0)?).await? }
    ),
    call!("stop_process", ["identity"], "tell a process to shut down", |api, a| {
        api.stop_process(a.text(0)?).await?
    }),
    call!(
        "stats",
        ["day=null"],
        "{processed, failed, expired, cancelled}: totals, or for one UTC day yyyy-mm-dd",
        |api, a| { api.stats_for(a.optional_text(0)?).await? }
    ),
    call!(
        "result",
        ["jid"],
        "a job's kept outcome (jobs pushed with result_ttl): {status, value | error_class, error_message, ...} or null",
        |api, a| { api.result(a.text(0)?).await? }
    ),
    call!(
        "wait_result",
        ["jid", "timeout=30"],
        "the outcome once final (succeeded, failed, dead), waiting up to timeout seconds; as it stands then otherwise",
        |api, a| { api.wait_result(a.text(0)?, a.float(1, 30.0)?).await? }
    ),
    call!(
        "status",
        ["jid"],
        "queued, scheduled, running, retrying, dead, succeeded, failed, expired, cancelled or unknown (jobs pushed with result_ttl)",
        |api, a| { api.status(a.text(0)?).await? }
    ),
    call!(
        "progress",
        ["jid"],
        "a job's last progress report: {jid, percent, message, data, at} or null (docs/long-jobs.md)",
        |api, a| { api.progress(a.text(0)?).await? }
    ),
    call!(
        "cancel",
        ["jid"],
        "cancel a job; says where it was: scheduled, retrying, running, queued or unknown",
        |api, a| { api.cancel(a.text(0)?).await? }
    ),
    call!(
        "attempts",
        ["jid"],
        "a job's failed attempts, oldest first",
        |api, a| { parsed(api.attempts(a.text(0)?).await?) }
    ),
    call!("history", ["count=50"], "recent executions, newest first", |api, a| {
        parsed(api.history(a.int(0, 50)?).await?)
    }),
    call!(
        "unique_locks",
        ["limit=1000"],
        "held unique-job locks: [{digest, jid, ttl}]",
        |api, a| {
            let limit = usize::try_from(a.int(0, 1000)?).unwrap_or(0);
            let locks = api.unique_locks(limit).await?;
            locks
                .into_iter()
                .map(|l| json!({"digest": l.name, "jid": l.owner, "ttl": l.ttl}))
                .collect::<Vec<_>>()
        }
    ),
    call!(
        "clear_unique_lock",
        ["digest"],
        "remove a unique lock; true if there was one",
        |api, a| { api.clear_unique_lock(a.text(0)?).await? }
    ),
    call!(
        "periodic",
        [],
        "periodic entries of the live processes, with last_slot and running",
        |api, _a| { api.periodic().await? }
    ),
    call!(
        "limiters",
        [],
        "rate limiters: [{name, kind, limit, interval, in_use, refused}]",
        |api, _a| { api.limiters().await? }
    ),
    call!(
        "open_batch",
        ["description", "callbacks=[]", "parent=null", "ttl=2592000", "keep_for=86400"],
        "open a batch; returns its id. callbacks: [{event: complete|success|death, class, queue, args, ...}], \
         each pushed once, with the batch's status before its args. Push jobs with the option bid, then close_batch",
        |api, a| { crate::batch::open_from_host(api.client(), a.text(0)?, a.given(1), a.optional_text(2)?, a.seconds(3, crate::batch::DEFAULT_BATCH_TTL_SECS)?, a.seconds(4, crate::batch::DEFAULT_KEEP_FOR_SECS)?).await? }
    ),
    call!(
        "push_workflow",
        ["steps", "description=null", "callbacks=[]", "parent=null"],
        "push a workflow: steps run one after another, each once the one before succeeded. A step is a job's \
         fields {class, args, queue, ...} or {group: [jobs]} (run side by side); with takes_result: true its \
         jobs get the step before's result (a list after a group) before their args. callbacks as open_batch's, \
         for the whole workflow; no description: \"workflow\". Returns {id, steps: [{bid, jids}]}",
        |api, a| { crate::workflow::push_from_host(api.client(), a.given(0), a.optional_text(1)?, a.given(2), a.optional_text(3)?).await? }
    ),
    call!(
        "close_batch",
        ["bid"],
        "say every job of a batch is pushed: it completes once they have run",
        |api, a| { api.client().batch(a.text(0)?).close().await? }
    ),
    call!(
        "batch",
        ["bid"],
        "a batch: {bid, description, total, pending, failures: [[jid, failed|dead]], dead, open, parent, \
         created_at, completed_at, succeeded_at, died_at, callbacks, state}, or null",
        |api, a| { api.batch(a.text(0)?).await?.map(|status| status.to_json()) }
    ),
    call!(
        "batches",
        ["count=50"],
        "the newest batches, newest first",
        |api, a| {
            let count = usize::try_from(a.int(0, 50)?).unwrap_or(0);
            api.batches(count).await?.iter().map(|status| status.to_json()).collect::<Vec<_>>()
        }
    ),
    call!(
        "class_metrics",
        ["minutes=60"],
        "job classes that ran in the last minutes (up to 4320), most run time first: \
         [{class, processed, failed, total_secs, histogram}]",
        |api, a| { api.class_metrics(minutes(a, 0)?).await? }
    ),
    call!(
        "class_metrics_series",
        ["class", "minutes=60"],
        "one class over the last minutes: {total, minutes: [{at, processed, failed}]}",
        |api, a| {
            let (total, minutes) = api.class_metrics_series(a.text(0)?, minutes(a, 1)?).await?;
            json!({"total": total, "minutes": minutes})
        }
    ),
    call!(
        "metric_totals",
        [],
        "all-time executions by queue and class (what /metrics exports): [{queue, metrics}]",
        |api, _a| { api.metric_totals().await? }
    ),
];

/// A span in minutes, at least one.
fn minutes(args: &Args, index: usize) -> Result<u64> {
    Ok(u64::try_from(args.int(index, 60)?.max(1)).unwrap_or(60))
}

/// Runs the call `name` with `args` (positional, JSON); its result as JSON.
pub async fn call(api: &Api, name: &str, args: Vec<Value>) -> Result<Value> {
    let Some(call) = CALLS.iter().find(|c| c.name == name) else {
        return Err(Error::invalid_argument("call", format!("{name:?}"), "no such API call"));
    };
    if args.len() > call.params.len() {
        return Err(Error::invalid_argument(
            name,
            Value::Array(args).to_string(),
            format!(
                "takes at most {} argument(s): {}",
                call.params.len(),
                call.params.join(", ")
            ),
        ));
    }
    (call.run)(api, &Args { call, values: args }).await
}

fn parsed(texts: Vec<String>) -> Vec<Value> {
    texts
        .iter()
        .map(|t| serde_json::from_str(t).unwrap_or(Value::Null))
        .collect()
}

/// A call's arguments, read by position; errors name the parameter.
struct Args {
    call: &'static ApiCall,
    values: Vec<Value>,
}

impl Args {
    fn param(&self, index: usize) -> &'static str {
        self.call.params[index].split('=').next().unwrap_or("")
    }
    fn given(&self, index: usize) -> Option<&Value> {
        self.values.get(index).filter(|v| !v.is_null())
    }
    fn bad(&self, index: usize, reason: &str) -> Error {
        let value = self.values.get(index).map_or("nothing".to_string(), Value::to_string);
        Error::invalid_argument(format!("{}.{}", self.call.name, self.param(index)), value, reason)
    }
    fn text(&self, index: usize) -> Result<&str> {
        self.given(index)
            .and_then(Value::as_str)
            .ok_or_else(|| self.bad(index, "must be a string"))
    }
    /// An optional argument (null or left out: `None`) that `read` takes,
    /// else refused for `reason`.
    fn optional<T>(&self, index: usize, read: impl Fn(&Value) -> Option<T>, reason: &str) -> Result<Option<T>> {
        self.given(index)
            .map(|value| read(value).ok_or_else(|| self.bad(index, reason)))
            .transpose()
    }
    fn optional_text(&self, index: usize) -> Result<Option<&str>> {
        match self.given(index) {
            None => Ok(None),
            Some(_) => self.text(index).map(Some),
        }
    }
    fn int(&self, index: usize, default: isize) -> Result<isize> {
        match self.given(index) {
            None => Ok(default),
            Some(v) => v
                .as_i64()
                .and_then(|n| isize::try_from(n).ok())
                .ok_or_else(|| self.bad(index, "must be a whole number")),
        }
    }
    fn float(&self, index: usize, default: f64) -> Result<f64> {
        match self.given(index) {
            None => Ok(default),
            Some(v) => v
                .as_f64()
                .filter(|f| f.is_finite() && *f >= 0.0)
                .ok_or_else(|| self.bad(index, "must be a number of seconds >= 0")),
        }
    }
    fn seconds(&self, index: usize, default: u64) -> Result<u64> {
        match self.given(index) {
            None => Ok(default),
            Some(v) => v
                .as_u64()
                .filter(|n| *n > 0)
                .ok_or_else(|| self.bad(index, "must be a whole number of seconds > 0")),
        }
    }
    fn set(&self, index: usize) -> Result<JobSet> {
        self.text(index)?
            .parse()
            .map_err(|_| self.bad(index, "must be \"scheduled\", \"retry\" or \"dead\""))
    }
    fn entry(&self, index: usize) -> Result<SetEntry> {
        let value = self.given(index).cloned().unwrap_or(Value::Null);
        serde_json::from_value(value).map_err(|_| self.bad(index, "must be an entry: {score, payload}"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_call_has_a_unique_name_and_documented_parameters() {
        let mut names: Vec<&str> = CALLS.iter().map(|c| c.name).collect();
        names.sort();
        names.dedup();
        assert_eq!(names.len(), CALLS.len());
        for call in CALLS {
            assert!(!call.help.is_empty());
            let optional_then_required = call
                .params
                .windows(2)
                .any(|pair| pair[0].contains('=') && !pair[1].contains('='));
            assert!(!optional_then_required, "{}: optional parameters come last", call.name);
        }
    }
}
