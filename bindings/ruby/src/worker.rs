//! `Cogworker::Native::Worker`: the core's worker in host-slot mode. Ruby
//! threads take jobs with `next_job` (without the GVL, waking for
//! interrupts) and settle them with `complete` / `fail`, which never block.

use crate::client::in_runtime;
use crate::config::from_hash;
use crate::errors::{raise, to_ruby};
use crate::nogvl::without_gvl;
use cogworker::{Delivery, DeliveryInfo, Failure, Lifecycle, NextJob, Outcome, Periodic, Worker, WorkerHandle};
use magnus::{prelude::*, Error, RHash, Ruby, TryConvert, Value};
use std::sync::atomic::Ordering;
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// How often a blocked wait looks at its interrupt flag.
const SLICE: Duration = Duration::from_millis(50);

#[magnus::wrap(class = "Cogworker::Native::Delivery", free_immediately, size)]
pub struct RbDelivery {
    inner: Mutex<Option<Delivery>>,
    info: DeliveryInfo,
}

impl RbDelivery {
    fn new(delivery: Delivery) -> Self {
        RbDelivery {
            info: delivery.info(),
            inner: Mutex::new(Some(delivery)),
        }
    }
    pub fn class_name(&self) -> String {
        self.info.class.clone()
    }
    pub fn jid(&self) -> String {
        self.info.jid.clone()
    }
    pub fn queue(&self) -> String {
        self.info.queue.clone()
    }
    pub fn retry_count(&self) -> u32 {
        self.info.retry_count
    }
    pub fn args_json(&self) -> String {
        self.info.args_json.clone()
    }
    fn take(&self, ruby: &Ruby) -> Result<Delivery, Error> {
        self.inner
            .lock()
            .unwrap()
            .take()
            .ok_or_else(|| raise(ruby, "Error", "this job was already completed"))
    }
}

/// Validates a periodic entry (JSON text); returns its pjid. Raises
/// ConfigError naming the bad field.
pub fn periodic_id(ruby: &Ruby, entry_json: String) -> Result<String, Error> {
    Periodic::from_json(&entry_json)
        .map(|entry| entry.pjid())
        .map_err(|e| to_ruby(ruby, e))
}

#[magnus::wrap(class = "Cogworker::Native::Worker", free_immediately, size)]
pub struct RbWorker {
    handle: WorkerHandle,
    pending: Mutex<Option<Worker>>,
    finished_tx: flume::Sender<Result<(), String>>,
    finished_rx: flume::Receiver<Result<(), String>>,
}

impl RbWorker {
    /// `periodic`: entries as JSON text; `classes`: the handler classes
    /// resolved in Ruby (periodic classes are reported against them).
    pub fn new(ruby: &Ruby, settings: RHash, periodic: Vec<String>, classes: Vec<String>) -> Result<Self, Error> {
        let config = from_hash(ruby, settings)?;
        let mut builder = Worker::builder(config).host_slots().host_classes(classes);
        for entry in &periodic {
            builder = builder.periodic(Periodic::from_json(entry).map_err(|e| to_ruby(ruby, e))?);
        }
        let worker = in_runtime(|| builder.build()).map_err(|e| to_ruby(ruby, e))?;
        let (finished_tx, finished_rx) = flume::bounded(1);
        Ok(RbWorker {
            handle: worker.handle(),
            pending: Mutex::new(Some(worker)),
            finished_tx,
            finished_rx,
        })
    }

    pub fn start(ruby: &Ruby, rb_self: &Self) -> Result<(), Error> {
        let worker = rb_self
            .pending
            .lock()
            .unwrap()
            .take()
            .ok_or_else(|| raise(ruby, "Error", "worker already started"))?;
        let done = rb_self.finished_tx.clone();
        cogworker::runtime::global().spawn(async move {
            let _ = done.send(worker.run().await.map_err(|e| e.to_string()));
        });
        Ok(())
    }

    /// A `Delivery`, `nil` when idle (or interrupted), `:stopped` when the
    /// worker is shutting down.
    pub fn next_job(ruby: &Ruby, rb_self: &Self, timeout: f64) -> Result<Value, Error> {
        let handle = rb_self.handle.clone();
        let deadline = Instant::now() + Duration::from_secs_f64(timeout.max(0.0));
        let next = without_gvl(move |interrupted| loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match handle.next_job(left.min(SLICE)) {
                NextJob::Idle if !left.is_zero() && !interrupted.load(Ordering::SeqCst) => {}
                other => return other,
            }
        });
        Ok(match next {
            Some(NextJob::Job(delivery)) => ruby.obj_wrap(RbDelivery::new(delivery)).as_value(),
            Some(NextJob::Stopped) => ruby.to_symbol("stopped").as_value(),
            Some(NextJob::Idle) | None => ruby.qnil().as_value(),
        })
    }

    pub fn complete(ruby: &Ruby, rb_self: &Self, delivery: &RbDelivery) -> Result<(), Error> {
        rb_self.handle.complete(delivery.take(ruby)?, Outcome::Success);
        Ok(())
    }

    /// `error_class`, `message` and backtrace lines may be in any encoding:
    /// the core makes them valid UTF-8 and bounds them.
    pub fn fail(
        ruby: &Ruby,
        rb_self: &Self,
        delivery: &RbDelivery,
        error_class: magnus::RString,
        message: magnus::RString,
        backtrace: magnus::RArray,
        retry_in: Option<f64>,
    ) -> Result<(), Error> {
        // SAFETY: each string's bytes are copied before any other Ruby call.
        let (class, text) = unsafe { (error_class.as_slice().to_vec(), message.as_slice().to_vec()) };
        let mut lines = Vec::new();
        for line in backtrace.into_iter() {
            let line = magnus::RString::try_convert(line)?;
            lines.push(unsafe { String::from_utf8_lossy(line.as_slice()).into_owned() });
        }
        let mut failure = Failure::from_bytes(&class, &text).with_backtrace(lines);
        failure.retry_in = retry_in;
        rb_self.handle.complete(delivery.take(ruby)?, Outcome::Failure(failure));
        Ok(())
    }

    pub fn quiet(&self) {
        self.handle.quiet();
    }
    pub fn stop(&self) {
        self.handle.stop();
    }
    pub fn identity(&self) -> String {
        self.handle.identity().to_string()
    }
    pub fn lifecycle(&self) -> &'static str {
        match self.handle.lifecycle() {
            Lifecycle::Running => "running",
            Lifecycle::Quiet => "quiet",
            Lifecycle::Stopping => "stopping",
        }
    }
    /// Busy jobs as JSON text (an array of {class, jid, queue, run_at}).
    pub fn busy_json(&self) -> String {
        let busy: Vec<serde_json::Value> = self
            .handle
            .busy()
            .into_iter()
            .map(|e| serde_json::json!({"class": e.class, "jid": e.jid, "queue": e.queue, "run_at": e.run_at}))
            .collect();
        serde_json::Value::Array(busy).to_string()
    }

    /// Waits up to `timeout` seconds for the engine's shutdown to complete.
    pub fn wait(ruby: &Ruby, rb_self: &Self, timeout: f64) -> Result<bool, Error> {
        let rx = rb_self.finished_rx.clone();
        let deadline = Instant::now() + Duration::from_secs_f64(timeout.max(0.0));
        let result = without_gvl(move |interrupted| loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match rx.recv_timeout(left.min(SLICE)) {
                Ok(result) => return Some(result),
                Err(flume::RecvTimeoutError::Timeout) if !left.is_zero() && !interrupted.load(Ordering::SeqCst) => {}
                Err(_) => return None,
            }
        })
        .flatten();
        match result {
            Some(Ok(())) => {
                let _ = rb_self.finished_tx.try_send(Ok(()));
                Ok(true)
            }
            Some(Err(message)) => Err(raise(ruby, "Error", message)),
            None => Ok(false),
        }
    }
}
