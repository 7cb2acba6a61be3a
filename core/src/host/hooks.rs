//! What the hosts' hooks share: the lifecycle events a hook may be
//! registered on (and the refusal of any other), and the line logged when
//! a hook raises. Python's and Ruby's registries each kept their own list
//! and wrote their own line (Python a traceback, Ruby class and message).

use crate::error::{Error, Result};

/// The worker's lifecycle events a host hook may be registered on, in the
/// order they happen (see [`crate::WorkerEvent::name`]).
pub const LIFECYCLE_EVENTS: [&str; 4] = ["startup", "quiet", "shutdown", "heartbeat"];

/// `event` if it is a lifecycle event, else a config error naming it and
/// the events there are.
pub fn lifecycle_event(event: &str) -> Result<&'static str> {
    LIFECYCLE_EVENTS
        .iter()
        .copied()
        .find(|known| *known == event)
        .ok_or_else(|| {
            Error::config(
                "event",
                format!("{event:?}"),
                format!("no such event (one of {})", LIFECYCLE_EVENTS.join(", ")),
            )
        })
}

/// Logs that a hook raised: `role` says which (`error` for an error
/// handler, `death` for a death handler, else the lifecycle event it was
/// registered on), `hook` is the hook as the host shows it, `error_class`
/// as a failure records it. One ERROR line with the error's class and
/// message, its backtrace as a field. A hook never changes what happens to
/// a job, so nothing else is done.
pub fn hook_raised(role: &str, hook: &str, error_class: &str, message: &str, backtrace: &[String]) {
    let what = match role {
        "error" => "error handler".to_string(),
        "death" => "death handler".to_string(),
        event => format!("{event} hook"),
    };
    // An absent field (None) is not written at all.
    let backtrace = (!backtrace.is_empty()).then(|| backtrace.join("\n"));
    tracing::error!(
        backtrace = backtrace.as_deref(),
        "{what} {hook} raised {error_class}: {message}; ignored"
    );
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_lifecycle_events_are_taken_and_a_refusal_lists_them() {
        for event in LIFECYCLE_EVENTS {
            assert_eq!(lifecycle_event(event).unwrap(), event);
        }
        let error = lifecycle_event("started").unwrap_err();
        assert_eq!(error.field(), Some("event"));
        assert!(
            error.to_string().contains("startup, quiet, shutdown, heartbeat"),
            "{error}"
        );
    }
}
