//! What wakes an idle fetch: a push that found one of this process's
//! queues empty (its name arrives on the namespace's wake channel), or a
//! (re)subscription to that channel, after which a push made while nobody
//! listened must not be waited for. Sharded by queue a fetch reads queue by
//! queue, one script each, so a fetch reads only the queues named since
//! (see `sharded.rs`): its cost does not grow with the queues a process
//! serves.

use std::collections::HashSet;
use std::sync::Mutex;
use tokio::sync::Notify;

#[derive(Default)]
pub(crate) struct Wakeups {
    notify: Notify,
    named: Mutex<Named>,
}

#[derive(Default)]
struct Named {
    queues: HashSet<String>,
    every_queue: bool,
}

impl Wakeups {
    /// A push found `queue` (one of ours) empty.
    pub fn queue(&self, queue: &str) {
        let mut named = self.named.lock().unwrap();
        if !named.queues.contains(queue) {
            named.queues.insert(queue.to_owned());
        }
        drop(named);
        self.notify.notify_one();
    }

    /// Any queue may have jobs nobody was told of.
    pub fn every_queue(&self) {
        self.named.lock().unwrap().every_queue = true;
        self.notify.notify_one();
    }

    /// Until the next wake-up (or at once, if one came since the last wait).
    pub async fn notified(&self) {
        self.notify.notified().await
    }

    /// What was asked for since the last call; starts the record over.
    /// Taken before a fetch reads any queue, so a name that arrives during
    /// the fetch is kept for the next one.
    pub fn take(&self) -> Woken {
        let named = std::mem::take(&mut *self.named.lock().unwrap());
        if named.every_queue {
            Woken::EveryQueue
        } else {
            Woken::Queues(named.queues)
        }
    }
}

/// What wake-ups asked a fetch to read.
#[derive(Debug, PartialEq)]
pub(crate) enum Woken {
    /// These queues (none, if nothing was named).
    Queues(HashSet<String>),
    /// Every queue.
    EveryQueue,
}

#[cfg(test)]
mod tests {
    use super::*;

    fn named(names: &[&str]) -> Woken {
        Woken::Queues(names.iter().map(|n| n.to_string()).collect())
    }

    #[test]
    fn named_queues_are_taken_once_and_every_queue_wins() {
        let wakeups = Wakeups::default();
        assert_eq!(wakeups.take(), named(&[]));
        wakeups.queue("mail");
        wakeups.queue("sms");
        wakeups.queue("mail");
        assert_eq!(wakeups.take(), named(&["mail", "sms"]));
        assert_eq!(wakeups.take(), named(&[]), "taken: the record starts over");
        wakeups.queue("mail");
        wakeups.every_queue();
        assert_eq!(
            wakeups.take(),
            Woken::EveryQueue,
            "a resubscription asks for every queue"
        );
        assert_eq!(wakeups.take(), named(&[]));
    }
}
