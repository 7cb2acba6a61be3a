//! A delivery as a host object holds it: settled at most once through any
//! number of references (a second `complete` is an error, a late `abandon`
//! nothing), and abandoned by the core if the host object is collected
//! unsettled.

use crate::delivery::{Delivery, DeliveryInfo, Holder};
use crate::error::{Error, Result};
use crate::host::HostFailure;
use crate::time_limit::TimeLimit;
use std::sync::{Arc, Mutex, Weak};

/// A delivery owned by a host-language object.
pub struct HostDelivery {
    /// Shared with the watch over time limits (see `time_limit.rs`), which
    /// settles a job that will not stop when its process must end.
    inner: Arc<Holder>,
    /// What the host's slot needs to run it.
    pub info: DeliveryInfo,
    /// Its time limit, if it has one (held by the delivery: gone once it
    /// settles, when the watch forgets it).
    time_limit: Option<Weak<TimeLimit>>,
}

impl HostDelivery {
    /// Wraps a delivery a host slot took (a job with a time limit is
    /// watched from now).
    pub fn new(delivery: Delivery) -> Self {
        let (info, time_limit) = (delivery.info(), delivery.time_limit.clone());
        let watcher = time_limit.as_ref().and_then(|_| delivery.owner().cloned());
        let inner = Arc::new(Mutex::new(Some(delivery)));
        if let (Some(limit), Some(owner)) = (&time_limit, watcher) {
            owner.time_limits.watch(limit, &inner);
        }
        HostDelivery {
            info,
            inner,
            time_limit: time_limit.as_ref().map(Arc::downgrade),
        }
    }

    /// Runs `handler` (the host's call of the job's handler) on the host
    /// thread `thread` (the host's non-zero id for it, with which
    /// [`crate::host::HostWorker::run_timekeeper`] interrupts it when the
    /// job's time limit passes; call it with the host's lock held).
    pub fn perform<T>(&self, thread: u64, handler: impl FnOnce() -> T) -> T {
        let Some(limit) = self.time_limit.as_ref().and_then(Weak::upgrade) else {
            return handler();
        };
        limit.entered_handler(thread);
        if limit.is_expired() {
            // Passed before the handler began: the timekeeper found no
            // handler to tell; it is told now.
            if let Some(owner) = self
                .inner
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .as_ref()
                .and_then(Delivery::owner)
            {
                owner.time_limits.tell_again(&limit);
            }
        }
        let returned = handler();
        limit.left_handler();
        returned
    }

    /// Did its time limit pass (see [`crate::time_limit`])? The
    /// host's event loop cancels such a coroutine; however it ends, the
    /// job fails as timed out.
    pub fn is_timed_out(&self) -> bool {
        self.time_limit
            .as_ref()
            .and_then(Weak::upgrade)
            .is_some_and(|limit| limit.is_expired())
    }

    /// Was the job cancelled while it runs (see [`Delivery::is_cancelled`])?
    /// False once settled.
    pub fn is_cancelled(&self) -> bool {
        let inner = self.inner.lock().unwrap_or_else(|p| p.into_inner());
        inner.as_ref().is_some_and(Delivery::is_cancelled)
    }

    /// The job's handle on itself (see [`crate::long_jobs`]); `None` once
    /// settled, when its reports are no-ops.
    fn running(&self) -> Option<crate::long_jobs::Running> {
        let inner = self.inner.lock().unwrap_or_else(|p| p.into_inner());
        inner.as_ref().and_then(Delivery::running)
    }

    /// Reports progress (see [`crate::long_jobs::Running::progress`]): `data` is any
    /// JSON-able host value (`Null`: none). The error names the argument;
    /// nothing once settled.
    pub fn progress(&self, percent: Option<f64>, message: Option<&str>, data: &crate::host::HostValue) -> Result<()> {
        let data = match data {
            crate::host::HostValue::Null => None,
            data => Some(data.to_json("data")?),
        };
        self.running()
            .map_or(Ok(()), |running| running.progress(percent, message, data))
    }

    /// Saves `cursor` as where the job resumes (see
    /// [`crate::long_jobs::Running::checkpoint`]); the error names `cursor`; nothing
    /// once settled.
    pub fn checkpoint(&self, cursor: &crate::host::HostValue) -> Result<()> {
        let cursor = cursor.to_json("cursor")?;
        self.running().map_or(Ok(()), |running| running.checkpoint(cursor))
    }

    /// The cursor the job resumes from (see [`crate::long_jobs::Running::cursor`]).
    pub fn cursor(&self) -> Option<serde_json::Value> {
        self.running().and_then(|running| running.cursor())
    }

    /// Should the job stop now (see [`crate::long_jobs::Running::stopping`])? False
    /// once settled.
    pub fn is_stopping(&self) -> bool {
        self.running().is_some_and(|running| running.stopping())
    }

    /// One item of an iteration is done: saves `cursor`; whether to go on
    /// (see [`crate::long_jobs::Running::iterated`]); `max_runtime` in
    /// seconds, a positive number (the error names
    /// `max_iteration_runtime`), or none. False once settled.
    pub fn iterated(&self, cursor: &crate::host::HostValue, max_runtime: Option<f64>) -> Result<bool> {
        let cursor = cursor.to_json("cursor")?;
        let most = match max_runtime {
            None => None,
            Some(seconds) => match std::time::Duration::try_from_secs_f64(seconds) {
                Ok(most) if seconds > 0.0 => Some(most),
                _ => {
                    return Err(Error::invalid_argument(
                        "max_iteration_runtime",
                        seconds,
                        "must be a positive number of seconds",
                    ))
                }
            },
        };
        self.running()
            .map_or(Ok(false), |running| running.iterated(cursor, most))
    }

    /// Put the job back on its queue with its cursor when its handler
    /// returns (see [`crate::long_jobs::Running::interrupt`]).
    pub fn interrupt(&self) {
        if let Some(running) = self.running() {
            running.interrupt();
        }
    }

    fn take(&self) -> Result<Delivery> {
        let taken = self.inner.lock().unwrap_or_else(|p| p.into_inner()).take();
        taken.ok_or_else(|| Error::invalid_argument("delivery", &self.info.jid, "was already settled"))
    }

    /// `f` of the whole job (every payload field, for middleware), for a
    /// host to convert to its own values; `None` once settled.
    pub fn with_payload<R>(&self, f: impl FnOnce(&serde_json::Map<String, serde_json::Value>) -> R) -> Option<R> {
        let inner = self.inner.lock().unwrap_or_else(|p| p.into_inner());
        inner.as_ref().map(|delivery| f(delivery.job().fields()))
    }

    /// `f` of the job's arguments, for a host to convert them to its own
    /// values without a JSON round trip; `None` once settled.
    pub fn with_args<R>(&self, f: impl FnOnce(&[serde_json::Value]) -> R) -> Option<R> {
        let inner = self.inner.lock().unwrap_or_else(|p| p.into_inner());
        inner.as_ref().map(|delivery| f(delivery.job().args_slice()))
    }

    /// The CONSUMER span the host opens around its handler (see
    /// [`crate::host::host_job_span`]); `None` once settled.
    pub fn job_span(&self) -> Option<crate::trace::HostSpan> {
        let inner = self.inner.lock().unwrap_or_else(|p| p.into_inner());
        inner
            .as_ref()
            .map(|delivery| crate::trace::host_job_span(delivery.job()))
    }

    /// Moves it to the host's event loop (see [`Delivery::detach`]);
    /// nothing once settled.
    pub fn detach(&self) {
        if let Some(delivery) = self.inner.lock().unwrap_or_else(|p| p.into_inner()).as_mut() {
            delivery.detach();
        }
    }

    /// Has it gone on to the host's event loop (see [`Self::detach`])?
    pub fn is_detached(&self) -> bool {
        let inner = self.inner.lock().unwrap_or_else(|p| p.into_inner());
        inner.as_ref().is_some_and(|delivery| delivery.detached)
    }

    /// Has it been settled (or abandoned)?
    pub fn is_settled(&self) -> bool {
        self.inner.lock().unwrap_or_else(|p| p.into_inner()).is_none()
    }

    /// The job succeeded.
    pub fn complete(&self) -> Result<()> {
        self.take()?.complete();
        Ok(())
    }

    /// Does the job keep its outcome (`result_ttl`)? Then pass the
    /// handler's value to [`HostDelivery::complete_with`]. (Read once, when
    /// the slot took it: asked after every job.)
    pub fn wants_result(&self) -> bool {
        self.info.wants_result
    }

    /// The job succeeded, returning `value`, kept as its result. A value
    /// JSON cannot hold is an error naming `result` (the delivery is not
    /// settled then: the host fails the job with it).
    pub fn complete_with(&self, value: &crate::host::HostValue) -> Result<()> {
        let json = value.to_json("result")?;
        self.take()?.complete_with(json);
        Ok(())
    }

    /// The job failed (see [`HostFailure`]).
    pub fn fail(&self, failure: HostFailure) -> Result<()> {
        self.take()?.fail_from_host(failure);
        Ok(())
    }

    /// The handler ended without an outcome (`how` says how); nothing if
    /// the delivery was already settled.
    pub fn abandon(&self, how: &str) {
        if let Ok(delivery) = self.take() {
            delivery.abandon(how);
        }
    }
}
