//! The Lua scripts, embedded at build time from `scripts/*.lua` (each file's
//! header lists its KEYS, ARGV and return value). `redis::Script` runs them
//! by SHA (`EVALSHA`) and on `NOSCRIPT` (a restarted, failed-over or
//! flushed server) loads and retries. No script here is ever sent inside a
//! pipeline or MULTI, where that fallback cannot work.

use redis::Script;
use std::sync::LazyLock;

pub(crate) struct Scripts {
    pub fetch_reliable: Script,
    pub ack: Script,
    pub fail: Script,
    pub requeue_in_progress: Script,
    pub requeue_due: Script,
    pub heartbeat: Script,
    pub unregister: Script,
    pub forget_identity: Script,
    pub owned_lock: Script,
    pub periodic_claim: Script,
    pub push: Script,
    pub push_unique: Script,
    pub kill: Script,
    pub signal: Script,
    pub claim_to_outbox: Script,
    pub push_once: Script,
    pub take_held: Script,
}

/// A script that reads the time, with the clock (`scripts/clock.lua`)
/// prepended: one definition of `now_or(fallback)` for all of them.
macro_rules! with_clock {
    ($path:literal) => {
        concat!(include_str!("scripts/clock.lua"), include_str!($path))
    };
}

/// A script that pushes onto queues, with `wake_if_was_empty`
/// (`scripts/wake.lua`) prepended.
macro_rules! with_wake {
    ($path:literal) => {
        concat!(include_str!("scripts/wake.lua"), include_str!($path))
    };
}

pub(crate) static SCRIPTS: LazyLock<Scripts> = LazyLock::new(|| Scripts {
    fetch_reliable: Script::new(include_str!("scripts/fetch_reliable.lua")),
    ack: Script::new(concat!(
        include_str!("scripts/take_fields.lua"),
        include_str!("scripts/metrics.lua"),
        include_str!("scripts/ack.lua")
    )),
    fail: Script::new(concat!(
        include_str!("scripts/in_progress.lua"),
        include_str!("scripts/fail.lua")
    )),
    requeue_in_progress: Script::new(concat!(
        include_str!("scripts/clock.lua"),
        include_str!("scripts/wake.lua"),
        include_str!("scripts/in_progress.lua"),
        include_str!("scripts/requeue_in_progress.lua")
    )),
    requeue_due: Script::new(with_wake!("scripts/requeue_due.lua")),
    heartbeat: Script::new(with_clock!("scripts/heartbeat.lua")),
    unregister: Script::new(include_str!("scripts/unregister.lua")),
    forget_identity: Script::new(with_clock!("scripts/forget_identity.lua")),
    owned_lock: Script::new(include_str!("scripts/owned_lock.lua")),
    periodic_claim: Script::new(with_wake!("scripts/periodic_claim.lua")),
    push: Script::new(with_wake!("scripts/push.lua")),
    push_unique: Script::new(with_wake!("scripts/push_unique.lua")),
    kill: Script::new(include_str!("scripts/kill.lua")),
    signal: Script::new(include_str!("scripts/signal.lua")),
    claim_to_outbox: Script::new(include_str!("scripts/claim_to_outbox.lua")),
    push_once: Script::new(with_wake!("scripts/push_once.lua")),
    take_held: Script::new(concat!(
        include_str!("scripts/take_fields.lua"),
        include_str!("scripts/take_held.lua")
    )),
});
