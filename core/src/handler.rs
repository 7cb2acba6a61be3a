//! Handlers (what runs a job of a given `class`) and server middleware.

use crate::job::Job;
use futures_util::future::BoxFuture;
use serde_json::Value;
use std::collections::HashMap;
use std::future::Future;
use std::sync::Arc;

/// Why a handler failed, as recorded on the job (`error_class`,
/// `error_message`, `error_backtrace`).
#[derive(Clone, Debug, PartialEq)]
pub struct Failure {
    /// The exception's class (`error_class`).
    pub class: String,
    /// Its message (`error_message`).
    pub message: String,
    /// Its backtrace, a line each (`error_backtrace`).
    pub backtrace: Vec<String>,
    /// Seconds until the retry, overriding the default backoff.
    pub retry_in: Option<f64>,
}

impl Failure {
    /// A failure of `class` saying `message`.
    pub fn new(class: impl Into<String>, message: impl Into<String>) -> Self {
        Failure {
            class: class.into(),
            message: message.into(),
            backtrace: Vec::new(),
            retry_in: None,
        }
    }

    /// From raw bytes a host language handed over (may be invalid UTF-8;
    /// made valid before it is stored).
    pub fn from_bytes(class: &[u8], message: &[u8]) -> Self {
        Failure::new(
            String::from_utf8_lossy(class).into_owned(),
            String::from_utf8_lossy(message).into_owned(),
        )
    }

    /// With a backtrace.
    pub fn with_backtrace(mut self, lines: Vec<String>) -> Self {
        self.backtrace = lines;
        self
    }

    /// Retried after `seconds` instead of the default backoff.
    pub fn with_retry_in(mut self, seconds: f64) -> Self {
        self.retry_in = Some(seconds);
        self
    }
}

impl<E: std::error::Error> From<E> for Failure {
    fn from(e: E) -> Self {
        Failure::new(short_type_name::<E>(), e.to_string())
    }
}

fn short_type_name<T>() -> String {
    std::any::type_name::<T>().to_string()
}

/// `error_class` of a job whose class no handler in the process is
/// registered for (the same in every language).
pub const UNKNOWN_HANDLER: &str = "cogworker::UnknownHandler";

/// The failure filed for a job whose class no handler is registered for.
pub(crate) fn unknown_handler(job: &Job) -> Failure {
    Failure::new(
        UNKNOWN_HANDLER,
        format!("no handler registered for class {:?} in this process", job.class()),
    )
}

/// How a job ended.
#[derive(Clone, Debug, PartialEq)]
pub enum Outcome {
    /// It succeeded.
    Success,
    /// It failed.
    Failure(Failure),
}

/// What a handler returns: `Ok(None)`, or `Ok(Some(value))` to keep
/// `value` as the job's result (a job pushed with `result_ttl`); what
/// middleware and [`Next::run`] pass along.
pub type HandlerResult = Result<Option<Value>, Failure>;

/// Runs jobs of one class.
pub trait Handler: Send + Sync + 'static {
    /// Runs `job`.
    fn call(&self, job: Job) -> BoxFuture<'static, HandlerResult>;

    /// Seconds until retry number `retry_count + 1`; `None` keeps the
    /// default backoff.
    fn retry_in(&self, _retry_count: u32, _job: &Job) -> Option<f64> {
        None
    }
}

/// What a closure handler returns on success: nothing (`register`), or a
/// value kept as the job's result (`register_returning`).
pub(crate) trait Returned: Send + 'static {
    /// The value to keep, if any.
    fn into_result(self) -> Option<Value>;
}

impl Returned for () {
    fn into_result(self) -> Option<Value> {
        None
    }
}

impl Returned for Value {
    fn into_result(self) -> Option<Value> {
        Some(self)
    }
}

/// An async closure as a handler.
pub(crate) struct AsyncFn<F, R>(pub F, pub std::marker::PhantomData<fn() -> R>);

impl<F, Fut, R> Handler for AsyncFn<F, R>
where
    F: Fn(Job) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Result<R, Failure>> + Send + 'static,
    R: Returned,
{
    fn call(&self, job: Job) -> BoxFuture<'static, HandlerResult> {
        let running = (self.0)(job);
        Box::pin(async move { running.await.map(Returned::into_result) })
    }
}

/// A blocking closure as a handler: run on tokio's blocking pool so it
/// never stalls the async workers.
pub(crate) struct BlockingFn<F, R>(pub Arc<F>, pub std::marker::PhantomData<fn() -> R>);

impl<F, R> Handler for BlockingFn<F, R>
where
    F: Fn(Job) -> Result<R, Failure> + Send + Sync + 'static,
    R: Returned,
{
    fn call(&self, job: Job) -> BoxFuture<'static, HandlerResult> {
        let f = self.0.clone();
        let running = crate::logging::RUNNING_JOB.try_with(Clone::clone).ok();
        let handle = crate::long_jobs::Running::current();
        Box::pin(async move {
            let blocking = move || {
                crate::logging::with_blocking_job(running, || crate::long_jobs::with_blocking(handle, || f(job)))
            };
            match tokio::task::spawn_blocking(blocking).await {
                Ok(result) => result.map(Returned::into_result),
                Err(e) => Err(panic_failure(e)),
            }
        })
    }
}

/// A handler with its own retry delay.
pub(crate) struct WithRetryIn<R> {
    pub inner: Arc<dyn Handler>,
    pub retry_in: R,
}

impl<R> Handler for WithRetryIn<R>
where
    R: Fn(u32, &Job) -> Option<f64> + Send + Sync + 'static,
{
    fn call(&self, job: Job) -> BoxFuture<'static, HandlerResult> {
        self.inner.call(job)
    }
    fn retry_in(&self, retry_count: u32, job: &Job) -> Option<f64> {
        (self.retry_in)(retry_count, job)
    }
}

pub(crate) fn panic_failure(e: tokio::task::JoinError) -> Failure {
    if e.is_panic() {
        let payload = e.into_panic();
        let message = payload
            .downcast_ref::<&str>()
            .map(|s| s.to_string())
            .or_else(|| payload.downcast_ref::<String>().cloned())
            .unwrap_or_else(|| "handler panicked".to_string());
        Failure::new("panic", message)
    } else {
        Failure::new("cancelled", "handler task was cancelled")
    }
}

/// Server middleware: wraps every handler call. Call `next.run(job)` to go
/// on, or return without calling it to skip the job.
pub trait Middleware: Send + Sync + 'static {
    /// Wraps the rest of the chain: call `next.run(job)` to go on.
    fn call(&self, job: Job, next: Next) -> BoxFuture<'static, HandlerResult>;
}

/// The rest of the middleware chain, ending in the handler.
pub struct Next {
    chain: Arc<[Arc<dyn Middleware>]>,
    index: usize,
    handler: Arc<dyn Handler>,
}

impl Next {
    /// Runs the next middleware, or the handler after the last.
    pub fn run(self, job: Job) -> BoxFuture<'static, HandlerResult> {
        match self.chain.get(self.index).cloned() {
            Some(middleware) => middleware.call(
                job,
                Next {
                    chain: self.chain,
                    index: self.index + 1,
                    handler: self.handler,
                },
            ),
            None => self.handler.call(job),
        }
    }
}

/// Called with a job and its failure whenever a handler fails (an error
/// reporter: Sentry, Honeybadger, a log). See `WorkerBuilder::on_error`.
pub type ErrorHook = Arc<dyn Fn(&Job, &Failure) + Send + Sync>;

/// Handlers by class name, resolved once at boot, plus the middleware chain
/// and the error hooks.
#[derive(Clone, Default)]
pub struct Registry {
    handlers: HashMap<String, Arc<dyn Handler>>,
    /// Shared with every call's `Next` (built once, not per job).
    middleware: Arc<[Arc<dyn Middleware>]>,
    error_hooks: Vec<ErrorHook>,
}

impl Registry {
    pub fn insert(&mut self, class: impl Into<String>, handler: Arc<dyn Handler>) {
        self.handlers.insert(class.into(), handler);
    }
    pub fn add_middleware(&mut self, middleware: Arc<dyn Middleware>) {
        let mut chain = self.middleware.to_vec();
        chain.push(middleware);
        self.middleware = chain.into();
    }
    pub fn add_error_hook(&mut self, hook: ErrorHook) {
        self.error_hooks.push(hook);
    }
    /// Tells every error hook about `failure`; one that panics is logged
    /// and never changes what happens to the job.
    pub(crate) fn report_error(&self, job: &Job, failure: &Failure) {
        for hook in &self.error_hooks {
            if std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| hook(job, failure))).is_err() {
                tracing::error!("an error hook panicked on {job}; the job's failure is filed all the same");
            }
        }
    }
    pub fn get(&self, class: &str) -> Option<&Arc<dyn Handler>> {
        self.handlers.get(class)
    }
    pub fn classes(&self) -> Vec<String> {
        let mut names: Vec<String> = self.handlers.keys().cloned().collect();
        names.sort();
        names
    }

    /// Runs `job` through the middleware and its handler: what it
    /// returned, or its failure. A panic anywhere
    /// in them (the synchronous part of a closure or of `Middleware::call`
    /// included) or in the handler's `retry_in` is caught and reported as
    /// a failure; a failure carries the handler's retry delay when it has one.
    /// `retry_count`: the job's failures so far, as its retry hook is given
    /// them ([`Delivery::failures`](crate::Delivery::failures)).
    pub(crate) async fn run(
        &self,
        job: &Job,
        retry_count: u32,
        handle: Option<crate::long_jobs::Running>,
    ) -> HandlerResult {
        let Some(handler) = self.handlers.get(job.class()).cloned() else {
            return Err(unknown_handler(job));
        };
        let next = Next {
            chain: self.middleware.clone(),
            index: 0,
            handler: handler.clone(),
        };
        // Its own task, calls included, so a panic is caught as a failure.
        let owned = job.clone();
        let running = crate::logging::RunningJob {
            jid: job.jid_str().to_string(),
            class: job.display_class().to_string(),
        };
        let task = crate::logging::RUNNING_JOB.scope(running, async move {
            // Made inside the scope: a blocking handler's call reads it.
            crate::long_jobs::scope(handle, async move { next.run(owned).await }).await
        });
        let result = match tokio::spawn(task).await {
            Ok(result) => result,
            Err(e) => Err(panic_failure(e)),
        };
        match result {
            Ok(value) => Ok(value),
            Err(mut failure) => {
                if failure.retry_in.is_none() {
                    let hook = std::panic::AssertUnwindSafe(|| handler.retry_in(retry_count, job));
                    failure.retry_in = std::panic::catch_unwind(hook).unwrap_or_else(|_| {
                        tracing::warn!("retry_in of {} panicked; using the default backoff", job.class());
                        None
                    });
                }
                Err(failure)
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Mutex;

    /// A Rust handler's own log lines carry its job's jid and class: the
    /// registry runs it with the job as the running job, on its task or,
    /// for a blocking handler, its pool thread.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_handler_runs_with_its_job_as_the_running_job_of_its_log_lines() {
        let seen: Arc<Mutex<Vec<(String, String)>>> = Arc::default();
        let mut registry = Registry::default();
        let (a, b) = (seen.clone(), seen.clone());
        let record = |seen: &Arc<Mutex<Vec<(String, String)>>>| {
            let job = crate::logging::running_job().expect("a running job");
            seen.lock().unwrap().push((job.jid, job.class));
        };
        registry.insert(
            "Async",
            Arc::new(AsyncFn(
                move |_job: Job| {
                    record(&a);
                    async { Ok(()) }
                },
                std::marker::PhantomData,
            )),
        );
        registry.insert(
            "Blocking",
            Arc::new(BlockingFn(
                Arc::new(move |_job: Job| {
                    record(&b);
                    Ok(())
                }),
                std::marker::PhantomData,
            )),
        );
        for class in ["Async", "Blocking"] {
            let job = Job::new(class).jid(format!("jid-{class}"));
            assert!(registry.run(&job, 0, None).await.is_ok());
        }
        assert_eq!(
            *seen.lock().unwrap(),
            [
                ("jid-Async".to_string(), "Async".to_string()),
                ("jid-Blocking".into(), "Blocking".into())
            ]
        );
        assert!(crate::logging::running_job().is_none(), "none outside a handler");
    }
}
