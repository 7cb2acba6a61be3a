//! The protocol a host language speaks to the core. A binding (Python,
//! Ruby) converts values and errors and releases its interpreter lock around
//! the blocking calls here; everything that decides something lives here or
//! below:
//!
//! - [`HostWorker`]: a worker whose slots are host threads, with the
//!   allow-list of handler names; its deliveries settle exactly once
//!   (see [`crate::Delivery`]), by one rule ([`HostWorker::settle`]), in
//!   one slot loop and one events loop ([`HostWorker::run_slot`],
//!   [`HostWorker::run_hooks`], [`HostWorker::run_client_middleware`]) run on the host's threads;
//! - [`HostValue`]: a host's value, mapped type for type, judged here
//!   (what JSON can hold, what a setting takes);
//! - [`HostFailure`]: how a host reports a failure from raw pieces, none of
//!   which can make recording the failure fail;
//! - [`host_push_span`], [`host_job_span`]: the spans a host opens with
//!   its own OpenTelemetry API, named and described as the engine's own,
//!   and what else those calls write ([`TRACE_CONTEXT_FIELDS`],
//!   [`host_span_failure`], ...);
//! - [`periodic_entry`]: a periodic entry built and checked from host values;
//! - [`PushRequest`]: the job payload built and validated once for every
//!   language (pushes and the testing modes alike);
//! - [`api_calls`]: every ops-API call by name, with JSON results (the
//!   Rust API itself is [`crate::Api`]);
//! - [`admin`]: the admin commands both CLIs run;
//! - [`HostDelivery`]: a delivery held by a host object, settled once;
//! - [`Session`]: a configuration's lazily built, fork-safe client and API;
//! - [`HostLimiter`]: a rate limiter defined from host values, written on
//!   first use;
//! - [`supervisor`]: the parent of a multi-process worker (`-p N`);
//! - [`testing`]: the fake and inline modes, what they record and keep;
//! - [`workflow`]: batch callbacks, workflow steps, groups and shapes,
//!   each made once for both hosts;
//! - [`flags`]: the worker command's flags, one per setting, for both CLIs;
//!   [`command_flags`]: those of `web`, `metrics` and the admin commands;
//! - [`check_version`]: a package refuses a native module of another version;
//! - [`wait`]: the one way to block in slices that stay interruptible, and
//!   [`spawn`] to run a core operation it can wait for.

pub mod admin;
pub mod api_calls;
mod cli;
mod delivery;
mod failure;
pub mod flags;
mod hooks;
mod lanes;
mod limiter;
mod logs;
mod periodic;
mod push;
mod session;
mod slot_loop;
mod spans;
pub mod supervisor;
pub mod testing;
mod version;
mod wait;
mod watching;
mod worker;
pub mod workflow;

pub use crate::host_value::HostValue;
pub use crate::job::MAX_NESTING;
pub use crate::trace::{host_job_span, host_push_span, HostSpan};
#[cfg(feature = "web")]
pub use cli::web_args;
pub use cli::{
    app_not_loaded, command_connection, command_flags, init_cli_logging, secret_on_command_line,
    warn_secret_on_command_line, CommandFlag, GivenFlags, EXIT_USAGE, LOGGING_FLAGS,
};
pub use delivery::HostDelivery;
pub use failure::{HostFailure, RetryHint};
pub use hooks::{hook_raised, lifecycle_event, LIFECYCLE_EVENTS};
pub use limiter::{HostLimiter, DEFAULT_WAIT as LIMITER_WAIT, LIMITER_KINDS};
pub use logs::{init_log_forwarding, run_log_forwarding, stop_log_forwarding, ForwardedLog};
pub use periodic::periodic_entry;
pub use push::{payload_job, prepared, push_through, PushRequest, COMPUTED_OPTIONS, COMPUTED_STAND_IN, PUSH_OPTIONS};
pub use session::{in_runtime, Session};
pub use slot_loop::{Described, Ended, HostWait, SettledBy, WAIT_SLICE};
pub use spans::{
    carry_trace_context, host_message_attributes, host_payloads_span, host_span_failure, TRACER_NAME,
    TRACE_CONTEXT_FIELDS,
};
pub use version::{check_version, VERSION};
pub use wait::{deadline_after, sleep_slice, spawn, start, wait, Pending, Started, Waited, ON_CALLING_THREAD};
pub use watching::HostWatch;
pub use worker::{slot_thread_name, HostWorker, NextEvent, HOST_THREADS, TIME_LIMIT_PASSED, WORKER_SIGNALS};
