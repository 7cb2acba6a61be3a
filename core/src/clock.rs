//! One clock for every process of a fleet: Redis's (`TIME`), so host clock
//! skew never decides that a live process is dead or fires a periodic slot
//! early. Where `TIME` is refused (some managed Redis services disable or
//! rename it), the host's clock is used instead, with one warning. The
//! scripts that need the time do the same through `scripts/clock.lua`,
//! given the host's time as their fallback.

use crate::connection::Redis;
use crate::error::Result;
use std::sync::atomic::Ordering;

/// Now, in epoch seconds: Redis's time, or the host's where `TIME` is refused.
pub(crate) async fn now(redis: &Redis) -> Result<f64> {
    let refused = &redis.time_refused;
    if !refused.load(Ordering::Relaxed) {
        match redis::cmd("TIME").query_async::<(u64, u64)>(&mut redis.conn()).await {
            Ok((secs, micros)) => return Ok(secs as f64 + micros as f64 / 1e6),
            // The server answered, refusing the command (unknown, renamed
            // away, or denied by ACL): it will go on refusing it.
            Err(e)
                if e.kind() == redis::ErrorKind::Server(redis::ServerErrorKind::ResponseError)
                    || e.kind() == redis::ErrorKind::Server(redis::ServerErrorKind::NoPerm) =>
            {
                if !refused.swap(true, Ordering::Relaxed) {
                    tracing::warn!(
                        "this Redis refuses TIME ({e}); using this host's clock instead: keep the clocks of \
                         every worker host in sync (NTP), or a skewed host may take a live process for dead"
                    );
                }
            }
            Err(e) => return Err(e.into()),
        }
    }
    Ok(crate::job::now())
}

/// How long a measured [`offset`] is used before it is measured again.
const OFFSET_FOR: std::time::Duration = std::time::Duration::from_secs(60);

/// The fleet's clock minus this host's, in seconds: what to add to a time
/// this host's clock gave to make it a time on the fleet's clock. Measured
/// with one `TIME` a minute per connection, so a push or a failure costs
/// no round trip for it. 0 where `TIME` is refused (the host's clock is
/// the fleet's then). Never an error: where `TIME` fails (Redis is
/// unreachable, the master not yet resolved), the last offset measured is
/// used, or 0, and it is measured again next time; the caller's own
/// command meets the failure, and retries as it does.
pub(crate) async fn offset(redis: &Redis) -> f64 {
    let cached = *redis.clock_offset.lock().unwrap();
    if let Some((offset, at)) = cached {
        if at.elapsed() < OFFSET_FOR {
            return offset;
        }
    }
    let before = crate::job::now();
    match now(redis).await {
        Ok(fleet) => {
            // The server read its clock somewhere in the round trip: its middle.
            let offset = fleet - (before + crate::job::now()) / 2.0;
            *redis.clock_offset.lock().unwrap() = Some((offset, std::time::Instant::now()));
            offset
        }
        Err(e) => {
            tracing::debug!("could not read Redis's clock ({e}); using the last offset from it");
            cached.map_or(0.0, |(offset, _)| offset)
        }
    }
}

/// The last [`offset`] measured (0 before the first): for a decision that
/// cannot wait for a round trip and is not hurt by a stale one.
pub(crate) fn cached_offset(redis: &Redis) -> f64 {
    redis.clock_offset.lock().unwrap().map_or(0.0, |(offset, _)| offset)
}

/// The host's time, the fallback a script uses where `TIME` is refused.
pub(crate) fn fallback() -> f64 {
    crate::job::now()
}
