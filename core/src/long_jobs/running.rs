//! A running job's handle on itself: what a handler calls to report
//! progress, checkpoint, ask whether to stop, or interrupt itself. Rust
//! handlers find theirs with [`Running::current`]; a host's delivery hands
//! out the same handle, so every language goes through one implementation.

use super::progress_record;
use crate::error::{Error, Result};
use serde_json::Value;
use std::cell::RefCell;
use std::future::Future;
use std::sync::Arc;

/// What a running job's reports act on: the worker process that runs it
/// (its busy entry, its reports on their way to Redis), by delivery token.
pub(crate) trait Control: Send + Sync {
    /// The job's current cursor, while it runs.
    fn cursor(&self, token: u64) -> Option<Value>;
    /// Notes its progress report (nothing once it settled).
    fn progress(&self, token: u64, record: String);
    /// Sets its cursor, to be written with its in-progress record.
    fn checkpoint(&self, token: u64, cursor: Value);
    /// Shutdown, its cancellation, or its time limit near.
    fn stopping(&self, token: u64, jid: &str) -> bool;
    /// Put it back when its handler returns.
    fn interrupt(&self, token: u64);
    /// How long this run has been running.
    fn running_for(&self, token: u64) -> Option<std::time::Duration>;
}

/// A running job, as its handler sees it (see [`crate::long_jobs`]).
#[derive(Clone)]
pub struct Running {
    control: Arc<dyn Control>,
    token: u64,
    jid: String,
}

tokio::task_local! {
    static CURRENT: Running;
}

thread_local! {
    /// The running job of a blocking handler's thread.
    static BLOCKING: RefCell<Option<Running>> = const { RefCell::new(None) };
}

/// Runs `task` with `running` as its [`Running::current`].
pub(crate) async fn scope<F: Future>(running: Option<Running>, task: F) -> F::Output {
    match running {
        Some(running) => CURRENT.scope(running, task).await,
        None => task.await,
    }
}

/// Runs `blocking` with `running` as its thread's [`Running::current`].
pub(crate) fn with_blocking<R>(running: Option<Running>, blocking: impl FnOnce() -> R) -> R {
    BLOCKING.with(|current| *current.borrow_mut() = running);
    let result = blocking();
    BLOCKING.with(|current| *current.borrow_mut() = None);
    result
}

impl Running {
    pub(crate) fn new(control: Arc<dyn Control>, token: u64, jid: String) -> Self {
        Running { control, token, jid }
    }

    /// The job this task (or blocking handler's thread) runs, inside a
    /// handler run by a worker.
    pub fn current() -> Option<Running> {
        CURRENT
            .try_with(Clone::clone)
            .ok()
            .or_else(|| BLOCKING.with(|current| current.borrow().clone()))
    }

    /// The job's id.
    pub fn jid(&self) -> &str {
        &self.jid
    }

    /// The cursor to resume from: the last [`Running::checkpoint`], or the
    /// one the job came with (its last run's), or `None` on a first run.
    pub fn cursor(&self) -> Option<Value> {
        self.control.cursor(self.token).filter(|cursor| !cursor.is_null())
    }

    /// Reports progress: `percent` (0 to 100, `None` when the job knows
    /// no total), a short `message` and small JSON `data`. Cheap in a
    /// tight loop: the latest report is written at most every
    /// [`super::WRITE_INTERVAL`]. The error names the argument that breaks
    /// its rule ([`super::PROGRESS_MESSAGE_MAX`], [`super::PROGRESS_DATA_MAX`]).
    pub fn progress(&self, percent: Option<f64>, message: Option<&str>, data: Option<Value>) -> Result<()> {
        let record = progress_record(&self.jid, percent, message, data)?;
        self.control.progress(self.token, record);
        Ok(())
    }

    /// Saves `cursor` (JSON, at most [`super::CURSOR_MAX`] bytes) as where
    /// the job resumes: whatever runs it again (recovery after a crash,
    /// shutdown's give-back, a retry, an interruption) hands the handler
    /// this cursor. Written to the job's in-progress record at most every
    /// [`super::WRITE_INTERVAL`], and at once before the job is given back.
    pub fn checkpoint(&self, cursor: Value) -> Result<()> {
        if let Some(reason) = crate::job::cursor_rule_broken(&cursor) {
            return Err(Error::invalid_argument("cursor", "(JSON)", reason));
        }
        self.control.checkpoint(self.token, cursor);
        Ok(())
    }

    /// Should the job stop now? True once its worker is shutting down,
    /// once it was cancelled, and in the last 5 s (or tenth, if shorter)
    /// of its time limit. A handler that stops early either returns (the
    /// job succeeds), or [`Running::interrupt`]s to resume later.
    pub fn stopping(&self) -> bool {
        self.control.stopping(self.token, &self.jid)
    }

    /// The job stops here to resume later: when its handler returns
    /// successfully it goes back on its queue with its last checkpoint,
    /// not run again at once, not counted as a failure or a retry. (A
    /// handler that fails after this fails as usual; its retry resumes
    /// from the checkpoint too.)
    pub fn interrupt(&self) {
        self.control.interrupt(self.token);
    }
}

impl Running {
    /// One item of an iteration is done (the iteration helpers of every
    /// language call it after each): saves `cursor`, where the job resumes
    /// after that item, then says whether to go on. `false` when the job
    /// should stop here: its worker is shutting down, its time limit is
    /// near, or this run has lasted `max_runtime` (it is interrupted: back
    /// on its queue with the cursor, not a failure), or it was cancelled
    /// (filed as cancelled).
    pub fn iterated(&self, cursor: Value, max_runtime: Option<std::time::Duration>) -> Result<bool> {
        self.checkpoint(cursor)?;
        if self.control.stopping(self.token, &self.jid) {
            self.interrupt();
            return Ok(false);
        }
        let overran = max_runtime
            .zip(self.control.running_for(self.token))
            .is_some_and(|(most, run)| run >= most);
        if overran {
            self.interrupt();
        }
        Ok(!overran)
    }
}

impl std::fmt::Debug for Running {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Running").field("jid", &self.jid).finish()
    }
}
