//! The worker process: wires the components together and runs them under
//! supervision (docs/internals.md, "Crashes and shutdown"). `builder.rs`
//! builds a [`Worker`], `handle.rs` controls a running one (and is how host
//! threads take jobs), `shutdown.rs` is the stop sequence.

/// A lifecycle line (starting, started, stopping, stopped): INFO, or
/// DEBUG for a quiet worker ([`Shared::quiet`], the bench's).
macro_rules! lifecycle {
    ($shared:expr, $($arg:tt)+) => {
        if $shared.quiet {
            tracing::debug!($($arg)+)
        } else {
            tracing::info!($($arg)+)
        }
    };
}
use lifecycle;

mod builder;
mod handle;
mod overrun;
mod shutdown;

pub use builder::WorkerBuilder;
pub use handle::{NextJob, WorkerHandle};

use crate::delivery::Completion;
use crate::error::Result;
use crate::events::{self, EventHook, WorkerEvent};
use crate::handler::Registry;
use crate::shared::{Lifecycle, Shared};
use crate::slot_feed::{Intake, SlotFeed};
use crate::{completion, dispatcher, heartbeat, logging, periodic_ticker, processor, recovery, scheduler};
use std::future::Future;
use std::sync::Arc;
use std::time::Duration;
use tokio::task::JoinHandle;

/// One worker process. Build it, take [`Worker::handle`]s, then
/// [`Worker::run`] it until it is stopped.
pub struct Worker {
    shared: Arc<Shared>,
    registry: Arc<Registry>,
    host_classes: Vec<String>,
    /// The fetch loop's end and the slots' end: to Rust processor tasks,
    /// or to host threads (with [`WorkerBuilder::host_slots`]).
    feed: SlotFeed,
    intake: Intake,
    completions_rx: flume::Receiver<Completion>,
    events_rx: Option<flume::Receiver<WorkerEvent>>,
    /// The periodic jobs for the host's client middleware, apart from the
    /// events (see [`Worker::take_client_middleware_requests`]).
    requests_rx: Option<flume::Receiver<WorkerEvent>>,
    event_hooks: Vec<EventHook>,
}

impl Worker {
    /// With [`WorkerBuilder::host_events`]: the events, for the host to
    /// read (once; `None` after).
    pub fn take_events(&mut self) -> Option<flume::Receiver<WorkerEvent>> {
        self.events_rx.take()
    }

    /// With [`WorkerBuilder::host_client_middleware`]: the periodic jobs
    /// for the host's client middleware ([`WorkerEvent::ClientMiddleware`]),
    /// on their own channel, for a host thread that runs no other hook
    /// (once; `None` after).
    pub fn take_client_middleware_requests(&mut self) -> Option<flume::Receiver<WorkerEvent>> {
        self.requests_rx.take()
    }

    /// A handle to control it and, for host slots, take jobs.
    pub fn handle(&self) -> WorkerHandle {
        WorkerHandle {
            shared: self.shared.clone(),
            intake: self.intake.clone(),
        }
    }

    /// This process's identity (`host:pid:random`).
    pub fn identity(&self) -> &str {
        &self.shared.identity
    }

    /// Runs until stopped (by [`WorkerHandle::stop`], a remote stop, or an
    /// opted-in signal), then shuts down cleanly and returns.
    pub async fn run(mut self) -> Result<()> {
        let shared = self.shared.clone();
        if let Some(events) = self.events_rx.take().filter(|_| !self.event_hooks.is_empty()) {
            tokio::spawn(events::dispatch(events, std::mem::take(&mut self.event_hooks)));
        }
        logging::set_identity(&shared.identity);
        let config = &shared.config;
        lifecycle!(
            shared,
            "cogworker {} starting: redis={} namespace={} concurrency={} queues=[{}]{}",
            env!("CARGO_PKG_VERSION"),
            config.redis_url_redacted(),
            config.namespace(),
            config.concurrency(),
            config
                .queues()
                .iter()
                .map(|q| format!("{}:{}", q.name, q.weight))
                .collect::<Vec<_>>()
                .join(", "),
            if config.strict_order() { " (strict)" } else { "" },
        );
        // One line for every worker, whichever language runs its handlers.
        let mut classes = if self.intake.is_host() {
            self.host_classes.clone()
        } else {
            self.registry.classes()
        };
        classes.sort();
        classes.dedup();
        if classes.is_empty() {
            tracing::warn!("no handlers registered: every job taken will fail");
        } else {
            lifecycle!(shared, "{} handler(s): {}", classes.len(), classes.join(", "));
        }

        self.report_periodic();

        // First beat before any fetch: recovery must see this process alive
        // before its in-progress list can hold anything.
        if !heartbeat::first_beat(&shared).await {
            tracing::info!("stop received before startup completed");
            return Ok(());
        }
        shared.events.emit(WorkerEvent::Startup);

        let mut background = vec![
            supervise("heartbeat", &shared, heartbeat::run),
            supervise("signals", &shared, heartbeat::listen_for_signals),
            supervise("recovery", &shared, recovery::run),
            supervise("scheduler", &shared, scheduler::run),
        ];
        background.push(supervise("periodic", &shared, periodic_ticker::run));
        background.push(supervise("reports", &shared, crate::report_writer::run));
        if self.intake.is_host() {
            // Host threads' time limits (a Rust slot keeps its own).
            background.push(supervise("time-limits", &shared, overrun::run));
        }
        let completions_rx = self.completions_rx.clone();
        let completer = supervise("completion", &shared, move |s| {
            completion::run(s, completions_rx.clone())
        });
        // The fetch loop holds the only sender: when it ends, processors
        // waiting on the channel see it closed.
        let (feed, waiting) = (self.feed, self.intake.clone());
        let dispatcher = supervise("fetch", &shared, move |s| {
            dispatcher::run(s, feed.clone(), waiting.clone())
        });
        let mut processors = Vec::new();
        if let Intake::Tasks(slots) = &self.intake {
            for _ in 0..config.concurrency() {
                let (registry, slots) = (self.registry.clone(), slots.clone());
                processors.push(supervise("processor", &shared, move |s| {
                    processor::run(s, registry.clone(), slots.clone())
                }));
            }
        }
        lifecycle!(
            shared,
            "started: {} fetch, {} slot(s){}",
            if shared.is_reliable() { "reliable" } else { "basic" },
            config.concurrency(),
            if self.intake.is_host() { " (host threads)" } else { "" }
        );

        shared.reached(Lifecycle::Stopping).await;
        shutdown::shutdown(&shared, dispatcher, &self.intake).await;
        for task in processors.into_iter().chain(background.drain(..)) {
            task.abort();
        }
        completer.abort();
        match heartbeat::unregister(&shared).await {
            Ok(0) => {}
            Ok(left) => tracing::warn!("{left} job(s) left in progress for recovery"),
            Err(e) => tracing::error!("could not remove presence keys: {e}"),
        }
        lifecycle!(shared, "stopped");
        Ok(())
    }
}

impl Worker {
    /// Logs the periodic entries, resolved against the handlers known here
    /// at boot: an entry whose class this process cannot run is reported
    /// and still ticks (a worker in another language may run it).
    fn report_periodic(&self) {
        for entry in &self.shared.periodic.entries {
            let runnable = if self.intake.is_host() {
                self.host_classes.iter().any(|c| c == entry.class())
            } else {
                self.registry.get(entry.class()).is_some()
            };
            tracing::info!(
                "periodic {} ({}{}) → queue {}{}",
                entry.class(),
                entry.cron(),
                if entry.is_until_executed() {
                    ", until_executed"
                } else {
                    ""
                },
                entry.queue_name(),
                if runnable { "" } else { " (no handler in this process)" }
            );
            if !runnable {
                tracing::warn!(
                    "periodic class {} has no handler in this process; its jobs are still pushed \
                     to queue {} for a worker that has one",
                    entry.class(),
                    entry.queue_name()
                );
            }
        }
    }
}

/// Runs a component, restarting it (after a pause) if it panics, until the
/// process stops.
fn supervise<F, Fut>(name: &'static str, shared: &Arc<Shared>, component: F) -> JoinHandle<()>
where
    F: Fn(Arc<Shared>) -> Fut + Send + 'static,
    Fut: Future<Output = ()> + Send + 'static,
{
    let shared = shared.clone();
    tokio::spawn(async move {
        loop {
            match tokio::spawn(component(shared.clone())).await {
                Ok(()) => return,
                Err(e) if e.is_panic() => {
                    tracing::error!("cogworker.{name} panicked; restarting in 1s: {e}");
                    tokio::time::sleep(Duration::from_secs(1)).await;
                }
                Err(_) => return,
            }
        }
    })
}
