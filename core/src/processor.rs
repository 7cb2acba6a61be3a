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
    while let Ok(delivery) = slots.recv_async().await {
        let Some(delivery) = shared.begin(delivery) else {
            continue;
        };
        let span = trace::job_span(delivery.job());
        let outcome = registry.run(delivery.job()).instrument(span.clone()).await;
        if let Outcome::Failure(failure) = &outcome {
            trace::record_failure(&span, failure);
            registry.report_error(delivery.job(), failure);
        }
        drop(span);
        delivery.settle(outcome);
    }
}
