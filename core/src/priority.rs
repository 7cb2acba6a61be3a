//! Priority within a queue: levels 0 (last) to 9 (first), strict — a
//! worker takes every job of a higher level of a queue before any of a
//! lower one; weighted or strict ordering across queues is unchanged.
//!
//! A job at the default level (5, or none given) lives on its queue's list
//! as ever; a job at another level lives on a list of that level's
//! ([`Keys::queue_at`](crate::keys::Keys::queue_at)), and a fetch reads a
//! queue's lists highest level first, in the one `LMPOP` it already makes.
//! Which levels of which queues are in use is one set (`NS:priorities`,
//! members `"<level> <queue>"`: queue names hold no spaces), added to by
//! the push that first uses a level, which then says so on the wake channel
//! (`"priority <level> <queue>"`). Each process reads the set whenever it
//! (re)subscribes and adds what it hears. So a queue whose jobs never ask
//! for a priority is read as before: one key, not one command more.

use crate::keys::Keys;
use std::collections::{HashMap, HashSet};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::RwLock;

pub use crate::job::{DEFAULT_PRIORITY as DEFAULT, HIGHEST_PRIORITY as HIGHEST};

/// What a process hears on the wake channel when a level of a queue is
/// used for the first time: this, then the registry member.
pub(crate) const WAKE_PREFIX: &str = "priority ";

/// The registry member of `queue` at `level`.
pub(crate) fn member(queue: &str, level: u8) -> String {
    format!("{level} {queue}")
}

/// What a script that may list a level is given: the registry member, or
/// nothing for the default level (which is never listed).
pub(crate) fn listed_member(queue: &str, level: u8) -> String {
    match level {
        DEFAULT => String::new(),
        level => member(queue, level),
    }
}

/// `(queue, level)` back from a registry member; `None` for one that is
/// not ours.
pub(crate) fn parse_member(member: &str) -> Option<(&str, u8)> {
    let (level, queue) = member.split_once(' ')?;
    let level: u8 = level.parse().ok()?;
    (level <= HIGHEST && level != DEFAULT && !queue.is_empty()).then_some((queue, level))
}

/// The levels a queue's lists are read in: those in use (a bit each) and
/// the default, highest first.
fn in_fetch_order(used: u16) -> impl Iterator<Item = u8> {
    (0..=HIGHEST)
        .rev()
        .filter(move |level| *level == DEFAULT || used & (1 << level) != 0)
}

/// The levels in use, by queue, as the registry's members list them.
pub(crate) fn from_members<S: AsRef<str>>(members: &[S]) -> HashMap<String, u16> {
    let mut used: HashMap<String, u16> = HashMap::new();
    for (queue, level) in members.iter().filter_map(|m| parse_member(m.as_ref())) {
        *used.entry(queue.to_string()).or_default() |= 1 << level;
    }
    used
}

/// The lists of `queue`, in the order a fetch reads them, given the levels
/// in use (`used`, from [`from_members`]).
pub(crate) fn lists(keys: &Keys, queue: &str, used: &HashMap<String, u16>) -> Vec<(String, u8)> {
    let used = used.get(queue).copied().unwrap_or(0);
    in_fetch_order(used)
        .map(|level| (keys.queue_at(queue, level), level))
        .collect()
}

/// The levels this process knows to be in use, by queue, and the queues
/// it knows to be grouped (the same registry lists both: see
/// [`crate::groups`]).
#[derive(Default)]
pub(crate) struct Levels {
    used: RwLock<HashMap<String, u16>>,
    grouped: RwLock<HashSet<String>>,
    /// Grouped queues some group of which has a weight.
    weighted: RwLock<HashSet<String>>,
    /// Grouped queues some group of which has a concurrency cap.
    capped: RwLock<HashSet<String>>,
    /// Grouped queues some group of which has a rate.
    rated: RwLock<HashSet<String>>,
    /// The last read of the registry failed.
    unread: AtomicBool,
}

impl Levels {
    /// Adds what the registry lists (read when the process subscribes).
    pub fn learn_members<S: AsRef<str>>(&self, members: &[S]) {
        let mut known = self.used.write().unwrap();
        for (queue, bits) in from_members(members) {
            *known.entry(queue).or_default() |= bits;
        }
        for member in members {
            if let Some(listed) = crate::groups::parse_member(member.as_ref()) {
                self.learn_groups(listed);
            }
        }
        self.unread.store(false, Ordering::Relaxed);
    }

    /// A read of the registry failed: it must be read again.
    pub fn mark_unread(&self) {
        self.unread.store(true, Ordering::Relaxed);
    }

    /// Must the registry be read again?
    pub fn is_unread(&self) -> bool {
        self.unread.load(Ordering::Relaxed)
    }

    /// A wake-channel message: when it says a level came into use, adds it
    /// and returns its queue.
    pub fn learn_message<'a>(&self, message: &'a str) -> Option<&'a str> {
        let member = message.strip_prefix(WAKE_PREFIX)?;
        if let Some(listed) = crate::groups::parse_member(member) {
            return Some(self.learn_groups(listed));
        }
        let (queue, level) = parse_member(member)?;
        *self.used.write().unwrap().entry(queue.to_string()).or_default() |= 1 << level;
        Some(queue)
    }

    /// Notes what a registry member says of a queue's groups; returns the queue.
    fn learn_groups<'a>(&self, listed: crate::groups::Listed<'a>) -> &'a str {
        let (set, queue) = match listed {
            crate::groups::Listed::Grouped(queue) => (&self.grouped, queue),
            crate::groups::Listed::Weighted(queue) => (&self.weighted, queue),
            crate::groups::Listed::Capped(queue) => (&self.capped, queue),
            crate::groups::Listed::Rated(queue) => (&self.rated, queue),
        };
        set.write().unwrap().insert(queue.to_string());
        queue
    }

    /// Does some group of `queue` have a concurrency cap?
    pub fn is_capped(&self, queue: &str) -> bool {
        self.capped.read().unwrap().contains(queue)
    }

    /// Does some group of `queue` have a rate?
    pub fn is_rated(&self, queue: &str) -> bool {
        self.rated.read().unwrap().contains(queue)
    }

    /// The grouped queues some group of which has a rate.
    pub fn rated(&self) -> Vec<String> {
        self.rated.read().unwrap().iter().cloned().collect()
    }

    /// Does some group of `queue` have a weight?
    pub fn is_weighted(&self, queue: &str) -> bool {
        self.weighted.read().unwrap().contains(queue)
    }

    /// The levels in use of `queue`, a bit per level.
    pub fn used(&self, queue: &str) -> u16 {
        self.used.read().unwrap().get(queue).copied().unwrap_or(0)
    }

    /// Is `queue` grouped (read through its ring)?
    pub fn is_grouped(&self, queue: &str) -> bool {
        self.grouped.read().unwrap().contains(queue)
    }

    /// The keys of `queue`'s lists, in the order a fetch reads them.
    pub fn lists(&self, keys: &Keys, queue: &str) -> Vec<String> {
        lists(keys, queue, &self.used.read().unwrap())
            .into_iter()
            .map(|(key, _)| key)
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::ops::Not;

    #[test]
    fn a_queue_is_read_highest_level_first_and_only_its_used_levels() {
        let keys = Keys::new("ns");
        let levels = Levels::default();
        assert_eq!(levels.lists(&keys, "mail"), vec!["ns:queue:mail"]);
        levels.learn_members(&["9 mail", "0 mail", "7 sms", "5 mail", "x mail", "12 mail"]);
        assert_eq!(levels.learn_message("priority 7 mail"), Some("mail"));
        assert_eq!(levels.learn_message("mail"), None);
        assert_eq!(
            levels.lists(&keys, "mail"),
            vec!["ns:queue@9:mail", "ns:queue@7:mail", "ns:queue:mail", "ns:queue@0:mail"]
        );
        assert_eq!(levels.lists(&keys, "sms"), vec!["ns:queue@7:sms", "ns:queue:sms"]);
        assert!(levels.is_grouped("mail").not());
        levels.learn_members(&["group mail"]);
        assert_eq!(levels.learn_message("priority group sms"), Some("sms"));
        assert!(levels.is_grouped("mail") && levels.is_grouped("sms"));
        assert_eq!(levels.learn_message("priority group-weights sms"), Some("sms"));
        assert!(levels.is_weighted("sms") && !levels.is_weighted("mail"));
        assert_eq!(levels.lists(&keys, "sms"), vec!["ns:queue@7:sms", "ns:queue:sms"]);
        assert_eq!(parse_member(&member("a:b", 3)), Some(("a:b", 3)));
    }
}
