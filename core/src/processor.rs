//! Slots that run Rust handlers: each takes the next delivery, runs it
//! through the middleware and its handler, and settles it with the outcome.
//! Host-language slots (Python, Ruby threads) do the same through
//! [`crate::WorkerHandle::next_job`].

use crate::delivery::Delivery;
use crate::handler::{Outcome, Registry};
use crate::shared::Shared;
use crate::trace;
use std::sync::Arc;
use tracing::Instrument;

pub(crate) async fn run(shared: Arc<Shared>, registry: Arc<Registry>, slots: flume::Receiver<Delivery>) {
    // What wakes this slot when its job is cancelled (see cancel.rs).
    let cancel = Arc::new(tokio::sync::Notify::new());
    while let Ok(delivery) = slots.recv_async().await {
        let Some(delivery) = shared.begin(delivery) else {
            continue;
        };
        let span = trace::job_span(delivery.job());
        let watch = shared.cancellations.watch(delivery.job().jid_str(), &cancel);
        let deadline = delivery.time_limit.as_ref().map(|limit| limit.deadline());
        // A cancelled job's handler, or one past its time limit, is dropped
        // where it waits: it runs no further, and the job is filed as
        // cancelled, or failed as timed out.
        let result = tokio::select! {
            result = registry.run(delivery.job(), delivery.failures(), delivery.running()).instrument(span.clone()) => Ok(result),
            _ = watch.cancelled() => Err(Stopped::Cancelled),
            _ = past(deadline) => Err(Stopped::TimedOut),
        };
        drop(watch);
        let result = match result {
            Ok(result) => result,
            Err(Stopped::Cancelled) => {
                drop(span);
                delivery.cancel();
                continue;
            }
            Err(Stopped::TimedOut) => {
                let limit = delivery.time_limit.as_ref().expect("only a time limit has a deadline");
                limit.expire();
                Err(limit.failure(None))
            }
        };
        if let Err(failure) = &result {
            trace::record_failure(&span, failure);
            registry.report_error(delivery.job(), failure);
        }
        drop(span);
        match result {
            Ok(Some(value)) if delivery.wants_result() => delivery.complete_with(value),
            Ok(_) => delivery.complete(),
            Err(failure) => delivery.settle(Outcome::Failure(failure)),
        }
    }
}

/// Why a handler was stopped before it ended.
enum Stopped {
    Cancelled,
    TimedOut,
}

/// Until `deadline`; never without one.
async fn past(deadline: Option<std::time::Instant>) {
    match deadline {
        Some(deadline) => tokio::time::sleep_until(deadline.into()).await,
        None => std::future::pending().await,
    }
}
