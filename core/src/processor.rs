//! Slots that run Rust handlers: each takes the next delivery, runs it
//! through the middleware and its handler, and reports the outcome.
//! Host-language slots (Python, Ruby threads) do the same through
//! [`crate::WorkerHandle::next_job`] and [`crate::WorkerHandle::complete`].

use crate::handler::Registry;
use crate::manager::{Delivery, Shared};
use std::sync::Arc;

pub(crate) async fn run(shared: Arc<Shared>, registry: Arc<Registry>, slots: flume::Receiver<Delivery>) {
    while let Ok(mut delivery) = slots.recv_async().await {
        shared.start(&mut delivery);
        let outcome = registry.run(&delivery.job).await;
        shared.finish(delivery, outcome);
    }
}
