//! Taking jobs off queues. Reliable fetch (default) moves each job
//! atomically onto this process's in-progress list; basic fetch pops it.
//! Both try queues in weighted random order, or strictly in order.

mod basic;
mod reliable;
mod sharded;

pub(crate) use basic::BasicFetch;
pub(crate) use reliable::ReliableFetch;

use crate::config::QueueSpec;
use crate::error::Result;
use crate::shared::Shared;

/// A job as taken from Redis: the queue it came from and its exact bytes.
pub(crate) struct Fetched {
    pub queue: String,
    pub raw: Vec<u8>,
    /// Its field in the in-progress hash (reliable fetch).
    pub token: Option<u64>,
}

pub(crate) enum Fetcher {
    Reliable(ReliableFetch),
    Basic(BasicFetch),
}

impl Fetcher {
    /// Up to `max` jobs. Reliable fetch returns at once (possibly nothing);
    /// basic fetch blocks up to its timeout.
    pub async fn fetch(&mut self, shared: &Shared, max: usize) -> Result<Vec<Fetched>> {
        match self {
            Fetcher::Reliable(f) => f.fetch(shared, max).await,
            Fetcher::Basic(f) => f.fetch(shared, max).await,
        }
    }

    /// The fetch found nothing: wait (interruptibly) before the next one.
    /// Basic fetch already blocked in its `BLMPOP`.
    pub async fn wait(&mut self, shared: &Shared) {
        match self {
            Fetcher::Reliable(f) => f.wait(shared).await,
            Fetcher::Basic(_) => {}
        }
    }
}

/// The order to try queues in for one fetch. Weighted: a random order in
/// which a queue of weight w comes first w times as often as one of weight 1
/// (Efraimidis–Spirakis keys). Strict: as configured.
pub(crate) fn queue_order(queues: &[QueueSpec], strict: bool) -> Vec<&str> {
    if strict || queues.len() < 2 {
        return queues.iter().map(|q| q.name.as_str()).collect();
    }
    let mut keyed: Vec<(f64, &str)> = queues
        .iter()
        .map(|q| {
            let u: f64 = rand::random::<f64>().max(f64::MIN_POSITIVE);
            (u.powf(1.0 / q.weight as f64), q.name.as_str())
        })
        .collect();
    keyed.sort_by(|a, b| b.0.total_cmp(&a.0));
    keyed.into_iter().map(|(_, name)| name).collect()
}

/// Was this error the server refusing the fetch's commands by ACL
/// (`NOPERM`)? Then the worker falls back to basic fetch. (The reliable
/// fetch uses only commands every server has: `LMPOP` where there is one,
/// else `RPOP`, and `HSET`.) Decided by the error's kind, never its text.
pub(crate) fn is_unsupported(e: &crate::error::Error) -> bool {
    matches!(
        e,
        crate::error::Error::Redis(e) if e.kind() == redis::ErrorKind::Server(redis::ServerErrorKind::NoPerm)
    )
}

/// Does the server have `command`? (`COMMAND INFO` answers nil for a
/// command that is unknown or renamed away.)
pub(crate) async fn server_has(shared: &Shared, command: &str) -> Result<bool> {
    let info: Vec<redis::Value> = shared
        .redis
        .on_namespace_node(redis::cmd("COMMAND").arg("INFO").arg(command))
        .await?;
    Ok(matches!(info.first(), Some(reply) if *reply != redis::Value::Nil))
}

/// Resolves which fetch to use: reliable needs `LMOVE` (Redis >= 6.2).
pub(crate) async fn resolve_fetch_mode(shared: &Shared) -> crate::error::Result<()> {
    if shared.config.fetch() == crate::config::FetchMode::Basic || !shared.is_reliable() {
        return Ok(());
    }
    let info: String = shared.redis.on_namespace_node(redis::cmd("INFO").arg("server")).await?;
    let version = info
        .lines()
        .find_map(|l| l.strip_prefix("redis_version:"))
        .unwrap_or("0")
        .trim()
        .to_string();
    let parts: Vec<u32> = version.split('.').map(|p| p.parse().unwrap_or(0)).collect();
    let (major, minor) = (parts.first().copied().unwrap_or(0), parts.get(1).copied().unwrap_or(0));
    if (major, minor) < (6, 2) {
        tracing::warn!(
            "reliable fetch needs Redis >= 6.2 but the server is {version}; falling back to basic fetch \
             (a job is lost if its process dies mid-job)"
        );
        shared.set_basic_fetch();
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn heavier_queues_come_first_proportionally() {
        let queues = vec![
            QueueSpec {
                name: "a".into(),
                weight: 3,
            },
            QueueSpec {
                name: "b".into(),
                weight: 1,
            },
        ];
        let firsts = (0..4000).filter(|_| queue_order(&queues, false)[0] == "a").count();
        // Expected 3000 of 4000.
        assert!((2700..3300).contains(&firsts), "{firsts}");
        assert_eq!(queue_order(&queues, true), vec!["a", "b"]);
    }
}
