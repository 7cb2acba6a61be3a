//! Rate limiters shared by a whole fleet, in any language: at most N at
//! once (`concurrent`), N per fixed interval (`bucket`), N in any sliding
//! interval (`window`), or a smooth rate of N per interval (`leaky`).
//!
//! A [`Limit`] is the definition, a value; [`Client::limiter`] writes it to
//! Redis (where every process reads it: the limit is the same whoever
//! checks it) and gives a [`Limiter`] that takes capacity from it. Each
//! check is one script call (`limit_acquire.lua`), decided by Redis's clock.
//!
//! ```no_run
//! # async fn f(client: cogworker::Client) -> cogworker::Result<()> {
//! use cogworker::Limit;
//! use std::time::Duration;
//! let erp = client.limiter(Limit::concurrent("erp", 5)?).await?;
//! let rows = erp
//!     .within_limit(Duration::from_secs(5), || async { 42 })
//!     .await?;
//! # Ok(()) }
//! ```
//!
//! [`Client::limiter`]: crate::Client::limiter

mod handle;
mod lease;

pub(crate) use handle::{take, Pause, Taken};
pub use handle::{Attempt, Limiter};
pub use lease::Lease;

use crate::error::{Error, Result};
use std::time::Duration;

/// How long a concurrent lease lives without a renewal, by default: a
/// holder renews it every third of that while it holds it, so a holder
/// killed with -9 frees it within this long.
pub const DEFAULT_LEASE_TTL: Duration = Duration::from_secs(15);

/// Every kind's name ([`LimitKind::name`]), in the order
/// `limit_acquire.lua` takes their state keys.
pub const KINDS: [&str; 4] = ["concurrent", "bucket", "window", "leaky"];

/// A rate limiter's definition: its name (shared by every process and
/// language that uses it) and its kind.
#[derive(Clone, Debug, PartialEq)]
pub struct Limit {
    name: String,
    kind: LimitKind,
}

/// What a limiter allows.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum LimitKind {
    /// At most `limit` holders at once. A lease not renewed for `lease_ttl`
    /// (its holder died) is freed.
    Concurrent {
        /// How many at once.
        limit: u32,
        /// How long a lease outlives its last renewal.
        lease_ttl: Duration,
    },
    /// At most `limit` per fixed `interval` (counted from the epoch: per
    /// second, per minute...).
    Bucket {
        /// How many per interval.
        limit: u32,
        /// The interval.
        interval: Duration,
    },
    /// At most `limit` in any sliding `interval`.
    Window {
        /// How many per interval.
        limit: u32,
        /// The interval.
        interval: Duration,
    },
    /// `limit` per `interval`, spread evenly; a burst of up to `limit`
    /// after a quiet spell.
    Leaky {
        /// How many per interval.
        limit: u32,
        /// The interval.
        interval: Duration,
    },
}

impl LimitKind {
    /// `concurrent`, `bucket`, `window` or `leaky`.
    pub fn name(&self) -> &'static str {
        match self {
            LimitKind::Concurrent { .. } => "concurrent",
            LimitKind::Bucket { .. } => "bucket",
            LimitKind::Window { .. } => "window",
            LimitKind::Leaky { .. } => "leaky",
        }
    }

    /// How many it allows (at once, or per interval).
    pub fn limit(&self) -> u32 {
        match *self {
            LimitKind::Concurrent { limit, .. }
            | LimitKind::Bucket { limit, .. }
            | LimitKind::Window { limit, .. }
            | LimitKind::Leaky { limit, .. } => limit,
        }
    }

    /// The interval (none for `concurrent`).
    pub fn interval(&self) -> Option<Duration> {
        match *self {
            LimitKind::Concurrent { .. } => None,
            LimitKind::Bucket { interval, .. }
            | LimitKind::Window { interval, .. }
            | LimitKind::Leaky { interval, .. } => Some(interval),
        }
    }
}

impl std::fmt::Display for LimitKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.interval() {
            None => write!(f, "{} {} at once", self.name(), self.limit()),
            Some(interval) => write!(f, "{} {} per {}s", self.name(), self.limit(), interval.as_secs_f64()),
        }
    }
}

impl Limit {
    /// At most `limit` at once.
    pub fn concurrent(name: &str, limit: u32) -> Result<Limit> {
        Limit::new(
            name,
            LimitKind::Concurrent {
                limit,
                lease_ttl: DEFAULT_LEASE_TTL,
            },
        )
    }

    /// At most `limit` per fixed `interval`.
    pub fn bucket(name: &str, limit: u32, interval: Duration) -> Result<Limit> {
        Limit::new(name, LimitKind::Bucket { limit, interval })
    }

    /// At most `limit` in any sliding `interval`.
    pub fn window(name: &str, limit: u32, interval: Duration) -> Result<Limit> {
        Limit::new(name, LimitKind::Window { limit, interval })
    }

    /// `limit` per `interval`, evenly spread (bursts of up to `limit`).
    pub fn leaky(name: &str, limit: u32, interval: Duration) -> Result<Limit> {
        Limit::new(name, LimitKind::Leaky { limit, interval })
    }

    /// A limit of `kind` named `name`: an error names what is wrong.
    pub fn new(name: &str, kind: LimitKind) -> Result<Limit> {
        check_name(name)?;
        if kind.limit() == 0 {
            return Err(Error::invalid_argument("limit", 0, "must be at least 1"));
        }
        if let Some(interval) = kind.interval() {
            if interval < Duration::from_millis(1) || interval > Duration::from_secs(366 * 86_400) {
                return Err(Error::invalid_argument(
                    "interval",
                    format!("{}s", interval.as_secs_f64()),
                    "must be from 1 ms to a year",
                ));
            }
        }
        if let LimitKind::Concurrent { lease_ttl, .. } = kind {
            if lease_ttl < Duration::from_secs(1) || lease_ttl > Duration::from_secs(86_400) {
                return Err(Error::invalid_argument(
                    "lease_ttl",
                    format!("{}s", lease_ttl.as_secs_f64()),
                    "must be from 1 s to a day",
                ));
            }
        }
        Ok(Limit {
            name: name.to_string(),
            kind,
        })
    }

    /// A concurrent limit whose leases live `ttl` past their last renewal
    /// (other kinds: an error).
    pub fn with_lease_ttl(self, ttl: Duration) -> Result<Limit> {
        match self.kind {
            LimitKind::Concurrent { limit, .. } => {
                Limit::new(&self.name, LimitKind::Concurrent { limit, lease_ttl: ttl })
            }
            other => Err(Error::invalid_argument(
                "lease_ttl",
                format!("{}s", ttl.as_secs_f64()),
                format!("only a concurrent limiter has leases, not a {} one", other.name()),
            )),
        }
    }

    /// Its name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// What it allows.
    pub fn kind(&self) -> &LimitKind {
        &self.kind
    }
}

/// A name every process can share (the rule is the job field's, `limits`).
fn check_name(name: &str) -> Result<()> {
    crate::job::check_limiter_name(name)
        .map_err(|reason| Error::invalid_argument("limiter", crate::printable::shown(name), reason))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_bad_definition_names_what_is_wrong() {
        let message = |r: Result<Limit>| r.unwrap_err().to_string();
        assert!(message(Limit::concurrent("", 1)).contains("limiter"));
        assert!(message(Limit::concurrent("a b", 1)).contains("spaces"));
        assert!(message(Limit::concurrent("{x}", 1)).contains("braces"));
        assert!(message(Limit::concurrent("erp", 0)).contains("limit = 0"));
        assert!(message(Limit::window("w", 5, Duration::ZERO)).contains("interval"));
        assert!(message(
            Limit::bucket("b", 5, Duration::from_secs(1))
                .unwrap()
                .with_lease_ttl(Duration::from_secs(5))
        )
        .contains("only a concurrent limiter"));
        let erp = Limit::concurrent("erp", 5).unwrap();
        assert_eq!(erp.kind().to_string(), "concurrent 5 at once");
        assert_eq!(
            Limit::window("api", 100, Duration::from_secs(1))
                .unwrap()
                .kind()
                .to_string(),
            "window 100 per 1s"
        );
    }
}
