//! The stop sequence (docs/internals.md, "Crashes and shutdown").

use crate::delivery::{Completion, Delivery};
use crate::error::Result;
use crate::in_progress::NOT_HELD;
use crate::job::Job;
use crate::shared::Shared;
use crate::slot_feed::Intake;
use crate::{completion, recovery};
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::task::JoinHandle;

/// How long shutdown waits for an in-flight fetch and for pending writes.
const SHUTDOWN_STEP_LIMIT: Duration = Duration::from_secs(15);

/// Stopping: the fetch loop has been told (lifecycle); wait it out, give
/// back what never started, wait for running jobs up to the timeout, write
/// what finished, then put everything unfinished back on its queue.
pub(super) async fn shutdown(shared: &Arc<Shared>, dispatcher: JoinHandle<()>, intake: &Intake) {
    // A process that must end (see time_limit.rs) waits for no job.
    let timeout = if shared.is_ending() {
        Duration::ZERO
    } else {
        shared.config.shutdown_timeout()
    };
    super::lifecycle!(
        shared,
        "stopping: waiting up to {:.1}s for {} running job(s)",
        timeout.as_secs_f64(),
        shared.busy_count()
    );
    if tokio::time::timeout(SHUTDOWN_STEP_LIMIT, dispatcher).await.is_err() {
        tracing::error!("fetch did not finish in time; its jobs stay in progress and are requeued below");
    }
    // Taken but never started: they go back (basic fetch) or stay in
    // progress, which is requeued below (reliable fetch).
    let never_started: Vec<_> = intake.drain().into_iter().map(Delivery::give_back).collect();

    let deadline = Instant::now() + timeout;
    while shared.busy_count() > 0 {
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            break;
        }
        tokio::select! {
            _ = shared.capacity_freed.notified() => {}
            _ = tokio::time::sleep(left.min(Duration::from_millis(50))) => {}
        }
    }

    let (flushed_tx, mut flushed_rx) = tokio::sync::oneshot::channel();
    if shared.completions.send(Completion::Flush(flushed_tx)).is_ok() {
        if shared.is_reliable() {
            if tokio::time::timeout(SHUTDOWN_STEP_LIMIT, flushed_rx).await.is_err() {
                tracing::error!("results not written in time; those jobs stay in progress and may run again");
            }
        } else {
            // Basic fetch: the results are the jobs' only copy. Wait for
            // them to be written, however long Redis takes.
            while tokio::time::timeout(SHUTDOWN_STEP_LIMIT, &mut flushed_rx)
                .await
                .is_err()
            {
                tracing::error!("basic fetch: results still not written; waiting (they exist only here)");
            }
        }
    }

    // From here a job that ends is not settled: it is going back, with
    // its last checkpoint.
    shared.give_back_running();
    if let Err(e) = crate::report_writer::flush(shared).await {
        tracing::warn!("writing checkpoints before the give-back failed (those jobs resume from earlier): {e}");
    }
    match requeue_unfinished(shared, never_started).await {
        Ok(0) => {}
        Ok(n) => tracing::warn!("requeued {n} job(s) unfinished at shutdown"),
        Err(e) => tracing::error!("requeueing unfinished jobs failed (recovery will find them): {e}"),
    }
    // The jobs given back held capped groups' leases: ended now, so their
    // groups run at once elsewhere (else at another worker's orphan check).
    if let Err(e) = crate::group_leases::sweep(shared).await {
        tracing::warn!("ending capped groups' leases at shutdown failed (the next orphan check ends them): {e}");
    }
}

async fn requeue_unfinished(shared: &Shared, never_started: Vec<Vec<u8>>) -> Result<usize> {
    if shared.is_reliable() {
        return recovery::requeue_held(shared, &shared.identity, 0).await;
    }
    // Basic fetch: the only copy is in memory.
    let mut payloads = never_started;
    payloads.extend(shared.busy_snapshot().into_iter().map(|(_, e)| e.raw));
    for raw in &payloads {
        match Job::parse(raw) {
            Ok(job) => {
                crate::requeue::requeue_one(shared, &shared.identity, raw, &job, 0, NOT_HELD, "").await?;
            }
            Err(reason) => {
                completion::bury_unparseable(shared, &shared.identity, NOT_HELD, "", raw, &reason).await?;
            }
        }
    }
    Ok(payloads.len())
}
