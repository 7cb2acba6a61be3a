//! cogworker: a Redis-backed background-job engine that never loses a job.
//!
//! This crate is the whole engine; the Python and Ruby packages are thin
//! layers over it. Push with [`Client`], run with [`Worker`], operate with
//! [`Api`]. See `docs/internals.md` for the moving parts.

#![warn(missing_docs)]

mod admission;
mod api;
mod batch;
pub mod bench;
mod cancel;
mod client;
mod clock;
mod completion;
mod config;
mod connection;
mod delivery;
mod dispatcher;
mod error;
mod events;
mod fetch;
pub mod flow;
mod group_leases;
pub mod groups;
mod handler;
mod heartbeat;
pub mod host;
mod in_progress;
mod job;
mod keys;
mod limiter;
mod slot_feed;

mod host_slots;
mod host_value;
mod locks;
pub mod logging;
pub mod long_jobs;
mod metrics;
mod outbox;
mod periodic;
mod periodic_ticker;
mod printable;
pub mod priority;
mod processor;
mod read_ahead;
mod recovery;
pub mod redis_server;
mod redis_url;
mod report_writer;
mod requeue;
mod results;
mod retry;
pub mod runtime;
mod scheduler;
mod scripts;
mod settings;
mod shared;
pub mod sidekiq;
mod stall;
pub mod time_limit;
mod trace;
mod wakeups;
#[cfg(feature = "web")]
pub mod web;
mod worker;
mod workflow;

pub use api::{
    Api, BatchStatus, BusyJob, CallbackJob, FlowKey, GroupInfo, GroupSummary, JobSet, LimiterInfo, LockInfo,
    PeriodicInfo, ProcessInfo, QueueInfo, SetEntry, SetSearch, Stats, Watch, WatchEvent, FLOW_KEYS_MAX,
    GROUPS_SUMMARIZED, GROUP_CAP_MAX, GROUP_WEIGHT_MAX, SEARCH_SCAN_MAX, SEARCH_TEXT_MAX, SEARCH_TIME_MAX,
};
pub use batch::{
    Batch, BatchEvent, BatchKind, OpenBatch, DEFAULT_BATCH_TTL_SECS, DEFAULT_KEEP_FOR_SECS, MAX_BATCH_DEPTH,
};
pub use cancel::REMEMBERED_MAX as CANCELLATIONS_REMEMBERED_MAX;
pub use client::{Client, ClientMiddleware};
pub use config::{CatchUp, Config, FetchMode, Layout, QueueSpec, DEFAULT_REDIS_URL};
pub use delivery::{Delivery, DeliveryInfo, HANDLER_ABORTED};
pub use error::{Error, Result};
pub use events::{EventHook, WorkerEvent, EVENT_BACKLOG};
pub use handler::{ErrorHook, Failure, Handler, HandlerResult, Middleware, Next, Outcome, UNKNOWN_HANDLER};
pub use job::{
    new_jid, now, safe_string, unique_digest, Job, Retry, CLASS_MAX_LEN, LATEST_EPOCH_SECS, LIMITS_MAX, LONGEST_SECS,
    RATE_KINDS, UNPARSEABLE_CLASS,
};
pub use keys::Keys;
pub use limiter::{Attempt, Lease, Limit, LimitKind, Limiter, DEFAULT_LEASE_TTL};
pub use long_jobs::Running;
pub use metrics::{
    ClassMetrics, MinuteMetrics, TotalMetrics, BUCKETS_SECS, MAX_CLASSES as METRICS_MAX_CLASSES, OTHER_CLASSES,
    UNKNOWN_CLASS,
};
pub use periodic::Periodic;
pub use redis_url::redact_url;
pub use results::JobOutcome;
pub use retry::{default_backoff, EXPIRED, OVER_LIMIT, UNKNOWN_LIMITER};
pub use settings::{Setting, SETTINGS};
pub use shared::{BusyEntry, Lifecycle};
pub use time_limit::TIMEOUT_CLASS;
pub use worker::{NextJob, Worker, WorkerBuilder, WorkerHandle};
pub use workflow::{PushedStep, PushedWorkflow, Step, Workflow};
