//! The two ends between the fetch loop and the slots. Rust processor tasks
//! take deliveries from a channel; host-language threads take them from
//! [`HostSlots`], which decides which thread runs what. A worker has one
//! pair or the other, made together by [`pair`].

use crate::delivery::Delivery;
use crate::host_slots::HostSlots;
use std::sync::Arc;
use std::time::Duration;

/// Where the fetch loop leaves deliveries.
#[derive(Clone)]
pub(crate) enum SlotFeed {
    Tasks(flume::Sender<Delivery>),
    Host(Arc<HostSlots>),
}

/// Where slots take them from.
#[derive(Clone)]
pub(crate) enum Intake {
    Tasks(flume::Receiver<Delivery>),
    Host(Arc<HostSlots>),
}

/// What a slot asking for a delivery got.
pub(crate) enum Taken {
    Delivery(Delivery),
    /// Nothing ready (in time).
    Empty,
    /// The fetch loop is gone: nothing will come.
    Closed,
}

/// Both ends: for host threads (`host`), or for Rust processor tasks.
pub(crate) fn pair(host: bool) -> (SlotFeed, Intake) {
    if host {
        let slots = HostSlots::new();
        (SlotFeed::Host(slots.clone()), Intake::Host(slots))
    } else {
        let (tx, rx) = flume::unbounded();
        (SlotFeed::Tasks(tx), Intake::Tasks(rx))
    }
}

impl SlotFeed {
    /// Hands `delivery` over. With every slot gone (shutdown) it is
    /// dropped unstarted, which puts it back on its queue.
    pub(crate) fn send(&self, delivery: Delivery) {
        let unsent = match self {
            SlotFeed::Tasks(tasks) => tasks.send(delivery).err().map(|e| e.into_inner()),
            SlotFeed::Host(host) => host.push(delivery).err(),
        };
        drop(unsent);
    }
}

impl Intake {
    pub(crate) fn is_host(&self) -> bool {
        matches!(self, Intake::Host(_))
    }

    /// Waits up to `timeout` for a delivery.
    pub(crate) fn take(&self, timeout: Duration) -> Taken {
        match self {
            Intake::Tasks(rx) => match rx.recv_timeout(timeout) {
                Ok(delivery) => Taken::Delivery(delivery),
                Err(flume::RecvTimeoutError::Timeout) => Taken::Empty,
                Err(flume::RecvTimeoutError::Disconnected) => Taken::Closed,
            },
            Intake::Host(host) => host.take(timeout).map_or(Taken::Empty, Taken::Delivery),
        }
    }

    /// A delivery if one is ready now.
    pub(crate) fn try_take(&self) -> Taken {
        match self {
            Intake::Tasks(rx) => match rx.try_recv() {
                Ok(delivery) => Taken::Delivery(delivery),
                Err(flume::TryRecvError::Empty) => Taken::Empty,
                Err(flume::TryRecvError::Disconnected) => Taken::Closed,
            },
            Intake::Host(host) => host.try_take().map_or(Taken::Empty, Taken::Delivery),
        }
    }

    /// Waits for a delivery without blocking a thread; `None` once the
    /// fetch loop is gone. Host slots are taken by the threads that run
    /// the jobs (a taking thread counts as running), so this end never
    /// yields one.
    pub(crate) async fn take_async(&self) -> Option<Delivery> {
        match self {
            Intake::Tasks(rx) => rx.recv_async().await.ok(),
            Intake::Host(_) => std::future::pending().await,
        }
    }

    /// Every delivery no slot has taken yet, taken back while the slots
    /// keep running.
    pub(crate) fn take_waiting(&self) -> Vec<Delivery> {
        match self {
            Intake::Tasks(rx) => rx.try_iter().collect(),
            Intake::Host(host) => host.take_waiting(),
        }
    }

    /// At shutdown: every delivery no slot has taken yet. Host threads
    /// still waiting are woken and find nothing more.
    pub(crate) fn drain(&self) -> Vec<Delivery> {
        match self {
            Intake::Tasks(rx) => rx.try_iter().collect(),
            Intake::Host(host) => host.close(),
        }
    }
}
