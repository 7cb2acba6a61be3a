//! Building a [`Worker`]: settings, handlers by class name, middleware,
//! hooks, periodic entries, and whether host threads are its slots.

use super::Worker;
use crate::client::{ClientChain, ClientMiddleware};
use crate::config::Config;
use crate::connection::Redis;
use crate::error::Result;
use crate::events::{EventHook, Events, WorkerEvent, EVENT_BACKLOG};
use crate::handler::{AsyncFn, BlockingFn, Failure, Handler, Middleware, Registry, WithRetryIn};
use crate::job::Job;
use crate::periodic::Periodic;
use crate::periodic::PeriodicPushes;
use crate::shared::Shared;
use crate::slot_feed;
use std::future::Future;
use std::marker::PhantomData;
use std::sync::Arc;

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
    quiet: bool,
    class_limits: std::collections::HashMap<String, Vec<String>>,
}

impl WorkerBuilder {
    /// Every job of `class` runs within the rate limiters `names` (see
    /// [`crate::limiter::Limit`]), besides any its push declared ([`Job::limits`]):
    /// taken before a slot runs it, as for those.
    pub fn limits<S: Into<String>, I: IntoIterator<Item = S>>(mut self, class: &str, names: I) -> Self {
        let entry = self.class_limits.entry(class.to_string()).or_default();
        for name in names {
            let name = name.into();
            if !entry.contains(&name) {
                entry.push(name);
            }
        }
        self
    }

    /// The engine's own worker (`cogworker bench`): see [`Shared::quiet`].
    pub(crate) fn quiet(mut self) -> Self {
        self.quiet = true;
        self
    }

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
    /// [`crate::WorkerHandle::reply_client_middleware`] (no answer in 5 s: pushed
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
    /// [`crate::WorkerHandle::next_job`] instead of by registered Rust handlers.
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
        for (class, names) in &self.class_limits {
            for name in names {
                crate::job::check_limiter_name(name).map_err(|reason| {
                    crate::error::Error::invalid_argument(
                        format!("limits of {class}"),
                        crate::printable::shown(name),
                        reason,
                    )
                })?;
            }
        }
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
        let periodic = PeriodicPushes {
            entries: self.periodic,
            client_middleware: self.client_middleware,
            host_client_middleware,
            host_answer: Default::default(),
        };
        let mut shared = Shared::new(self.config, redis, completions_tx, periodic, handlers, events);
        shared.quiet = self.quiet;
        shared.class_limits = self.class_limits;
        let shared = Arc::new(shared);
        let (feed, intake) = slot_feed::pair(self.host_slots);
        Ok(Worker {
            shared,
            registry: Arc::new(self.registry),
            host_classes: self.host_classes,
            feed,
            intake,
            completions_rx,
            events_rx,
            requests_rx,
            event_hooks: self.event_hooks,
        })
    }
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
            quiet: false,
            class_limits: std::collections::HashMap::new(),
        }
    }
}
