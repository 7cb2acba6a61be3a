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
        // A cancelled job's handler is dropped where it waits: it runs no
        // further, and the job is filed as cancelled.
        let result = tokio::select! {
            result = registry.run(delivery.job()).instrument(span.clone()) => Some(result),
            _ = watch.cancelled() => None,
        };
        drop(watch);
        let Some(result) = result else {
            drop(span);
            delivery.cancel();
            continue;
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
