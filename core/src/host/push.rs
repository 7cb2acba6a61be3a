//! The job payload a host language asks for, built and validated once for
//! every language: real pushes and the testing modes (fake, inline) go
//! through the same [`PushRequest::into_job`], so a push that would be
//! refused in production is refused in an app's tests too.

use crate::error::{Error, Result};
use crate::host::HostValue;
use crate::job::{float, now, Job};
use crate::trace;
use serde_json::Value;

/// A push as a host language's `enqueue` / `perform_async` describes it.
#[derive(Clone, Debug, Default)]
pub struct PushRequest {
    /// The handler name.
    pub class: String,
    /// The arguments, already converted to JSON by the binding.
    pub args: Vec<Value>,
    /// `None`: `default`.
    pub queue: Option<String>,
    /// `true`, `false` or a whole number; `None`: `true` (25 retries).
    pub retry: Option<Value>,
    /// Run no earlier than this (epoch seconds).
    pub at: Option<f64>,
    /// Run this many seconds from now (`enqueue_in`, `perform_in`).
    pub delay: Option<f64>,
    /// Refuse duplicates (same class, queue, args) for this many seconds.
    pub unique_for: Option<f64>,
    /// Keep the outcome this many seconds after the job settles.
    pub result_ttl: Option<f64>,
    /// The W3C trace context of the push (`traceparent`, `tracestate`),
    /// kept in the payload for the worker to continue.
    pub traceparent: Option<String>,
    /// See `traceparent`.
    pub tracestate: Option<String>,
    /// Dropped, never run, if not started within this many seconds.
    pub expires_in: Option<f64>,
    /// Dropped, never run, if not started by then (epoch seconds).
    pub expires_at: Option<f64>,
    /// Once expired, kept in `dead` instead of dropped.
    pub keep_expired: bool,
    /// The rate limiters it runs within (their names).
    pub limits: Option<Vec<String>>,
    /// Its priority within its queue, 0 (last) to 9 (first).
    pub priority: Option<i64>,
    /// Its time limit, in seconds (see [`crate::time_limit`]).
    pub timeout: Option<f64>,
    /// The batch it joins (see [`crate::Batch`]).
    pub bid: Option<String>,
    /// Its group within its queue (see [`crate::groups`]).
    pub group: Option<String>,
    /// The most of its group's jobs that run at once, fleet-wide.
    pub group_cap: Option<i64>,
    /// The most of its group's jobs that start per `group_rate_period`.
    pub group_rate: Option<i64>,
    /// The period of `group_rate`, in seconds.
    pub group_rate_period: Option<f64>,
    /// How `group_rate` counts: window, bucket, leaky.
    pub group_rate_kind: Option<String>,
    /// The most of its group's jobs that wait on its queue.
    pub group_backlog: Option<i64>,
    /// What a push past `group_backlog` does: refuse, drop_oldest.
    pub group_backlog_full: Option<String>,
    /// Its flow key (see [`crate::flow`]).
    pub key: Option<String>,
    /// Its debounce window, in seconds.
    pub debounce: Option<f64>,
    /// The longest a debounce waits after a burst's first push, in seconds.
    pub debounce_max: Option<f64>,
    /// Its throttle window, in seconds.
    pub throttle: Option<f64>,
    /// A push replaces its key's job still waiting on its queue.
    pub replace: bool,
    /// Its key's jobs run one at a time, in push order.
    pub sequence: bool,
    /// What a throttled push before its key's next window does: delay, drop.
    pub throttle_excess: Option<String>,
    /// Where a long job starts (see [`crate::long_jobs`]): its handler
    /// resumes from this cursor, as after a checkpoint.
    pub cursor: Option<Value>,
    /// A durable push: it returns once this many replicas have the job
    /// (for this push, instead of the client's `min_replicas_acked`).
    pub min_replicas_acked: Option<i64>,
}

/// The options of a push, the same in every language (Python keywords,
/// Ruby keywords and `cogworker_options`, the Rust [`Job`] builder), with
/// what each takes. A host passes them on by name; the core checks them.
pub const PUSH_OPTIONS: &[(&str, &str)] = &[
    ("queue", "the queue's name (default: default)"),
    ("retry", "true (25 retries), false (none) or a number of retries"),
    ("at", "run no earlier than this time (a time, or epoch seconds)"),
    ("delay", "run this long from now (a duration, or seconds)"),
    (
        "unique_for",
        "refuse a push while a job of the same class, queue and args is pending, at most this long",
    ),
    ("result_ttl", "keep the job's outcome this long after it settles"),
    (
        "expires_in",
        "drop the job, never run, if it has not started within this long",
    ),
    (
        "expires_at",
        "drop the job, never run, if it has not started by this time",
    ),
    (
        "keep_expired",
        "true: an expired job is kept in dead instead of dropped",
    ),
    ("limits", "the names of the rate limiters the job runs within"),
    (
        "timeout",
        "stop the handler when it has run this long: the job fails as cogworker::Timeout and is retried",
    ),
    (
        "priority",
        "0 (taken last) to 9 (taken first) within its queue; 5 when not given",
    ),
    (
        "group",
        "its group within its queue (a tenant, an account): the queue is worked round-robin across groups",
    ),
    (
        "group_cap",
        "at most this many jobs of its group run at once, fleet-wide; the others wait without holding a worker",
    ),
    (
        "group_rate",
        "at most this many jobs of its group start per group_rate_period (1 s by default), fleet-wide; the others wait without holding a worker",
    ),
    ("group_rate_period", "the period of group_rate (a duration, or seconds)"),
    (
        "group_rate_kind",
        "how group_rate counts: \"window\" (at most that many per period from its first start, the default), \"bucket\" (bursts of up to that many, refilled evenly over the period) or \"leaky\" (evenly spaced, one every period / group_rate)",
    ),
    (
        "group_backlog",
        "at most this many jobs of its group wait on its queue: a push past it is refused, naming the group",
    ),
    (
        "group_backlog_full",
        "with group_backlog: \"refuse\" (the default) or \"drop_oldest\" (the group's oldest waiting jobs make room)",
    ),
    (
        "key",
        "its flow key: with debounce, one job per burst of the key's pushes; with unique_for, one pending job per key",
    ),
    (
        "debounce",
        "collapse the pushes of one key within this long of each other into one run, with the last push's args",
    ),
    (
        "debounce_max",
        "with debounce: run no later than this long after the first push of a burst",
    ),
    (
        "sequence",
        "true: its key's jobs run one at a time across the fleet, in push order, a failed one's retry before the next",
    ),
    (
        "replace",
        "true: a push replaces (args and all, its place and jid kept) its key's job still waiting on its queue",
    ),
    (
        "throttle",
        "the jobs of one key are due at least this long apart; a push sooner is delayed (or dropped: throttle_excess)",
    ),
    (
        "throttle_excess",
        "with throttle: \"delay\" (the default) or \"drop\" a push made before its key's next window",
    ),
    (
        "bid",
        "the batch the job joins (its id); the batch counts it and fires its callbacks when it is done",
    ),
    (
        "cursor",
        "where a long job starts, as if it had checkpointed this JSON value (see docs/long-jobs.md)",
    ),
    (
        "min_replicas_acked",
        "a durable push: return only once this many replicas have the job, else raise NotReplicated (for this push, instead of the client's setting; 0 waits for none)",
    ),
    ("traceparent", "the W3C trace context the job continues"),
    ("tracestate", "the W3C trace state that goes with traceparent"),
];

/// The options a host may give as a function of the job's args (a Python
/// function, a Ruby Proc), which the binding calls once per job where it
/// converts the push's values: what it returns is checked as the option's
/// value, what it raises the push raises.
pub const COMPUTED_OPTIONS: &[&str] = &["group", "key"];

/// What a computed option ([`COMPUTED_OPTIONS`]) stands as when a class's
/// declared options are checked, with no args to call it with: a valid
/// key, so the options that need one (`debounce` needs `key`) pass.
pub const COMPUTED_STAND_IN: &str = "computed";

impl PushRequest {
    /// `class` with `args` (each must be JSON data; the error names it).
    pub fn new(class: &str, args: &[HostValue]) -> Result<Self> {
        Ok(PushRequest {
            class: class.to_string(),
            args: HostValue::json_list(args, "args")?,
            ..Default::default()
        })
    }

    /// The job `class(*args)` with a host's named `options` (null: not
    /// given), every piece checked.
    pub fn job(class: &str, args: &[HostValue], options: &[(String, HostValue)]) -> Result<Job> {
        let mut request = PushRequest::new(class, args)?;
        for (name, value) in options.iter().filter(|(_, v)| *v != HostValue::Null) {
            request.set(name, value)?;
        }
        request.into_job()
    }

    /// Sets the option `name` (one of [`PUSH_OPTIONS`]) from a host's
    /// value; `Nil`-like values are the host's business (it passes none).
    /// The error names the option.
    pub fn set(&mut self, name: &str, value: &HostValue) -> Result<()> {
        let seconds = |value: &HostValue| {
            value
                .as_seconds()
                .ok_or_else(|| Error::invalid_value(name, value, "must be a duration or a number of seconds"))
        };
        let epoch = |value: &HostValue| {
            value
                .as_epoch_seconds()
                .ok_or_else(|| Error::invalid_value(name, value, "must be a time or epoch seconds"))
        };
        match name {
            "queue" => match value {
                HostValue::Text(queue) => self.queue = Some(queue.clone()),
                other => return Err(Error::invalid_value(name, other, "must be a string")),
            },
            "retry" => match value {
                HostValue::Bool(b) => self.retry = Some(Value::Bool(*b)),
                HostValue::Int(n) => self.retry = Some(Value::from(*n)),
                other => {
                    return Err(Error::invalid_value(
                        name,
                        other,
                        "must be true, false or a whole number",
                    ))
                }
            },
            "at" => self.at = Some(epoch(value)?),
            "delay" => self.delay = Some(seconds(value)?),
            "unique_for" => self.unique_for = Some(seconds(value)?),
            "result_ttl" => self.result_ttl = Some(seconds(value)?),
            "expires_in" => self.expires_in = Some(seconds(value)?),
            "expires_at" => self.expires_at = Some(epoch(value)?),
            "timeout" => self.timeout = Some(seconds(value)?),
            "priority" => match value {
                HostValue::Int(level) => self.priority = Some(*level),
                other => return Err(Error::invalid_value(name, other, "must be a whole number from 0 to 9")),
            },
            "keep_expired" => match value {
                HostValue::Bool(keep) => self.keep_expired = *keep,
                other => return Err(Error::invalid_value(name, other, "must be true or false")),
            },
            "limits" => {
                let names = match value {
                    HostValue::Text(one) => vec![one.clone()],
                    HostValue::List(items) => items
                        .iter()
                        .map(|item| match item {
                            HostValue::Text(text) => Ok(text.clone()),
                            other => Err(Error::invalid_value(name, other, "must be limiter names")),
                        })
                        .collect::<Result<_>>()?,
                    other => return Err(Error::invalid_value(name, other, "must be a list of limiter names")),
                };
                self.limits = Some(names);
            }
            "group" => match value {
                HostValue::Text(group) => self.group = Some(group.clone()),
                other => return Err(Error::invalid_value(name, other, crate::job::GROUP_RULE)),
            },
            "group_cap" => match value {
                HostValue::Int(cap) => self.group_cap = Some(*cap),
                other => {
                    return Err(Error::invalid_value(
                        name,
                        other,
                        "must be a whole number from 1 to 1000000",
                    ))
                }
            },
            "group_rate" => match value {
                HostValue::Int(limit) => self.group_rate = Some(*limit),
                other => {
                    return Err(Error::invalid_value(
                        name,
                        other,
                        "must be a whole number from 1 to 1000000",
                    ))
                }
            },
            "group_rate_period" => self.group_rate_period = Some(seconds(value)?),
            "group_backlog" => match value {
                HostValue::Int(most) => self.group_backlog = Some(*most),
                other => {
                    return Err(Error::invalid_value(
                        name,
                        other,
                        "must be a whole number from 1 to 1000000000",
                    ))
                }
            },
            "group_rate_kind" => match value {
                HostValue::Text(kind) => self.group_rate_kind = Some(kind.clone()),
                other => return Err(Error::invalid_value(name, other, crate::job::RATE_KIND_RULE)),
            },
            "group_backlog_full" => match value {
                HostValue::Text(full) => self.group_backlog_full = Some(full.clone()),
                other => {
                    return Err(Error::invalid_value(
                        name,
                        other,
                        "must be \"refuse\" or \"drop_oldest\"",
                    ))
                }
            },
            "key" => match value {
                HostValue::Text(key) => self.key = Some(key.clone()),
                other => return Err(Error::invalid_value(name, other, crate::job::GROUP_RULE)),
            },
            "debounce" => self.debounce = Some(seconds(value)?),
            "debounce_max" => self.debounce_max = Some(seconds(value)?),
            "throttle" => self.throttle = Some(seconds(value)?),
            "sequence" => match value {
                HostValue::Bool(sequence) => self.sequence = *sequence,
                other => return Err(Error::invalid_value(name, other, "must be true or false")),
            },
            "replace" => match value {
                HostValue::Bool(replace) => self.replace = *replace,
                other => return Err(Error::invalid_value(name, other, "must be true or false")),
            },
            "throttle_excess" => match value {
                HostValue::Text(excess) => self.throttle_excess = Some(excess.clone()),
                other => return Err(Error::invalid_value(name, other, "must be \"delay\" or \"drop\"")),
            },
            "cursor" => match value.to_json(name) {
                Ok(cursor) => self.cursor = Some(cursor),
                // A job field, refused as the other fields are.
                Err(Error::InvalidArgument { field, value, reason }) => {
                    return Err(Error::invalid_value(field, value, reason))
                }
                Err(other) => return Err(other),
            },
            "min_replicas_acked" => match value {
                HostValue::Int(replicas) => self.min_replicas_acked = Some(*replicas),
                other => return Err(Error::invalid_value(name, other, "must be a whole number from 0 to 16")),
            },
            "bid" => match value {
                HostValue::Text(bid) => self.bid = Some(bid.clone()),
                other => return Err(Error::invalid_value(name, other, "must be a batch id")),
            },
            "traceparent" | "tracestate" => match value {
                HostValue::Text(text) if name == "traceparent" => self.traceparent = Some(text.clone()),
                HostValue::Text(text) => self.tracestate = Some(text.clone()),
                other => return Err(Error::invalid_value(name, other, "must be a string")),
            },
            other => {
                let known: Vec<&str> = PUSH_OPTIONS.iter().map(|(name, _)| *name).collect();
                return Err(Error::invalid_argument(
                    other,
                    value,
                    format!("not an option of a push ({})", known.join(", ")),
                ));
            }
        }
        Ok(())
    }

    /// The job to push, every field checked; the error names the field.
    pub fn into_job(self) -> Result<Job> {
        let mut job = Job::new(self.class).args(self.args);
        if let Some(queue) = self.queue {
            job = job.queue(queue);
        }
        if let Some(retry) = self.retry {
            job = job.field("retry", retry);
        }
        match (self.at, self.delay) {
            (Some(_), Some(_)) => return Err(Error::invalid_job("at", "give either at or a delay, not both")),
            (Some(at), None) => job = job.field("at", finite("at", at, "must be epoch seconds")?),
            (None, Some(delay)) => {
                let at = now() + delay;
                if !(0.0..=crate::job::LATEST_EPOCH_SECS).contains(&at) {
                    return Err(Error::invalid_value(
                        "delay",
                        delay,
                        "must be a number of seconds that ends before the end of 9999",
                    ));
                }
                job = job.field("at", float(at));
            }
            (None, None) => {}
        }
        if let Some(ttl) = self.unique_for {
            job = job.field(
                "unique_for",
                finite("unique_for", ttl, "must be a positive number of seconds")?,
            );
        }
        if let Some(ttl) = self.result_ttl {
            job = job.field("result_ttl", finite("result_ttl", ttl, "must be a number of seconds")?);
        }
        if let Some(traceparent) = self.traceparent {
            if trace::parse_traceparent(&traceparent).is_none() {
                return Err(Error::invalid_job(
                    "traceparent",
                    "must be a W3C traceparent (00-<32 hex>-<16 hex>-<2 hex>, ids not all zeros)",
                ));
            }
            job = job.field(trace::TRACEPARENT, Value::String(traceparent));
        }
        if let Some(tracestate) = self.tracestate {
            job = job.field(trace::TRACESTATE, Value::String(tracestate));
        }
        if let Some(seconds) = self.expires_in {
            job = job.field(
                "expires_in",
                finite("expires_in", seconds, "must be a number of seconds")?,
            );
        }
        if let Some(at) = self.expires_at {
            job = job.field("expires_at", finite("expires_at", at, "must be epoch seconds")?);
        }
        if self.keep_expired {
            job = job.keep_expired();
        }
        if let Some(names) = self.limits {
            job = job.limits(names);
        }
        if let Some(level) = self.priority {
            job = job.field("priority", Value::from(level));
        }
        if let Some(seconds) = self.timeout {
            job = job.field("timeout", finite("timeout", seconds, "must be a number of seconds")?);
        }
        if let Some(bid) = self.bid {
            job = job.field("bid", Value::String(bid));
        }
        if let Some(group) = self.group {
            job = job.group(group);
        }
        if let Some(cap) = self.group_cap {
            job = job.field("group_cap", Value::from(cap));
        }
        if let Some(limit) = self.group_rate {
            job = job.field("group_rate", Value::from(limit));
        }
        if let Some(period) = self.group_rate_period {
            job = job.field(
                "group_rate_period",
                finite("group_rate_period", period, "must be a number of seconds")?,
            );
        }
        if let Some(kind) = self.group_rate_kind {
            job = job.field("group_rate_kind", Value::String(kind));
        }
        if let Some(most) = self.group_backlog {
            job = job.field("group_backlog", Value::from(most));
        }
        if let Some(full) = self.group_backlog_full {
            job = job.field("group_backlog_full", Value::String(full));
        }
        if let Some(key) = self.key {
            job = job.key(key);
        }
        if let Some(window) = self.debounce {
            job = job.field("debounce", finite("debounce", window, "must be a number of seconds")?);
        }
        if self.sequence {
            job = job.field("sequence", Value::Bool(true));
        }
        if self.replace {
            job = job.field("replace", Value::Bool(true));
        }
        if let Some(window) = self.throttle {
            job = job.field("throttle", finite("throttle", window, "must be a number of seconds")?);
        }
        if let Some(excess) = self.throttle_excess {
            job = job.field("throttle_excess", Value::String(excess));
        }
        if let Some(longest) = self.debounce_max {
            job = job.field(
                "debounce_max",
                finite("debounce_max", longest, "must be a number of seconds")?,
            );
        }
        if let Some(cursor) = self.cursor {
            job = job.field("cursor", cursor);
        }
        if let Some(replicas) = self.min_replicas_acked {
            job = job.field("min_replicas_acked", Value::from(replicas));
        }
        job.validate()?;
        Ok(job)
    }
}

/// A raw payload a host hands over (a map with at least `class`) as a
/// job; `path` names it in errors.
pub fn payload_job(payload: &HostValue, path: &str) -> Result<Job> {
    Job::from_value(payload.to_json(path)?)
}

/// `job` as a push would store it (validated; `jid`, `created_at` and, for
/// an immediate job, `enqueued_at` filled): what client middleware sees and
/// the testing modes record instead of pushing.
pub fn prepared(mut job: Job) -> Result<Job> {
    let at = now();
    job.prepare_for_push(at)?;
    if job.run_at().is_none_or(|run_at| run_at <= at) {
        job.remove("at");
        job.set("enqueued_at", float(at));
    }
    Ok(job)
}

/// A push as both hosts make it, in one order: each job through the host's
/// client `middleware` when it has some (it sees the job as it will be
/// stored, and returns it, changed or not, or `None` to stop it), then,
/// in a testing mode, recorded (inline mode: `run` runs it at once), else
/// handed to `write`, all in one round trip. The jids, in the jobs' order:
/// `None` for a job the middleware stopped or a unique duplicate refused.
/// `error` converts the core's errors (a job that fails validation) to the
/// host's, which the host's own calls return.
pub fn push_through<E>(
    jobs: Vec<Job>,
    middleware: Option<impl FnMut(Job) -> std::result::Result<Option<Job>, E>>,
    mut run: impl FnMut(Value) -> std::result::Result<(), E>,
    write: impl FnOnce(Vec<Job>) -> std::result::Result<Vec<Option<String>>, E>,
    error: impl Fn(Error) -> E,
) -> std::result::Result<Vec<Option<String>>, E> {
    let jobs: Vec<Option<Job>> = match middleware {
        Some(mut middleware) => jobs
            .into_iter()
            .map(|job| middleware(prepared(job).map_err(&error)?))
            .collect::<std::result::Result<_, E>>()?,
        None => jobs.into_iter().map(Some).collect(),
    };
    if super::testing::mode().is_some() {
        return jobs
            .into_iter()
            .map(|job| {
                let Some(job) = job else { return Ok(None) };
                match super::testing::record(prepared(job).map_err(&error)?) {
                    super::testing::Recorded::Kept(jid) => Ok(Some(jid)),
                    super::testing::Recorded::Refused => Ok(None),
                    super::testing::Recorded::RunNow(job) => {
                        let jid = job.get("jid").and_then(Value::as_str).map(str::to_string);
                        run(job)?;
                        Ok(jid)
                    }
                }
            })
            .collect();
    }
    let stopped: Vec<bool> = jobs.iter().map(Option::is_none).collect();
    let mut written = write(jobs.into_iter().flatten().collect())?.into_iter();
    Ok(stopped
        .into_iter()
        .map(|stopped| if stopped { None } else { written.next().flatten() })
        .collect())
}

/// `seconds` as a JSON number; NaN and the infinities are refused, naming
/// the field.
fn finite(field: &str, seconds: f64, reason: &str) -> Result<Value> {
    if seconds.is_finite() {
        Ok(float(seconds))
    } else {
        Err(Error::invalid_value(field, seconds, reason))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn request() -> PushRequest {
        PushRequest {
            class: "A".into(),
            args: vec![json!(1)],
            ..Default::default()
        }
    }

    #[test]
    fn defaults_and_options() {
        let job = request().into_job().unwrap();
        assert_eq!(job.queue_name(), "default");
        assert_eq!(job.args_slice(), &[json!(1)]);
        let job = PushRequest {
            queue: Some("mail".into()),
            retry: Some(json!(3)),
            delay: Some(60.0),
            unique_for: Some(30.0),
            ..request()
        }
        .into_job()
        .unwrap();
        assert_eq!(job.queue_name(), "mail");
        assert!(job.run_at().unwrap() > now() + 59.0);
        assert_eq!(job.unique_for_secs(), Some(30.0));
    }

    #[test]
    fn bad_delays_and_queues_name_the_field() {
        for (request, field) in [
            (
                PushRequest {
                    delay: Some(f64::NAN),
                    ..request()
                },
                "delay",
            ),
            (
                PushRequest {
                    delay: Some(f64::INFINITY),
                    ..request()
                },
                "delay",
            ),
            (
                PushRequest {
                    at: Some(f64::NEG_INFINITY),
                    ..request()
                },
                "at",
            ),
            (
                PushRequest {
                    queue: Some(String::new()),
                    ..request()
                },
                "queue",
            ),
            (
                PushRequest {
                    unique_for: Some(f64::NAN),
                    ..request()
                },
                "unique_for",
            ),
            (
                PushRequest {
                    retry: Some(json!("often")),
                    ..request()
                },
                "retry",
            ),
        ] {
            let err = request.into_job().unwrap_err();
            assert_eq!(err.field(), Some(field), "{err}");
        }
    }

    fn option(name: &str, value: HostValue) -> (String, HostValue) {
        (name.to_string(), value)
    }

    #[test]
    fn every_option_is_taken_by_name_with_times_and_durations() {
        let hour = HostValue::Duration {
            seconds: 3600.0,
            shown: "timedelta(hours=1)".into(),
        };
        let when = HostValue::Time {
            epoch_seconds: now() + 7200.0,
            shown: "datetime(...)".into(),
        };
        let options = [
            option("queue", HostValue::Text("mail".into())),
            option("at", when.clone()),
            option("unique_for", hour.clone()),
            option("result_ttl", HostValue::Int(60)),
            option("expires_at", when),
            option("keep_expired", HostValue::Bool(true)),
            option("limits", HostValue::List(vec![HostValue::Text("stripe".into())])),
            option("priority", HostValue::Int(8)),
        ];
        let job = PushRequest::job("A", &[], &options).unwrap();
        assert!(job.run_at().unwrap() > now() + 7100.0);
        assert_eq!(job.unique_for_secs(), Some(3600.0));
        assert_eq!(job.get("keep_expired"), Some(&json!(true)));
        assert_eq!(job.get("limits"), Some(&json!(["stripe"])));
        assert_eq!(job.priority_level(), 8);
        let job = PushRequest::job("A", &[], &[option("expires_in", hour.clone())]).unwrap();
        assert_eq!(job.get("expires_in"), Some(&json!(3600.0)));
        let job = PushRequest::job("A", &[], &[option("limits", HostValue::Text("one".into()))]).unwrap();
        assert_eq!(job.get("limits"), Some(&json!(["one"])));
        // A length of time is not a time, nor a time a length of time.
        for (name, value) in [
            ("at", hour),
            ("delay", HostValue::Bool(true)),
            ("priority", HostValue::Int(10)),
            ("priority", HostValue::Text("high".into())),
        ] {
            let err = PushRequest::job("A", &[], &[option(name, value)]).unwrap_err();
            assert_eq!(err.field(), Some(name), "{err}");
        }
    }

    #[test]
    fn a_durable_push_option_is_a_whole_number_of_replicas() {
        let job = PushRequest::job("A", &[], &[option("min_replicas_acked", HostValue::Int(2))]).unwrap();
        assert_eq!(job.get("min_replicas_acked"), Some(&json!(2)));
        for value in [
            HostValue::Int(17),
            HostValue::Int(-1),
            HostValue::Int(i64::MAX),
            HostValue::BigInt("1".repeat(40)),
            HostValue::Float(f64::NAN),
            HostValue::Float(1e300),
            HostValue::Float(1.0),
            HostValue::Text("1".into()),
            HostValue::Bool(true),
        ] {
            let err = PushRequest::job("A", &[], &[option("min_replicas_acked", value.clone())]).unwrap_err();
            assert_eq!(err.field(), Some("min_replicas_acked"), "{value:?}: {err}");
        }
    }

    #[test]
    fn declared_options_are_checked_where_they_are_declared() {
        PushRequest::job("A", &[], &[option("queue", HostValue::Text("a".into()))]).unwrap();
        let err = PushRequest::job("A", &[], &[option("limts", HostValue::Text("a".into()))]).unwrap_err();
        assert_eq!(err.field(), Some("limts"));
        assert!(err.to_string().contains("expires_in, expires_at"), "{err}");
        let err = PushRequest::job("A", &[], &[option("limits", HostValue::Text("no spaces".into()))]).unwrap_err();
        assert_eq!(err.field(), Some("limits[0]"), "{err}");
    }
}
