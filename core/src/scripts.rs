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
    pub list_queues: Script,
    pub take_held: Script,
    pub checkpoint: Script,
    pub limit_define: Script,
    pub limit_acquire: Script,
    pub cancel: Script,
    pub batch_open: Script,
    pub batch_close: Script,
    pub drop_from_set: Script,
    pub group_control: Script,
    pub group_release: Script,
    pub group_sweep: Script,
    pub group_hold: Script,
    pub flow_listed: Script,
    pub push_debounce: Script,
    pub push_throttle: Script,
    pub push_replace: Script,
    pub group_wake: Script,
}

/// One script's source: the fragments it declares in its header line
/// `-- Fragments ...` (a test checks the two agree), prepended in that
/// order, then its own file.
macro_rules! script {
    ($file:literal $(, $fragment:literal)*) => {
        ScriptSource {
            file: $file,
            fragments: &[$($fragment),*],
            text: concat!($(include_str!(concat!("scripts/", $fragment)),)* include_str!(concat!("scripts/", $file))),
        }
    };
}

/// [`script!`] with the batch accounting's fragments last (scripts/batch/,
/// one per function, in the order each uses the ones before): the scripts
/// that settle a job and the batch scripts.
macro_rules! script_with_batch {
    ($file:literal $(, $fragment:literal)*) => {
        script!(
            $file $(, $fragment)*,
            "batch/keys.lua",
            "batch/status.lua",
            "batch/expire.lua",
            "batch/results.lua",
            "batch/fire.lua",
            "batch/check.lua",
            "batch/succeeded.lua",
            "batch/failed.lua"
        )
    };
}

// `file` and `fragments` are read by the header test only.
#[cfg_attr(not(test), allow(dead_code))]
pub(crate) struct ScriptSource {
    pub file: &'static str,
    pub fragments: &'static [&'static str],
    pub text: &'static str,
}

impl ScriptSource {
    fn load(&self) -> Script {
        Script::new(self.text)
    }
}

const FETCH_RELIABLE: ScriptSource = script!("fetch_reliable.lua", "clock.lua", "wake.lua", "group.lua");
const ACK: ScriptSource = script_with_batch!("ack.lua", "take_fields.lua", "metrics.lua");
const FAIL: ScriptSource = script_with_batch!("fail.lua", "in_progress.lua");
const REQUEUE_IN_PROGRESS: ScriptSource = script!(
    "requeue_in_progress.lua",
    "clock.lua",
    "wake.lua",
    "group.lua",
    "in_progress.lua"
);
const REQUEUE_DUE: ScriptSource = script!("requeue_due.lua", "wake.lua", "group.lua", "group_lease.lua");
const HEARTBEAT: ScriptSource = script!("heartbeat.lua", "clock.lua");
const UNREGISTER: ScriptSource = script!("unregister.lua");
const FORGET_IDENTITY: ScriptSource = script!("forget_identity.lua", "clock.lua");
const OWNED_LOCK: ScriptSource = script!("owned_lock.lua");
const PERIODIC_CLAIM: ScriptSource = script!("periodic_claim.lua", "wake.lua");
const PUSH: ScriptSource = script!("push.lua", "wake.lua", "group.lua");
const PUSH_UNIQUE: ScriptSource = script!("push_unique.lua", "wake.lua", "group.lua");
const KILL: ScriptSource = script_with_batch!("kill.lua");
const SIGNAL: ScriptSource = script!("signal.lua");
const CLAIM_TO_OUTBOX: ScriptSource = script!("claim_to_outbox.lua");
const PUSH_ONCE: ScriptSource = script!("push_once.lua", "wake.lua", "group.lua", "group_lease.lua");
const LIST_QUEUES: ScriptSource = script!("list_queues.lua", "wake.lua");
const TAKE_HELD: ScriptSource = script!("take_held.lua", "take_fields.lua");
const CHECKPOINT: ScriptSource = script!("checkpoint.lua");
const LIMIT_DEFINE: ScriptSource = script!("limit_define.lua");
const LIMIT_ACQUIRE: ScriptSource = script!("limit_acquire.lua", "clock.lua");
const CANCEL: ScriptSource = script!("cancel.lua");
const BATCH_OPEN: ScriptSource = script!("batch_open.lua");
const BATCH_CLOSE: ScriptSource = script_with_batch!("batch_close.lua");
const DROP_FROM_SET: ScriptSource = script_with_batch!("drop_from_set.lua");
const GROUP_CONTROL: ScriptSource = script!("group_control.lua", "wake.lua", "group.lua");
const GROUP_RELEASE: ScriptSource = script!("group_release.lua", "wake.lua", "group.lua", "group_lease.lua");
const GROUP_SWEEP: ScriptSource = script!("group_sweep.lua", "wake.lua", "group.lua", "group_lease.lua");
const GROUP_HOLD: ScriptSource = script!("group_hold.lua", "wake.lua", "group.lua", "group_lease.lua");
const FLOW_LISTED: ScriptSource = script!("flow_listed.lua", "flow_index.lua");
const PUSH_DEBOUNCE: ScriptSource = script!("push_debounce.lua", "flow_index.lua");
const PUSH_THROTTLE: ScriptSource = script!("push_throttle.lua", "wake.lua", "group.lua", "flow_index.lua");
const PUSH_REPLACE: ScriptSource = script!("push_replace.lua", "wake.lua", "group.lua", "flow_index.lua");
const GROUP_WAKE: ScriptSource = script!("group_wake.lua", "clock.lua", "wake.lua", "group.lua");

/// Every script, for the header check.
#[cfg(test)]
const ALL: [&ScriptSource; 34] = [
    &FETCH_RELIABLE,
    &ACK,
    &FAIL,
    &REQUEUE_IN_PROGRESS,
    &REQUEUE_DUE,
    &HEARTBEAT,
    &UNREGISTER,
    &FORGET_IDENTITY,
    &OWNED_LOCK,
    &PERIODIC_CLAIM,
    &PUSH,
    &PUSH_UNIQUE,
    &KILL,
    &SIGNAL,
    &CLAIM_TO_OUTBOX,
    &PUSH_ONCE,
    &LIST_QUEUES,
    &TAKE_HELD,
    &CHECKPOINT,
    &LIMIT_DEFINE,
    &LIMIT_ACQUIRE,
    &CANCEL,
    &BATCH_OPEN,
    &BATCH_CLOSE,
    &DROP_FROM_SET,
    &GROUP_CONTROL,
    &GROUP_RELEASE,
    &GROUP_SWEEP,
    &GROUP_HOLD,
    &FLOW_LISTED,
    &PUSH_DEBOUNCE,
    &PUSH_THROTTLE,
    &PUSH_REPLACE,
    &GROUP_WAKE,
];

pub(crate) static SCRIPTS: LazyLock<Scripts> = LazyLock::new(|| Scripts {
    fetch_reliable: FETCH_RELIABLE.load(),
    ack: ACK.load(),
    fail: FAIL.load(),
    requeue_in_progress: REQUEUE_IN_PROGRESS.load(),
    requeue_due: REQUEUE_DUE.load(),
    heartbeat: HEARTBEAT.load(),
    unregister: UNREGISTER.load(),
    forget_identity: FORGET_IDENTITY.load(),
    owned_lock: OWNED_LOCK.load(),
    periodic_claim: PERIODIC_CLAIM.load(),
    push: PUSH.load(),
    push_unique: PUSH_UNIQUE.load(),
    kill: KILL.load(),
    signal: SIGNAL.load(),
    claim_to_outbox: CLAIM_TO_OUTBOX.load(),
    push_once: PUSH_ONCE.load(),
    list_queues: LIST_QUEUES.load(),
    take_held: TAKE_HELD.load(),
    checkpoint: CHECKPOINT.load(),
    limit_define: LIMIT_DEFINE.load(),
    limit_acquire: LIMIT_ACQUIRE.load(),
    cancel: CANCEL.load(),
    batch_open: BATCH_OPEN.load(),
    batch_close: BATCH_CLOSE.load(),
    drop_from_set: DROP_FROM_SET.load(),
    group_control: GROUP_CONTROL.load(),
    group_release: GROUP_RELEASE.load(),
    group_sweep: GROUP_SWEEP.load(),
    group_hold: GROUP_HOLD.load(),
    flow_listed: FLOW_LISTED.load(),
    push_debounce: PUSH_DEBOUNCE.load(),
    push_throttle: PUSH_THROTTLE.load(),
    push_replace: PUSH_REPLACE.load(),
    group_wake: GROUP_WAKE.load(),
});

#[cfg(test)]
mod tests {
    use super::ALL;

    /// What a script's first line says it includes.
    fn declared(text: &str) -> Vec<&str> {
        let first = text.lines().next().unwrap_or_default();
        let list = first
            .strip_prefix("-- Fragments (prepended, in this order): ")
            .or_else(|| {
                first
                    .strip_prefix("-- Fragments: ")
                    .filter(|rest| *rest == "none")
                    .map(|_| "")
            })
            .unwrap_or_else(|| panic!("no `-- Fragments` line first: {first:?}"));
        list.split(", ").filter(|name| !name.is_empty()).collect()
    }

    #[test]
    fn every_script_declares_the_fragments_it_is_built_with() {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("src/scripts");
        let mut fragments_used = std::collections::BTreeSet::new();
        for script in ALL {
            let own = std::fs::read_to_string(dir.join(script.file)).unwrap();
            assert_eq!(declared(&own), script.fragments, "{}", script.file);
            assert!(script.text.ends_with(&own), "{} comes last", script.file);
            fragments_used.extend(script.fragments.iter().copied());
        }
        // Every other .lua file is a fragment some script includes.
        let scripts: std::collections::BTreeSet<_> = ALL.iter().map(|s| s.file).collect();
        // A directory holds the fragments of one part (batch/: one per
        // function), named by their path from scripts/.
        let mut names = Vec::new();
        for entry in std::fs::read_dir(&dir).unwrap() {
            let entry = entry.unwrap();
            let name = entry.file_name().into_string().unwrap();
            if entry.path().is_dir() {
                for inner in std::fs::read_dir(entry.path()).unwrap() {
                    names.push(format!("{name}/{}", inner.unwrap().file_name().into_string().unwrap()));
                }
            } else {
                names.push(name);
            }
        }
        for name in names {
            assert!(
                scripts.contains(name.as_str()) || fragments_used.contains(name.as_str()),
                "{name} is neither a script nor a fragment of one"
            );
        }
    }
}
