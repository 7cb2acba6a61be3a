//! Building a job to push: [`Job::new`] and one method per option.

use super::{float, now, Job, Retry};
use serde_json::{Map, Value};

impl Job {
    /// A job for handler `class` with no args, on queue `default`, retried
    /// up to 25 times.
    pub fn new(class: impl Into<String>) -> Self {
        let mut fields = Map::new();
        fields.insert("class".into(), Value::String(class.into()));
        fields.insert("args".into(), Value::Array(Vec::new()));
        fields.insert("queue".into(), Value::String("default".into()));
        fields.insert("retry".into(), Value::Bool(true));
        Job::of(fields)
    }

    /// The handler's arguments.
    pub fn args<I: IntoIterator<Item = Value>>(mut self, args: I) -> Self {
        self.fields_mut()
            .insert("args".into(), Value::Array(args.into_iter().collect()));
        self
    }
    /// The queue to push to.
    pub fn queue(mut self, queue: impl Into<String>) -> Self {
        self.fields_mut().insert("queue".into(), Value::String(queue.into()));
        self
    }
    /// What a failure does.
    pub fn retry(mut self, retry: Retry) -> Self {
        let value = match retry {
            Retry::Discard => Value::Bool(false),
            Retry::Max(n) => Value::from(n),
        };
        self.fields_mut().insert("retry".into(), value);
        self
    }
    /// Run no earlier than `epoch_seconds`.
    pub fn at(mut self, epoch_seconds: f64) -> Self {
        self.fields_mut().insert("at".into(), float(epoch_seconds));
        self
    }
    /// Run `seconds` from now.
    pub fn delay(self, seconds: f64) -> Self {
        self.at(now() + seconds)
    }
    /// Its id (a push gives one when there is none).
    pub fn jid(mut self, jid: impl Into<String>) -> Self {
        self.fields_mut().insert("jid".into(), Value::String(jid.into()));
        self
    }
    /// Unique for `seconds`: while a job with the same class, queue and
    /// args holds the lock (until it succeeds or dies, at most `seconds`
    /// after it was due), pushing another returns no jid.
    pub fn unique_for(mut self, seconds: f64) -> Self {
        self.fields_mut().insert("unique_for".into(), float(seconds));
        self
    }
    /// Keep this job's outcome (status, return value or error) for
    /// `seconds` after it settles, for [`crate::Api::result`] and
    /// [`crate::Api::status`]. A job without it pays nothing for results.
    pub fn result_ttl(mut self, seconds: f64) -> Self {
        self.fields_mut().insert("result_ttl".into(), float(seconds));
        self
    }
    /// Its priority within its queue: 0 (last) to 9 (first); a job
    /// without one is at 5. Strict: a worker takes every job of a higher
    /// level of a queue before one of a lower level (see
    /// [`crate::priority`]).
    pub fn priority(mut self, level: u8) -> Self {
        self.fields_mut().insert("priority".into(), Value::from(level));
        self
    }
    /// Its group within its queue (a tenant, an account): a queue whose
    /// jobs carry groups is worked round-robin across the groups that
    /// have jobs (see [`crate::groups`]).
    pub fn group(mut self, group: impl Into<String>) -> Self {
        self.fields_mut().insert("group".into(), Value::String(group.into()));
        self
    }
    /// Its flow key (see [`crate::flow`]): with [`Job::debounce`], the
    /// pushes of one key collapse into one job; with [`Job::unique_for`],
    /// at most one job per key is pending (a singleton), and a push while
    /// one is returns that job's jid.
    pub fn key(mut self, key: impl Into<String>) -> Self {
        self.fields_mut().insert("key".into(), Value::String(key.into()));
        self
    }
    /// Debounced: the pushes of its class, queue and [`Job::key`] within
    /// `window` seconds of each other collapse into one job, run once the
    /// window after the last push has passed, with the last push's args
    /// under the first push's jid; `longest` (if given) bounds how long
    /// after the first push it runs, so a steady stream still runs.
    pub fn debounce(mut self, window: f64, longest: Option<f64>) -> Self {
        self.fields_mut().insert("debounce".into(), float(window));
        if let Some(longest) = longest {
            self.fields_mut().insert("debounce_max".into(), float(longest));
        }
        self
    }
    /// In sequence: the jobs of its [`Job::key`] run one at a time across
    /// the fleet, in push order, a failed one's retry before the next (the
    /// key is its group, capped at 1: see [`crate::groups`]).
    pub fn sequence(mut self) -> Self {
        self.fields_mut().insert("sequence".into(), Value::Bool(true));
        self
    }
    /// Replacing: a push of its class, queue and [`Job::key`] while the
    /// key's job still waits on its queue replaces that job in place (the
    /// new args and fields, the waiting job's place in line and jid, which
    /// the push returns); else it is pushed and becomes the key's job.
    pub fn replace(mut self) -> Self {
        self.fields_mut().insert("replace".into(), Value::Bool(true));
        self
    }
    /// Throttled: the jobs of its class, queue and [`Job::key`] are due at
    /// least `window` seconds apart; a push before the key's next window
    /// is delayed to it, or, with `drop`, dropped (the push returns no
    /// jid, and `NS:stat:throttled` counts it).
    pub fn throttle(mut self, window: f64, drop: bool) -> Self {
        self.fields_mut().insert("throttle".into(), float(window));
        if drop {
            self.fields_mut()
                .insert("throttle_excess".into(), Value::String("drop".into()));
        }
        self
    }
    /// At most `most` jobs of its group wait on its queue (at its priority
    /// level): a push past it is refused (an over-limit error naming the
    /// group), or, with `drop_oldest`, the group's oldest waiting jobs are
    /// dropped to make room (counted in `NS:stat:backlog_dropped`).
    pub fn group_backlog(mut self, most: u64, drop_oldest: bool) -> Self {
        self.fields_mut().insert("group_backlog".into(), Value::from(most));
        if drop_oldest {
            self.fields_mut()
                .insert("group_backlog_full".into(), Value::String("drop_oldest".into()));
        }
        self
    }
    /// At most `limit` jobs of its group start per `period` seconds,
    /// fleet-wide (a rate limit keyed by the group): a group past its rate
    /// waits without holding a worker slot until its next period.
    pub fn group_rate(mut self, limit: u64, period: f64) -> Self {
        self.fields_mut().insert("group_rate".into(), Value::from(limit));
        self.fields_mut().insert("group_rate_period".into(), float(period));
        self
    }
    /// How its group's rate counts (`"window"`, the default: at most
    /// `limit` per period from the period's first start; `"bucket"`: bursts
    /// of up to `limit`, refilled evenly over the period; `"leaky"`: starts
    /// evenly spaced, one every `period / limit`); checked at push.
    pub fn group_rate_kind(mut self, kind: &str) -> Self {
        self.fields_mut()
            .insert("group_rate_kind".into(), Value::String(kind.into()));
        self
    }
    /// At most `cap` jobs of its group run at once, fleet-wide (a
    /// concurrency limit keyed by the group): a group at its cap waits
    /// without holding a worker slot until one of its jobs ends. A cap set
    /// by [`crate::Api::set_group_cap`] for the group comes first.
    pub fn group_cap(mut self, cap: u64) -> Self {
        self.fields_mut().insert("group_cap".into(), Value::from(cap));
        self
    }
    /// Dropped, never run, if it has not started `seconds` after it is
    /// pushed: counted as `expired`, logged, and kept in `dead` only with
    /// [`Job::keep_expired`].
    pub fn expires_in(mut self, seconds: f64) -> Self {
        self.fields_mut().insert("expires_in".into(), float(seconds));
        self
    }
    /// Its time limit: a handler still running `seconds` after it began is
    /// stopped (see [`crate::time_limit`]) and the job fails as
    /// `cogworker::Timeout`, retried by its policy.
    pub fn timeout(mut self, seconds: f64) -> Self {
        self.fields_mut().insert("timeout".into(), float(seconds));
        self
    }
    /// Dropped, never run, if it has not started by `epoch_seconds` (see
    /// [`Job::expires_in`]).
    pub fn expires_at(mut self, epoch_seconds: f64) -> Self {
        self.fields_mut().insert("expires_at".into(), float(epoch_seconds));
        self
    }
    /// Once expired, filed in `dead` (as `cogworker::Expired`) instead of
    /// dropped.
    pub fn keep_expired(mut self) -> Self {
        self.fields_mut().insert("keep_expired".into(), Value::Bool(true));
        self
    }
    /// A durable push of this job: the push returns only once `replicas`
    /// replicas have it, else fails with [`crate::Error::NotReplicated`]
    /// (the job queued on the master). It stands in for the client's
    /// [`crate::Config::set_min_replicas_acked`] for this push; 0 waits for
    /// none where the client would. A bulk push waits once, for the most
    /// any of its jobs asks. A push option, not a job field: the push
    /// takes it off the job before it writes it. Above 16 the push is
    /// refused, naming it.
    pub fn min_replicas_acked(mut self, replicas: u32) -> Self {
        self.fields_mut()
            .insert("min_replicas_acked".into(), Value::from(replicas));
        self
    }
    /// Runs only within the rate limiters `names` (see [`crate::limiter::Limit`]):
    /// each is taken before a slot runs the job; over one, the job is
    /// rescheduled (not failed, not a retry) until it gets its turn, at most
    /// `over_limit_max` times.
    pub fn limits<S: Into<String>, I: IntoIterator<Item = S>>(mut self, names: I) -> Self {
        let names = names.into_iter().map(|n| Value::String(n.into())).collect();
        self.fields_mut().insert("limits".into(), Value::Array(names));
        self
    }
    /// Starts it at `cursor`, as if it had checkpointed it (see
    /// [`crate::long_jobs::Running::checkpoint`]); checked at push.
    pub fn with_cursor(mut self, cursor: Value) -> Self {
        self.fields_mut().insert("cursor".into(), cursor);
        self
    }
    /// Any other field, kept as given.
    pub fn field(mut self, key: impl Into<String>, value: Value) -> Self {
        self.fields_mut().insert(key.into(), value);
        self
    }
}
