//! `Cogworker::Native::Supervisor`: the parent of a multi-process worker.
//! The decisions are the core's (`cogworker::host::supervisor`); Ruby forks.

use std::sync::Mutex;

use cogworker::host::supervisor::{self, Supervisor};
use magnus::{Error, Ruby};

use crate::errors::to_ruby;

#[magnus::wrap(class = "Cogworker::Native::Supervisor", free_immediately, size)]
pub struct RbSupervisor {
    inner: Mutex<Supervisor>,
}

impl RbSupervisor {
    pub fn new(ruby: &Ruby, processes: i64) -> Result<Self, Error> {
        let inner = Supervisor::new(processes).map_err(|e| to_ruby(ruby, e))?;
        Ok(RbSupervisor {
            inner: Mutex::new(inner),
        })
    }

    fn with<T>(&self, f: impl FnOnce(&mut Supervisor) -> T) -> T {
        f(&mut self.inner.lock().unwrap_or_else(|p| p.into_inner()))
    }

    /// `[indexes to fork now, exit status or nil, seconds to sleep]`.
    pub fn poll(&self) -> (Vec<usize>, Option<i32>, f64) {
        let poll = self.with(Supervisor::poll);
        (poll.spawn, poll.exit, poll.wait.as_secs_f64())
    }

    pub fn started(&self, index: usize, pid: i64) {
        self.with(|s| s.started(index, pid));
    }

    pub fn fork_failed(&self, index: usize, reason: String) {
        self.with(|s| s.fork_failed(index, &reason));
    }

    pub fn signal(ruby: &Ruby, rb_self: &Self, name: String) -> Result<(), Error> {
        rb_self.with(|s| s.signal(&name)).map_err(|e| to_ruby(ruby, e))
    }
}

/// In a forked child: TERM when the parent dies; false if it already has.
pub fn bind_to_parent(parent_pid: i64) -> bool {
    supervisor::bind_to_parent(parent_pid)
}
