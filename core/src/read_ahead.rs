//! How many jobs a worker may hold beyond its slots (`prefetch`), and when
//! to give them back.
//!
//! While jobs are short a worker takes a little more work than its slots
//! run, in the same fetches, so a slot back from a job finds the next one
//! waiting instead of waiting a round trip to Redis for it: for no-op jobs
//! that doubled the drain rate (`bench --hosts`, docs/benchmarks.md). The
//! amount follows a running average of job times, so it shrinks to nothing
//! as jobs grow longer.
//!
//! An average cannot see a burst of long jobs coming: if they fill every
//! slot, short jobs read ahead would wait for the long ones while another
//! worker sits idle (`bench --mixed`, two workers, bursts of 1 s jobs
//! among short ones: 87 of 20,000 short jobs waited about 1 s). So the
//! fetch loop reads ahead only if a job finished since its previous fetch
//! (a worker whose slots all hang takes no more), and when jobs wait for a
//! slot while no job finishes for [`STALL`], it gives them back to their
//! queues (on the end taken next) and reads nothing ahead until a job
//! finishes.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::Duration;

/// How much work (seconds, at the average job time) the jobs read ahead
/// may add up to: what a job read ahead waits for its slot, about, where
/// the slots keep finishing jobs.
const WORK_SECS: f64 = 0.002;

/// At most this many times `concurrency` jobs are read ahead.
const PER_SLOT: usize = 3;

/// What the average job time starts at: a little too long to read any job
/// ahead, until a few jobs have shown themselves short.
const UNMEASURED_JOB_TIME: f64 = 1.25 * WORK_SECS;

/// Weight of the latest job in the running average of job times.
const JOB_TIME_WEIGHT: f64 = 1.0 / 8.0;

/// With jobs held beyond the slots, this long without a job finishing
/// means every slot is busy with something long: the jobs waiting go back.
/// Five times the work read ahead, so slots that keep finishing short jobs
/// never get there.
pub(crate) const STALL: Duration = Duration::from_millis(10);

pub(crate) struct ReadAhead {
    /// Running average of how long a job keeps its slot (seconds, as
    /// `f64` bits).
    job_time: AtomicU64,
    /// Jobs that finished in a slot, ever: the stall check compares it.
    finished: AtomicU64,
    /// Set when waiting jobs were given back: nothing is read ahead until
    /// the next job finishes.
    paused: AtomicBool,
}

impl Default for ReadAhead {
    fn default() -> Self {
        ReadAhead {
            job_time: AtomicU64::new(UNMEASURED_JOB_TIME.to_bits()),
            finished: AtomicU64::new(0),
            paused: AtomicBool::new(false),
        }
    }
}

impl ReadAhead {
    /// How many jobs beyond `concurrency` may be held: as many as add up
    /// to [`WORK_SECS`] at the average job time, at most [`PER_SLOT`] per
    /// slot; none once jobs average 2 ms, or while paused.
    pub fn allowance(&self, concurrency: usize) -> usize {
        if self.paused.load(Ordering::Relaxed) {
            return 0;
        }
        self.jobs_in_work().min((PER_SLOT * concurrency) as f64) as usize
    }

    /// How many jobs add up to [`WORK_SECS`] at the average job time.
    fn jobs_in_work(&self) -> f64 {
        let average = f64::from_bits(self.job_time.load(Ordering::Relaxed));
        (WORK_SECS / average.max(1e-9)).floor()
    }

    /// A job kept its slot `secs` and finished: the average moves, and
    /// reading ahead resumes.
    pub fn job_finished(&self, secs: f64) {
        let average = f64::from_bits(self.job_time.load(Ordering::Relaxed));
        let moved = average + (secs.max(0.0) - average) * JOB_TIME_WEIGHT;
        self.job_time.store(moved.to_bits(), Ordering::Relaxed);
        self.finished.fetch_add(1, Ordering::SeqCst);
        self.paused.store(false, Ordering::Relaxed);
    }

    /// The most jobs a group of a grouped queue gives a fetch of `wanted`
    /// in one turn (groups.rs): as many as add up to the work read ahead
    /// ([`WORK_SECS`]) at the average job time, at least one and at most
    /// `wanted`. Where jobs are long, one per turn, so the slots spread
    /// over the groups; where they are short, a turn of a few milliseconds'
    /// work, so a fetch pops from a group or two instead of one group per
    /// few jobs (over 1,000 groups that was a quarter of the drain rate),
    /// and the groups still alternate faster than anyone can see.
    pub fn group_quantum(&self, wanted: usize) -> usize {
        (self.jobs_in_work().min(wanted as f64) as usize).max(1)
    }

    /// Jobs finished so far (to tell whether any finished meanwhile).
    pub fn finished(&self) -> u64 {
        self.finished.load(Ordering::SeqCst)
    }

    /// The jobs waiting were given back: read nothing ahead until a job
    /// finishes.
    pub fn pause(&self) {
        self.paused.store(true, Ordering::Relaxed);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn follows_the_average_and_pauses_until_a_job_finishes() {
        let read_ahead = ReadAhead::default();
        assert_eq!(read_ahead.allowance(10), 0, "nothing before jobs show themselves short");
        for _ in 0..60 {
            read_ahead.job_finished(0.000_001);
        }
        assert_eq!(read_ahead.allowance(10), 30, "short jobs: three per slot");
        read_ahead.pause();
        assert_eq!(read_ahead.allowance(10), 0);
        let before = read_ahead.finished();
        read_ahead.job_finished(0.000_001);
        assert_eq!(read_ahead.finished(), before + 1);
        assert_eq!(read_ahead.allowance(10), 30, "resumed by a finished job");
        read_ahead.job_finished(1.0);
        assert_eq!(read_ahead.allowance(10), 0, "a long job stops it");
    }

    #[test]
    fn a_group_turn_is_about_the_work_read_ahead() {
        let read_ahead = ReadAhead::default();
        assert_eq!(
            read_ahead.group_quantum(10),
            1,
            "one job a turn before jobs show themselves short"
        );
        for _ in 0..60 {
            read_ahead.job_finished(0.000_001);
        }
        assert_eq!(read_ahead.group_quantum(40), 40, "short jobs: the whole fetch");
        for _ in 0..60 {
            read_ahead.job_finished(0.000_5);
        }
        assert_eq!(read_ahead.group_quantum(40), 4, "2 ms of 0.5 ms jobs");
        read_ahead.job_finished(1.0);
        assert_eq!(read_ahead.group_quantum(40), 1);
        assert_eq!(read_ahead.group_quantum(0), 1);
    }
}
