//! What happens to a worker process, for the application's hooks: it
//! started, went quiet, began shutting down, beat, or filed a job in
//! `dead`. The engine only ever `try_send`s (a hook that is slow, or a host
//! that never reads, costs the engine nothing: past [`EVENT_BACKLOG`]
//! unread events the newest are dropped, with a warning). Rust hooks run on
//! a task of their own ([`dispatch`]); host languages read them with
//! `HostWorker::next_event` on a thread of theirs.

use std::panic::AssertUnwindSafe;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

/// Unread events kept before new ones are dropped.
pub const EVENT_BACKLOG: usize = 10_000;

/// Something that happened to this worker process.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum WorkerEvent {
    /// Registered with Redis; about to take jobs.
    Startup,
    /// Takes no new jobs from now on (TSTP, a remote quiet, `quiet()`).
    Quiet,
    /// Shutdown has begun.
    Shutdown,
    /// A heartbeat was written.
    Heartbeat,
    /// A job was filed in `dead` (out of retries, or not runnable): its
    /// payload as filed, with `error_class`, `error_message`, ... .
    Died {
        /// The payload as filed in `dead`.
        job: serde_json::Value,
    },
    /// A periodic job this worker is about to push, for the host
    /// language's client middleware (workers built with
    /// `WorkerBuilder::host_client_middleware`): answer with
    /// `WorkerHandle::reply_client_middleware`.
    ClientMiddleware {
        /// The job as it would be pushed.
        job: serde_json::Value,
    },
}

/// The host's answer to a [`WorkerEvent::ClientMiddleware`] request.
#[derive(Debug)]
pub(crate) enum MiddlewareAnswer {
    /// Push this job (the middleware's changes in it).
    Push(serde_json::Value),
    /// A middleware stopped the push.
    Skip,
    /// A middleware raised (what it raised): the job is pushed as it was
    /// asked about, whatever the middleware changed before raising.
    Raised(String),
}

impl WorkerEvent {
    /// `startup`, `quiet`, `shutdown`, `heartbeat`, `death` or
    /// `client_middleware`: the names
    /// the Python and Ruby hooks are registered under.
    pub fn name(&self) -> &'static str {
        match self {
            WorkerEvent::Startup => "startup",
            WorkerEvent::Quiet => "quiet",
            WorkerEvent::Shutdown => "shutdown",
            WorkerEvent::Heartbeat => "heartbeat",
            WorkerEvent::Died { .. } => "death",
            WorkerEvent::ClientMiddleware { .. } => "client_middleware",
        }
    }
}

/// A hook on [`WorkerEvent`]s (see `WorkerBuilder::on_event`).
pub type EventHook = Arc<dyn Fn(&WorkerEvent) + Send + Sync>;

/// Where the engine sends events; nowhere unless someone listens.
#[derive(Default)]
pub(crate) struct Events {
    tx: Option<flume::Sender<WorkerEvent>>,
    /// [`WorkerEvent::ClientMiddleware`] requests, on a channel of their
    /// own: the periodic ticker waits for their answers, and must never
    /// wait behind an application's hook (a death handler that took 12 s
    /// once made it push jobs without the middleware and skip slots).
    requests: Option<flume::Sender<WorkerEvent>>,
    overflowed: AtomicBool,
}

impl Events {
    /// Events to `tx`.
    pub fn to(tx: flume::Sender<WorkerEvent>) -> Self {
        Events {
            tx: Some(tx),
            requests: None,
            overflowed: AtomicBool::new(false),
        }
    }

    /// Client-middleware requests to `requests` instead.
    pub fn with_requests(mut self, requests: flume::Sender<WorkerEvent>) -> Self {
        self.requests = Some(requests);
        self
    }

    pub fn emit(&self, event: WorkerEvent) {
        if let (WorkerEvent::ClientMiddleware { .. }, Some(requests)) = (&event, &self.requests) {
            // One at a time: the ticker waits for each answer.
            let _ = requests.try_send(event);
            return;
        }
        let Some(tx) = &self.tx else { return };
        if tx.try_send(event).is_err() && !self.overflowed.swap(true, Ordering::Relaxed) {
            tracing::warn!(
                "{EVENT_BACKLOG} worker events unread (hooks too slow?): newer ones are dropped until they are read"
            );
        } else if tx.len() < EVENT_BACKLOG / 2 {
            self.overflowed.store(false, Ordering::Relaxed);
        }
    }
}

/// Calls `hooks` with every event until the engine is gone. A hook that
/// panics is logged and the next one runs.
pub(crate) async fn dispatch(events: flume::Receiver<WorkerEvent>, hooks: Vec<EventHook>) {
    while let Ok(event) = events.recv_async().await {
        for hook in &hooks {
            if std::panic::catch_unwind(AssertUnwindSafe(|| hook(&event))).is_err() {
                tracing::error!("a {} hook panicked; the worker goes on", event.name());
            }
        }
    }
}
