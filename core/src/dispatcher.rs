//! The fetch loop: whenever slots are free, take that many jobs (one round
//! trip for the batch; with short jobs read ahead, once a third of those
//! are free, see [`Shared::prefetch`]), hand them to slots, and when the queues are empty
//! wait for the next push. Stops taking work as soon as the process is
//! quiet; a fetch already under way is finished and its jobs handed over,
//! never dropped.

use crate::delivery::Completion;
use crate::fetch::{is_unsupported, BasicFetch, Fetched, Fetcher, ReliableFetch};
use crate::job::Job;
use crate::read_ahead;
use crate::shared::{sleep_unless, Lifecycle, Shared};
use crate::slot_feed::{Intake, SlotFeed};
use std::sync::Arc;
use std::time::Duration;

pub(crate) async fn run(shared: Arc<Shared>, slots: SlotFeed, waiting: Intake) {
    let mut fetcher = if shared.is_reliable() {
        Fetcher::Reliable(ReliableFetch::default())
    } else {
        Fetcher::Basic(BasicFetch::default())
    };
    let mut backoff = Duration::from_millis(100);
    // Set when a reliable fetch failed with an unknown outcome (connection
    // lost or timed out mid-call): the server may have moved jobs onto our
    // in-progress list whose reply never arrived.
    let mut reconcile = false;
    // Jobs finished here when the last fetch was made: a fetch reads ahead
    // only if one finished since (the slots are turning over), so a worker
    // whose slots all hang on long jobs takes no more than it took.
    let mut finished_at_fetch = None;
    // When this process last looked, with nothing outstanding, for jobs
    // its in-progress record still holds (see `reconcile_in_progress`).
    let mut looked_idle = tokio::time::Instant::now();
    loop {
        if shared.is_quiet() {
            break;
        }
        if reconcile && shared.is_idle() {
            reconcile = !reconcile_in_progress(&shared).await;
        }
        let finished = shared.read_ahead.finished();
        let free = shared.free_slots(finished_at_fetch != Some(finished));
        if free < shared.refill_at() {
            tokio::select! {
                _ = shared.capacity_freed.notified() => {}
                _ = shared.reached(Lifecycle::Quiet) => {}
                _ = stalled(&shared) => give_back_read_ahead(&shared, &waiting),
            }
            continue;
        }
        finished_at_fetch = Some(finished);
        match fetcher.fetch(&shared, free).await {
            Ok(batch) if batch.is_empty() => {
                shared.set_jobs_flowing(false);
                // Nothing to take, nothing outstanding: whatever the record
                // holds is left over (a failover or a restart lost writes
                // this process made). Looked for at most once a heartbeat
                // interval, and only here, where no pickup waits on it.
                if shared.is_reliable()
                    && shared.is_idle()
                    && looked_idle.elapsed() >= shared.config.heartbeat_interval()
                {
                    looked_idle = tokio::time::Instant::now();
                    reconcile |= !reconcile_in_progress(&shared).await;
                }
                tokio::select! {
                    _ = fetcher.wait(&shared) => {}
                    _ = stalled(&shared) => give_back_read_ahead(&shared, &waiting),
                }
            }
            Ok(batch) => {
                shared.set_jobs_flowing(true);
                backoff = Duration::from_millis(100);
                hand_over(&shared, &slots, batch);
            }
            Err(e) if matches!(fetcher, Fetcher::Reliable(_)) && is_unsupported(&e) => {
                // No job can be on the in-progress list: no LMOVE ever ran.
                tracing::warn!(
                    "reliable fetch is not supported by this Redis ({e}); falling back to basic fetch \
                     (a job is lost if its process dies mid-job)"
                );
                shared.set_basic_fetch();
                fetcher = Fetcher::Basic(BasicFetch::default());
            }
            Err(e) => {
                reconcile |= shared.is_reliable();
                tracing::error!("fetch failed, retrying in {:?}: {e}", backoff);
                sleep_unless(&shared, backoff, Lifecycle::Quiet).await;
                backoff = (backoff * 2).min(Duration::from_secs(2));
            }
        }
    }
    tracing::debug!("fetch loop stopped");
}

/// Returns once jobs wait here for a slot and no job has finished for
/// [`read_ahead::STALL`]: every slot hangs on something long. Never, while
/// no job waits.
async fn stalled(shared: &Shared) {
    // Nothing is fetched while the caller waits, so what waits here can
    // only shrink: once nothing does, there is nothing to watch.
    while shared.holds_read_ahead() {
        let finished = shared.read_ahead.finished();
        tokio::time::sleep(read_ahead::STALL).await;
        if shared.holds_read_ahead() && shared.read_ahead.finished() == finished {
            return;
        }
    }
    std::future::pending().await
}

/// Every slot is busy and none finished a job for [`read_ahead::STALL`]:
/// the jobs waiting for a slot go back to their queues, on the end taken
/// next (dropped unstarted, see [`Shared::abandon`]), for other workers;
/// nothing more is read ahead until a job finishes here.
fn give_back_read_ahead(shared: &Shared, waiting: &Intake) {
    shared.read_ahead.pause();
    let given = waiting.take_waiting();
    if !given.is_empty() {
        tracing::info!(
            "every slot busy for {:?}: giving {} job(s) read ahead back to their queues",
            read_ahead::STALL,
            given.len()
        );
    }
    drop(given);
}

/// With no job outstanding here, everything on our in-progress list is a
/// job whose fetch reply was lost, or one whose acknowledgement a failover
/// or a restart lost (the new master has the record as it was before):
/// put it back on its queue (it runs again: at least once). Pending
/// acknowledgements are written first, so a finished job is not requeued.
/// Returns true when done.
async fn reconcile_in_progress(shared: &Shared) -> bool {
    let (flushed_tx, flushed_rx) = tokio::sync::oneshot::channel();
    if shared.completions.send(Completion::Flush(flushed_tx)).is_err() || flushed_rx.await.is_err() {
        return false;
    }
    if !shared.is_idle() {
        return false;
    }
    match crate::recovery::requeue_held(shared, &shared.identity, 0).await {
        Ok(0) => true,
        Ok(n) => {
            tracing::warn!(
                "requeued {n} job(s) left in this process's in-progress record with none outstanding \
                 (a fetch reply lost, or writes a failover or restart lost)"
            );
            true
        }
        Err(e) => {
            tracing::error!("requeueing jobs whose fetch reply was lost failed (will retry): {e}");
            false
        }
    }
}

fn hand_over(shared: &Arc<Shared>, slots: &SlotFeed, batch: Vec<Fetched>) {
    for Fetched { queue, raw, token } in batch {
        match Job::parse(&raw) {
            Ok(mut job) => {
                job.normalize(crate::job::now());
                let delivery = shared.new_delivery(queue, raw, job, token);
                if shared.cancellations.contains(delivery.job.jid_str()) {
                    delivery.cancel();
                    continue;
                }
                if let Some(expiry) = delivery.job.expiry() {
                    if expiry <= crate::job::now() + crate::clock::cached_offset(&shared.redis) {
                        delivery.expire();
                        continue;
                    }
                }
                let limits = crate::admission::limits_of(shared, &delivery.job);
                if limits.is_empty() {
                    slots.send(delivery);
                } else {
                    crate::admission::admit(shared.clone(), slots.clone(), delivery, limits);
                }
            }
            Err(reason) => {
                tracing::warn!("burying an unparseable payload from queue {queue}: {reason}");
                let _ = shared.completions.send(Completion::Bury {
                    queue,
                    raw,
                    reason,
                    token,
                });
            }
        }
    }
}
