//! The rules for a job's numeric fields, in one table. A push checks them
//! (the error names the field and the value), and a worker checks them
//! again when it takes a payload ([`super::Job::parse`]): a payload that
//! another client, an older version or a person wrote onto a queue with a
//! value out of range is buried in `dead` naming the field, whole, instead
//! of reaching arithmetic that cannot hold it. A `timeout` of 1e20 once made
//! `Instant + Duration` panic in every worker that took the job or its
//! retry, and a `result_ttl` of 1e300 overflowed a key's TTL.

use serde_json::Value;

/// The longest a job may ask for anything to last, in seconds: a year. A
/// time limit, a unique lock, an expiry or a kept result past that is a
/// mistake (a value in milliseconds, a sentinel such as 1e20), not a wish.
pub const LONGEST_SECS: f64 = 31_536_000.0;

/// The latest time a job may name: the end of the year 9999, the last one
/// every language's time type (and the dashboard's dates) can show.
pub const LATEST_EPOCH_SECS: f64 = 253_402_300_799.0;

/// What one numeric field may hold.
#[derive(Clone, Copy, Debug)]
enum Rule {
    /// Seconds, more than 0 and at most [`LONGEST_SECS`].
    Duration,
    /// Seconds, from 1 to [`LONGEST_SECS`] (a key's whole-second TTL).
    WholeDuration,
    /// A point in time: epoch seconds from 0 to [`LATEST_EPOCH_SECS`].
    Epoch,
    /// `true`, `false` or a number of retries (0 to 2^32 - 1).
    Retry,
    /// A priority level, 0 to 9.
    Priority,
    /// A concurrency cap, 1 to [`super::GROUP_CAP_MAX`].
    Cap,
    /// A backlog cap, 1 to [`super::GROUP_BACKLOG_MAX`].
    Backlog,
    /// A number of replicas, 0 to [`crate::config::MAX_REPLICAS_ACKED`].
    Replicas,
}

/// Every numeric field a pusher may set, with its rule and whether a
/// worker checks it again when it takes the job: `at` and `priority` say
/// where a job waits, and have done their part once it is on a list (a
/// raw payload's out-of-range `priority` runs at the default level).
const FIELDS: &[(&str, Rule, bool)] = &[
    ("retry", Rule::Retry, true),
    ("at", Rule::Epoch, false),
    ("expires_at", Rule::Epoch, true),
    ("expires_in", Rule::Duration, false),
    ("timeout", Rule::Duration, true),
    ("unique_for", Rule::Duration, true),
    ("result_ttl", Rule::WholeDuration, true),
    ("priority", Rule::Priority, false),
    ("group_cap", Rule::Cap, true),
    ("group_rate", Rule::Cap, true),
    ("group_rate_period", Rule::Duration, true),
    ("group_backlog", Rule::Backlog, false),
    ("debounce", Rule::Duration, false),
    ("debounce_max", Rule::Duration, false),
    ("throttle", Rule::Duration, false),
    // A push option, taken off the job before it is written (see
    // `Job::take_min_replicas_acked`): a worker never acts on it.
    ("min_replicas_acked", Rule::Replicas, false),
];

impl Rule {
    fn allows(self, value: &Value) -> bool {
        let seconds = value.as_f64().filter(|s| s.is_finite());
        match self {
            Rule::Duration => seconds.is_some_and(|s| s > 0.0 && s <= LONGEST_SECS),
            Rule::WholeDuration => seconds.is_some_and(|s| (1.0..=LONGEST_SECS).contains(&s)),
            Rule::Epoch => seconds.is_some_and(|s| (0.0..=LATEST_EPOCH_SECS).contains(&s)),
            Rule::Retry => matches!(value, Value::Bool(_)) || value.as_u64().is_some_and(|n| n <= u64::from(u32::MAX)),
            Rule::Priority => value
                .as_u64()
                .is_some_and(|level| level <= u64::from(super::HIGHEST_PRIORITY)),
            Rule::Cap => value
                .as_u64()
                .is_some_and(|cap| (1..=super::GROUP_CAP_MAX).contains(&cap)),
            Rule::Backlog => value
                .as_u64()
                .is_some_and(|most| (1..=super::GROUP_BACKLOG_MAX).contains(&most)),
            Rule::Replicas => replicas(value).is_some(),
        }
    }

    fn reason(self) -> &'static str {
        match self {
            Rule::Duration => "must be a number of seconds, more than 0 and at most 31536000 (a year)",
            Rule::WholeDuration => "must be seconds between 1 and 31536000 (a year)",
            Rule::Epoch => "must be epoch seconds, from 0 to 253402300799 (the end of 9999)",
            Rule::Retry => "must be true, false or a whole number >= 0",
            Rule::Priority => "must be a whole number from 0 (last) to 9 (first)",
            Rule::Cap => "must be a whole number from 1 to 1000000",
            Rule::Backlog => "must be a whole number from 1 to 1000000000",
            Rule::Replicas => "must be a whole number from 0 to 16",
        }
    }
}

/// `value` as a number of replicas a push waits for
/// (`min_replicas_acked`), if it is one: 0 to
/// [`crate::config::MAX_REPLICAS_ACKED`].
pub(crate) fn replicas(value: &Value) -> Option<u32> {
    value
        .as_u64()
        .filter(|replicas| *replicas <= crate::config::MAX_REPLICAS_ACKED as u64)
        .map(|replicas| replicas as u32)
}

/// The first numeric field of `fields` a push may not carry: its name, its
/// value and why.
pub(crate) fn check_for_push(
    fields: &serde_json::Map<String, Value>,
) -> Result<(), (&'static str, &Value, &'static str)> {
    check(fields, false)
}

/// The first numeric field of a taken payload a worker cannot act on, as
/// the reason it is buried (naming the field and the value).
pub(crate) fn check_on_delivery(fields: &serde_json::Map<String, Value>) -> Result<(), String> {
    check(fields, true).map_err(|(field, value, reason)| format!("`{field}` is {value}, but {reason}"))
}

fn check(
    fields: &serde_json::Map<String, Value>,
    on_delivery: bool,
) -> Result<(), (&'static str, &Value, &'static str)> {
    for (field, rule, checked_on_delivery) in FIELDS {
        if on_delivery && !checked_on_delivery {
            continue;
        }
        if let Some(value) = fields.get(*field) {
            if !rule.allows(value) {
                return Err((field, value, rule.reason()));
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn refused(field: &str, value: Value) -> Option<String> {
        let fields = json!({ field: value });
        check_for_push(fields.as_object().unwrap())
            .err()
            .map(|(f, _, _)| f.to_string())
    }

    #[test]
    fn each_duration_is_bounded_on_both_sides() {
        for field in ["timeout", "unique_for", "expires_in", "result_ttl"] {
            for bad in [json!(1e20), json!(1e300), json!(-1), json!(0), json!("5"), Value::Null] {
                assert_eq!(refused(field, bad.clone()).as_deref(), Some(field), "{field} = {bad}");
            }
            assert_eq!(refused(field, json!(30)), None, "{field} = 30");
            assert_eq!(refused(field, json!(LONGEST_SECS)), None, "{field} = a year");
        }
    }

    #[test]
    fn times_retries_and_levels_are_bounded() {
        for (field, bad) in [
            ("at", json!(1e300)),
            ("at", json!(-1)),
            ("expires_at", json!("soon")),
            ("retry", json!(-1)),
            ("retry", json!(2.5)),
            ("retry", json!(1e300)),
            ("priority", json!(10)),
            ("min_replicas_acked", json!(17)),
            ("min_replicas_acked", json!(-1)),
            ("min_replicas_acked", json!(1.5)),
            ("min_replicas_acked", json!(1e300)),
            ("min_replicas_acked", json!("1")),
            ("min_replicas_acked", Value::Null),
        ] {
            assert_eq!(refused(field, bad.clone()).as_deref(), Some(field), "{field} = {bad}");
        }
        for (field, good) in [
            ("at", json!(1_700_000_000.5)),
            ("retry", json!(false)),
            ("priority", json!(0)),
            ("min_replicas_acked", json!(0)),
            ("min_replicas_acked", json!(16)),
        ] {
            assert_eq!(refused(field, good.clone()), None, "{field} = {good}");
        }
    }

    #[test]
    fn a_worker_checks_what_it_acts_on_and_names_it() {
        let fields = json!({"priority": 1e300, "at": "x", "timeout": 1e300});
        let reason = check_on_delivery(fields.as_object().unwrap()).unwrap_err();
        assert!(reason.starts_with("`timeout` is 1e+300, but must be"), "{reason}");
        let shown_only = json!({"priority": 1e300, "at": "x", "retry_count": -1});
        assert_eq!(check_on_delivery(shown_only.as_object().unwrap()), Ok(()));
    }
}
