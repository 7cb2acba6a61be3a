//! A concurrent limiter's lease: a member of the limiter's state zset,
//! scored with its expiry. While held it is renewed every third of its TTL
//! (so a holder killed with -9 frees it within one TTL); released, or
//! dropped, it is removed.

use crate::connection::Redis;
use std::time::Duration;

/// Capacity taken from a limiter. Only a concurrent limiter's holds
/// anything: [`Lease::release`] (or dropping it) frees the place.
pub struct Lease(Option<Held>);

struct Held {
    redis: Redis,
    state: String,
    member: String,
    renewal: tokio::task::JoinHandle<()>,
}

impl std::fmt::Debug for Lease {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match &self.0 {
            Some(held) => write!(f, "Lease({} in {})", held.member, held.state),
            None => f.write_str("Lease(nothing held)"),
        }
    }
}

impl Lease {
    /// Capacity that holds nothing (bucket, window, leaky).
    pub(crate) fn nothing_held() -> Lease {
        Lease(None)
    }

    /// A lease on `member` of `state`, renewed every `ttl / 3`. Needs a
    /// tokio runtime.
    pub(crate) fn held(redis: Redis, state: String, member: String, ttl: Duration) -> Lease {
        let renewal = tokio::spawn(renew(redis.clone(), state.clone(), member.clone(), ttl));
        Lease(Some(Held {
            redis,
            state,
            member,
            renewal,
        }))
    }

    /// Frees the place (a failure to reach Redis is logged: the lease then
    /// expires within its TTL).
    pub async fn release(mut self) {
        if let Some(held) = self.0.take() {
            held.renewal.abort();
            remove(&held.redis, &held.state, &held.member).await;
        }
    }
}

impl Drop for Lease {
    /// Dropped unreleased (a panic, a cancelled future, a settled job's
    /// declared limits): freed in the background, on the runtime of this
    /// thread or, on a host's thread, the engine's.
    fn drop(&mut self) {
        if let Some(held) = self.0.take() {
            held.renewal.abort();
            let release = async move { remove(&held.redis, &held.state, &held.member).await };
            match tokio::runtime::Handle::try_current() {
                Ok(runtime) => drop(runtime.spawn(release)),
                Err(_) => drop(crate::runtime::global().spawn(release)),
            }
        }
    }
}

async fn remove(redis: &Redis, state: &str, member: &str) {
    let removed: redis::RedisResult<i64> = redis::AsyncCommands::zrem(&mut redis.conn(), state, member).await;
    if let Err(e) = removed {
        tracing::warn!("could not release a lease of {state} ({e}); it expires by itself");
    }
}

/// Pushes the lease's expiry on, by the fleet's clock, until aborted. A
/// lease found gone (it expired: this process stalled past its TTL) is
/// said once and no longer renewed: its place may be someone else's now.
async fn renew(redis: Redis, state: String, member: String, ttl: Duration) {
    loop {
        tokio::time::sleep(ttl / 3).await;
        let expiry = crate::job::now() + crate::clock::offset(&redis).await + ttl.as_secs_f64();
        let renewed: redis::RedisResult<i64> = redis::cmd("ZADD")
            .arg(&state)
            .arg("XX")
            .arg("CH")
            .arg(expiry)
            .arg(&member)
            .query_async(&mut redis.conn())
            .await;
        match renewed {
            Ok(0) => {
                tracing::warn!("a lease of {state} expired while held (renewals came too late); its place is free");
                return;
            }
            Ok(_) => {}
            Err(e) => tracing::warn!("could not renew a lease of {state} ({e}); trying again"),
        }
    }
}
