//! `Cogworker::Native::Client`: pushes jobs. Arguments are converted to JSON
//! here; the job is built, validated and written by the core.

use crate::blocking::finish;
use crate::config::RbConfig;
use crate::convert;
use crate::errors::to_ruby;
use cogworker::host::{
    carry_trace_context, payload_job, prepared, push_through, HostValue, PushRequest, Session, COMPUTED_OPTIONS,
    COMPUTED_STAND_IN,
};
use cogworker::{Client, Job};
use magnus::{prelude::*, Error, RArray, RHash, Ruby, Value};
use std::collections::HashMap;
use std::sync::Arc;

/// `class_name` with `args` and the push options in `options` (the core's
/// names; nil values are not given).
pub(crate) fn request(ruby: &Ruby, class_name: String, args: RArray, options: RHash) -> Result<Job, Error> {
    let named = computed(ruby, options, |function| {
        let args: Vec<Value> = args.into_iter().collect();
        let value: Value = function.funcall("call", args.as_slice())?;
        Ok(convert::value(ruby, value))
    })?;
    PushRequest::job(&class_name, &convert::values(ruby, args), &named).map_err(|e| to_ruby(ruby, e))
}

/// The push options in `options`, each option the core lets be computed
/// (`COMPUTED_OPTIONS`: `group: ->(account_id, *) { "acct:#{account_id}" }`)
/// that is given as a Proc replaced by what `call` makes of it.
fn computed(
    ruby: &Ruby,
    options: RHash,
    call: impl Fn(Value) -> Result<HostValue, Error>,
) -> Result<Vec<(String, HostValue)>, Error> {
    let mut named = Vec::new();
    convert::each_option(ruby, options, |name, value| {
        named.push((name.to_string(), value));
        Ok(())
    })?;
    for name in COMPUTED_OPTIONS {
        let function = options
            .get(*name)
            .or_else(|| options.get(ruby.to_symbol(name)))
            .filter(|function| function.is_kind_of(ruby.class_proc()));
        if let Some(function) = function {
            let value = call(function)?;
            named.retain(|(given, _)| given != name);
            named.push((name.to_string(), value));
        }
    }
    Ok(named)
}

/// Checks a class's declared push options where they are written (a
/// misspelt or bad one raises there): a computed option, with no args to
/// call it with, stands as the core's `COMPUTED_STAND_IN`.
pub fn check_options(ruby: &Ruby, class_name: String, options: RHash) -> Result<(), Error> {
    let named = computed(ruby, options, |_| Ok(HostValue::Text(COMPUTED_STAND_IN.to_string())))?;
    PushRequest::job(&class_name, &[], &named).map_err(|e| to_ruby(ruby, e))?;
    Ok(())
}

/// The job `class_name(*args)` would be (a Hash), validated and filled as
/// a push fills it: what client middleware sees and the testing modes record.
pub fn prepare_job(ruby: &Ruby, class_name: String, args: RArray, options: RHash) -> Result<Value, Error> {
    let job = prepared(request(ruby, class_name, args, options)?).map_err(|e| to_ruby(ruby, e))?;
    Ok(convert::from_json(ruby, &job.into_value()))
}

/// A raw payload (a Hash with at least "class") checked and filled the same way.
pub fn prepare_payload(ruby: &Ruby, payload: Value) -> Result<Value, Error> {
    let job = payload_job(&convert::value(ruby, payload), "job")
        .and_then(prepared)
        .map_err(|e| to_ruby(ruby, e))?;
    Ok(convert::from_json(ruby, &job.into_value()))
}

#[magnus::wrap(class = "Cogworker::Native::Client", free_immediately, size)]
pub struct RbClient(pub Arc<Session>);

impl RbClient {
    pub fn new(config: &RbConfig) -> Self {
        RbClient(Arc::new(Session::new(config.config())))
    }

    fn push_jobs(&self, ruby: &Ruby, jobs: Vec<Job>) -> Result<Vec<Option<String>>, Error> {
        let push = |client: Client| async move { client.push_bulk(jobs).await };
        finish(ruby, |first| self.0.start(push, first))
    }

    /// The core's push order (`push_through`): `middleware.call(job)` (a
    /// Hash; returns it or nil; nil: no middleware), then a testing mode's
    /// record, where inline mode's `run.call(job)` runs it, or one round trip.
    fn push_through(
        &self,
        ruby: &Ruby,
        jobs: Vec<Job>,
        middleware: Value,
        run: Value,
    ) -> Result<Vec<Option<String>>, Error> {
        let middleware = (!middleware.is_nil()).then_some(|job: Job| -> Result<Option<Job>, Error> {
            let passed: Value = middleware.funcall("call", (convert::from_json(ruby, &job.into_value()),))?;
            if passed.is_nil() {
                return Ok(None);
            }
            payload_job(&convert::value(ruby, passed), "job")
                .map(Some)
                .map_err(|e| to_ruby(ruby, e))
        });
        let run = |job: serde_json::Value| -> Result<(), Error> {
            let _: Value = run.funcall("call", (convert::from_json(ruby, &job),))?;
            Ok(())
        };
        push_through(
            jobs,
            middleware,
            run,
            |jobs| self.push_jobs(ruby, jobs),
            |e| to_ruby(ruby, e),
        )
    }

    /// One job per args array, in one round trip; nothing is written if any
    /// is invalid. Through the client `middleware` (nil: none), and
    /// recorded in a testing mode (inline mode: `run.call(job)` runs each).
    pub fn push_many(
        ruby: &Ruby,
        rb_self: &Self,
        class_name: String,
        args_list: RArray,
        options: RHash,
        middleware: Value,
        run: Value,
    ) -> Result<Vec<Option<String>>, Error> {
        let jobs = args_list
            .into_iter()
            .map(|args| request(ruby, class_name.clone(), RArray::try_convert(args)?, options))
            .collect::<Result<_, Error>>()?;
        rb_self.push_through(ruby, jobs, middleware, run)
    }

    /// queued, scheduled, running, retrying, dead, succeeded, failed or
    /// unknown, on this client's connection.
    pub fn status(ruby: &Ruby, rb_self: &Self, jid: String) -> Result<String, Error> {
        finish(ruby, |first| {
            rb_self.0.start_api(|api| async move { api.status(&jid).await }, first)
        })
    }

    /// Cancels the job `jid`; says where it was (see `Api::cancel`).
    pub fn cancel(ruby: &Ruby, rb_self: &Self, jid: String) -> Result<String, Error> {
        finish(ruby, |first| {
            rb_self.0.start_api(|api| async move { api.cancel(&jid).await }, first)
        })
    }

    /// What the job came to, as the core decides it: `["succeeded",
    /// value]`, `["failed", record]` or `["pending", status]`; `wait`
    /// seconds for a final outcome.
    pub fn result(ruby: &Ruby, rb_self: &Self, jid: String, wait: Option<f64>) -> Result<(&'static str, Value), Error> {
        let outcome = finish(ruby, |first| {
            rb_self
                .0
                .start_api(|api| async move { api.outcome(&jid, wait).await }, first)
        })?;
        Ok(crate::testing::outcome(ruby, outcome))
    }

    /// Raw payloads (Hashes with at least "class"), in one round trip;
    /// `middleware` and `run` as for `push_many`; `context`: the push
    /// span's trace context, for those that carry none of their own.
    pub fn push_payloads(
        ruby: &Ruby,
        rb_self: &Self,
        payloads: RArray,
        middleware: Value,
        run: Value,
        context: HashMap<String, String>,
    ) -> Result<Vec<Option<String>>, Error> {
        let jobs = payloads.into_iter().enumerate().map(|(i, payload)| {
            payload_job(&convert::value(ruby, payload), &format!("jobs[{i}]")).map_err(|e| to_ruby(ruby, e))
        });
        let mut jobs = jobs.collect::<Result<Vec<Job>, Error>>()?;
        carry_trace_context(&mut jobs, &context);
        rb_self.push_through(ruby, jobs, middleware, run)
    }
}
