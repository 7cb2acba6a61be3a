//! Every Redis key cogworker uses, built in this one module (docs/internals.md, "Key layout").
//! Nothing else formats a key. With a hash-tagged namespace such as
//! `{cogworker}` every key lands in one Redis Cluster slot.

/// Key builder for one namespace.
#[derive(Clone, Debug)]
pub struct Keys {
    ns: String,
}

impl Keys {
    /// The keys of `namespace`.
    pub fn new(namespace: &str) -> Self {
        Keys {
            ns: namespace.to_string(),
        }
    }

    /// The namespace.
    pub fn namespace(&self) -> &str {
        &self.ns
    }

    fn key(&self, suffix: &str) -> String {
        format!("{}:{}", self.ns, suffix)
    }

    /// Set of every queue name ever pushed to.
    pub fn queues(&self) -> String {
        self.key("queues")
    }
    /// List of job payloads for one queue (push left, take right).
    pub fn queue(&self, name: &str) -> String {
        format!("{}:queue:{}", self.ns, name)
    }
    /// The queue name back from a queue key, if it is one of ours.
    pub fn queue_name<'a>(&self, key: &'a str) -> Option<&'a str> {
        key.strip_prefix(&self.ns)?.strip_prefix(":queue:")
    }
    /// Sorted set of jobs to run later (score: run-at).
    pub fn schedule(&self) -> String {
        self.key("schedule")
    }
    /// Sorted set of failed jobs awaiting retry (score: retry-at).
    pub fn retry(&self) -> String {
        self.key("retry")
    }
    /// Sorted set of jobs out of retries (score: died-at).
    pub fn dead(&self) -> String {
        self.key("dead")
    }
    /// Set of paused queue names.
    pub fn paused_queues(&self) -> String {
        self.key("paused_queues")
    }
    /// Set of live process identities.
    pub fn processes(&self) -> String {
        self.key("processes")
    }
    /// Hash describing one process (`info`, `busy`, `quiet`, `beat`).
    pub fn process(&self, identity: &str) -> String {
        format!("{}:process:{}", self.ns, identity)
    }
    /// Hash of one process's busy slots.
    pub fn workers(&self, identity: &str) -> String {
        format!("{}:workers:{}", self.ns, identity)
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
    pub fn stat(&self, stat: &str, day: Option<&str>) -> String {
        match day {
            Some(day) => format!("{}:stat:{}:{}", self.ns, stat, day),
            None => format!("{}:stat:{}", self.ns, stat),
        }
    }
    /// One minute's per-class metrics (`minute`: epoch seconds / 60).
    pub fn metrics_minute(&self, minute: u64) -> String {
        format!("{}:metrics:{}", self.ns, minute)
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
    /// durable half of [`Keys::signal`]).
    pub fn signals(&self, identity: &str) -> String {
        format!("{}:signals:{}", self.ns, identity)
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
    }
}
