//! Fair groups inside a queue: a job may carry a group key (`group`, a
//! tenant, an account), and a queue whose jobs do is worked round-robin
//! across the groups that have jobs, so one group's flood never makes
//! another's jobs wait behind it. A lone group gets every worker.
//!
//! Layout (docs/internals.md, "Fair groups"): a grouped job waits on its
//! group's list, `NS:group:<queue> <group>` (or `NS:group@<level>:...` at a
//! priority level other than the default, so priorities still order jobs
//! within a group); the queue's ring, `NS:groups:<queue>`, is a sorted set
//! of the groups that have jobs, scored by the turns each has had. A fetch
//! (`fetch_reliable.lua`) reads the ring's lowest scores, takes a job from
//! each of those groups, and adds what it took to their scores, in the
//! same atomic step that records the jobs in progress: crash-safe as an
//! ungrouped fetch, and O(1) in the number of groups. The ring's member
//! `""` stands for the queue's ungrouped jobs (its own lists), which so
//! take turns as one group.
//!
//! Every path that puts a grouped job on its list enters the group in the
//! ring when its list was empty (`group.lua`), and the first group of a
//! queue lists the queue as grouped in the registry priority levels use
//! (`NS:priorities`, member `"group <queue>"`), said on the wake channel:
//! that is how workers learn to read the ring. A queue none of whose jobs
//! carries a group is read as before: not one command or key more.
//!
//! Limits per group, kept in the same fetch step: a weight and a pause
//! (`group_control.lua`); a concurrency cap, set through the API or
//! declared by the jobs (`group_cap`), whose group at its cap is parked
//! off the ring with no slot held (leases: `group_leases.rs`); a rate its
//! jobs declare (`group_rate` per `group_rate_period`), a group out of it
//! waiting on the queue's timers until its period ends (`group_wake.lua`
//! and the fetch bring it back); a backlog cap checked by the push
//! (`group_backlog`, `group.lua`). A sequence (`crate::flow`) is a group
//! capped at 1 whose failed job's retry holds it.

use crate::keys::Keys;
use std::collections::BTreeMap;

pub use crate::job::GROUP_MAX_LEN;

/// What a registry member (in `NS:priorities`) that says a queue is
/// grouped starts with, the queue's name following (`group.lua` writes it).
const MEMBER_PREFIX: &str = "group ";

/// What the registry member that says some group of a queue has a weight
/// starts with (`group_control.lua` writes it).
const WEIGHTS_PREFIX: &str = "group-weights ";

/// What the registry member that says some group of a queue has a
/// concurrency cap starts with (`group_control.lua` writes it).
const CAPS_PREFIX: &str = "group-caps ";

/// What the registry member that says some group of a queue has a rate
/// starts with (`group.lua` writes it).
const RATES_PREFIX: &str = "group-rates ";

/// What a registry member says of a queue's groups.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Listed<'a> {
    /// The queue is grouped.
    Grouped(&'a str),
    /// Some group of the queue has a weight.
    Weighted(&'a str),
    /// Some group of the queue has a concurrency cap.
    Capped(&'a str),
    /// Some group of the queue has a rate.
    Rated(&'a str),
}

/// The registry member that lists `queue` as grouped (what a script's
/// `enter_group` lists when it makes the queue's ring): sharded by queue,
/// listed on the namespace's slot before a job lands in a group.
pub(crate) fn grouped_member(queue: &str) -> String {
    format!("{MEMBER_PREFIX}{queue}")
}

/// Sharded by queue, what the registry must list before `job` lands in
/// its group (the scripts on the queue's slot cannot): its queue as
/// grouped, and as capped or rated where the job declares a cap or a rate
/// for its group. Nothing for a job without a group.
pub(crate) fn members_for(job: &crate::job::Job) -> Vec<String> {
    if job.group_key().is_none() {
        return Vec::new();
    }
    let queue = job.queue_name();
    let mut members = vec![grouped_member(queue)];
    if job.declared_cap().is_some() {
        members.push(capped_member(queue));
    }
    if job.declared_rate_of_kind().is_some() {
        members.push(rated_member(queue));
    }
    members
}

/// The registry member that lists `queue` as having capped groups.
pub(crate) fn capped_member(queue: &str) -> String {
    format!("{CAPS_PREFIX}{queue}")
}

/// The registry member that lists `queue` as having rated groups.
pub(crate) fn rated_member(queue: &str) -> String {
    format!("{RATES_PREFIX}{queue}")
}

/// The registry member that lists `queue` as having weighted groups.
pub(crate) fn weighted_member(queue: &str) -> String {
    format!("{WEIGHTS_PREFIX}{queue}")
}

/// What a registry member says of a queue's groups; `None` for a member
/// that is not about groups.
pub(crate) fn parse_member(member: &str) -> Option<Listed<'_>> {
    if let Some(queue) = member.strip_prefix(MEMBER_PREFIX) {
        return (!queue.is_empty()).then_some(Listed::Grouped(queue));
    }
    if let Some(queue) = member.strip_prefix(CAPS_PREFIX) {
        return (!queue.is_empty()).then_some(Listed::Capped(queue));
    }
    if let Some(queue) = member.strip_prefix(RATES_PREFIX) {
        return (!queue.is_empty()).then_some(Listed::Rated(queue));
    }
    let queue = member.strip_prefix(WEIGHTS_PREFIX)?;
    (!queue.is_empty()).then_some(Listed::Weighted(queue))
}

/// Where a job waits once it is queued, and what a script needs to enter
/// its group in the ring: `ring` and `group` are empty for a job without
/// a group; `declared` and `limits` for one whose class declares no limit
/// (cap or rate) for it.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) struct Destination {
    /// The list the job is pushed onto.
    pub list: String,
    /// Its queue's ring (`""`: not grouped).
    pub ring: String,
    /// Its group (`""`: none).
    pub group: String,
    /// Its queue's declared limits (`NS:group_declared:<q>`; `""`: the
    /// job declares none).
    pub declared: String,
    /// The limits the job declares for its group (`"<cap> <rate>
    /// <period>"`, see [`crate::Job::declared_limits`]; `""`: none).
    pub limits: String,
}

/// Lists whose group refuses a push past its backlog cap: list -> (the
/// cap, the group, the jobs about to be pushed onto it).
pub(crate) type CappedLists = BTreeMap<String, (u64, String, usize)>;

/// For a job whose group refuses a push past its backlog cap (not
/// drop_oldest): its list, the cap and the group.
pub(crate) fn refusing_backlog(keys: &Keys, job: &crate::job::Job) -> Option<(String, u64, String)> {
    match job.declared_backlog()? {
        (_, true) => None,
        (most, false) => {
            let destination = Destination::of_job(keys, job);
            Some((destination.list, most, destination.group))
        }
    }
}

impl Destination {
    /// The list of `queue`'s jobs of `group` (if any) at priority `level`,
    /// with the limits they declare for it (if any). Sharded by queue,
    /// these are all on the queue's slot.
    pub fn of(keys: &Keys, queue: &str, level: u8, group: Option<&str>, limits: Option<&str>) -> Self {
        match group {
            Some(group) => Destination {
                list: keys.group_list(queue, level, group),
                ring: keys.group_ring(queue),
                group: group.to_string(),
                declared: limits.map_or_else(String::new, |_| keys.group_declared(queue)),
                limits: limits.unwrap_or_default().to_string(),
            },
            None => Destination::onto(keys.queue_at(queue, level)),
        }
    }

    /// `list` itself, no group entered anywhere: a queue's own list, or
    /// the outbox a job is handed over through.
    pub fn onto(list: String) -> Self {
        Destination {
            list,
            ring: String::new(),
            group: String::new(),
            declared: String::new(),
            limits: String::new(),
        }
    }

    /// Where `job` waits.
    pub fn of_job(keys: &Keys, job: &crate::job::Job) -> Self {
        Destination::of(
            keys,
            job.queue_name(),
            job.priority_level(),
            job.group_key(),
            job.declared_limits().as_deref(),
        )
    }

    /// What `group.lua`'s `enter_group` takes of it, in order: the ring,
    /// the group, the declared limits' hash and the limits.
    pub fn group_args(&self) -> [&str; 4] {
        [&self.ring, &self.group, &self.declared, &self.limits]
    }
}

/// The list a job waits on, as a push sorts jobs by it: its queue,
/// priority level, group and the limits it declares for its group.
pub(crate) type ListOf = (String, u8, Option<String>, Option<String>);

/// The list `job` waits on ([`ListOf`]).
pub(crate) fn list_of(job: &crate::job::Job) -> ListOf {
    (
        job.queue_name().to_string(),
        job.priority_level(),
        job.group_key().map(str::to_string),
        job.declared_limits(),
    )
}

/// How a fetch reads a grouped queue, beside its ring: the levels in use
/// (a bit per level), whether some group has a weight, and, when some
/// group has a concurrency cap, the identity its leases are recorded for;
/// and the most jobs a group gives per turn ([`ReadAhead::group_quantum`]).
///
/// [`ReadAhead::group_quantum`]: crate::read_ahead::ReadAhead::group_quantum
pub(crate) struct Reading<'a> {
    pub used: u16,
    pub weighted: bool,
    pub capped_for: Option<&'a str>,
    pub rated: bool,
    pub quantum: usize,
}

/// What a fetch is told of grouped `queue`: its name, its ring, the
/// levels in use, its weights hash when some group of it has a weight
/// (else `""`: nothing to read), its caps, running counts, leases and
/// parked set, the identity the leases are for and the limits its jobs
/// declare when some group has a cap (else six `""`); its rate windows'
/// prefix and timers when some group has a rate (else two `""`; the
/// declared limits are passed then too), the two parts of its groups'
/// list prefixes (the script builds the prefix at each level from them; a
/// group that seems empty at the levels in use is checked at all of them
/// before it leaves the ring), and the quantum.
pub(crate) fn fetch_args(keys: &Keys, queue: &str, reading: &Reading) -> Vec<String> {
    let weights = if reading.weighted {
        keys.group_weights(queue)
    } else {
        String::new()
    };
    let mut args = vec![
        queue.to_string(),
        keys.group_ring(queue),
        reading.used.to_string(),
        weights,
    ];
    match reading.capped_for {
        Some(identity) => args.extend([
            keys.group_caps(queue),
            keys.group_running(queue),
            keys.group_leases(queue),
            keys.group_parked(queue),
            identity.to_string(),
            keys.group_declared(queue),
        ]),
        None => {
            args.extend(std::iter::repeat_n(String::new(), 5));
            args.push(match reading.rated {
                true => keys.group_declared(queue),
                false => String::new(),
            });
        }
    }
    match reading.rated {
        true => args.extend([
            keys.group_rate_prefix(queue),
            keys.group_timers(queue),
            crate::clock::fallback().to_string(),
            keys.group_rates(queue),
        ]),
        false => args.extend(std::iter::repeat_n(String::new(), 4)),
    }
    let (head, tail) = keys.group_list_prefix_parts(queue);
    args.extend([head, tail]);
    args.push(reading.quantum.to_string());
    args
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::job::valid_group;

    #[test]
    fn a_group_key_is_any_short_text_without_control_characters() {
        assert!(valid_group("tenant-42"));
        assert!(valid_group("acct:7 {eu}"));
        assert!(valid_group(&"é".repeat(GROUP_MAX_LEN)));
        assert!(!valid_group(""));
        assert!(!valid_group(&"a".repeat(GROUP_MAX_LEN + 1)));
        assert!(!valid_group("a\nb"));
        assert_eq!(parse_member("group mail"), Some(Listed::Grouped("mail")));
        assert_eq!(parse_member("group-weights mail"), Some(Listed::Weighted("mail")));
        assert_eq!(parse_member("group-caps mail"), Some(Listed::Capped("mail")));
        assert_eq!(parse_member("group-rates mail"), Some(Listed::Rated("mail")));
        assert_eq!(parse_member("group "), None);
        assert_eq!(parse_member("7 mail"), None);
    }

    #[test]
    fn a_grouped_job_waits_on_its_groups_list_at_its_level() {
        let keys = Keys::new("ns");
        let plain = Destination::of(&keys, "mail", 5, None, Some("2 0 0"));
        assert_eq!((plain.list.as_str(), plain.ring.as_str()), ("ns:queue:mail", ""));
        assert_eq!(plain.group_args(), ["", "", "", ""], "no group: no limits either");
        let grouped = Destination::of(&keys, "mail", 5, Some("t 1"), None);
        assert_eq!(grouped.list, "ns:group:mail t 1");
        assert_eq!(grouped.group_args(), ["ns:groups:mail", "t 1", "", ""]);
        let capped = Destination::of(&keys, "mail", 9, Some("t"), Some("2 10 1"));
        assert_eq!(capped.list, "ns:group@9:mail t");
        assert_eq!(
            capped.group_args(),
            ["ns:groups:mail", "t", "ns:group_declared:mail", "2 10 1"]
        );
        let plain = Reading {
            used: 1 << 9,
            weighted: false,
            capped_for: None,
            rated: false,
            quantum: 4,
        };
        let args = fetch_args(&keys, "mail", &plain);
        assert_eq!(args.len(), 17);
        assert_eq!(args[16], "4");
        assert_eq!(args[2], "512");
        assert_eq!(args[3..14], ["", "", "", "", "", "", "", "", "", "", ""]);
        assert_eq!(args[14..16], ["ns:group", ":mail "]);
        assert_eq!(keys.group_list_prefix("mail", 9), "ns:group@9:mail ");
        assert_eq!(keys.group_list_prefix("mail", 5), "ns:group:mail ");
        let full = Reading {
            used: 0,
            weighted: true,
            capped_for: Some("h:1"),
            rated: true,
            quantum: 1,
        };
        let args = fetch_args(&keys, "mail", &full);
        assert_eq!(args[3], "ns:group_weights:mail");
        assert_eq!(
            args[4..12],
            [
                "ns:group_caps:mail",
                "ns:group_running:mail",
                "ns:group_leases:mail",
                "ns:group_parked:mail",
                "h:1",
                "ns:group_declared:mail",
                "ns:group_rate:mail ",
                "ns:group_timers:mail"
            ]
        );
        let rated_only = Reading {
            used: 0,
            weighted: false,
            capped_for: None,
            rated: true,
            quantum: 1,
        };
        let args = fetch_args(&keys, "mail", &rated_only);
        assert_eq!(
            args[4..11],
            ["", "", "", "", "", "ns:group_declared:mail", "ns:group_rate:mail "]
        );
        let sharded = Keys::sharded_by_queue("{ns}");
        assert_eq!(sharded.group_list_prefix("mail", 0), "{ns:mail}:group@0 ");
        assert_eq!(sharded.group_list_prefix("mail", 5), "{ns:mail}:group ");
        assert_eq!(sharded.group_ring("mail"), "{ns:mail}:groups");
        // Sharded by queue, a group's list and ring are on its queue's slot.
        let on_its_slot = Destination::of(&sharded, "mail", 0, Some("t"), Some("2 0 0"));
        assert_eq!(on_its_slot.list, "{ns:mail}:group@0 t");
        assert_eq!(
            on_its_slot.group_args(),
            ["{ns:mail}:groups", "t", "{ns:mail}:group_declared", "2 0 0"]
        );
    }
}
