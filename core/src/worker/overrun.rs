//! The watch over host threads' time limits (see `time_limit.rs`): tells
//! each job whose limit passed, and deals with one that will not stop.

use crate::delivery::Holder;
use crate::shared::Shared;
use crate::time_limit::{self, Passed};
use std::sync::atomic::Ordering;
use std::sync::Arc;

pub(super) async fn run(shared: Arc<Shared>) {
    let grace = shared.config.timeout_grace();
    let settled = |holder: &Holder| holder.lock().unwrap_or_else(|p| p.into_inner()).is_none();
    loop {
        let Passed {
            limit,
            holder,
            past_grace,
        } = shared.time_limits.next_passed(grace, settled).await;
        let mut held = holder.lock().unwrap_or_else(|p| p.into_inner());
        let Some(delivery) = held.as_ref() else {
            continue;
        };
        if !past_grace {
            tracing::warn!(
                "{} ran past its time limit of {}: stopping it",
                delivery.job(),
                limit.shown()
            );
            continue;
        }
        let grace_shown = time_limit::shown_seconds(grace.as_secs_f64());
        if !time_limit::ENDS_PROCESS_ON_OVERRUN.load(Ordering::SeqCst) {
            tracing::error!(
                "{} is still running {grace_shown} past its time limit of {}: its handler cannot be \
                 interrupted (a blocking call in C?); it is filed as timed out when it ends (with -p N \
                 its process would be ended and replaced)",
                delivery.job(),
                limit.shown()
            );
            continue;
        }
        tracing::error!(
            "{} is still running {grace_shown} past its time limit of {}: ending this process for its \
             parent to replace (its other running jobs go back to their queues)",
            delivery.job(),
            limit.shown()
        );
        let Some(delivery) = held.take() else { continue };
        drop(held);
        let mut failure = limit.failure(None);
        failure.message = format!(
            "{}, and did not stop within {grace_shown} more: its process was ended",
            failure.message
        );
        delivery.fail(failure);
        shared.end_process();
        return;
    }
}
