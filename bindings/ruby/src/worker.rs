//! `Cogworker::Native::Worker` and `Delivery`: the core's host worker. Ruby
//! threads run the core's slot loop (`run_slot`: waits without the GVL,
//! woken by interrupts), which calls the runner's `perform` for each
//! delivery and settles it once by the core's rule; the events threads run
//! the core's events loop. One delivery collected unsettled is abandoned by
//! the core.

use crate::blocking;
use crate::config::RbConfig;
use crate::convert;
use crate::errors::{raise, to_ruby};
use crate::periodic::RbPeriodic;
use cogworker::host::{Described, Ended, HostDelivery, HostFailure, HostWorker, SettledBy};
use magnus::rb_sys::{AsRawValue, FromRawValue};
use magnus::{prelude::*, typed_data::Obj, Error, RString, Ruby, Value};
use std::time::Duration;

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

    /// Was the job cancelled while it runs? (The job may stop early;
    /// however it ends, it is filed as cancelled.)
    pub fn cancelled(&self) -> bool {
        self.0.is_cancelled()
    }

    /// Reports progress (docs/long-jobs.md): `percent` 0 to 100 or nil, a
    /// short `message` or nil, JSON-able `data` or nil; coalesced by the core.
    pub fn progress(
        ruby: &Ruby,
        rb_self: &Self,
        percent: Option<f64>,
        message: Option<String>,
        data: Value,
    ) -> Result<(), Error> {
        let data = convert::value(ruby, data);
        rb_self
            .0
            .progress(percent, message.as_deref(), &data)
            .map_err(|e| to_ruby(ruby, e))
    }

    /// Saves `cursor` (JSON data) as where the job resumes.
    pub fn checkpoint(ruby: &Ruby, rb_self: &Self, cursor: Value) -> Result<(), Error> {
        rb_self
            .0
            .checkpoint(&convert::value(ruby, cursor))
            .map_err(|e| to_ruby(ruby, e))
    }

    /// The cursor the job resumes from (nil on a first run).
    pub fn cursor(ruby: &Ruby, rb_self: &Self) -> Value {
        rb_self
            .0
            .cursor()
            .map_or_else(|| ruby.qnil().as_value(), |cursor| convert::from_json(ruby, &cursor))
    }

    /// Should the job stop now (shutdown, cancelled, near its time limit)?
    pub fn stopping(&self) -> bool {
        self.0.is_stopping()
    }

    /// One item of an iteration is done: saves `cursor`; whether to go on.
    pub fn iterated(ruby: &Ruby, rb_self: &Self, cursor: Value, max_runtime: Option<f64>) -> Result<bool, Error> {
        rb_self
            .0
            .iterated(&convert::value(ruby, cursor), max_runtime)
            .map_err(|e| to_ruby(ruby, e))
    }

    /// Put the job back on its queue with its cursor when it returns.
    pub fn interrupt(&self) {
        self.0.interrupt();
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

    /// `[name, attributes, carrier]` of the CONSUMER span around `perform`
    /// (`carrier`: the trace context the job carries); nil once settled.
    pub fn job_span(ruby: &Ruby, rb_self: &Self) -> Value {
        match rb_self.0.job_span() {
            Some((name, attributes, carrier)) => {
                let [attributes, carrier] =
                    [attributes, carrier].map(|m| convert::from_json(ruby, &serde_json::Value::Object(m)));
                ruby.ary_new_from_values(&[ruby.str_new(&name).as_value(), attributes, carrier])
                    .as_value()
            }
            None => ruby.qnil().as_value(),
        }
    }

    /// The handler ended without an outcome (`how` says how); nothing once
    /// settled. (Called after every job: `how` is read only when it is
    /// used.)
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

    /// Runs this thread as one of the worker's slots until it stops:
    /// `perform.call(delivery)` runs the job and returns its value (or
    /// raises); `describe.call(delivery, error)` runs the error handlers and
    /// says what to record: `[error_class, message, backtrace, retry_in,
    /// stops_worker]`. The core settles each delivery once. A thread killed
    /// meanwhile leaves its delivery abandoned (filed by the engine).
    pub fn run_slot(ruby: &Ruby, rb_self: &Self, perform: Value, describe: Value) -> Result<(), Error> {
        let worker = &rb_self.0;
        // This thread, as the timekeeper names it (see `run_timekeeper`):
        // alive while it runs a handler, which is when it is named.
        let thread = ruby.thread_current();
        let thread_id: u64 = thread.as_raw();
        let ran = worker.run_slot(&mut blocking::Blocking(ruby), |delivery| {
            let delivery = ruby.obj_wrap(RbDelivery(delivery));
            let called = delivery
                .0
                .perform(thread_id, || perform.funcall::<_, _, Value>("call", (delivery,)));
            let ended = match called {
                Ok(value) => Ended::Returned(value),
                Err(error) => match exception(&error) {
                    Some(raised) => Ended::Raised(raised),
                    None => {
                        delivery
                            .0
                            .abandon("the Ruby thread running it ended without settling it (killed?)");
                        return Err(error);
                    }
                },
            };
            let mut jumped = None;
            worker.settle(
                SettledBy::Slot,
                &delivery.0,
                ended,
                |value| convert::value(ruby, value),
                |error| exception(&to_ruby(ruby, error)).unwrap_or_else(|| ruby.qnil().as_value()),
                |raised| described(ruby, describe, delivery, raised, &mut jumped),
            );
            jumped.map_or(Ok(()), Err)
        });
        // Kept on this thread's stack until here, where Ruby's GC sees it.
        std::hint::black_box(thread);
        ran
    }

    /// Runs this thread as the worker's timekeeper until the engine has
    /// shut down: when a job's time limit passes while its handler runs,
    /// `Cogworker::JobTimeout` is raised in that handler's thread
    /// (`Thread#raise`: a C extension holding the GVL is not interrupted).
    /// In a child of `-p N`, `retry_hook.call(class_name, retry_count)` is
    /// asked first what the job's retry hook says of a timeout.
    pub fn run_timekeeper(ruby: &Ruby, rb_self: &Self, retry_hook: Value) -> Result<(), Error> {
        let ask = |class: &str, retry_count: u32| match retry_hook.funcall::<_, _, Value>("call", (class, retry_count))
        {
            Ok(said) => Ok(convert::retry_hint(ruby, said)),
            Err(error) if exception(&error).is_none() => Err(error),
            Err(_) => Ok(cogworker::host::RetryHint::Default),
        };
        rb_self
            .0
            .run_timekeeper(&mut blocking::Blocking(ruby), ask, |thread_id| {
                // SAFETY: the id is a slot thread's VALUE, named only while
                // that thread runs a handler (it is alive and marked then), and
                // looked at here with the GVL held.
                let thread = unsafe { Value::from_raw(thread_id as rb_sys::VALUE) };
                let timeout = crate::errors::class(ruby, "JobTimeout");
                match thread.funcall::<_, _, Value>("raise", (timeout, cogworker::host::TIME_LIMIT_PASSED)) {
                    Err(error) if exception(&error).is_none() => Err(error),
                    _ => Ok(()),
                }
            })
    }

    /// Runs this thread as the worker's events thread until the engine has
    /// shut down and every event was handled: `dispatch.call(name, job)`
    /// runs the application's hooks for each (`job`: a Hash for "death").
    pub fn run_hooks(ruby: &Ruby, rb_self: &Self, dispatch: Value) -> Result<(), Error> {
        rb_self.0.run_hooks(&mut blocking::Blocking(ruby), |name, job| {
            let job = job.map_or_else(|| ruby.qnil().as_value(), |job| convert::from_json(ruby, &job));
            match dispatch.funcall::<_, _, Value>("call", (name, job)) {
                Err(error) if exception(&error).is_none() => Err(error),
                _ => Ok(()), // the hooks rescue and log what they raise
            }
        })
    }

    /// Runs this thread for the periodic jobs the worker pushes through the
    /// client middleware: `push.call(job)` returns the job to push, or nil
    /// to push nothing; one that raises is pushed as it was.
    pub fn run_client_middleware(ruby: &Ruby, rb_self: &Self, push: Value) -> Result<(), Error> {
        rb_self.0.run_client_middleware(&mut blocking::Blocking(ruby), |job| {
            Ok(
                match push.funcall::<_, _, Value>("call", (convert::from_json(ruby, job),)) {
                    Ok(pushed) if pushed.is_nil() => Ok(None),
                    Ok(pushed) => Ok(Some(convert::value(ruby, pushed))),
                    Err(error) => match exception(&error) {
                        Some(raised) => Err(crate::errors::describe(raised)),
                        None => return Err(error),
                    },
                },
            )
        })
    }

    /// After the engine's shutdown: waits (without the GVL) until the slot
    /// threads (unless `slots` is false) and events threads have left their
    /// loops, up to `timeout` seconds; whether every slot did.
    pub fn join(ruby: &Ruby, rb_self: &Self, timeout: f64, slots: bool) -> Result<bool, Error> {
        let timeout = Duration::from_secs_f64(timeout.clamp(0.0, 1e9));
        blocking::nogvl(ruby, || rb_self.0.join(timeout, slots))
    }

    /// Waits up to `timeout` seconds for the engine's shutdown; true once done.
    pub fn wait(ruby: &Ruby, rb_self: &Self, timeout: f64) -> Result<bool, Error> {
        let finished = blocking::wait(ruby, Some(timeout), |slice| rb_self.0.finished(slice))?;
        Ok(finished
            .transpose()
            .map_err(|message| raise(ruby, "Error", message))?
            .is_some())
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
    /// A slot thread (`thread`, by name) left its loop early: true, and a
    /// warning, when another should take its place (not while stopping).
    pub fn slot_ended_early(&self, thread: String) -> bool {
        self.0.slot_ended_early(&thread)
    }

    /// Logs the jobs running now (TTIN), in the engine's words.
    pub fn log_busy(&self) {
        self.0.log_busy();
    }

    /// Logs each thread's stack (TTIN), in the engine's words: `[name,
    /// main?, stack]` of each.
    pub fn log_thread_stacks(threads: Vec<(String, bool, String)>) {
        HostWorker::log_thread_stacks(&threads);
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

/// The exception an error carries; `None` for a jump (a killed thread,
/// `throw`), which must go on unwinding.
pub(crate) fn exception(error: &Error) -> Option<Value> {
    match error.error_type() {
        magnus::error::ErrorType::Exception(exception) => Some(exception.as_value()),
        magnus::error::ErrorType::Error(class, message) => {
            class.new_instance((message.as_ref(),)).ok().map(|e| e.as_value())
        }
        magnus::error::ErrorType::Jump(_) => None,
    }
}

/// What the runner's `describe` says of `raised`; `None` when it raised
/// (a jump out of it is kept in `jumped`, to go on once the job is settled).
fn described(
    ruby: &Ruby,
    describe: Value,
    delivery: Obj<RbDelivery>,
    raised: Value,
    jumped: &mut Option<Error>,
) -> Option<Described> {
    match describe.funcall::<_, _, (Value, Value, Value, Value, bool)>("call", (delivery, raised)) {
        Ok((class, message, backtrace, retry, stops_worker)) => {
            let [class, message, backtrace] = [class, message, backtrace].map(|v| convert::value(ruby, v));
            Some(Described {
                failure: HostFailure::from_values(class, message, backtrace, convert::retry_hint(ruby, retry)),
                stops_worker,
            })
        }
        Err(error) => {
            if exception(&error).is_none() {
                *jumped = Some(error);
            }
            None
        }
    }
}
