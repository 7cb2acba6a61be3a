//! Slots that run Rust handlers: each takes the next delivery, runs it
//! through the middleware and its handler, and settles it with the outcome.
//! Host-language slots (Python, Ruby threads) do the same through
//! [`crate::WorkerHandle::next_job`].

use crate::delivery::Delivery;
use crate::handler::{Outcome, Registry};
use crate::shared::Shared;
use std::sync::Arc;

pub(crate) async fn run(shared: Arc<Shared>, registry: Arc<Registry>, slots: flume::Receiver<Delivery>) {
    while let Ok(delivery) = slots.recv_async().await {
        let Some(delivery) = shared.begin(delivery) else {
            continue;
        };
        let outcome = registry.run(delivery.job()).await;
        if let Outcome::Failure(failure) = &outcome {
            registry.report_error(delivery.job(), failure);
        }
        delivery.settle(outcome);
    }
}
