//! A limiter bound to a Redis: takes capacity (one script call each try)
//! and waits for it within a deadline.

use super::lease::Lease;
use super::{Limit, LimitKind};
use crate::connection::Redis;
use crate::error::{Error, Result};
use crate::keys::Keys;
use crate::scripts::SCRIPTS;
use std::time::{Duration, Instant};

/// What one try to take capacity came to.
#[derive(Debug)]
pub enum Attempt {
    /// Taken: hold the lease while the limited work runs (only a concurrent
    /// limiter's lease holds anything; releasing it frees the place).
    Taken(Lease),
    /// Over the limit. `retry_in`: when capacity is expected back (`None`
    /// for a concurrent limiter: when a holder releases).
    Over {
        /// When to try again.
        retry_in: Option<Duration>,
    },
}

/// A [`Limit`] defined in a Redis (see [`crate::Client::limiter`]). Cheap to
/// clone; clones share the connection.
#[derive(Clone)]
pub struct Limiter {
    limit: Limit,
    redis: Redis,
    keys: Keys,
}

impl std::fmt::Debug for Limiter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Limiter")
            .field("limit", &self.limit)
            .finish_non_exhaustive()
    }
}

/// The pause between two tries at a full limiter: when it says capacity
/// comes back, or else one that doubles from 5 ms (a concurrent limiter
/// frees a place whenever a holder ends); always within 5-200 ms, so a
/// place that frees is seen soon. One rule for `Limiter::acquire` and the
/// worker's declared limits (`crate::admission`).
pub(crate) struct Pause(Duration);

impl Pause {
    const MIN: Duration = Duration::from_millis(5);
    const MAX: Duration = Duration::from_millis(200);

    pub(crate) fn new() -> Self {
        Pause(Self::MIN)
    }

    /// The next pause, given when the limiter expects capacity back.
    pub(crate) fn next(&mut self, retry_in: Option<Duration>) -> Duration {
        let next = retry_in.unwrap_or(self.0).clamp(Self::MIN, Self::MAX);
        self.0 = (self.0 * 2).min(Self::MAX);
        next
    }
}

impl Limiter {
    /// Writes `limit`'s definition (a different one under the same name is
    /// replaced, with a warning: the fleet should agree on it).
    pub(crate) async fn define(limit: Limit, redis: Redis, keys: Keys) -> Result<Limiter> {
        let limiter = Limiter { limit, redis, keys };
        limiter.write_definition().await?;
        Ok(limiter)
    }

    /// Its definition.
    pub fn limit(&self) -> &Limit {
        &self.limit
    }

    async fn write_definition(&self) -> Result<()> {
        let (name, kind) = (self.limit.name(), self.limit.kind());
        let interval = kind.interval().map_or(0.0, |i| i.as_secs_f64());
        let lease_ttl = match kind {
            LimitKind::Concurrent { lease_ttl, .. } => lease_ttl.as_secs_f64(),
            _ => 0.0,
        };
        let answer: Vec<redis::Value> = SCRIPTS
            .limit_define
            .key(self.keys.limiter(name))
            .key(self.keys.limiters())
            .arg(name)
            .arg(kind.name())
            .arg(kind.limit())
            .arg(interval.to_string())
            .arg(lease_ttl.to_string())
            .invoke_async(&mut self.redis.conn())
            .await?;
        let texts: Vec<String> = answer
            .iter()
            .skip(1)
            .map(|v| redis::from_redis_value::<String>(v.clone()).unwrap_or_default())
            .collect();
        if let (Some(redis::Value::Int(2)), [old_kind, old_limit, old_interval, old_ttl]) =
            (answer.first(), texts.as_slice())
        {
            tracing::warn!(
                "limiter {name} redefined as {kind} (it was {old_kind} {old_limit}, interval {old_interval}s, \
                 lease TTL {old_ttl}s): every process that uses it should define it alike"
            );
        }
        Ok(())
    }

    /// One try: takes capacity if the limiter has some to give (a refusal
    /// counts in its `refused`).
    pub async fn try_acquire(&self) -> Result<Attempt> {
        self.try_once(true).await
    }

    async fn try_once(&self, counted: bool) -> Result<Attempt> {
        let mut taken = self.take(counted).await?;
        if matches!(taken, Taken::Undefined) {
            // Its definition is gone (a flushed or restarted Redis): written
            // again, and tried once more.
            self.write_definition().await?;
            taken = self.take(counted).await?;
        }
        match taken {
            Taken::Yes(lease) => Ok(Attempt::Taken(lease)),
            Taken::Over(retry_in) => Ok(Attempt::Over { retry_in }),
            Taken::Undefined => Err(Error::Script {
                script: "limit_acquire",
                reason: format!("limiter {} is not defined right after defining it", self.limit.name()),
            }),
        }
    }

    async fn take(&self, counted: bool) -> Result<Taken> {
        take(&self.redis, &self.keys, self.limit.name(), counted).await
    }

    /// Takes capacity, waiting up to `wait` for it: `Error::OverLimit` if
    /// none came.
    pub async fn acquire(&self, wait: Duration) -> Result<Lease> {
        let started = Instant::now();
        let deadline = started + wait;
        let mut pause = Pause::new();
        let mut first = true;
        loop {
            // Counted once, at the first refusal of this call.
            let retry_in = match self.try_once(first).await? {
                Attempt::Taken(lease) => return Ok(lease),
                Attempt::Over { retry_in } => retry_in,
            };
            first = false;
            let now = Instant::now();
            if now >= deadline {
                return Err(Error::OverLimit {
                    limiter: self.limit.name().to_string(),
                    reason: format!(
                        "{}; no capacity within {:.3}s",
                        self.limit.kind(),
                        (now - started).as_secs_f64()
                    ),
                });
            }
            // Jittered (callers that wait together do not try together),
            // never past the deadline.
            let jitter = Duration::from_micros(rand::random::<u64>() % 2_000);
            tokio::time::sleep((pause.next(retry_in) + jitter).min(deadline - now)).await;
        }
    }

    /// Runs `body` once capacity is taken (waiting up to `wait` for it;
    /// `Error::OverLimit` if none came, and `body` never runs), holding a
    /// concurrent lease until it ends.
    pub async fn within_limit<F, Fut, T>(&self, wait: Duration, body: F) -> Result<T>
    where
        F: FnOnce() -> Fut,
        Fut: std::future::Future<Output = T>,
    {
        let lease = self.acquire(wait).await?;
        let value = body().await;
        lease.release().await;
        Ok(value)
    }
}

/// What one try at the limiter `name` came to.
pub(crate) enum Taken {
    Yes(Lease),
    /// Over the limit; when capacity is expected back, if known.
    Over(Option<Duration>),
    /// No limiter of that name is defined in this Redis.
    Undefined,
}

/// One try at the limiter named `name`, by its definition in Redis (a
/// worker checks a job's declared limits so, whichever process defined
/// them).
///
/// `counted`: a refusal counts in the limiter's `refused` (a wait's first
/// try: a job or an acquire call is counted once, however often it looks).
pub(crate) async fn take(redis: &Redis, keys: &Keys, name: &str, counted: bool) -> Result<Taken> {
    let token = crate::job::new_jid();
    let mut invocation = SCRIPTS.limit_acquire.prepare_invoke();
    invocation.key(keys.limiter(name));
    for kind in super::KINDS {
        invocation.key(keys.limiter_state(name, kind));
    }
    let (taken, ms): (i64, i64) = invocation
        .arg(&token)
        .arg(crate::clock::fallback())
        .arg(if counted { "1" } else { "0" })
        .invoke_async(&mut redis.conn())
        .await?;
    let ms = Duration::from_millis(ms.max(0) as u64);
    Ok(match taken {
        1 if ms.is_zero() => Taken::Yes(Lease::nothing_held()),
        // Only a concurrent limiter gives leases that live on.
        1 => Taken::Yes(Lease::held(
            redis.clone(),
            keys.limiter_state(name, "concurrent"),
            token,
            ms,
        )),
        0 => Taken::Over((!ms.is_zero()).then_some(ms)),
        _ => Taken::Undefined,
    })
}
