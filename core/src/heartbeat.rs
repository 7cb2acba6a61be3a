//! The heartbeat: registers the process, publishes its info and busy slots,
//! and (reliable fetch) stamps its last beat in Redis's clock for orphan
//! recovery. The first beat happens before any fetch and is retried every
//! second while Redis is unreachable; later beats that fail are logged and
//! retried on the next interval — the loop never ends on an error. Remote
//! quiet/stop arrive on the process's pub/sub channel.

use crate::error::Result;
use crate::fetch::resolve_fetch_mode;
use crate::job::now;
use crate::locks;
use crate::scripts::SCRIPTS;
use crate::shared::{jittered, sleep_unless, Lifecycle, Shared};
use futures_util::StreamExt;
use std::sync::Arc;
use std::time::Duration;

/// TTL of the process and workers hashes.
pub(crate) const PRESENCE_TTL_SECS: u64 = 60;
const STARTUP_RETRY: Duration = Duration::from_secs(1);

/// Beats until one succeeds. Returns false if a stop arrived first.
pub(crate) async fn first_beat(shared: &Shared) -> bool {
    let mut failures = 0u32;
    loop {
        match resolve_and_beat(shared).await {
            Ok(()) => {
                // Nothing was fetched before it: a slow start is no stall.
                let _ = shared.stall.beat();
                warn_about_eviction(shared).await;
                return true;
            }
            Err(e) => {
                failures += 1;
                // Every failure the first few times, then every 10 s.
                if failures <= 3 || failures % 10 == 0 {
                    tracing::error!(
                        "cannot reach Redis at {} to start ({e}); retrying every second",
                        shared.config.redis_url_redacted()
                    );
                }
                if sleep_unless(shared, STARTUP_RETRY, Lifecycle::Stopping).await {
                    return false;
                }
            }
        }
    }
}

/// A Redis that evicts keys when full drops queues, and the jobs on them,
/// without an error anywhere: say so once, at start-up.
async fn warn_about_eviction(shared: &Shared) {
    let info: redis::RedisResult<String> = shared.redis.on_namespace_node(redis::cmd("INFO").arg("memory")).await;
    let Ok(info) = info else { return };
    let policy = info
        .lines()
        .find_map(|l| l.strip_prefix("maxmemory_policy:"))
        .map(str::trim)
        .unwrap_or("noeviction");
    if policy != "noeviction" {
        tracing::warn!(
            "Redis maxmemory-policy is {policy}: when Redis reaches maxmemory it may evict queue keys and \
             their jobs are lost silently; set maxmemory-policy noeviction for the Redis cogworker uses"
        );
    }
}

async fn resolve_and_beat(shared: &Shared) -> Result<()> {
    resolve_fetch_mode(shared).await?;
    // The priority levels in use and the cancelled jobs, before the first
    // fetch reads any queue.
    let levels: Vec<String> =
        redis::AsyncCommands::smembers(&mut shared.redis.conn(), shared.keys.priorities()).await?;
    shared.levels.learn_members(&levels);
    shared.cancellations.learn(&cancelled_jids(shared).await?);
    if shared.keys.is_sharded_by_queue() {
        // Recovery looks for a dead process's jobs in the listed queues'
        // slots: list ours before anything is taken from them.
        let names: Vec<&str> = shared.config.queues().iter().map(|q| q.name.as_str()).collect();
        let _: i64 = redis::AsyncCommands::sadd(&mut shared.redis.conn(), shared.keys.queues(), names).await?;
    }
    beat(shared).await
}

pub(crate) async fn run(shared: Arc<Shared>) {
    loop {
        if sleep_unless(
            &shared,
            jittered(shared.config.heartbeat_interval(), 0.1),
            Lifecycle::Stopping,
        )
        .await
        {
            return;
        }
        match beat(&shared).await {
            Ok(()) => {
                if shared.keys.is_sidekiq() {
                    // Sidekiq's Web UI only pushes its signals, as Sidekiq
                    // takes them at each heartbeat: so do we.
                    take_queued_signals(&shared).await;
                }
                if shared.levels.is_unread() {
                    learn_priority_levels(&shared).await;
                }
                if let Some(gap) = shared.stall.beat() {
                    tracing::warn!(
                        "no heartbeat written for {:.1}s (this process was frozen, or cut off from Redis): \
                         other processes may have recovered the jobs it held; those not started yet are given back",
                        gap.as_secs_f64()
                    );
                }
                shared.events.emit(crate::events::WorkerEvent::Heartbeat)
            }
            Err(e) => tracing::error!("heartbeat failed (will retry): {e}"),
        }
    }
}

pub(crate) async fn beat(shared: &Shared) -> Result<()> {
    let config = &shared.config;
    let mut info = serde_json::json!({
        "hostname": crate::shared::hostname(),
        "pid": std::process::id(),
        "identity": shared.identity,
        "concurrency": config.concurrency(),
        "queues": config.queues().iter().map(|q| format!("{},{}", q.name, q.weight)).collect::<Vec<_>>(),
        "strict": config.strict_order(),
        "fetch": if shared.is_reliable() { "reliable" } else { "basic" },
        "labels": config.labels(),
        "version": env!("CARGO_PKG_VERSION"),
        "started_at": shared.started_at,
        "periodic": shared.periodic.entries.iter().map(|p| p.summary()).collect::<Vec<_>>(),
        // Lines lost to a closed log pipe: the one place they still show.
        "log_lines_dropped": crate::logging::dropped_lines(),
    });
    if shared.keys.is_sidekiq() {
        // What Sidekiq's Web UI reads of a process: its queues by name
        // (weights apart), and a tag.
        info["queues"] = config.queues().iter().map(|q| q.name.clone()).collect();
        info["weights"] = config
            .queues()
            .iter()
            .map(|q| (q.name.clone(), serde_json::Value::from(q.weight)))
            .collect();
        info["tag"] = config.labels().first().cloned().unwrap_or_default().into();
    }
    let identity = &shared.identity;
    let mut invocation = SCRIPTS.heartbeat.prepare_invoke();
    invocation
        .key(shared.keys.processes())
        .key(shared.keys.process(identity))
        .key(shared.keys.workers(identity))
        .key(shared.keys.in_progress_identities())
        .key(shared.keys.last_beat())
        .arg(identity)
        .arg(info.to_string())
        .arg(shared.busy_count())
        .arg(if shared.is_quiet() { "true" } else { "false" })
        .arg(PRESENCE_TTL_SECS)
        .arg(if shared.is_reliable() { "1" } else { "0" })
        .arg(now() as u64)
        .arg(resident_kib().map(|kib| kib.to_string()).unwrap_or_default());
    let busy = shared.busy_snapshot();
    for (token, entry) in &busy {
        invocation.arg(token).arg(entry.to_json());
    }
    let _beat_at: i64 = invocation.invoke_async(&mut shared.redis.conn()).await?;
    // Keep the run locks of the periodic jobs running here alive.
    let run_locks: Vec<(String, String)> = busy
        .into_iter()
        .filter_map(|(_, entry)| Some((entry.run_lock?, entry.jid)))
        .collect();
    let ttl = locks::active_ttl(config);
    locks::expire_owned(&mut shared.redis.conn(), &run_locks, ttl).await?;
    Ok(())
}

/// This process's resident memory in KiB (Linux), for the process record.
fn resident_kib() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("VmRSS:"))?;
    line.split_whitespace().nth(1)?.parse().ok()
}

/// Listens on `NS:signal:<identity>` for `quiet` / `stop`, and on the
/// namespace's wake channel for pushes onto an empty queue of this
/// process's (which wake its fetch); resubscribes after a lost connection.
/// A signal message is only a wake-up: the commands are taken from the
/// process's signal list, once right after subscribing (so one sent
/// before, while starting or reconnecting, still arrives) and on every
/// message. After each (re)subscription the fetch is woken too: a push made
/// while nobody listened is not waited for.
pub(crate) async fn listen_for_signals(shared: Arc<Shared>) {
    let channel = shared.keys.signal(&shared.identity);
    let wake = shared.keys.wake();
    loop {
        match shared.redis.pubsub().await {
            Ok(mut pubsub) => match pubsub.subscribe(&[&channel, &wake]).await {
                Ok(()) => {
                    take_queued_signals(&shared).await;
                    learn_priority_levels(&shared).await;
                    learn_cancellations(&shared).await;
                    shared.wakeups.every_queue();
                    let mut messages = pubsub.on_message();
                    while let Some(message) = messages.next().await {
                        let text: String = message.get_payload().unwrap_or_default();
                        if message.get_channel_name() == wake {
                            if shared.cancellations.learn_message(&text) {
                                continue;
                            }
                            let queue = shared.levels.learn_message(&text).unwrap_or(&text);
                            if shared.config.queues().iter().any(|q| q.name == queue) {
                                shared.wakeups.queue(queue);
                            }
                            continue;
                        }
                        // Older senders only publish: obey the message too
                        // (applying a command twice changes nothing).
                        apply_signal(&shared, text.trim());
                        take_queued_signals(&shared).await;
                    }
                }
                Err(e) => tracing::warn!("subscribing to {channel} and {wake} failed: {e}"),
            },
            Err(e) => tracing::debug!("signal listener cannot connect: {e}"),
        }
        if sleep_unless(&shared, Duration::from_secs(1), Lifecycle::Stopping).await {
            return;
        }
    }
}

/// Reads which priority levels of which queues are in use (a push that
/// uses a new one also says so on the wake channel, heard above; this
/// covers those made while nobody listened). A failed read is tried again
/// at each heartbeat until one succeeds.
pub(crate) async fn learn_priority_levels(shared: &Shared) {
    let members: redis::RedisResult<Vec<String>> =
        redis::AsyncCommands::smembers(&mut shared.redis.conn(), shared.keys.priorities()).await;
    match members {
        Ok(members) => shared.levels.learn_members(&members),
        Err(e) => {
            tracing::warn!("reading the priority levels in use failed (trying again at the next heartbeat): {e}");
            shared.levels.mark_unread();
        }
    }
}

/// The jobs cancelled and not yet forgotten (see `cancel.rs`).
async fn cancelled_jids(shared: &Shared) -> redis::RedisResult<Vec<String>> {
    redis::AsyncCommands::zrangebyscore(&mut shared.redis.conn(), shared.keys.cancelled(), now(), "+inf").await
}

/// Reads the cancelled jobs again after a (re)subscription: one cancelled
/// while nobody listened is heard of here. A failed read is logged; the
/// next subscription reads again.
async fn learn_cancellations(shared: &Shared) {
    match cancelled_jids(shared).await {
        Ok(jids) => shared.cancellations.learn(&jids),
        Err(e) => tracing::warn!("reading the cancelled jobs failed: {e}"),
    }
}

/// Most commands one drain takes; more are left for the next message.
const SIGNALS_PER_DRAIN: usize = 16;

async fn take_queued_signals(shared: &Shared) {
    let key = shared.keys.signals(&shared.identity);
    // Sidekiq's senders push on the left (signal.lua): first sent, first taken.
    let pop = if shared.keys.is_sidekiq() { "RPOP" } else { "LPOP" };
    let taken: redis::RedisResult<Option<Vec<String>>> = redis::cmd(pop)
        .arg(&key)
        .arg(SIGNALS_PER_DRAIN)
        .query_async(&mut shared.redis.conn())
        .await;
    match taken {
        Ok(commands) => {
            for command in commands.unwrap_or_default() {
                apply_signal(shared, command.trim());
            }
        }
        Err(e) => tracing::warn!("reading queued signals from {key} failed: {e}"),
    }
}

/// Obeys `quiet` or `stop`, or Sidekiq's `TSTP` and `TERM` (what its Web
/// UI sends in Sidekiq's layout; `TTIN`, its thread dump, is ignored).
fn apply_signal(shared: &Shared, command: &str) {
    let command = match command {
        "TSTP" => "quiet",
        "TERM" => "stop",
        "TTIN" => return,
        command => command,
    };
    match command {
        "quiet" if !shared.is_quiet() => {
            tracing::info!("remote quiet received");
            shared.advance(Lifecycle::Quiet);
        }
        "stop" if shared.lifecycle() < Lifecycle::Stopping => {
            tracing::info!("remote stop received");
            shared.advance(Lifecycle::Stopping);
        }
        "quiet" | "stop" => {}
        other => tracing::warn!("unknown remote signal {other:?} ignored"),
    }
}

/// Clean shutdown: drop the presence keys (and the recovery entries when
/// nothing is left in progress). Returns the jobs left in progress.
pub(crate) async fn unregister(shared: &Shared) -> Result<i64> {
    let identity = &shared.identity;
    // Sharded by queue, what is left is on the queues' slots.
    let left_elsewhere = if shared.keys.is_sharded_by_queue() && shared.is_reliable() {
        crate::in_progress::count_held(shared, identity).await?
    } else {
        0
    };
    let left: i64 = SCRIPTS
        .unregister
        .key(shared.keys.processes())
        .key(shared.keys.process(identity))
        .key(shared.keys.workers(identity))
        .key(shared.keys.in_progress_identities())
        .key(shared.keys.last_beat())
        .key(shared.keys.in_progress(identity))
        .arg(identity)
        .arg(left_elsewhere)
        .invoke_async(&mut shared.redis.conn())
        .await?;
    Ok(left)
}
