//! `Cogworker::Native::Worker` and `Delivery`: the core's host worker. Ruby
//! threads take deliveries with `next_job` (without the GVL, woken by
//! interrupts) and settle each once with `complete`, `fail` or `abandon`;
//! one collected unsettled is abandoned by the core.

use crate::blocking;
use crate::config::RbConfig;
use crate::convert;
use crate::errors::{raise, to_ruby};
use crate::periodic::RbPeriodic;
use cogworker::host::{HostDelivery, HostFailure, HostWorker};
use cogworker::NextJob;
use magnus::{prelude::*, Error, RString, Ruby, Value};

#[magnus::wrap(class = "Cogworker::Native::Delivery", free_immediately, size)]
pub struct RbDelivery(HostDelivery);

impl RbDelivery {
    /// `[class_name, jid, queue, retry_count, args, wants_result]`: `args`
    /// as `JSON.parse` would make them (nil once settled).
    pub fn info(ruby: &Ruby, rb_self: &Self) -> (RString, RString, RString, u32, Value, bool) {
        let info = &rb_self.0.info;
        let args = rb_self
            .0
            .with_args(|args| convert::array_from_json(ruby, args))
            .unwrap_or_else(|| ruby.qnil().as_value());
        (
            ruby.str_new(&info.class),
            ruby.str_new(&info.jid),
            ruby.str_new(&info.queue),
            info.retry_count,
            args,
            info.wants_result,
        )
    }

    /// The whole job, a Hash (every field, for middleware); nil once settled.
    pub fn payload(ruby: &Ruby, rb_self: &Self) -> Value {
        rb_self
            .0
            .with_payload(|fields| {
                let hash = ruby.hash_new();
                for (key, item) in fields {
                    let _ = hash.aset(ruby.str_new(key), convert::from_json(ruby, item));
                }
                hash.as_value()
            })
            .unwrap_or_else(|| ruby.qnil().as_value())
    }

    /// Does the job keep its result (`result_ttl`)?
    pub fn wants_result(&self) -> bool {
        self.0.wants_result()
    }

    /// The job succeeded and returned `value`, kept as its result; raises
    /// (without settling) if JSON cannot hold it.
    pub fn complete_with(ruby: &Ruby, rb_self: &Self, value: Value) -> Result<(), Error> {
        rb_self
            .0
            .complete_with(&convert::value(ruby, value))
            .map_err(|e| to_ruby(ruby, e))
    }

    /// The job succeeded.
    pub fn complete(ruby: &Ruby, rb_self: &Self) -> Result<(), Error> {
        rb_self.0.complete().map_err(|e| to_ruby(ruby, e))
    }

    /// The job failed. Each piece may be nil (reading it raised);
    /// `retry_in` is what the retry hook returned; the core checks it.
    pub fn fail(
        ruby: &Ruby,
        rb_self: &Self,
        class: Value,
        message: Value,
        backtrace: Value,
        retry: Value,
    ) -> Result<(), Error> {
        let [class, message, backtrace, retry] = [class, message, backtrace, retry].map(|v| convert::value(ruby, v));
        let failure = HostFailure::from_values(class, message, backtrace, retry);
        rb_self.0.fail(failure).map_err(|e| to_ruby(ruby, e))
    }

    /// The handler ended without an outcome (`how` says how); nothing once
    /// settled.
    /// (Called after every job: `how` is read only when it is used.)
    pub fn abandon(&self, how: RString) {
        if !self.0.is_settled() {
            self.0.abandon(&how.to_string().unwrap_or_default());
        }
    }
}

#[magnus::wrap(class = "Cogworker::Native::Worker", free_immediately, size)]
pub struct RbWorker(HostWorker);

impl RbWorker {
    /// `handlers`: the classes registered in Ruby (the only ones that run);
    /// `periodic`: the entries (`Native::Periodic`).
    pub fn new(
        ruby: &Ruby,
        config: &RbConfig,
        handlers: Vec<String>,
        periodic: magnus::RArray,
        client_middleware: bool,
    ) -> Result<Self, Error> {
        let periodic = periodic
            .into_iter()
            .map(|entry| <&RbPeriodic as magnus::TryConvert>::try_convert(entry).map(|entry| entry.0.clone()))
            .collect::<Result<Vec<_>, Error>>()?;
        HostWorker::new(config.config(), &handlers, &periodic, client_middleware)
            .map(RbWorker)
            .map_err(|e| to_ruby(ruby, e))
    }

    pub fn start(ruby: &Ruby, rb_self: &Self) -> Result<(), Error> {
        rb_self.0.start().map_err(|e| to_ruby(ruby, e))
    }

    /// A `Delivery`, `nil` when idle, `:stopped` when the worker is stopping.
    pub fn next_job(ruby: &Ruby, rb_self: &Self, timeout: f64) -> Result<Value, Error> {
        // A job already waiting is taken without giving up the GVL (under
        // load, most calls): releasing and retaking it costs more than the job.
        let next = match rb_self.0.try_next_job() {
            NextJob::Idle => blocking::wait(ruby, Some(timeout), |slice| rb_self.0.next_job(slice))?,
            ready => Some(ready),
        };
        Ok(match next {
            Some(NextJob::Job(delivery)) => ruby.obj_wrap(RbDelivery(HostDelivery::new(delivery))).as_value(),
            Some(NextJob::Stopped) => ruby.to_symbol("stopped").as_value(),
            Some(NextJob::Idle) | None => ruby.qnil().as_value(),
        })
    }

    /// Waits up to `timeout` seconds for a worker event: `[name, job]`
    /// (a Hash for "death" only), `["ended", nil]` once the engine has shut
    /// down and every event was read, nil meanwhile.
    pub fn next_event(ruby: &Ruby, rb_self: &Self, timeout: f64) -> Result<Option<(&'static str, Value)>, Error> {
        let next = blocking::wait(ruby, Some(timeout), |slice| rb_self.0.next_event(slice).into_parts())?;
        Ok(next.map(|parts| event(ruby, parts)))
    }

    /// As `next_event`, for the periodic jobs for the client middleware
    /// alone (`["client_middleware", job]`), on a thread of their own.
    pub fn next_client_middleware(
        ruby: &Ruby,
        rb_self: &Self,
        timeout: f64,
    ) -> Result<Option<(&'static str, Value)>, Error> {
        let next = blocking::wait(ruby, Some(timeout), |slice| {
            rb_self.0.next_client_middleware(slice).into_parts()
        })?;
        Ok(next.map(|parts| event(ruby, parts)))
    }

    /// Waits up to `timeout` seconds for the engine's shutdown; true once done.
    pub fn wait(ruby: &Ruby, rb_self: &Self, timeout: f64) -> Result<bool, Error> {
        let finished = blocking::wait(ruby, Some(timeout), |slice| rb_self.0.finished(slice))?;
        Ok(finished
            .transpose()
            .map_err(|message| raise(ruby, "Error", message))?
            .is_some())
    }

    /// The client middleware's answer for the periodic job `jid`: the
    /// job, or nil to push nothing.
    pub fn reply_client_middleware(ruby: &Ruby, rb_self: &Self, jid: String, job: Value) {
        let job = (!job.is_nil()).then(|| convert::value(ruby, job));
        rb_self.0.reply_client_middleware(&jid, job.as_ref());
    }

    /// The client middleware raised on the periodic job `jid`: pushed as it was.
    pub fn client_middleware_raised(&self, jid: String, error: String) {
        self.0.client_middleware_raised(&jid, &error);
    }
    pub fn quiet(&self) {
        self.0.quiet();
    }
    pub fn stop(&self) {
        self.0.stop();
    }
    pub fn given_back(&self) -> usize {
        self.0.given_back()
    }
    pub fn identity(&self) -> String {
        self.0.identity().to_string()
    }
    pub fn lifecycle(&self) -> &'static str {
        self.0.lifecycle()
    }
    /// Logs the jobs running now (TTIN), in the engine's words.
    pub fn log_busy(&self) {
        self.0.log_busy();
    }
    /// A signal the worker command caught; true: also log the threads' stacks.
    pub fn signal(&self, name: String) -> bool {
        self.0.signal(&name)
    }
    /// After shutdown: join the slot threads? (Not when jobs were given back.)
    pub fn join_slots(&self) -> bool {
        self.0.join_slots()
    }
    /// After the joins: exit the process at once?
    pub fn exit_at_once(&self, all_joined: bool) -> bool {
        self.0.exit_at_once(all_joined)
    }
    pub fn busy(ruby: &Ruby, rb_self: &Self) -> Value {
        convert::from_json(ruby, &rb_self.0.busy())
    }
}

/// A worker event as Ruby sees it: its name, and the job (a Hash) for
/// "death" and "client_middleware".
fn event(ruby: &Ruby, (name, job): (&'static str, Option<serde_json::Value>)) -> (&'static str, Value) {
    let job = job.map_or_else(|| ruby.qnil().as_value(), |job| convert::from_json(ruby, &job));
    (name, job)
}
