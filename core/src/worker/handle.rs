//! Controlling a running [`super::Worker`] from anywhere, and how host
//! threads take and settle its jobs.

use crate::delivery::Delivery;
use crate::error::Result;
use crate::events::MiddlewareAnswer;
use crate::handler::Outcome;
use crate::shared::{BusyEntry, Lifecycle, Shared};
use crate::slot_feed::{Intake, Taken};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// What [`WorkerHandle::next_job`] found.
#[derive(Debug)]
pub enum NextJob {
    /// A job to run and settle.
    Job(Delivery),
    /// Nothing arrived in time; ask again.
    Idle,
    /// The worker is stopping: this slot should end.
    Stopped,
}

/// Controls a running worker from anywhere (other tasks, threads, signal
/// handlers), and is how host-language slots take and settle jobs.
#[derive(Clone)]
pub struct WorkerHandle {
    pub(super) shared: Arc<Shared>,
    pub(super) intake: Intake,
}

impl WorkerHandle {
    /// This process's identity (`host:pid:random`).
    pub fn identity(&self) -> &str {
        &self.shared.identity
    }
    /// Running, quiet or stopping.
    pub fn lifecycle(&self) -> Lifecycle {
        self.shared.lifecycle()
    }
    /// Stop taking new jobs; running ones go on.
    pub fn quiet(&self) {
        self.shared.advance(Lifecycle::Quiet);
    }
    /// Begin the shutdown sequence ([`crate::Worker::run`] returns when done).
    pub fn stop(&self) {
        self.shared.advance(Lifecycle::Stopping);
    }
    /// Whether the shutdown sequence has begun.
    pub fn is_stopping(&self) -> bool {
        self.shared.is_stopping()
    }
    /// How many jobs were still running when shutdown's timeout ran out and
    /// it put them back on their queues (`None` before it got there). Their
    /// handlers must not run on in this process: a host exits at once when
    /// this is above 0, and an outcome reported now is not recorded.
    pub fn given_back(&self) -> Option<usize> {
        self.shared.given_back()
    }
    /// How many times a running job was told to stop (cancellations
    /// heard, time limits passed): a host whose running jobs must be told
    /// looks at them only when this changed.
    pub fn interruptions(&self) -> u64 {
        self.shared.cancellations.heard() + self.shared.time_limits.expired()
    }
    /// Blocks up to `timeout` for a job whose time limit passed while a
    /// host thread may run its handler (see [`crate::time_limit`]).
    pub fn next_overdue(&self, timeout: std::time::Duration) -> Option<std::sync::Arc<crate::time_limit::TimeLimit>> {
        self.shared.time_limits.next_overdue(timeout)
    }
    /// Wakes the host's timekeeper thread (the engine has shut down).
    pub fn wake_timekeeper(&self) {
        self.shared.time_limits.wake_timekeeper();
    }
    /// Must the process end now that it stopped (a job would not stop
    /// past its time limit; see [`crate::time_limit`])?
    pub fn is_ending(&self) -> bool {
        self.shared.is_ending()
    }
    /// The host's client middleware's answer for the periodic job `jid`
    /// (a [`crate::WorkerEvent::ClientMiddleware`]): the job to push, or `None`
    /// to push nothing (one that is not a job: pushed as it was, with a
    /// warning). An answer for a job no longer waiting (it timed out) is
    /// ignored.
    pub fn reply_client_middleware(&self, jid: &str, job: Option<serde_json::Value>) {
        self.answer_client_middleware(jid, job.map_or(MiddlewareAnswer::Skip, MiddlewareAnswer::Push));
    }

    /// The host's client middleware raised `error` (its description) on
    /// the periodic job `jid`: the job is pushed as it was asked about, and
    /// the error logged. The host needs no copy of the job to fall back on.
    pub fn client_middleware_raised(&self, jid: &str, error: &str) {
        self.answer_client_middleware(jid, MiddlewareAnswer::Raised(error.to_string()));
    }

    fn answer_client_middleware(&self, jid: &str, answer: MiddlewareAnswer) {
        let mut waiting = self.shared.periodic.host_answer.lock().unwrap();
        if waiting.as_ref().is_some_and(|(waiting_for, _)| waiting_for == jid) {
            if let Some((_, waiter)) = waiting.take() {
                let _ = waiter.send(answer);
            }
        }
    }

    /// How many jobs this process holds now: those running and those read
    /// ahead, waiting for a slot (`prefetch`).
    pub fn held(&self) -> usize {
        self.shared.held()
    }
    /// The jobs running now.
    pub fn busy(&self) -> Vec<BusyEntry> {
        self.shared.busy_snapshot().into_iter().map(|(_, e)| e).collect()
    }
    /// Logs every running job (the TTIN dump).
    pub fn log_busy(&self) {
        let busy = self.busy();
        tracing::warn!("{} busy slot(s)", busy.len());
        for entry in busy {
            tracing::warn!(
                "busy: {} jid={} queue={} running {:.1}s",
                entry.class,
                entry.jid,
                entry.queue,
                crate::job::now() - entry.run_at
            );
        }
    }

    /// Blocks (no tokio needed) up to `timeout` for the next job. The
    /// caller must pass it to [`WorkerHandle::complete`].
    pub fn next_job(&self, timeout: Duration) -> NextJob {
        let deadline = Instant::now() + timeout;
        loop {
            if self.shared.is_stopping() {
                return NextJob::Stopped;
            }
            let left = deadline.saturating_duration_since(Instant::now());
            let slice = left.min(Duration::from_millis(100));
            match self.intake.take(slice) {
                Taken::Delivery(delivery) => {
                    if let Some(delivery) = self.shared.begin(delivery) {
                        return NextJob::Job(delivery);
                    }
                }
                Taken::Closed => return NextJob::Stopped,
                Taken::Empty if left.is_zero() => return NextJob::Idle,
                Taken::Empty => {}
            }
        }
    }

    /// The next job if one is ready now. (A host thread back from a job
    /// goes on with the next this way, without sleeping.)
    pub fn try_next_job(&self) -> NextJob {
        loop {
            if self.shared.is_stopping() {
                return NextJob::Stopped;
            }
            match self.intake.try_take() {
                Taken::Delivery(delivery) => {
                    if let Some(delivery) = self.shared.begin(delivery) {
                        return NextJob::Job(delivery);
                    }
                }
                Taken::Empty => return NextJob::Idle,
                Taken::Closed => return NextJob::Stopped,
            }
        }
    }

    /// Waits for the next job without blocking a thread. For a worker
    /// without [`crate::WorkerBuilder::host_slots`]: with them, jobs go to the
    /// threads calling [`WorkerHandle::next_job`], and this waits until the
    /// worker stops.
    pub async fn next_job_async(&self) -> NextJob {
        loop {
            tokio::select! {
                taken = self.intake.take_async() => match taken {
                    Some(delivery) => {
                        if let Some(delivery) = self.shared.begin(delivery) {
                            return NextJob::Job(delivery);
                        }
                    }
                    None => return NextJob::Stopped,
                },
                _ = self.shared.reached(Lifecycle::Stopping) => return NextJob::Stopped,
            }
        }
    }

    /// Reports how a job taken with `next_job` ended. Never blocks.
    pub fn complete(&self, delivery: Delivery, outcome: Outcome) {
        delivery.settle(outcome);
    }

    /// Opt-in signal handling for a plain-Rust worker: TERM/INT stop, TSTP
    /// quiets, TTIN logs the busy jobs. Needs a tokio runtime context.
    #[cfg(unix)]
    pub fn install_signal_handlers(&self) -> Result<()> {
        use tokio::signal::unix::{signal, SignalKind};
        let mut term = signal(SignalKind::terminate()).map_err(signal_error)?;
        let mut int = signal(SignalKind::interrupt()).map_err(signal_error)?;
        let mut tstp = signal(SignalKind::from_raw(libc::SIGTSTP)).map_err(signal_error)?;
        let mut ttin = signal(SignalKind::from_raw(libc::SIGTTIN)).map_err(signal_error)?;
        let handle = self.clone();
        tokio::spawn(async move {
            loop {
                tokio::select! {
                    _ = term.recv() => { tracing::info!("TERM received"); handle.stop(); }
                    _ = int.recv() => { tracing::info!("INT received"); handle.stop(); }
                    _ = tstp.recv() => { tracing::info!("TSTP received: quiet"); handle.quiet(); }
                    _ = ttin.recv() => handle.log_busy(),
                }
            }
        });
        Ok(())
    }
}

#[cfg(unix)]
fn signal_error(e: std::io::Error) -> crate::error::Error {
    crate::error::Error::config("signals", "TERM/INT/TSTP/TTIN", e)
}
