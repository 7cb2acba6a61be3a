//! The engine's log lines handed to the host's own logging, for a worker
//! embedded in an application (a test, a Django process, a notebook):
//! Python's `logging` (records with `jid` and `job_class`) or Ruby's
//! `Cogworker.logger`, where `caplog`, `LOGGING`, Sentry and a JSON log
//! pipeline see them. The CLIs keep one format per process instead
//! ([`crate::logging::init`], which wins when it came first).
//!
//! The engine never waits on the host: each line goes into a bounded queue
//! (the oldest is dropped past [`QUEUE_MAX`], and counted), which one host
//! thread drains ([`run_log_forwarding`]) until [`stop_log_forwarding`].

use super::HostWait;
use crate::logging::{add_running_job, Fields};
use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Condvar, Mutex};
use std::time::Duration;
use tracing::{Event, Subscriber};
use tracing_subscriber::layer::{Context, Layer, SubscriberExt};
use tracing_subscriber::util::SubscriberInitExt;

/// Most lines waiting for the host; past it the oldest go.
pub const QUEUE_MAX: usize = 10_000;
/// How long one look of the host's thread blocks.
const SLICE: Duration = Duration::from_millis(100);

/// One engine log line as the host's logging takes it.
#[derive(Clone, Debug, PartialEq)]
pub struct ForwardedLog {
    /// `ERROR`, `WARN`, `INFO`, `DEBUG` or `TRACE`.
    pub level: &'static str,
    /// Where it was logged (`cogworker::completion`): the logger's name.
    pub target: String,
    /// The engine thread that logged it.
    pub thread: String,
    /// The line's text.
    pub message: String,
    /// Its fields (`jid`, `class`, `queue`, `duration_ms`, ...), as text.
    pub fields: Vec<(String, String)>,
}

struct Queue {
    lines: Mutex<VecDeque<ForwardedLog>>,
    arrived: Condvar,
}

static QUEUE: Queue = Queue {
    lines: Mutex::new(VecDeque::new()),
    arrived: Condvar::new(),
};
static STOPPED: AtomicBool = AtomicBool::new(false);
static DROPPED: AtomicU64 = AtomicU64::new(0);

struct Forward;

impl<S: Subscriber> Layer<S> for Forward {
    fn on_event(&self, event: &Event<'_>, _ctx: Context<'_, S>) {
        let mut fields = Fields::default();
        event.record(&mut fields);
        add_running_job(&mut fields.extra);
        let line = ForwardedLog {
            level: event.metadata().level().as_str(),
            target: event.metadata().target().to_string(),
            thread: std::thread::current().name().unwrap_or("-").to_string(),
            message: fields.message,
            fields: fields.extra,
        };
        let mut lines = QUEUE.lines.lock().unwrap_or_else(|p| p.into_inner());
        if lines.len() >= QUEUE_MAX {
            lines.pop_front();
            DROPPED.fetch_add(1, Ordering::Relaxed);
        }
        lines.push_back(line);
        QUEUE.arrived.notify_one();
    }
}

/// Sends the engine's log lines to the host (see the module's doc) unless
/// this process chose a format already; true if it now forwards them. The
/// level is `COGWORKER_LOG`'s, else `info`, as [`crate::logging::init`]'s.
pub fn init_log_forwarding() -> bool {
    tracing_subscriber::registry()
        .with(crate::logging::env_filter())
        .with(Forward)
        .try_init()
        .is_ok()
}

/// Runs the host's log thread: `emit` gets each line, in order, until
/// [`stop_log_forwarding`] (or an error from a wait or from `emit`).
pub fn run_log_forwarding<W: HostWait>(
    wait: &mut W,
    mut emit: impl FnMut(ForwardedLog) -> Result<(), W::Error>,
) -> Result<(), W::Error> {
    STOPPED.store(false, Ordering::SeqCst);
    loop {
        let taken = wait.wait(SLICE, |slice| {
            let lines = QUEUE.lines.lock().unwrap_or_else(|p| p.into_inner());
            let (mut lines, _) = QUEUE
                .arrived
                .wait_timeout_while(lines, slice, |lines| {
                    lines.is_empty() && !STOPPED.load(Ordering::SeqCst)
                })
                .unwrap_or_else(|p| p.into_inner());
            let taken: Vec<ForwardedLog> = lines.drain(..).collect();
            (!taken.is_empty() || STOPPED.load(Ordering::SeqCst)).then_some(taken)
        })?;
        let dropped = DROPPED.swap(0, Ordering::Relaxed);
        if dropped > 0 {
            emit(ForwardedLog {
                level: "WARN",
                target: "cogworker".into(),
                thread: "-".into(),
                message: format!("{dropped} log line(s) dropped: the host's logging did not keep up"),
                fields: Vec::new(),
            })?;
        }
        for line in taken.into_iter().flatten() {
            emit(line)?;
        }
        if STOPPED.load(Ordering::SeqCst) && QUEUE.lines.lock().unwrap_or_else(|p| p.into_inner()).is_empty() {
            return Ok(());
        }
    }
}

/// Ends [`run_log_forwarding`] once what is queued is emitted (at exit:
/// the host's thread leaves before its interpreter goes).
pub fn stop_log_forwarding() {
    STOPPED.store(true, Ordering::SeqCst);
    QUEUE.arrived.notify_all();
}
