//! A rate limiter as a host language defines and uses it (`with limiter:`,
//! `limiter.within_limit { }`): the definition built from host values,
//! every piece checked and a bad one named; written to Redis when it is
//! made, or on first use if Redis cannot be reached then (a limiter made at
//! import time must not fail the import); then the core's [`Limiter`]
//! takes capacity.

use super::session::Session;
use crate::client::Client;
use crate::error::{Error, Result};
use crate::host_value::HostValue;
use crate::limiter::{Lease, Limit, Limiter};
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::OnceCell;

/// How long `with limiter:` / `within_limit` waits for capacity unless
/// the limiter or the call says otherwise (Sidekiq Enterprise's
/// `wait_timeout`).
pub const DEFAULT_WAIT: Duration = Duration::from_secs(5);

/// The kinds a host names, as [`Limit`]'s constructors make them.
pub const LIMITER_KINDS: &[&str] = &crate::limiter::KINDS;

/// The interval units a limiter takes by name.
const UNITS: &[(&str, f64)] = &[("second", 1.0), ("minute", 60.0), ("hour", 3600.0), ("day", 86_400.0)];

/// The options a host's limiter takes besides its name and limit.
const OPTIONS: &str = "interval (bucket, window, leaky), lease_ttl (concurrent), wait";

/// A host's limiter: its definition and default wait, bound to a client.
/// Cheap to clone; clones share the definition written.
#[derive(Clone)]
pub struct HostLimiter(Arc<Inner>);

struct Inner {
    client: Arc<Client>,
    limit: Limit,
    wait: Duration,
    defined: OnceCell<Limiter>,
}

impl HostLimiter {
    /// A limiter of `kind` (one of [`LIMITER_KINDS`]) named `name`
    /// allowing `limit`, with named `options`: `interval` (seconds or a
    /// duration; every kind but concurrent), `lease_ttl` (concurrent) and
    /// `wait` (the default wait for capacity, seconds). Null options are
    /// not given.
    pub fn new(
        session: &Session,
        kind: &str,
        name: &str,
        limit: &HostValue,
        options: &[(String, HostValue)],
    ) -> Result<Self> {
        let (limit, wait) = definition(kind, name, limit, options)?;
        Ok(HostLimiter(Arc::new(Inner {
            client: session.client()?,
            limit,
            wait,
            defined: OnceCell::new(),
        })))
    }

    /// Its definition.
    pub fn limit(&self) -> &Limit {
        &self.0.limit
    }

    /// Takes capacity, waiting up to `wait` (seconds or a duration; null:
    /// the limiter's own wait); over the limit after that,
    /// `Error::OverLimit`. Release the lease when the limited work ends
    /// (dropping it releases it too).
    pub async fn acquire(&self, wait: &HostValue) -> Result<Lease> {
        let wait = match wait {
            HostValue::Null => self.0.wait,
            given => given
                .as_seconds()
                .ok_or_else(|| Error::invalid_argument("wait", given, "must be a duration or a number of seconds"))
                .and_then(|seconds| seconds_arg("wait", seconds))?,
        };
        self.limiter().await?.acquire(wait).await
    }

    /// Writes the definition now, for the jobs that declare the limiter
    /// (a worker only reads it); if Redis cannot be reached, it is written
    /// on first use instead (a limiter made at import time must not fail
    /// the import), and said once.
    pub async fn define(&self) -> Result<()> {
        if let Err(error) = self.limiter().await {
            tracing::warn!(
                "rate limiter {}: its definition could not be written now ({error}); it is written on first use",
                self.0.limit.name()
            );
        }
        Ok(())
    }

    async fn limiter(&self) -> Result<&Limiter> {
        let inner = &self.0;
        inner
            .defined
            .get_or_try_init(|| inner.client.limiter(inner.limit.clone()))
            .await
    }
}

/// The limit and default wait a host's values describe.
fn definition(kind: &str, name: &str, limit: &HostValue, options: &[(String, HostValue)]) -> Result<(Limit, Duration)> {
    let limit = match limit {
        HostValue::Int(n) if (1..=i64::from(u32::MAX)).contains(n) => *n as u32,
        other => {
            return Err(Error::invalid_argument(
                "limit",
                other,
                "must be a whole number of at least 1",
            ))
        }
    };
    let (mut interval, mut lease_ttl, mut wait) = (None, None, DEFAULT_WAIT);
    for (option, value) in options.iter().filter(|(_, v)| *v != HostValue::Null) {
        // An interval may also be a unit, as Sidekiq Enterprise names them.
        let unit = match value {
            HostValue::Text(unit) if option == "interval" => UNITS.iter().find(|(name, _)| name == unit),
            _ => None,
        };
        let seconds = unit
            .map(|(_, seconds)| *seconds)
            .or_else(|| value.as_seconds())
            .ok_or_else(|| match option.as_str() {
                "interval" => {
                    let words: Vec<&str> = UNITS.iter().map(|(name, _)| *name).collect();
                    let reason = format!("must be a duration, a number of seconds or one of {}", words.join(", "));
                    Error::invalid_argument(option, value, reason)
                }
                _ => Error::invalid_argument(option, value, "must be a duration or a number of seconds"),
            })
            .and_then(|s| seconds_arg(option, s));
        match option.as_str() {
            "interval" => interval = Some(seconds?),
            "lease_ttl" => lease_ttl = Some(seconds?),
            "wait" => wait = seconds?,
            other => {
                return Err(Error::invalid_argument(
                    other,
                    value,
                    format!("not an option of a limiter ({OPTIONS})"),
                ))
            }
        }
    }
    let needs_interval =
        || interval.ok_or_else(|| Error::invalid_argument("interval", "none", format!("a {kind} limiter needs one")));
    let limit = match kind {
        "concurrent" if interval.is_some() => {
            return Err(Error::invalid_argument(
                "interval",
                format!("{}s", interval.unwrap_or_default().as_secs_f64()),
                "a concurrent limiter has none (it limits how many at once)",
            ))
        }
        "concurrent" => {
            let limit = Limit::concurrent(name, limit)?;
            match lease_ttl {
                Some(ttl) => limit.with_lease_ttl(ttl)?,
                None => limit,
            }
        }
        "bucket" => Limit::bucket(name, limit, needs_interval()?)?,
        "window" => Limit::window(name, limit, needs_interval()?)?,
        "leaky" => Limit::leaky(name, limit, needs_interval()?)?,
        other => {
            return Err(Error::invalid_argument(
                "kind",
                other,
                format!("must be one of {}", LIMITER_KINDS.join(", ")),
            ))
        }
    };
    if lease_ttl.is_some() && !matches!(kind, "concurrent") {
        // `with_lease_ttl` names the mistake.
        limit.clone().with_lease_ttl(lease_ttl.unwrap_or_default())?;
    }
    Ok((limit, wait))
}

/// `seconds` as a duration: finite and not negative, or an error naming
/// `field`.
fn seconds_arg(field: &str, seconds: f64) -> Result<Duration> {
    Duration::try_from_secs_f64(seconds)
        .map_err(|_| Error::invalid_argument(field, seconds, "must be a number of seconds, not negative"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn option(name: &str, value: HostValue) -> (String, HostValue) {
        (name.to_string(), value)
    }

    #[test]
    fn a_definition_from_host_values_names_what_is_wrong() {
        let (limit, wait) = definition(
            "window",
            "stripe",
            &HostValue::Int(100),
            &[option("interval", HostValue::Int(1))],
        )
        .unwrap();
        assert_eq!(
            (limit.name(), limit.kind().name(), wait),
            ("stripe", "window", DEFAULT_WAIT)
        );
        let fortnight = option("interval", HostValue::Text("fortnight".into()));
        let refused = definition("bucket", "api", &HostValue::Int(10), &[fortnight]).unwrap_err();
        assert!(
            refused.to_string().contains("one of second, minute, hour, day"),
            "{refused}"
        );
        let minute = option("interval", HostValue::Text("minute".into()));
        let (limit, _) = definition("bucket", "api", &HostValue::Int(10), &[minute]).unwrap();
        assert_eq!(limit.kind().interval(), Some(Duration::from_secs(60)));
        let (limit, wait) = definition(
            "concurrent",
            "erp",
            &HostValue::Int(5),
            &[
                option("lease_ttl", HostValue::Float(2.0)),
                option("wait", HostValue::Int(0)),
            ],
        )
        .unwrap();
        assert_eq!((limit.kind().limit(), wait), (5, Duration::ZERO));
        for (kind, limit, options, field) in [
            ("window", HostValue::Int(5), vec![], "interval"),
            (
                "concurrent",
                HostValue::Int(5),
                vec![option("interval", HostValue::Int(1))],
                "interval",
            ),
            (
                "bucket",
                HostValue::Int(5),
                vec![
                    option("interval", HostValue::Int(1)),
                    option("lease_ttl", HostValue::Int(2)),
                ],
                "lease_ttl",
            ),
            ("concurrent", HostValue::Int(0), vec![], "limit"),
            ("concurrent", HostValue::Text("5".into()), vec![], "limit"),
            ("sliding", HostValue::Int(5), vec![], "kind"),
            (
                "concurrent",
                HostValue::Int(5),
                vec![option("wait", HostValue::Float(-1.0))],
                "wait",
            ),
            (
                "concurrent",
                HostValue::Int(5),
                vec![option("timeout", HostValue::Int(1))],
                "timeout",
            ),
        ] {
            let err = definition(kind, "x", &limit, &options)
                .err()
                .unwrap_or_else(|| panic!("{kind} {field}"));
            assert_eq!(err.field(), Some(field), "{err}");
        }
    }
}
