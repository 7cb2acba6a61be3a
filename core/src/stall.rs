//! Noticing that this process stalled: frozen (`SIGSTOP`, a paused VM, a
//! long stop-the-world pause) or cut off from Redis for longer than
//! `orphan_threshold`, so that the others may have taken back the jobs it
//! held. Judged from the gaps between successful heartbeats, on the
//! monotonic clock and the wall clock (a paused VM's monotonic clock may
//! not have moved): a comparison per job started, nothing sent to Redis.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// A moment on both clocks.
#[derive(Clone, Copy, Debug)]
struct Moment {
    instant: Instant,
    wall: f64,
}

impl Moment {
    fn now() -> Self {
        Moment {
            instant: Instant::now(),
            wall: crate::job::now(),
        }
    }

    /// How long after `earlier` this is, on whichever clock says longer.
    fn since(&self, earlier: &Moment) -> Duration {
        let wall = Duration::from_secs_f64((self.wall - earlier.wall).max(0.0));
        self.instant.saturating_duration_since(earlier.instant).max(wall)
    }
}

pub(crate) struct StallWatch {
    threshold: Duration,
    /// The last heartbeat written.
    last_beat: Mutex<Moment>,
    /// How many stalls heartbeats have noticed: a job fetched when this
    /// was lower was held through one.
    stalls: AtomicU64,
}

impl StallWatch {
    pub fn new(threshold: Duration) -> Self {
        StallWatch {
            threshold,
            last_beat: Mutex::new(Moment::now()),
            stalls: AtomicU64::new(0),
        }
    }

    /// A heartbeat was written now. Returns how long the stall it ends
    /// lasted, if the previous one is older than the threshold.
    pub fn beat(&self) -> Option<Duration> {
        let now = Moment::now();
        let gap = now.since(&std::mem::replace(&mut *self.last_beat.lock().unwrap(), now));
        (gap > self.threshold).then(|| {
            self.stalls.fetch_add(1, Ordering::SeqCst);
            gap
        })
    }

    /// The stalls noticed so far: what a job fetched now is held against.
    pub fn stalls(&self) -> u64 {
        self.stalls.load(Ordering::SeqCst)
    }

    /// Was a job fetched when [`StallWatch::stalls`] was `fetched_at` held
    /// through a stall: one noticed since, or one going on now (no
    /// heartbeat written for longer than the threshold)? Then the others
    /// may have taken it back.
    pub fn held_through_stall(&self, fetched_at: u64) -> bool {
        self.stalls() != fetched_at || Moment::now().since(&self.last_beat.lock().unwrap()) > self.threshold
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_job_fetched_before_a_stall_is_suspect_one_fetched_after_is_not() {
        let watch = StallWatch::new(Duration::from_millis(50));
        let before = watch.stalls();
        assert!(!watch.held_through_stall(before));
        std::thread::sleep(Duration::from_millis(80));
        assert!(watch.held_through_stall(before), "a stall going on");
        assert!(watch.beat().is_some_and(|gap| gap >= Duration::from_millis(80)));
        let after = watch.stalls();
        assert!(watch.held_through_stall(before), "held through the stall that ended");
        assert!(!watch.held_through_stall(after));
        assert!(watch.beat().is_none(), "beats in time");
    }
}
