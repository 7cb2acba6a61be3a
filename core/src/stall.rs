//! Noticing that this process stalled: frozen (`SIGSTOP`, a paused VM, a
//! long stop-the-world pause) or cut off from Redis for longer than
//! `orphan_threshold`, so that the others may have taken back the jobs it
//! held. Judged from the gaps between successful heartbeats, on the
//! monotonic clock and the wall clock (a paused VM's monotonic clock may
//! not have moved): a comparison per job started, nothing sent to Redis.

use std::sync::Mutex;
use std::time::{Duration, Instant};

/// A moment on both clocks.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Moment {
    instant: Instant,
    wall: f64,
}

impl Moment {
    pub fn now() -> Self {
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
    state: Mutex<State>,
}

struct State {
    /// The last heartbeat written.
    last_beat: Moment,
    /// When a heartbeat last found the one before it older than the
    /// threshold: the end of the latest stall.
    stall_ended: Option<Moment>,
}

impl StallWatch {
    pub fn new(threshold: Duration) -> Self {
        StallWatch {
            threshold,
            state: Mutex::new(State {
                last_beat: Moment::now(),
                stall_ended: None,
            }),
        }
    }

    /// A heartbeat was written now. Returns how long the stall it ends
    /// lasted, if the previous one is older than the threshold.
    pub fn beat(&self) -> Option<Duration> {
        let now = Moment::now();
        let mut state = self.state.lock().unwrap();
        let gap = now.since(&state.last_beat);
        state.last_beat = now;
        (gap > self.threshold).then(|| {
            state.stall_ended = Some(now);
            gap
        })
    }

    /// Was a job taken at `fetched` held through a stall: one that has
    /// ended since, or one going on now (no heartbeat written for longer
    /// than the threshold)? Then the others may have taken it back.
    pub fn held_through_stall(&self, fetched: &Moment) -> bool {
        let state = self.state.lock().unwrap();
        let ended_since = state.stall_ended.is_some_and(|ended| ended.instant >= fetched.instant);
        ended_since || Moment::now().since(&state.last_beat) > self.threshold
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_job_fetched_before_a_stall_is_suspect_one_fetched_after_is_not() {
        let watch = StallWatch::new(Duration::from_millis(50));
        let before = Moment::now();
        assert!(!watch.held_through_stall(&before));
        std::thread::sleep(Duration::from_millis(80));
        assert!(watch.held_through_stall(&before), "a stall going on");
        assert!(watch.beat().is_some_and(|gap| gap >= Duration::from_millis(80)));
        let after = Moment::now();
        assert!(watch.held_through_stall(&before), "held through the stall that ended");
        assert!(!watch.held_through_stall(&after));
        assert!(watch.beat().is_none(), "beats in time");
    }
}
