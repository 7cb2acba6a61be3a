//! A job that declares rate limiters (`limits`, see [`crate::job::Job::limits`])
//! takes capacity from each before a slot runs it, whatever language runs
//! it: one `limit_acquire.lua` call per limiter and try, on a task of its
//! own so the fetch loop never waits. Over one, it waits there (holding
//! one of this worker's slots, as a Sidekiq thread waits on a limiter) up
//! to `over_limit_wait` for capacity; then it goes back to the schedule
//! (the completion task files it). A limiter no process has defined fails
//! the job, loudly. A job without limits never comes here and pays nothing.

use crate::delivery::Delivery;
use crate::handler::Failure;
use crate::limiter::{Lease, Pause, Taken};
use crate::retry::UNKNOWN_LIMITER;
use crate::shared::{Lifecycle, Shared};
use crate::slot_feed::SlotFeed;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// What taking every declared limit came to.
enum Admitted {
    Yes(Vec<Lease>),
    /// Over `limiter`; capacity expected back in `retry_in`, if known.
    Over {
        limiter: String,
        retry_in: Option<Duration>,
    },
    Undefined(String),
}

/// The limiters `job` runs within: those its push declared, then its
/// class's (see [`crate::WorkerBuilder::limits`]). Empty, without a
/// lookup, for a job that has none where no class has any.
pub(crate) fn limits_of(shared: &Shared, job: &crate::job::Job) -> Vec<String> {
    let mut names: Vec<String> = job.limit_names().into_iter().map(str::to_string).collect();
    if !shared.class_limits.is_empty() {
        for name in shared.class_limits.get(job.class()).into_iter().flatten() {
            if !names.contains(name) {
                names.push(name.clone());
            }
        }
    }
    names
}

/// Takes the limiters `names`, then hands `delivery` to a slot holding them.
pub(crate) fn admit(shared: Arc<Shared>, slots: SlotFeed, mut delivery: Delivery, names: Vec<String>) {
    tokio::spawn(async move {
        // A short wait (a holder about to finish, a window about to
        // slide) costs less than a reschedule.
        let deadline = Instant::now() + shared.config.over_limit_wait();
        let mut pause = Pause::new();
        // The limiters that turned this job away already: each counts it
        // once, and says once that it waits.
        let mut refused_by: Vec<String> = Vec::new();
        loop {
            match take_all(&shared, &names, &refused_by).await {
                Ok(Admitted::Yes(leases)) => {
                    delivery.leases = leases;
                    return slots.send(delivery);
                }
                Ok(Admitted::Undefined(name)) => {
                    delivery.mark_started();
                    let message = format!("no rate limiter named {name:?} is defined in this Redis");
                    return delivery.fail(Failure::new(UNKNOWN_LIMITER, message));
                }
                Ok(Admitted::Over { limiter, retry_in }) => {
                    if !refused_by.contains(&limiter) {
                        let back = retry_in.map_or_else(
                            || "when a holder lets go".to_string(),
                            |wait| format!("in about {:.2}s", wait.as_secs_f64()),
                        );
                        tracing::info!(
                            jid = delivery.job.jid_str(),
                            class = delivery.job.display_class(),
                            "waits for rate limiter {limiter}: full, a place is expected {back} \
                             (in this worker up to over_limit_wait {:.1}s, then rescheduled)",
                            shared.config.over_limit_wait().as_secs_f64()
                        );
                        refused_by.push(limiter.clone());
                    }
                    let now = Instant::now();
                    if now >= deadline || retry_in.is_some_and(|wait| now + wait > deadline) {
                        return delivery.over_limit(&limiter, retry_in);
                    }
                    tokio::select! {
                        _ = tokio::time::sleep(pause.next(retry_in)) => {}
                        // Stopping: given back to its queue, unstarted.
                        _ = shared.reached(Lifecycle::Quiet) => return drop(delivery),
                    }
                }
                Err(e) => {
                    // Given back to its queue, unstarted, for a later try.
                    tracing::warn!("could not check the limits of {} ({e}); put back", delivery.job);
                    return drop(delivery);
                }
            }
        }
    });
}

/// One try at every limiter `names`, in order; over one, the capacity
/// taken from those before it is given back at once.
async fn take_all(shared: &Shared, names: &[String], refused_by: &[String]) -> crate::error::Result<Admitted> {
    let mut leases = Vec::with_capacity(names.len());
    for name in names {
        let counted = !refused_by.contains(name);
        match crate::limiter::take(&shared.redis, &shared.keys, name, counted).await? {
            Taken::Yes(lease) => leases.push(lease),
            Taken::Over(retry_in) => {
                return Ok(Admitted::Over {
                    limiter: name.clone(),
                    retry_in,
                })
            }
            Taken::Undefined => return Ok(Admitted::Undefined(name.clone())),
        }
    }
    Ok(Admitted::Yes(leases))
}
