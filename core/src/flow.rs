//! Flow control by key (issue #46 part 3): a job may carry a flow key
//! (`key`, a text or, in Python and Ruby, a function of its args that the
//! host calls at the push), and its class's policy says what pushes of one
//! key do to each other, decided atomically at the push:
//!
//! - **debounce** (`debounce` = window, `debounce_max` = longest wait): the
//!   pushes of one class, queue and key within a window of each other
//!   collapse into one job, run a window after the last push with the last
//!   push's args, under the first push's jid, which every push of the burst
//!   returns (`push_debounce.lua`), counted in `NS:stat:collapsed`. With a
//!   longest wait, a steady stream still runs at least that often.
//! - **throttle** (`throttle` = window, `throttle_excess` = `"delay"` or
//!   `"drop"`): the jobs of one class, queue and key are due at least a
//!   window apart: a push when the key's next window is open is queued at
//!   once; one before is delayed to that window (put in the schedule) or
//!   dropped, counted in `NS:stat:throttled`, its push answering with no
//!   jid (`push_throttle.lua`).
//! - **replace** (`replace: true`): a push while the key's job still
//!   waits on its queue replaces that job in place (its place in line and
//!   jid kept, the push's args), counted in `NS:stat:replaced`; else the
//!   push is queued and becomes the key's job (`push_replace.lua`).
//! - **sequence** (`sequence: true`): the key's jobs run one at a time in
//!   push order, a failed one's retry before the next: the key is the
//!   job's group, capped at 1 (see [`crate::groups`]), and its retry holds
//!   the group (`fail.lua`, `requeue_due.lua`, `group_lease.lua`).
//! - **singleton** (`unique_for` with a key): at most one pending job per
//!   class, queue and key, whatever its args: the unique lock's digest is
//!   of the key (`job::keyed_digest`), held as any unique lock
//!   (until the job succeeds or dies, at most `unique_for`), and a push
//!   while it is held returns the jid of the job that holds it.
//!
//! A job without a key pays nothing: its push is the same script as
//! before. Sharded by queue, a debounced or throttled push is refused
//! (its key's state is on the namespace's slot, its queue on another).

use crate::groups::Destination;
use crate::job::Job;
use crate::keys::Keys;

/// How long a replacing key's state lasts after its last push: a job
/// waiting longer than this on its queue is no longer found, and the next
/// push is a job of its own.
const REPLACE_STATE_SECS: u64 = 7 * 24 * 3600;

/// The member of `NS:flow_keys` (see `scripts/flow_index.lua`) for
/// `job`'s key under `mode`.
fn index_member(mode: &str, job: &Job) -> String {
    let key = job.flow_key().unwrap_or_default();
    serde_json::to_string(&(mode, job.queue_name(), job.class(), key)).expect("strings always serialize")
}

/// Where a script splices a jid and a due time into a status record.
const JID_MARK: &str = "\u{1}jid\u{1}";
const DUE_MARK: &str = "\u{1}due\u{1}";

/// `job`'s status record (see results.rs) as a flow push's script writes
/// it for the job that will run (`keep_result` in flow_index.lua), when the
/// job keeps a result (`result_ttl`): the prefix of its key, then, as
/// queued, the record's head and rest around its jid, and, as scheduled,
/// its head, middle and tail around its jid and due time; then how long
/// it lasts from the push (and, scheduled, its wait). Empty without a
/// result kept: the script writes nothing.
struct ResultParts {
    prefix: String,
    queued: (String, String),
    scheduled: (String, String, String),
    ttl: u64,
}

impl ResultParts {
    fn of(keys: &Keys, job: &Job, now: f64) -> ResultParts {
        let Some(ttl) = job.result_ttl_secs() else {
            return ResultParts {
                prefix: String::new(),
                queued: Default::default(),
                scheduled: Default::default(),
                ttl: 0,
            };
        };
        let marked = job.clone().jid(JID_MARK);
        let around = |record: serde_json::Value, mark: &str| -> (String, String) {
            let text = record.to_string();
            let mark = serde_json::to_string(mark).expect("a string serializes");
            let mark = &mark[1..mark.len() - 1];
            // The first: the jid comes before the args, where one may be.
            let at = text.find(mark).expect("the record holds the mark");
            (text[..at].to_string(), text[at + mark.len()..].to_string())
        };
        let queued = around(crate::results::base(&marked, "queued", now), JID_MARK);
        let mut scheduled = crate::results::base(&marked, "scheduled", now);
        scheduled["due_at"] = serde_json::Value::from(DUE_MARK);
        let (head, rest) = around(scheduled, JID_MARK);
        // The last: due_at is the record's last field, after the args.
        let due = serde_json::to_string(DUE_MARK).expect("a string serializes");
        let at = rest.rfind(&due).expect("the record ends with its due time");
        ResultParts {
            prefix: keys.result(""),
            queued,
            scheduled: (head, rest[..at].to_string(), rest[at + due.len()..].to_string()),
            ttl: ttl.saturating_add(crate::results::PENDING_SLACK_SECS),
        }
    }

    /// Adds the prefix, the record's head, middle and tail as scheduled and
    /// how long it lasts (as the debounce and throttle scripts take them);
    /// returns the record's head and rest as queued.
    fn add_scheduled(self, invocation: &mut redis::ScriptInvocation<'static>) -> (String, String) {
        let (head, middle, tail) = self.scheduled;
        invocation
            .arg(self.prefix)
            .arg(head)
            .arg(middle)
            .arg(tail)
            .arg(self.ttl);
        self.queued
    }
}

/// The payload of `job` as a script splices a jid into it: `{"jid":"`,
/// then the jid, then `",` and the rest of the job (a jid is hex: nothing
/// to escape; nothing is re-encoded, which would round large integers).
fn around_its_jid(job: &Job) -> (&'static str, String) {
    let mut rest = job.clone();
    rest.remove("jid");
    let rest = rest.to_json();
    ("{\"jid\":\"", format!("\",{}", &rest[1..]))
}

/// The invocation of `push_replace.lua` that pushes replacing `job`
/// (validated, `at`-less, `enqueued_at` stamped) at `now`. Its answer: the
/// jid that will run, and 1 when this push queued a new job (0: it
/// replaced the key's waiting job).
pub(crate) fn replace_push(keys: &Keys, job: &Job, now: f64) -> redis::ScriptInvocation<'static> {
    let digest = job.flow_digest().expect("replace is validated with its key");
    let destination = Destination::of_job(keys, job);
    let queue = job.queue_name();
    let (head, tail) = around_its_jid(job);
    // Sharded by queue every key is on the queue's slot: the namespace's
    // three (listed before, written after: replace_listed) are stood in
    // for by the list, untouched.
    let sharded = keys.is_sharded_by_queue();
    let on_the_namespace = |key: String| if sharded { destination.list.clone() } else { key };
    let day = crate::retry::day_of(now);
    let mut invocation = crate::scripts::SCRIPTS.push_replace.prepare_invoke();
    invocation
        .key(keys.replace(queue, &digest))
        .key(on_the_namespace(keys.queues()))
        .key(&destination.list)
        .key(on_the_namespace(keys.priorities()))
        .key(keys.queue_stat(queue, "replaced", None))
        .key(keys.queue_stat(queue, "replaced", Some(&day)))
        .key(on_the_namespace(keys.flow_keys()))
        .key(keys.queue_stat(queue, "backlog_dropped", None))
        .key(keys.queue_stat(queue, "backlog_dropped", Some(&day)))
        .arg(head)
        .arg(tail)
        .arg(job.jid_str())
        .arg(queue)
        .arg(keys.wake())
        .arg(crate::priority::listed_member(queue, job.priority_level()))
        .arg(&destination.group_args()[..])
        .arg(REPLACE_STATE_SECS)
        .arg(index_member("replace", job))
        .arg(now);
    let result = ResultParts::of(keys, job, now);
    invocation
        .arg(result.prefix)
        .arg(result.queued.0)
        .arg(result.queued.1)
        .arg(result.ttl)
        .arg(if sharded { "1" } else { "" });
    invocation
}

/// Sharded by queue, after [`replace_push`] answered that `runs` is the
/// key's job: its entry in the index of flow keys and its status record,
/// on the namespace's slot (`flow_listed.lua`).
pub(crate) fn replace_listed(keys: &Keys, job: &Job, now: f64, runs: &str) -> redis::ScriptInvocation<'static> {
    let result = ResultParts::of(keys, job, now);
    let mut invocation = crate::scripts::SCRIPTS.flow_listed.prepare_invoke();
    invocation
        .key(keys.flow_keys())
        .arg(index_member("replace", job))
        .arg(now + REPLACE_STATE_SECS as f64)
        .arg(now)
        .arg(result.prefix)
        .arg(runs)
        .arg(result.queued.0)
        .arg(result.queued.1)
        .arg(result.ttl);
    invocation
}

/// The invocation of `push_throttle.lua` that pushes throttled `job`
/// (validated, `at`-less, `enqueued_at` stamped) at `now` on the fleet's
/// clock. Its answer: `queued`, `delayed` or `dropped`, and when the job is
/// (or the key's next window would have been) due.
///
/// Sharded by queue, `handover` names the hand-over a job queued now
/// becomes (written to the outbox; the caller delivers it).
pub(crate) fn throttle_push(
    keys: &Keys,
    job: &Job,
    now: f64,
    handover: Option<&str>,
) -> redis::ScriptInvocation<'static> {
    let (window, drop) = job.throttle_secs().expect("a throttled job");
    let digest = job.flow_digest().expect("throttle is validated with its key");
    let destination = match handover {
        Some(_) => Destination::onto(keys.outbox()),
        None => Destination::of_job(keys, job),
    };
    let queue = job.queue_name();
    let mut invocation = crate::scripts::SCRIPTS.push_throttle.prepare_invoke();
    invocation
        .key(keys.throttle(&digest))
        .key(keys.queues())
        .key(&destination.list)
        .key(keys.schedule())
        .key(keys.priorities())
        .key(keys.stat("throttled", None))
        .key(keys.stat("throttled", Some(&crate::retry::day_of(now))))
        .key(keys.flow_keys())
        .key(keys.stat("backlog_dropped", None))
        .key(keys.stat("backlog_dropped", Some(&crate::retry::day_of(now))))
        .arg(job.to_json())
        .arg(now)
        .arg(window)
        .arg(if drop { "drop" } else { "delay" })
        .arg(queue)
        .arg(keys.wake())
        .arg(crate::priority::listed_member(queue, job.priority_level()))
        .arg(&destination.group_args()[..])
        .arg(index_member("throttle", job));
    let queued = ResultParts::of(keys, job, now).add_scheduled(&mut invocation);
    invocation
        .arg(queued.0)
        .arg(queued.1)
        .arg(job.jid_str())
        .arg(handover.unwrap_or(""));
    invocation
}

/// The invocation of `push_debounce.lua` that pushes debounced `job`
/// (validated, `at`-less) at `now` on the fleet's clock. Its answer: the
/// jid that will run, and 1 when this push began a burst (0: it collapsed
/// into the burst's job).
pub(crate) fn debounce_push(keys: &Keys, job: &Job, now: f64) -> redis::ScriptInvocation<'static> {
    let (window, longest) = job.debounce_secs().expect("a debounced job");
    let digest = job.flow_digest().expect("debounce is validated with its key");
    let (head, tail) = around_its_jid(job);
    let mut invocation = crate::scripts::SCRIPTS.push_debounce.prepare_invoke();
    invocation
        .key(keys.debounce(&digest))
        .key(keys.schedule())
        .key(keys.stat("collapsed", None))
        .key(keys.stat("collapsed", Some(&crate::retry::day_of(now))))
        .key(keys.flow_keys())
        .arg(head)
        .arg(tail)
        .arg(job.jid_str())
        .arg(now)
        .arg(window)
        .arg(longest.map_or_else(String::new, |longest| longest.to_string()))
        .arg(index_member("debounce", job));
    ResultParts::of(keys, job, now).add_scheduled(&mut invocation);
    invocation
}
