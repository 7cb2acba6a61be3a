//! A worker whose slots are host-language threads. The host registers the
//! handler names it has (the allow-list: a job of any other class is failed
//! by the core as `cogworker::UnknownHandler` and never handed over), starts
//! the engine, and lets its threads take deliveries with
//! [`HostWorker::next_job`].

use crate::config::Config;
use crate::error::Result;
use crate::events::WorkerEvent;
use crate::periodic::Periodic;
use crate::shared::Lifecycle;
use crate::worker::{NextJob, Worker, WorkerHandle};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// The signals a host's worker command traps and hands to
/// [`HostWorker::signal`].
pub const WORKER_SIGNALS: [&str; 4] = ["TERM", "INT", "TSTP", "TTIN"];

/// The threads a host starts for a worker, by role, with the names every
/// host gives them (log lines and the TTIN dump show them): the events
/// thread, the periodic jobs' client middleware thread, the timekeeper and
/// the embedded worker's log thread. Slot threads are
/// [`slot_thread_name`]'s.
pub const HOST_THREADS: [(&str, &str); 4] = [
    ("events", "cogworker.events"),
    ("client_middleware", "cogworker.client-middleware"),
    ("timekeeper", "cogworker.timekeeper"),
    ("logs", "cogworker.logs"),
];

/// The name of slot thread `index` in every host.
pub fn slot_thread_name(index: usize) -> String {
    format!("cogworker.processor-{index}")
}

/// The message of the timeout a host raises in a handler past its time
/// limit, and gives a retry hook asked about one.
pub const TIME_LIMIT_PASSED: &str = "the job's time limit passed";

/// A worker run by host-language threads.
pub struct HostWorker {
    handle: WorkerHandle,
    pending: Mutex<Option<Worker>>,
    finished: flume::Receiver<std::result::Result<(), String>>,
    finished_tx: flume::Sender<std::result::Result<(), String>>,
    events: flume::Receiver<WorkerEvent>,
    /// Client-middleware requests (none without client middleware).
    requests: Option<flume::Receiver<WorkerEvent>>,
    pub(super) ended: Arc<AtomicBool>,
    /// Host threads in [`HostWorker::run_slot`] and in
    /// [`HostWorker::run_hooks`] or [`HostWorker::run_client_middleware`],
    /// for [`HostWorker::join`].
    pub(super) slots: super::slot_loop::Running,
    pub(super) event_threads: super::slot_loop::Running,
}

/// What [`HostWorker::next_event`] found.
#[derive(Debug)]
pub enum NextEvent {
    /// Something happened: run the hooks registered for it.
    Event(WorkerEvent),
    /// A job's time limit passed (for the timekeeper thread).
    Overdue(std::sync::Arc<crate::time_limit::TimeLimit>),
    /// Nothing yet; ask again.
    Idle,
    /// The engine has shut down and every event was read: stop asking.
    Ended,
}

impl HostWorker {
    /// `handlers`: the class names the host can run; `periodic`: the
    /// entries (see [`super::periodic_entry`]). Does not touch Redis yet.
    /// `client_middleware`: the host has client middleware, to be run on
    /// the periodic jobs this worker pushes (see [`NextEvent`]).
    pub fn new<S: AsRef<str>>(
        config: Config,
        handlers: &[S],
        periodic: &[Periodic],
        client_middleware: bool,
    ) -> Result<Self> {
        let mut builder = Worker::builder(config)
            .host_slots()
            .host_events()
            .host_classes(handlers.iter().map(|h| h.as_ref().to_string()));
        for entry in periodic {
            builder = builder.periodic(entry.clone());
        }
        if client_middleware {
            builder = builder.host_client_middleware();
        }
        let mut worker = super::in_runtime(|| builder.build())?;
        let events = worker.take_events().expect("host_events() makes an event channel");
        let requests = worker.take_client_middleware_requests();
        let (finished_tx, finished) = flume::bounded(1);
        Ok(HostWorker {
            handle: worker.handle(),
            pending: Mutex::new(Some(worker)),
            finished,
            finished_tx,
            events,
            requests,
            ended: Arc::default(),
            slots: Default::default(),
            event_threads: Default::default(),
        })
    }

    /// Starts the engine (heartbeat, fetch, scheduler, recovery) on the
    /// global runtime; returns at once. An error if it was started before.
    pub fn start(&self) -> Result<()> {
        let Some(worker) = self.pending.lock().unwrap().take() else {
            return Err(crate::error::Error::invalid_argument(
                "worker",
                self.identity(),
                "was already started",
            ));
        };
        let (done, ended) = (self.finished_tx.clone(), self.ended.clone());
        let handle = self.handle.clone();
        crate::runtime::global().spawn(async move {
            let result = worker.run().await.map_err(|e| e.to_string());
            if handle.is_ending() {
                // A handler would not stop past its time limit (see
                // time_limit.rs): the process ends now, whatever its
                // threads hold, and its parent starts another.
                tracing::warn!("exiting for the parent to start another process");
                // SAFETY: _exit(2) ends the process; nothing runs after it.
                unsafe { libc::_exit(crate::time_limit::OVERRUN_EXIT_STATUS) };
            }
            ended.store(true, Ordering::SeqCst);
            // The timekeeper leaves its loop now, not a wait's slice later
            // (the host may be finalizing by then).
            handle.wake_timekeeper();
            let _ = done.send(result);
        });
        Ok(())
    }

    /// Blocks up to `timeout` for the next delivery (call it with the
    /// interpreter lock released): `None` while idle.
    pub fn next_job(&self, timeout: Duration) -> Option<NextJob> {
        match self.handle.next_job(timeout) {
            NextJob::Idle => None,
            next => Some(next),
        }
    }

    /// The next delivery if one is ready now (never blocks).
    pub fn try_next_job(&self) -> NextJob {
        self.handle.try_next_job()
    }

    /// Blocks up to `timeout` for the next [`WorkerEvent`] (call it with the
    /// interpreter lock released, from one host thread that runs the
    /// application's hooks).
    pub fn next_event(&self, timeout: Duration) -> NextEvent {
        self.next_from(&self.events, timeout)
    }

    /// Blocks up to `timeout` for the next periodic job for the host's
    /// client middleware ([`WorkerEvent::ClientMiddleware`]): for a host
    /// thread of its own, so that no application hook running on the
    /// events thread holds the periodic ticker up. `Ended` at once without
    /// client middleware.
    pub fn next_client_middleware(&self, timeout: Duration) -> NextEvent {
        match &self.requests {
            Some(requests) => self.next_from(requests, timeout),
            None => NextEvent::Ended,
        }
    }

    /// Blocks up to `timeout` for a job whose time limit passed, for the
    /// host's timekeeper thread (see [`HostWorker::run_timekeeper`]).
    pub fn next_overdue(&self, timeout: Duration) -> NextEvent {
        if self.ended.load(Ordering::SeqCst) {
            return NextEvent::Ended;
        }
        match self.handle.next_overdue(timeout) {
            Some(limit) => NextEvent::Overdue(limit),
            None if self.ended.load(Ordering::SeqCst) => NextEvent::Ended,
            None => NextEvent::Idle,
        }
    }

    fn next_from(&self, events: &flume::Receiver<WorkerEvent>, timeout: Duration) -> NextEvent {
        match events.recv_timeout(timeout) {
            Ok(event) => NextEvent::Event(event),
            Err(flume::RecvTimeoutError::Timeout) if !self.ended.load(Ordering::SeqCst) => NextEvent::Idle,
            // Ended: what is left was sent before the end; hand it over first.
            Err(_) => match events.try_recv() {
                Ok(event) => NextEvent::Event(event),
                Err(_) => NextEvent::Ended,
            },
        }
    }

    /// The host's client middleware's answer for the periodic job `jid`:
    /// the job to push, or `None` to push nothing (a value JSON cannot
    /// hold: pushed as it was, with a warning).
    pub fn reply_client_middleware(&self, jid: &str, job: Option<&super::HostValue>) {
        let job = job.map(|job| job.to_json("job").unwrap_or(serde_json::Value::Null));
        self.handle.reply_client_middleware(jid, job);
    }

    /// The host's client middleware raised on the periodic job `jid`
    /// (`error`: what it raised): the engine pushes the job as it was.
    pub fn client_middleware_raised(&self, jid: &str, error: &str) {
        self.handle.client_middleware_raised(jid, error);
    }

    /// The host's client middleware's answer for a periodic `job` it was
    /// handed ([`WorkerEvent::ClientMiddleware`]): the job to push, `None`
    /// to push nothing, or what it raised (the job is pushed as it was).
    pub fn answer_client_middleware(
        &self,
        job: &serde_json::Value,
        answer: std::result::Result<Option<super::HostValue>, String>,
    ) {
        let jid = job.get("jid").and_then(|jid| jid.as_str()).unwrap_or_default();
        match answer {
            Ok(job) => self.reply_client_middleware(jid, job.as_ref()),
            Err(raised) => self.client_middleware_raised(jid, &raised),
        }
    }

    /// Waits up to `timeout` for the engine to finish its shutdown: `None`
    /// while it runs, then its result (again on every later call).
    pub fn finished(&self, timeout: Duration) -> Option<std::result::Result<(), String>> {
        let result = self.finished.recv_timeout(timeout).ok()?;
        let _ = self.finished_tx.try_send(result.clone());
        Some(result)
    }

    /// Stop taking new jobs; running ones go on.
    pub fn quiet(&self) {
        self.handle.quiet();
    }

    /// Begin the shutdown sequence.
    pub fn stop(&self) {
        self.handle.stop();
    }

    /// How many running jobs shutdown put back on their queues (0 before
    /// it got there): above 0, the host exits at once instead of letting
    /// their handlers run on (see [`crate::WorkerHandle::given_back`]).
    pub fn given_back(&self) -> usize {
        self.handle.given_back().unwrap_or(0)
    }

    /// How many times a running job was told to stop (cancelled, or past
    /// its time limit): the host's event loop looks at its coroutines when
    /// this changes.
    pub fn interruptions(&self) -> u64 {
        self.handle.interruptions()
    }

    /// This process's identity (`host:pid:random`).
    pub fn identity(&self) -> &str {
        self.handle.identity()
    }

    /// `running`, `quiet` or `stopping`.
    pub fn lifecycle(&self) -> &'static str {
        match self.handle.lifecycle() {
            Lifecycle::Running => "running",
            Lifecycle::Quiet => "quiet",
            Lifecycle::Stopping => "stopping",
        }
    }

    /// A slot thread (`thread`, the host's name for it) left the slot loop
    /// without the worker stopping (a host killed it, or an exception
    /// escaped it): true, and a warning, when the host should start
    /// another in its place, as Sidekiq's manager replaces a dead
    /// processor, so the worker keeps its full concurrency. False while the
    /// worker stops.
    pub fn slot_ended_early(&self, thread: &str) -> bool {
        if self.handle.lifecycle() == Lifecycle::Stopping {
            return false;
        }
        tracing::warn!("slot thread {thread} ended early; starting another");
        true
    }

    /// Logs the jobs running now, one warning each (the first half of the
    /// TTIN dump; the host adds its threads' stacks).
    pub fn log_busy(&self) {
        self.handle.log_busy();
    }

    /// Logs each of the host's threads with its stack (the second half of
    /// the TTIN dump), one warning each, `thread <name>:` then the stack as
    /// the host prints one; `threads` holds each one's name, whether it is
    /// the main thread (named `main` in every host) and its stack.
    pub fn log_thread_stacks(threads: &[(String, bool, String)]) {
        for (name, is_main, stack) in threads {
            let name = if *is_main {
                crate::logging::MAIN_THREAD
            } else {
                name.as_str()
            };
            tracing::warn!("thread {name}:\n{}", stack.trim_end());
        }
    }

    /// A signal the host's worker command caught, by name (one of
    /// [`WORKER_SIGNALS`]), decided here for both command lines: TERM and
    /// INT stop, TSTP quiets, TTIN logs the busy jobs. True when the host
    /// should log its threads' stacks too (TTIN).
    pub fn signal(&self, name: &str) -> bool {
        match name {
            "TERM" | "INT" => {
                tracing::info!("{name} received: stopping");
                self.stop();
            }
            "TSTP" => {
                tracing::info!("TSTP received: quiet");
                self.quiet();
            }
            "TTIN" => {
                tracing::warn!("TTIN received: the busy jobs, then every thread's stack");
                self.log_busy();
                return true;
            }
            other => tracing::warn!("signal {other} ignored: a worker acts on {}", WORKER_SIGNALS.join(", ")),
        }
        false
    }

    /// After the engine's shutdown: whether the host's worker command joins
    /// its slot threads. Not when running jobs were given back to their
    /// queues: their handlers, left to run on, would finish those jobs a
    /// second time (the shutdown hooks still run).
    pub fn join_slots(&self) -> bool {
        let given_back = self.given_back();
        if given_back > 0 {
            tracing::warn!(
                "{given_back} job(s) still running at the shutdown timeout went back to their queues; \
                 exiting now so they do not also finish here"
            );
        }
        given_back == 0
    }

    /// After the host joined its threads (`all_joined`: none is stuck in
    /// a handler): whether its worker command exits the process at once,
    /// without running the interpreter's exit (which would wait for those
    /// threads). Otherwise it returns 0, the worker having exited cleanly.
    pub fn exit_at_once(&self, all_joined: bool) -> bool {
        if all_joined && self.given_back() == 0 {
            tracing::info!("worker exited cleanly");
            return false;
        }
        true
    }

    /// The jobs running now: `[{class, jid, queue, run_at}]`.
    pub fn busy(&self) -> serde_json::Value {
        let busy: Vec<serde_json::Value> = self
            .handle
            .busy()
            .into_iter()
            .map(|e| serde_json::json!({"class": e.class, "jid": e.jid, "queue": e.queue, "run_at": e.run_at}))
            .collect();
        serde_json::Value::Array(busy)
    }
}
