//! `Cogworker::Native::Supervisor`: the parent of a multi-process worker.
//! The decisions are the core's (`cogworker::host::supervisor`); Ruby forks.

use std::sync::Mutex;

use cogworker::host::supervisor::{self, Supervisor};
use magnus::{prelude::*, Error, Ruby, Value};

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

    /// Runs the parent (the core's `Supervisor::run`) until its children
    /// have stopped; its exit status. `fork.call(index)` forks child `index`
    /// and returns its pid, or why the fork failed (a String: the core logs
    /// it and retries); the waits run
    /// without the GVL, and the trap handlers (which call `signal`) between
    /// their slices.
    pub fn run(ruby: &Ruby, rb_self: &Self, fork: Value) -> Result<i32, Error> {
        Supervisor::run(
            &rb_self.inner,
            |index| {
                let forked: Value = fork.funcall("call", (index,))?;
                Ok(match i64::try_convert(forked) {
                    Ok(pid) => Ok(pid),
                    Err(_) => Err(String::try_convert(forked).unwrap_or_else(|_| "fork failed".into())),
                })
            },
            |duration| {
                let seconds = Some(duration.as_secs_f64());
                crate::blocking::wait(ruby, seconds, cogworker::host::sleep_slice).map(drop)
            },
        )
    }

    pub fn signal(ruby: &Ruby, rb_self: &Self, name: String) -> Result<(), Error> {
        rb_self.with(|s| s.signal(&name)).map_err(|e| to_ruby(ruby, e))
    }
}

/// In a child: logs that its parent is gone; its exit status.
pub fn child_parent_gone(index: usize) -> i32 {
    supervisor::child_parent_gone(index)
}

/// In a child: logs what ended its worker; its exit status.
pub fn child_failed(index: usize, error_class: String, message: String, backtrace: Vec<String>) -> i32 {
    supervisor::child_failed(index, &error_class, &message, &backtrace)
}

/// In a forked child: TERM when the parent dies; false if it already has.
pub fn bind_to_parent(parent_pid: i64) -> bool {
    supervisor::bind_to_parent(parent_pid)
}
