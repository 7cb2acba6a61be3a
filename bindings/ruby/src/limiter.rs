//! `Cogworker::Native::Limiter` and `Lease`: a rate limiter defined from
//! Ruby values (checked, and written to Redis on first use, by the core)
//! and the capacity it takes, waited for with the GVL released.

use crate::blocking::run;
use crate::client::RbClient;
use crate::convert;
use crate::errors::to_ruby;
use cogworker::host::{HostLimiter, Session};
use cogworker::Lease;
use magnus::{Error, RHash, Ruby, Value};
use std::sync::{Arc, Mutex};

#[magnus::wrap(class = "Cogworker::Native::Limiter", free_immediately, size)]
pub struct RbLimiter {
    limiter: HostLimiter,
    session: Arc<Session>,
}

impl RbLimiter {
    /// A limiter of `kind` (concurrent, bucket, window, leaky) on
    /// `client`'s Redis; `options`: interval, lease_ttl, wait.
    pub fn new(
        ruby: &Ruby,
        client: &RbClient,
        kind: String,
        name: String,
        limit: Value,
        options: RHash,
    ) -> Result<Self, Error> {
        let mut named = Vec::new();
        convert::each_option(ruby, options, |option, value| {
            named.push((option.to_string(), value));
            Ok(())
        })?;
        let session = client.0.clone();
        let limiter = HostLimiter::new(&session, &kind, &name, &convert::value(ruby, limit), &named)
            .map_err(|e| to_ruby(ruby, e))?;
        let defining = limiter.clone();
        run(ruby, async move { defining.define().await })?;
        Ok(RbLimiter { limiter, session })
    }

    pub fn name(&self) -> String {
        self.limiter.limit().name().to_string()
    }

    pub fn kind(&self) -> &'static str {
        self.limiter.limit().kind().name()
    }

    pub fn limit(&self) -> u32 {
        self.limiter.limit().kind().limit()
    }

    /// Takes capacity, waiting up to `wait` (seconds or a Duration; nil:
    /// the limiter's own wait); raises `OverLimit` when none came.
    pub fn acquire(ruby: &Ruby, rb_self: &Self, wait: Value) -> Result<RbLease, Error> {
        let (limiter, wait) = (rb_self.limiter.clone(), convert::value(ruby, wait));
        let lease = run(
            ruby,
            rb_self
                .session
                .naming_redis(async move { limiter.acquire(&wait).await }),
        )?;
        Ok(RbLease(Mutex::new(Some(lease))))
    }
}

/// Capacity taken from a limiter: a concurrent limiter's place, held until
/// released (or until this object is collected).
#[magnus::wrap(class = "Cogworker::Native::Lease", free_immediately, size)]
pub struct RbLease(Mutex<Option<Lease>>);

impl RbLease {
    /// Gives the capacity back (a second call does nothing).
    pub fn release(ruby: &Ruby, rb_self: &Self) -> Result<(), Error> {
        let Some(lease) = rb_self.0.lock().unwrap().take() else {
            return Ok(());
        };
        run(ruby, async move {
            lease.release().await;
            Ok(())
        })
    }
}
