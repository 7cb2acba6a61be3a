//! The worker process: wires the components together, runs them under
//! supervision, and drives the shutdown sequence (docs/internals.md, "Crashes and shutdown").

use crate::client::{ClientChain, ClientMiddleware};
use crate::completion::Completion;
use crate::config::Config;
use crate::connection::Redis;
use crate::delivery::Delivery;
use crate::error::Result;
use crate::events::{self, EventHook, Events, WorkerEvent, EVENT_BACKLOG};
use crate::handler::{AsyncFn, BlockingFn, Failure, Handler, Middleware, Outcome, Registry, WithRetryIn};
use crate::handover::{self, Handover, Intake, Taken};
use crate::in_progress::NOT_HELD;
use crate::job::Job;
use crate::periodic::{self, Periodic};
use crate::shared::{BusyEntry, Lifecycle, Shared};
use crate::{completion, dispatcher, heartbeat, logging, processor, recovery, scheduler};
use std::future::Future;
use std::marker::PhantomData;
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::task::JoinHandle;

/// How long shutdown waits for an in-flight fetch and for pending writes.
const SHUTDOWN_STEP_LIMIT: Duration = Duration::from_secs(15);

/// Builds a [`Worker`]: settings, handlers by class name, middleware.
pub struct WorkerBuilder {
    config: Config,
    registry: Registry,
    host_slots: bool,
    host_classes: Vec<String>,
    periodic: Vec<Periodic>,
    event_hooks: Vec<EventHook>,
    host_events: bool,
    client_middleware: ClientChain,
    host_client_middleware: bool,
}

impl WorkerBuilder {
    /// An async handler for jobs whose `class` is `class`.
    pub fn register<F, Fut>(self, class: &str, handler: F) -> Self
    where
        F: Fn(Job) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<(), Failure>> + Send + 'static,
    {
        self.register_handler(class, Arc::new(AsyncFn(handler, PhantomData)))
    }

    /// An async handler whose value is kept as the job's result when the
    /// job was pushed with `result_ttl` (what `result(jid)` answers in
    /// every language).
    pub fn register_returning<F, Fut>(self, class: &str, handler: F) -> Self
    where
        F: Fn(Job) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<serde_json::Value, Failure>> + Send + 'static,
    {
        self.register_handler(class, Arc::new(AsyncFn(handler, PhantomData)))
    }

    /// A blocking handler, run on the blocking thread pool.
    pub fn register_blocking<F>(self, class: &str, handler: F) -> Self
    where
        F: Fn(Job) -> Result<(), Failure> + Send + Sync + 'static,
    {
        self.register_handler(class, Arc::new(BlockingFn(Arc::new(handler), PhantomData)))
    }

    /// A blocking handler whose value is kept as the job's result (see
    /// [`WorkerBuilder::register_returning`]).
    pub fn register_blocking_returning<F>(self, class: &str, handler: F) -> Self
    where
        F: Fn(Job) -> Result<serde_json::Value, Failure> + Send + Sync + 'static,
    {
        self.register_handler(class, Arc::new(BlockingFn(Arc::new(handler), PhantomData)))
    }

    /// Any [`Handler`] implementation.
    pub fn register_handler(mut self, class: &str, handler: Arc<dyn Handler>) -> Self {
        self.registry.insert(class, handler);
        self
    }

    /// Overrides the retry delay of the handler already registered for
    /// `class`: `retry_in(retry_count, job)` returns seconds, or `None` for
    /// the default backoff.
    pub fn retry_in<R>(mut self, class: &str, retry_in: R) -> Self
    where
        R: Fn(u32, &Job) -> Option<f64> + Send + Sync + 'static,
    {
        if let Some(inner) = self.registry.get(class).cloned() {
            self.registry.insert(class, Arc::new(WithRetryIn { inner, retry_in }));
        }
        self
    }

    /// Adds server middleware (run in the order added).
    pub fn middleware(mut self, middleware: Arc<dyn Middleware>) -> Self {
        self.registry.add_middleware(middleware);
        self
    }

    /// Calls `hook(job, failure)` whenever a handler fails (before the
    /// failure is filed): report it to Sentry, Honeybadger, a log. A hook
    /// that panics is logged; the job's failure is filed all the same.
    pub fn on_error<F>(mut self, hook: F) -> Self
    where
        F: Fn(&Job, &Failure) + Send + Sync + 'static,
    {
        self.registry.add_error_hook(Arc::new(hook));
        self
    }

    /// Calls `hook` with every [`WorkerEvent`]: startup, quiet, shutdown,
    /// each heartbeat, and each job filed in `dead` (a death handler). Hooks
    /// run in order on a task of their own, never in the engine's way; one
    /// that panics is logged.
    pub fn on_event<F>(mut self, hook: F) -> Self
    where
        F: Fn(&WorkerEvent) + Send + Sync + 'static,
    {
        self.event_hooks.push(Arc::new(hook));
        self
    }

    /// Client middleware for the jobs this worker pushes itself (periodic
    /// entries' jobs), as [`crate::Client::with_middleware`] adds to a client. A
    /// middleware that stops a periodic job's push skips that slot; one
    /// that panics is logged and the job is pushed as it was.
    pub fn client_middleware(mut self, middleware: impl ClientMiddleware) -> Self {
        self.client_middleware = self.client_middleware.with(Arc::new(middleware));
        self
    }

    /// With [`WorkerBuilder::host_events`]: the host language has client
    /// middleware, so each periodic job goes to it as a
    /// [`WorkerEvent::ClientMiddleware`] before it is pushed, answered with
    /// [`WorkerHandle::reply_client_middleware`] (no answer in 5 s: pushed
    /// as it was, with a warning).
    pub fn host_client_middleware(mut self) -> Self {
        self.host_client_middleware = true;
        self
    }

    /// The host language reads the events itself
    /// ([`Worker::take_events`]).
    pub fn host_events(mut self) -> Self {
        self.host_events = true;
        self
    }

    /// Jobs are run by host-language threads through
    /// [`WorkerHandle::next_job`] instead of by registered Rust handlers.
    pub fn host_slots(mut self) -> Self {
        self.host_slots = true;
        self
    }

    /// With [`WorkerBuilder::host_slots`]: the classes the host language
    /// can run, so periodic entries of other classes are reported at boot.
    pub fn host_classes<S: Into<String>, I: IntoIterator<Item = S>>(mut self, classes: I) -> Self {
        self.host_classes.extend(classes.into_iter().map(Into::into));
        self
    }

    /// A periodic (cron) entry this process ticks for. Every process of a
    /// fleet registers the same entries; each slot fires once in all.
    pub fn periodic(mut self, entry: Periodic) -> Self {
        let pjid = entry.pjid();
        if self.periodic.iter().any(|e| e.pjid() == pjid) {
            tracing::warn!(
                "periodic {} ({}) registered twice; keeping one",
                entry.class(),
                entry.cron()
            );
        } else {
            self.periodic.push(entry);
        }
        self
    }

    /// Needs a tokio runtime context; does not touch Redis yet. The error
    /// names settings that do not fit together ([`Config::validate`]).
    pub fn build(self) -> Result<Worker> {
        self.config.validate()?;
        let redis = Redis::new(&self.config)?;
        let (completions_tx, completions_rx) = flume::unbounded();
        let mut handlers: std::collections::HashSet<String> = self.registry.classes().into_iter().collect();
        handlers.extend(self.host_classes.iter().cloned());
        let (mut events, events_rx) = if self.host_events || !self.event_hooks.is_empty() {
            let (tx, rx) = flume::bounded(EVENT_BACKLOG);
            (Events::to(tx), Some(rx))
        } else {
            (Events::default(), None)
        };
        let host_client_middleware = self.host_client_middleware && self.host_events;
        let mut requests_rx = None;
        if host_client_middleware {
            let (tx, rx) = flume::bounded(1);
            events = events.with_requests(tx);
            requests_rx = Some(rx);
        }
        let mut shared = Shared::new(self.config, redis, completions_tx, self.periodic, handlers, events);
        shared.client_middleware = self.client_middleware;
        shared.host_client_middleware = host_client_middleware;
        let shared = Arc::new(shared);
        let (handover, intake) = handover::pair(self.host_slots);
        Ok(Worker {
            shared,
            registry: Arc::new(self.registry),
            host_classes: self.host_classes,
            handover,
            intake,
            completions_rx,
            events_rx,
            requests_rx,
            event_hooks: self.event_hooks,
        })
    }
}

/// One worker process. Build it, take [`Worker::handle`]s, then
/// [`Worker::run`] it until it is stopped.
pub struct Worker {
    shared: Arc<Shared>,
    registry: Arc<Registry>,
    host_classes: Vec<String>,
    /// The fetch loop's end and the slots' end: to Rust processor tasks,
    /// or to host threads (with [`WorkerBuilder::host_slots`]).
    handover: Handover,
    intake: Intake,
    completions_rx: flume::Receiver<Completion>,
    events_rx: Option<flume::Receiver<WorkerEvent>>,
    /// The periodic jobs for the host's client middleware, apart from the
    /// events (see [`Worker::take_client_middleware_requests`]).
    requests_rx: Option<flume::Receiver<WorkerEvent>>,
    event_hooks: Vec<EventHook>,
}

/// What [`WorkerHandle::next_job`] found.
#[derive(Debug)]
pub enum NextJob {
    /// A job to run and settle.
    Job(Delivery),
    /// Nothing arrived in time; ask again.
    Idle,
    /// The worker is stopping: this slot should end.
    Stopped,
}

/// Controls a running worker from anywhere (other tasks, threads, signal
/// handlers), and is how host-language slots take and settle jobs.
#[derive(Clone)]
pub struct WorkerHandle {
    shared: Arc<Shared>,
    intake: Intake,
}

impl Worker {
    /// A builder for a worker with `config`.
    pub fn builder(config: Config) -> WorkerBuilder {
        WorkerBuilder {
            config,
            registry: Registry::default(),
            host_slots: false,
            host_classes: Vec::new(),
            periodic: Vec::new(),
            event_hooks: Vec::new(),
            host_events: false,
            client_middleware: ClientChain::default(),
            host_client_middleware: false,
        }
    }

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
        tracing::info!(
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
        if !self.intake.is_host() {
            if self.registry.is_empty() {
                tracing::warn!("no handlers registered: every job taken will fail");
            } else {
                tracing::info!("handlers: {}", self.registry.classes().join(", "));
            }
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
        background.push(supervise("periodic", &shared, periodic::run));
        let completions_rx = self.completions_rx.clone();
        let completer = supervise("completion", &shared, move |s| {
            completion::run(s, completions_rx.clone())
        });
        // The fetch loop holds the only sender: when it ends, processors
        // waiting on the channel see it closed.
        let (handover, waiting) = (self.handover, self.intake.clone());
        let dispatcher = supervise("fetch", &shared, move |s| {
            dispatcher::run(s, handover.clone(), waiting.clone())
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
        tracing::info!(
            "started: {} fetch, {} slot(s){}",
            if shared.is_reliable() { "reliable" } else { "basic" },
            config.concurrency(),
            if self.intake.is_host() { " (host threads)" } else { "" }
        );

        shared.reached(Lifecycle::Stopping).await;
        shutdown(&shared, dispatcher, &self.intake).await;
        for task in processors.into_iter().chain(background.drain(..)) {
            task.abort();
        }
        completer.abort();
        match heartbeat::unregister(&shared).await {
            Ok(0) => {}
            Ok(left) => tracing::warn!("{left} job(s) left in progress for recovery"),
            Err(e) => tracing::error!("could not remove presence keys: {e}"),
        }
        tracing::info!("stopped");
        Ok(())
    }
}

impl Worker {
    /// Logs the periodic entries, resolved against the handlers known here
    /// at boot: an entry whose class this process cannot run is reported
    /// and still ticks (a worker in another language may run it).
    fn report_periodic(&self) {
        for entry in &self.shared.periodic {
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

/// Stopping: the fetch loop has been told (lifecycle); wait it out, give
/// back what never started, wait for running jobs up to the timeout, write
/// what finished, then put everything unfinished back on its queue.
async fn shutdown(shared: &Arc<Shared>, dispatcher: JoinHandle<()>, intake: &Intake) {
    let timeout = shared.config.shutdown_timeout();
    tracing::info!(
        "stopping: waiting up to {:.1}s for {} running job(s)",
        timeout.as_secs_f64(),
        shared.busy_count()
    );
    if tokio::time::timeout(SHUTDOWN_STEP_LIMIT, dispatcher).await.is_err() {
        tracing::error!("fetch did not finish in time; its jobs stay in progress and are requeued below");
    }
    // Taken but never started: they go back (basic fetch) or stay in
    // progress, which is requeued below (reliable fetch).
    let never_started: Vec<_> = intake.drain().into_iter().map(Delivery::give_back).collect();

    let deadline = Instant::now() + timeout;
    while shared.busy_count() > 0 {
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            break;
        }
        tokio::select! {
            _ = shared.capacity_freed.notified() => {}
            _ = tokio::time::sleep(left.min(Duration::from_millis(50))) => {}
        }
    }

    let (flushed_tx, mut flushed_rx) = tokio::sync::oneshot::channel();
    if shared.completions.send(Completion::Flush(flushed_tx)).is_ok() {
        if shared.is_reliable() {
            if tokio::time::timeout(SHUTDOWN_STEP_LIMIT, flushed_rx).await.is_err() {
                tracing::error!("results not written in time; those jobs stay in progress and may run again");
            }
        } else {
            // Basic fetch: the results are the jobs' only copy. Wait for
            // them to be written, however long Redis takes.
            while tokio::time::timeout(SHUTDOWN_STEP_LIMIT, &mut flushed_rx)
                .await
                .is_err()
            {
                tracing::error!("basic fetch: results still not written; waiting (they exist only here)");
            }
        }
    }

    // From here a job that ends is not settled: it is going back.
    shared.give_back_running();
    match requeue_unfinished(shared, never_started).await {
        Ok(0) => {}
        Ok(n) => tracing::warn!("requeued {n} job(s) unfinished at shutdown"),
        Err(e) => tracing::error!("requeueing unfinished jobs failed (recovery will find them): {e}"),
    }
}

async fn requeue_unfinished(shared: &Shared, never_started: Vec<Vec<u8>>) -> Result<usize> {
    if shared.is_reliable() {
        return recovery::requeue_held(shared, &shared.identity, 0).await;
    }
    // Basic fetch: the only copy is in memory.
    let mut payloads = never_started;
    payloads.extend(shared.busy_snapshot().into_iter().map(|(_, e)| e.raw));
    for raw in &payloads {
        match Job::parse(raw) {
            Ok(job) => {
                recovery::requeue_one(shared, &shared.identity, raw, &job, 0, NOT_HELD, "").await?;
            }
            Err(reason) => {
                completion::bury_unparseable(shared, &shared.identity, NOT_HELD, "", raw, &reason).await?;
            }
        }
    }
    Ok(payloads.len())
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

impl WorkerHandle {
    /// This process's identity (`host:pid:random`).
    pub fn identity(&self) -> &str {
        &self.shared.identity
    }
    /// Running, quiet or stopping.
    pub fn lifecycle(&self) -> Lifecycle {
        self.shared.lifecycle()
    }
    /// Stop taking new jobs; running ones go on.
    pub fn quiet(&self) {
        self.shared.advance(Lifecycle::Quiet);
    }
    /// Begin the shutdown sequence ([`Worker::run`] returns when done).
    pub fn stop(&self) {
        self.shared.advance(Lifecycle::Stopping);
    }
    /// Whether the shutdown sequence has begun.
    pub fn is_stopping(&self) -> bool {
        self.shared.is_stopping()
    }
    /// How many jobs were still running when shutdown's timeout ran out and
    /// it put them back on their queues (`None` before it got there). Their
    /// handlers must not run on in this process: a host exits at once when
    /// this is above 0, and an outcome reported now is not recorded.
    pub fn given_back(&self) -> Option<usize> {
        self.shared.given_back()
    }
    /// The host's client middleware's answer for the periodic job `jid`
    /// (a [`WorkerEvent::ClientMiddleware`]): the job to push, or `None`
    /// to push nothing (one that is not a job: pushed as it was, with a
    /// warning). An answer for a job no longer waiting (it timed out) is
    /// ignored.
    pub fn reply_client_middleware(&self, jid: &str, job: Option<serde_json::Value>) {
        let mut waiting = self.shared.host_answer.lock().unwrap();
        if waiting.as_ref().is_some_and(|(waiting_for, _)| waiting_for == jid) {
            if let Some((_, answer)) = waiting.take() {
                let _ = answer.send(job);
            }
        }
    }

    /// How many jobs this process holds now: those running and those read
    /// ahead, waiting for a slot (`prefetch`).
    pub fn held(&self) -> usize {
        self.shared.held()
    }
    /// The jobs running now.
    pub fn busy(&self) -> Vec<BusyEntry> {
        self.shared.busy_snapshot().into_iter().map(|(_, e)| e).collect()
    }
    /// Logs every running job (the TTIN dump).
    pub fn log_busy(&self) {
        let busy = self.busy();
        tracing::warn!("{} busy slot(s)", busy.len());
        for entry in busy {
            tracing::warn!(
                "busy: {} jid={} queue={} running {:.1}s",
                entry.class,
                entry.jid,
                entry.queue,
                crate::job::now() - entry.run_at
            );
        }
    }

    /// Blocks (no tokio needed) up to `timeout` for the next job. The
    /// caller must pass it to [`WorkerHandle::complete`].
    pub fn next_job(&self, timeout: Duration) -> NextJob {
        let deadline = Instant::now() + timeout;
        loop {
            if self.shared.is_stopping() {
                return NextJob::Stopped;
            }
            let left = deadline.saturating_duration_since(Instant::now());
            let slice = left.min(Duration::from_millis(100));
            match self.intake.take(slice) {
                Taken::Delivery(delivery) => {
                    if let Some(delivery) = self.shared.begin(delivery) {
                        return NextJob::Job(delivery);
                    }
                }
                Taken::Closed => return NextJob::Stopped,
                Taken::Empty if left.is_zero() => return NextJob::Idle,
                Taken::Empty => {}
            }
        }
    }

    /// The next job if one is ready now. (A host thread back from a job
    /// goes on with the next this way, without sleeping.)
    pub fn try_next_job(&self) -> NextJob {
        loop {
            if self.shared.is_stopping() {
                return NextJob::Stopped;
            }
            match self.intake.try_take() {
                Taken::Delivery(delivery) => {
                    if let Some(delivery) = self.shared.begin(delivery) {
                        return NextJob::Job(delivery);
                    }
                }
                Taken::Empty => return NextJob::Idle,
                Taken::Closed => return NextJob::Stopped,
            }
        }
    }

    /// Waits for the next job without blocking a thread. For a worker
    /// without [`WorkerBuilder::host_slots`]: with them, jobs go to the
    /// threads calling [`WorkerHandle::next_job`], and this waits until the
    /// worker stops.
    pub async fn next_job_async(&self) -> NextJob {
        loop {
            tokio::select! {
                taken = self.intake.take_async() => match taken {
                    Some(delivery) => {
                        if let Some(delivery) = self.shared.begin(delivery) {
                            return NextJob::Job(delivery);
                        }
                    }
                    None => return NextJob::Stopped,
                },
                _ = self.shared.reached(Lifecycle::Stopping) => return NextJob::Stopped,
            }
        }
    }

    /// Reports how a job taken with `next_job` ended. Never blocks.
    pub fn complete(&self, delivery: Delivery, outcome: Outcome) {
        delivery.settle(outcome);
    }

    /// Opt-in signal handling for a plain-Rust worker: TERM/INT stop, TSTP
    /// quiets, TTIN logs the busy jobs. Needs a tokio runtime context.
    #[cfg(unix)]
    pub fn install_signal_handlers(&self) -> Result<()> {
        use tokio::signal::unix::{signal, SignalKind};
        let mut term = signal(SignalKind::terminate()).map_err(signal_error)?;
        let mut int = signal(SignalKind::interrupt()).map_err(signal_error)?;
        let mut tstp = signal(SignalKind::from_raw(libc::SIGTSTP)).map_err(signal_error)?;
        let mut ttin = signal(SignalKind::from_raw(libc::SIGTTIN)).map_err(signal_error)?;
        let handle = self.clone();
        tokio::spawn(async move {
            loop {
                tokio::select! {
                    _ = term.recv() => { tracing::info!("TERM received"); handle.stop(); }
                    _ = int.recv() => { tracing::info!("INT received"); handle.stop(); }
                    _ = tstp.recv() => { tracing::info!("TSTP received: quiet"); handle.quiet(); }
                    _ = ttin.recv() => handle.log_busy(),
                }
            }
        });
        Ok(())
    }
}

#[cfg(unix)]
fn signal_error(e: std::io::Error) -> crate::Error {
    crate::Error::config("signals", "TERM/INT/TSTP/TTIN", e)
}
