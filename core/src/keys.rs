//! Every Redis key cogworker uses, built in this one module (docs/internals.md, "Key layout").
//! Nothing else formats a key. With a hash-tagged namespace such as
//! `{cogworker}` every key lands in one Redis Cluster slot.
//!
//! With `shard_by_queue`, the keys a job touches while it is queued and
//! running (its queue, the in-progress hashes of that queue, the queue's
//! pause flag) carry a hash tag of their queue's own, `{cogworker:<queue>}`,
//! so a cluster spreads queues over its masters; everything else stays on
//! the namespace's slot.

/// Key builder for one namespace.
#[derive(Clone, Debug)]
pub struct Keys {
    ns: String,
    /// The namespace without braces, for the per-queue hash tags; `None`
    /// when queue keys share the namespace's slot.
    shard_by_queue: Option<String>,
    /// Sidekiq's layout (see [`crate::config::Layout`]): the keys Sidekiq
    /// knows are its own bare names; the rest stay under the namespace.
    sidekiq: Option<SidekiqKeys>,
}

/// What of Sidekiq's layout depends on its version.
#[derive(Clone, Copy, Debug)]
struct SidekiqKeys {
    /// The suffix of a process's busy-slots hash: `:workers` up to 6.x,
    /// `:work` from 7.0.
    work_suffix: &'static str,
    /// A job's `created_at` and `enqueued_at` in integer milliseconds
    /// (from 8.0), not float seconds.
    millis: bool,
}

impl Keys {
    /// The keys of `namespace`, every one on the namespace's slot.
    pub fn new(namespace: &str) -> Self {
        Keys {
            ns: namespace.to_string(),
            shard_by_queue: None,
            sidekiq: None,
        }
    }

    /// The keys of `namespace`, each queue's on a slot of its own.
    pub fn sharded_by_queue(namespace: &str) -> Self {
        Keys {
            shard_by_queue: Some(namespace.replace(['{', '}'], "")),
            ..Keys::new(namespace)
        }
    }

    /// Sidekiq's layout for Sidekiq `version` (6 and up): its queues,
    /// schedule, retry and dead sets, processes and counters under their
    /// bare names; cogworker's own keys under `namespace`.
    pub fn sidekiq(namespace: &str, version: u8) -> Self {
        Keys {
            sidekiq: Some(SidekiqKeys {
                work_suffix: if version >= 7 { ":work" } else { ":workers" },
                millis: version >= 8,
            }),
            ..Keys::new(namespace)
        }
    }

    /// The keys `config` uses.
    pub fn for_config(config: &crate::config::Config) -> Self {
        if config.layout() == crate::config::Layout::Sidekiq {
            Keys::sidekiq(config.namespace(), config.sidekiq_version())
        } else if config.shard_by_queue() {
            Keys::sharded_by_queue(config.namespace())
        } else {
            Keys::new(config.namespace())
        }
    }

    /// Is this Sidekiq's layout?
    pub fn is_sidekiq(&self) -> bool {
        self.sidekiq.is_some()
    }

    /// A job's `created_at` or `enqueued_at` at `epoch` seconds, as the
    /// layout writes it: float seconds, or integer milliseconds for
    /// Sidekiq 8 (see [`crate::sidekiq`]).
    pub fn job_time(&self, epoch: f64) -> serde_json::Value {
        match self.sidekiq {
            Some(SidekiqKeys { millis: true, .. }) => serde_json::Value::from((epoch * 1000.0).round() as i64),
            _ => crate::job::float(epoch),
        }
    }
    /// `job` as it goes onto its queue at `at` (epoch seconds): due, so
    /// without `at`, and its `enqueued_at` as the layout writes it.
    pub(crate) fn stamp_enqueued(&self, job: &mut crate::job::Job, at: f64) {
        job.remove("at");
        job.set("enqueued_at", self.job_time(at));
    }
    /// `job`'s `created_at` as the layout writes it (a push fills it in
    /// float seconds).
    pub(crate) fn write_created_at(&self, job: &mut crate::job::Job) {
        if let Some(SidekiqKeys { millis: true, .. }) = self.sidekiq {
            if let Some(seconds) = job.get("created_at").and_then(crate::sidekiq::epoch_seconds) {
                job.set("created_at", self.job_time(seconds));
            }
        }
    }
    /// A key Sidekiq knows: its bare name in Sidekiq's layout, else under
    /// the namespace.
    fn shared_key(&self, name: &str) -> String {
        match self.sidekiq {
            Some(_) => name.to_string(),
            None => self.key(name),
        }
    }

    /// The namespace.
    pub fn namespace(&self) -> &str {
        &self.ns
    }

    /// Do queues have hash tags of their own?
    pub fn is_sharded_by_queue(&self) -> bool {
        self.shard_by_queue.is_some()
    }

    /// Sharded by queue, the prefix of one queue's keys: `{ns:<queue>}`.
    fn queue_slot(&self, queue: &str) -> Option<String> {
        let inner = self.shard_by_queue.as_ref()?;
        Some(format!("{{{inner}:{queue}}}"))
    }

    fn key(&self, suffix: &str) -> String {
        format!("{}:{}", self.ns, suffix)
    }

    /// Set of every queue name ever pushed to.
    pub fn queues(&self) -> String {
        self.shared_key("queues")
    }
    /// List of job payloads for one queue (push left, take right).
    pub fn queue(&self, name: &str) -> String {
        match self.queue_slot(name) {
            Some(slot) => format!("{slot}:queue"),
            None => self.shared_key(&format!("queue:{name}")),
        }
    }
    /// The list of queue `name`'s jobs at priority `level`: the queue's
    /// own list at the default level, a list of the level's otherwise (see
    /// [`crate::priority`]).
    pub fn queue_at(&self, name: &str, level: u8) -> String {
        if level == crate::job::DEFAULT_PRIORITY {
            return self.queue(name);
        }
        match self.queue_slot(name) {
            Some(slot) => format!("{slot}:queue@{level}"),
            None => format!("{}:queue@{level}:{name}", self.ns),
        }
    }
    /// Sorted set: the groups of queue `name` that have jobs, scored by
    /// the turns each has had; member `""` stands for the queue's
    /// ungrouped jobs (see [`crate::groups`]).
    pub fn group_ring(&self, name: &str) -> String {
        self.queue_key(name, "groups")
    }
    /// Hash: the weights of queue `name`'s groups that have one (group ->
    /// weight; see [`crate::groups`]).
    pub fn group_weights(&self, name: &str) -> String {
        self.queue_key(name, "group_weights")
    }
    /// Hash: the concurrency caps of queue `name`'s groups that have one
    /// (group -> cap; field `""`: every group's default).
    pub fn group_caps(&self, name: &str) -> String {
        self.queue_key(name, "group_caps")
    }
    /// Hash: the limits jobs declare for their groups (a class's
    /// `group_cap`, `group_rate`; group -> `"<cap> <rate> <period>"`, 0
    /// for none), each set by its group's pushes and dropped when the
    /// group has no jobs left.
    pub fn group_declared(&self, name: &str) -> String {
        self.queue_key(name, "group_declared")
    }
    /// Hash: the rates set for queue `name`'s groups through the API
    /// (group -> `"<limit> <period>"`; field `""`: every group's default).
    pub fn group_rates(&self, name: &str) -> String {
        self.queue_key(name, "group_rates")
    }
    /// The prefix of a rated group's window count (a string key, the group
    /// following, expiring with its period: see `scripts/fetch_reliable.lua`).
    pub fn group_rate_prefix(&self, name: &str) -> String {
        format!("{} ", self.queue_key(name, "group_rate"))
    }
    /// Hash: the sequences of queue `name` held for a failed job's retry
    /// (jid -> `"<group>\n<the retry entry>"`, written by `scripts/fail.lua`).
    pub fn group_holds(&self, name: &str) -> String {
        self.queue_key(name, "group_holds")
    }
    /// Sorted set: queue `name`'s groups waiting out their rate's period,
    /// scored by when it ends.
    pub fn group_timers(&self, name: &str) -> String {
        self.queue_key(name, "group_timers")
    }
    /// Hash: how many jobs of each capped group of queue `name` run now.
    pub fn group_running(&self, name: &str) -> String {
        self.queue_key(name, "group_running")
    }
    /// Hash: the leases of capped groups' running jobs (`"<identity>
    /// <token>"` -> group; see `scripts/group_lease.lua`).
    pub fn group_leases(&self, name: &str) -> String {
        self.queue_key(name, "group_leases")
    }
    /// Set: queue `name`'s groups at their cap with jobs waiting, out of
    /// the ring until a lease of theirs ends.
    pub fn group_parked(&self, name: &str) -> String {
        self.queue_key(name, "group_parked")
    }
    /// A key of queue `name`'s own, `NS:<what>:<name>` (`{ns:<name>}:<what>`
    /// sharded by queue).
    fn queue_key(&self, name: &str, what: &str) -> String {
        match self.queue_slot(name) {
            Some(slot) => format!("{slot}:{what}"),
            None => format!("{}:{what}:{name}", self.ns),
        }
    }
    /// The list of group `group`'s jobs of queue `name` at priority `level`.
    pub fn group_list(&self, name: &str, level: u8, group: &str) -> String {
        format!("{}{group}", self.group_list_prefix(name, level))
    }
    /// The prefix of queue `name`'s group lists at priority `level`: the
    /// list of group `g` is the prefix followed by `g`. Queue names hold
    /// no spaces, so the space before the group keeps two queues' groups
    /// apart whatever the groups hold.
    pub fn group_list_prefix(&self, name: &str, level: u8) -> String {
        let (head, tail) = self.group_list_prefix_parts(name);
        match level {
            crate::job::DEFAULT_PRIORITY => format!("{head}{tail}"),
            level => format!("{head}@{level}{tail}"),
        }
    }
    /// The two parts of queue `name`'s group list prefixes: the prefix at
    /// level `L` is the first, `@L` (none at the default level) and the
    /// second (the fetch script builds them from these).
    pub fn group_list_prefix_parts(&self, name: &str) -> (String, String) {
        match self.queue_slot(name) {
            Some(slot) => (format!("{slot}:group"), " ".to_string()),
            None => (format!("{}:group", self.ns), format!(":{name} ")),
        }
    }
    /// Sorted set of cancelled jids, scored by when each may be forgotten
    /// (see `cancel.rs`).
    pub fn cancelled(&self) -> String {
        self.key("cancelled")
    }
    /// Set of the priority levels in use, `"<level> <queue>"` (the default
    /// level is not listed).
    pub fn priorities(&self) -> String {
        self.key("priorities")
    }
    /// The queue name back from a queue key, if it is one of ours.
    pub fn queue_name<'a>(&self, key: &'a str) -> Option<&'a str> {
        match &self.shard_by_queue {
            Some(inner) => key
                .strip_prefix('{')?
                .strip_prefix(inner.as_str())?
                .strip_prefix(':')?
                .strip_suffix("}:queue"),
            None if self.sidekiq.is_some() => key.strip_prefix("queue:"),
            None => key.strip_prefix(&self.ns)?.strip_prefix(":queue:"),
        }
    }
    /// The set a fetch from queue `name` reads to see whether it is paused:
    /// the namespace's set of paused queues, or when sharded, a set on the
    /// queue's own slot holding just its name (the namespace's set is then
    /// the list the dashboard shows; pausing writes both).
    pub fn pause_flag(&self, name: &str) -> String {
        match self.queue_slot(name) {
            Some(slot) => format!("{slot}:paused"),
            None => self.paused_queues(),
        }
    }
    /// The hash of the jobs `identity` took from queue `name` and has not
    /// settled: the process's one in-progress hash, or when sharded, one
    /// per queue on the queue's slot.
    pub fn in_progress_from(&self, identity: &str, name: &str) -> String {
        match self.queue_slot(name) {
            Some(slot) => format!("{slot}:in_progress:{identity}"),
            None => self.in_progress(identity),
        }
    }
    /// Sharded by queue: the marker that one hand-over onto queue `name`
    /// (`id`, see [`Keys::outbox`]) has landed, so a repeat of it pushes
    /// nothing.
    pub fn landed(&self, name: &str, id: &str) -> String {
        match self.queue_slot(name) {
            Some(slot) => format!("{slot}:landed:{id}"),
            None => format!("{}:landed:{}", self.ns, id),
        }
    }
    /// Sharded by queue: hash of jobs taken off the schedule, retry or dead
    /// set, or claimed by a periodic tick, and not yet pushed onto their
    /// queue (which lives on another slot). Field: a hand-over id; value:
    /// queue name, a newline, the payload.
    pub fn outbox(&self) -> String {
        self.key("outbox")
    }
    /// Sorted set of batch ids, scored by when each was opened (the
    /// Batches page; an id whose hash expired is pruned when listed).
    pub fn batches(&self) -> String {
        self.key("batches")
    }
    /// The prefix of every batch's keys: `<prefix><id>` is its hash,
    /// `<prefix><id>:failures` its failed units (scripts/batch/ names
    /// them from it, a parent's too).
    pub fn batch_prefix(&self) -> String {
        self.key("batch:")
    }
    /// Hash: one batch's counts, callbacks and times (scripts/batch/).
    pub fn batch(&self, bid: &str) -> String {
        format!("{}{bid}", self.batch_prefix())
    }
    /// Hash: a batch's units that failed and have not since succeeded
    /// (`failed` or `dead`).
    pub fn batch_failures(&self, bid: &str) -> String {
        format!("{}{bid}:failures", self.batch_prefix())
    }
    /// Sharded by queue: the marker that a failed job of `identity`'s
    /// delivery `token` has been filed (retry, dead), so recovery does not
    /// put its in-progress entry back on the queue.
    pub fn filed(&self, identity: &str, token: &str) -> String {
        format!("{}:filed:{}:{}", self.ns, identity, token)
    }
    /// Sorted set of jobs to run later (score: run-at).
    pub fn schedule(&self) -> String {
        self.shared_key("schedule")
    }
    /// Sorted set of failed jobs awaiting retry (score: retry-at).
    pub fn retry(&self) -> String {
        self.shared_key("retry")
    }
    /// Sorted set of jobs out of retries (score: died-at).
    pub fn dead(&self) -> String {
        self.shared_key("dead")
    }
    /// Set of paused queue names.
    pub fn paused_queues(&self) -> String {
        self.key("paused_queues")
    }
    /// Set of live process identities.
    pub fn processes(&self) -> String {
        self.shared_key("processes")
    }
    /// Hash describing one process (`info`, `busy`, `quiet`, `beat`):
    /// Sidekiq's is named by the identity alone.
    pub fn process(&self, identity: &str) -> String {
        match self.sidekiq {
            Some(_) => identity.to_string(),
            None => format!("{}:process:{}", self.ns, identity),
        }
    }
    /// Hash of one process's busy slots (Sidekiq's: `<identity>:workers`
    /// up to 6.x, `<identity>:work` from 7.0).
    pub fn workers(&self, identity: &str) -> String {
        match self.sidekiq {
            Some(sidekiq) => format!("{identity}{}", sidekiq.work_suffix),
            None => format!("{}:workers:{}", self.ns, identity),
        }
    }
    /// List of jobs one process has taken and not settled (reliable fetch).
    pub fn in_progress(&self, identity: &str) -> String {
        format!("{}:in_progress:{}", self.ns, identity)
    }
    /// Set of identities that may own an in-progress list.
    pub fn in_progress_identities(&self) -> String {
        self.key("in_progress_identities")
    }
    /// Hash of identity to last heartbeat (Redis time).
    pub fn last_beat(&self) -> String {
        self.key("last_beat")
    }
    /// A unique job's lock (value: the owner jid).
    pub fn unique(&self, digest: &str) -> String {
        format!("{}:unique:{}", self.ns, digest)
    }
    /// Sorted set: every flow key with state (debounced, throttled or
    /// replacing), as JSON `["<mode>","<queue>","<class>","<key>"]`, scored
    /// by when its state expires (see `scripts/flow_index.lua`).
    pub fn flow_keys(&self) -> String {
        self.key("flow_keys")
    }
    /// Hash: the burst of a debounced class, queue and key (see
    /// [`crate::flow`]; `digest` of the three).
    pub fn debounce(&self, digest: &str) -> String {
        format!("{}:debounce:{}", self.ns, digest)
    }
    /// Hash: the job waiting on its queue for a replacing class, queue and
    /// key (see [`crate::flow`]; `digest` of the three).
    pub fn replace(&self, queue: &str, digest: &str) -> String {
        match self.queue_slot(queue) {
            Some(slot) => format!("{slot}:replace:{digest}"),
            None => format!("{}:replace:{}", self.ns, digest),
        }
    }
    /// String: when the next window of a throttled class, queue and key
    /// opens (see [`crate::flow`]; `digest` of the three).
    pub fn throttle(&self, digest: &str) -> String {
        format!("{}:throttle:{}", self.ns, digest)
    }
    /// The last slot claimed for a periodic entry.
    pub fn periodic_last_slot(&self, pjid: &str) -> String {
        format!("{}:periodic:last_slot:{}", self.ns, pjid)
    }
    /// A periodic entry's `until_executed` run lock.
    pub fn periodic_running(&self, pjid: &str) -> String {
        format!("{}:periodic:running:{}", self.ns, pjid)
    }
    /// String: a job's kept outcome (JSON), for jobs with `result_ttl`.
    pub fn result(&self, jid: &str) -> String {
        format!("{}:result:{}", self.ns, jid)
    }
    /// String: a running job's last progress report (JSON, see
    /// [`crate::long_jobs`]); also the channel its reports are published on.
    pub fn progress(&self, jid: &str) -> String {
        format!("{}:progress:{}", self.ns, jid)
    }
    /// List: one token once a job's outcome is final (waiters block on it
    /// with `BLMOVE` back onto itself, which wakes every waiter).
    pub fn result_ready(&self, jid: &str) -> String {
        format!("{}:result_ready:{}", self.ns, jid)
    }
    /// List of a job's failed attempts.
    pub fn attempts(&self, jid: &str) -> String {
        format!("{}:attempts:{}", self.ns, jid)
    }
    /// List of recent executions.
    pub fn history(&self) -> String {
        self.key("history")
    }
    /// `stat` is `processed` or `failed`; `day` is `yyyy-mm-dd` or none for the total.
    /// Sidekiq's layout keeps `processed` and `failed` where Sidekiq
    /// counts them (`stat:processed`...); counters Sidekiq has not stay
    /// under the namespace.
    pub fn stat(&self, stat: &str, day: Option<&str>) -> String {
        let name = match day {
            Some(day) => format!("stat:{stat}:{day}"),
            None => format!("stat:{stat}"),
        };
        match stat {
            "processed" | "failed" => self.shared_key(&name),
            _ => self.key(&name),
        }
    }
    /// Counter `stat` of queue `name`'s jobs (`day`: that UTC day's
    /// count): the jobs a group's backlog cap dropped (`backlog_dropped`)
    /// or a replacing push replaced (`replaced`). Sharded by queue each
    /// queue keeps its own, on its slot (a push there counts in its step:
    /// `push_once.lua`, `push_replace.lua`); else the namespace's
    /// `stat:<stat>`. [`crate::api::Api::stats`] adds them up.
    pub fn queue_stat(&self, name: &str, stat: &str, day: Option<&str>) -> String {
        match (self.queue_slot(name), day) {
            (Some(slot), Some(day)) => format!("{slot}:stat:{stat}:{day}"),
            (Some(slot), None) => format!("{slot}:stat:{stat}"),
            (None, day) => self.stat(stat, day),
        }
    }
    /// One minute's per-class metrics (`minute`: epoch seconds / 60).
    pub fn metrics_minute(&self, minute: u64) -> String {
        format!("{}:metrics:{}", self.ns, minute)
    }
    /// Set of the class names the metrics hashes keep (at most
    /// [`crate::metrics::MAX_CLASSES`]; later ones count as `(other)`).
    pub fn metrics_classes(&self) -> String {
        self.key("metrics:classes")
    }
    /// The all-time per-queue-and-class metrics.
    pub fn metrics_total(&self) -> String {
        self.key("metrics:total")
    }
    /// Pub/sub channel on which a push that finds a queue empty publishes
    /// the queue's name: idle workers wait on it, not on the queues.
    pub fn wake(&self) -> String {
        self.key("wake")
    }
    /// Pub/sub channel for remote `quiet` / `stop` of one process.
    pub fn signal(&self, identity: &str) -> String {
        format!("{}:signal:{}", self.ns, identity)
    }
    /// List of `quiet` / `stop` commands not yet taken by one process (the
    /// durable half of [`Keys::signal`]); Sidekiq's `<identity>-signals`,
    /// where its Web UI pushes `TSTP` and `TERM`.
    pub fn signals(&self, identity: &str) -> String {
        match self.sidekiq {
            Some(_) => format!("{identity}-signals"),
            None => format!("{}:signals:{}", self.ns, identity),
        }
    }
    /// A rate limiter's definition (hash: kind, limit, interval,
    /// lease_ttl) and its over-limit count (field `over`).
    pub fn limiter(&self, name: &str) -> String {
        format!("{}:limiter:{}", self.ns, name)
    }
    /// What a rate limiter of `kind` has given out: leases (concurrent),
    /// this interval's count (bucket), recent grants (window), or the next
    /// free time (leaky). A key space of its own, apart from the
    /// definitions (a limiter named `erp:state` once had `erp`'s state
    /// for its definition), and a key per kind, so that redefining a name
    /// as another kind never drops the leases held under the old one.
    pub fn limiter_state(&self, name: &str, kind: &str) -> String {
        format!("{}:limiter_state:{}:{}", self.ns, kind, name)
    }
    /// Set of every rate limiter name defined.
    pub fn limiters(&self) -> String {
        self.key("limiters")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_share_the_namespace_prefix() {
        let k = Keys::new("{cogworker}");
        assert_eq!(k.queue("default"), "{cogworker}:queue:default");
        assert_eq!(k.queue_name("{cogworker}:queue:a:b"), Some("a:b"));
        assert_eq!(k.queue_name("other:queue:a"), None);
        assert_eq!(
            k.stat("processed", Some("2026-01-02")),
            "{cogworker}:stat:processed:2026-01-02"
        );
        assert_eq!(k.in_progress("h:1:ab"), "{cogworker}:in_progress:h:1:ab");
        assert_eq!(k.in_progress_from("h:1:ab", "q"), "{cogworker}:in_progress:h:1:ab");
        assert_eq!(k.pause_flag("q"), "{cogworker}:paused_queues");
    }

    #[test]
    fn sharded_queue_keys_carry_their_queues_hash_tag() {
        let k = Keys::sharded_by_queue("{cogworker}");
        assert_eq!(k.queue("default"), "{cogworker:default}:queue");
        assert_eq!(k.queue_name("{cogworker:a:b}:queue"), Some("a:b"));
        assert_eq!(k.queue_name("{cogworker}:queue:a"), None);
        assert_eq!(k.in_progress_from("h:1", "mail"), "{cogworker:mail}:in_progress:h:1");
        assert_eq!(k.pause_flag("mail"), "{cogworker:mail}:paused");
        assert_eq!(k.landed("mail", "j-1"), "{cogworker:mail}:landed:j-1");
        // Everything else stays on the namespace's slot.
        assert_eq!(k.retry(), "{cogworker}:retry");
        assert_eq!(k.in_progress("h:1"), "{cogworker}:in_progress:h:1");
        assert_eq!(k.outbox(), "{cogworker}:outbox");
    }
}
