//! The lines a settled job gets: `done` and `failed`, with its fields.

use super::TARGET;
use crate::delivery::Delivery;
use crate::job::now;
use crate::retry::{Disposition, FailurePlan};

/// A run's length as the job lines show it (milliseconds, one decimal).
pub(super) fn duration_ms(delivery: &Delivery, finished_at: f64) -> String {
    format!("{:.1}", (finished_at - delivery.started_at).max(0.0) * 1000.0)
}

/// The trace the job's push belongs to (any language's), on its lines so
/// a log search finds the job from the request that pushed it.
pub(super) fn trace_id(job: &crate::job::Job) -> Option<&str> {
    crate::trace::parent_of(job).map(|parent| parent.trace_id)
}

/// The one line a success gets (after the `start` line `Shared::begin`
/// writes at debug), in every language.
pub(super) fn log_success(delivery: &Delivery, finished_at: f64) {
    let job = &delivery.job;
    tracing::info!(
        target: TARGET,
        jid = job.jid_str(),
        class = job.display_class(),
        queue = job.queue_name(),
        duration_ms = duration_ms(delivery, finished_at),
        outcome = "ok",
        trace_id = trace_id(job),
        "done"
    );
}

/// The one line a failure gets (in every language: the hosts log none of
/// their own): the job, its queue, the error, what happens next; and the
/// backtrace, on lines of its own, in JSON mode or at debug level.
pub(super) fn log_failure(
    delivery: &Delivery,
    failure: &crate::handler::Failure,
    plan: &FailurePlan,
    finished_at: f64,
) {
    let job = &delivery.job;
    let first_line = failure.message.lines().next().unwrap_or("");
    let next = match plan.disposition {
        // A retry due now may already be a hair past: show 0.0, not -0.0.
        Disposition::Retry => format!("retry in {:.1}s", (plan.score - now()).max(0.0)),
        Disposition::Dead => "out of retries, moved to dead".to_string(),
        Disposition::Discard => "retry disabled, discarded".to_string(),
        Disposition::Reschedule => "rescheduled".to_string(),
        Disposition::Expired | Disposition::ExpiredDead => "expired".to_string(),
        Disposition::Cancelled => "cancelled".to_string(),
    };
    // An absent field (None) is not written at all.
    let backtrace = (crate::logging::json() || tracing::enabled!(target: TARGET, tracing::Level::DEBUG))
        .then(|| failure.backtrace.join("\n"))
        .filter(|b| !b.is_empty());
    macro_rules! line {
        ($level:ident) => {
            tracing::$level!(
                target: TARGET,
                jid = job.jid_str(),
                class = job.display_class(),
                queue = job.queue_name(),
                duration_ms = duration_ms(delivery, finished_at),
                outcome = plan.disposition.as_str(),
                trace_id = trace_id(job),
                backtrace = backtrace.as_deref(),
                "failed ({}: {first_line}); {next}",
                failure.class
            )
        };
    }
    match plan.disposition {
        Disposition::Dead => line!(error),
        Disposition::Retry
        | Disposition::Discard
        | Disposition::Reschedule
        | Disposition::Expired
        | Disposition::ExpiredDead
        | Disposition::Cancelled => line!(warn),
    }
}
