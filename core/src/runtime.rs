//! Fork-aware process-global state. An inherited tokio runtime (and every
//! connection built on it) is unusable in a forked child: spawning, timers,
//! even dropping it hang. So each global lives in a slot tagged with the pid
//! that built it; in another pid the old value is leaked, never dropped, and
//! a fresh one is built on first use.

use std::sync::{Arc, Mutex};

/// A value that belongs to the process that created it.
pub struct ForkSafe<T> {
    slot: Mutex<Option<(u32, Arc<T>)>>,
}

impl<T> Default for ForkSafe<T> {
    fn default() -> Self {
        ForkSafe { slot: Mutex::new(None) }
    }
}

impl<T> ForkSafe<T> {
    /// An empty slot.
    pub const fn new() -> Self {
        ForkSafe { slot: Mutex::new(None) }
    }

    /// The value for this pid, building it with `init` if there is none yet.
    pub fn get_or_try_init<E>(&self, init: impl FnOnce() -> Result<T, E>) -> Result<Arc<T>, E> {
        let pid = std::process::id();
        let mut slot = self.slot.lock().unwrap_or_else(|p| p.into_inner());
        if let Some((owner, value)) = slot.as_ref() {
            if *owner == pid {
                return Ok(value.clone());
            }
        }
        if let Some((_, stale)) = slot.take() {
            // Built by our parent before a fork: dropping it could hang.
            std::mem::forget(stale);
        }
        let value = Arc::new(init()?);
        *slot = Some((pid, value.clone()));
        Ok(value)
    }

    /// Marks the value stale (e.g. from an at-fork hook in the child).
    pub fn forget(&self) {
        let mut slot = self.slot.lock().unwrap_or_else(|p| p.into_inner());
        if let Some((_, stale)) = slot.take() {
            std::mem::forget(stale);
        }
    }
}

static RUNTIME: ForkSafe<tokio::runtime::Runtime> = ForkSafe::new();

/// The process-global runtime the bindings drive the core with.
pub fn global() -> Arc<tokio::runtime::Runtime> {
    RUNTIME
        .get_or_try_init(|| {
            tokio::runtime::Builder::new_multi_thread()
                .worker_threads(2)
                .thread_name("cogworker.runtime")
                .enable_all()
                .build()
        })
        .expect("building the tokio runtime")
}

/// Call in a forked child before anything else touches the core.
pub fn after_fork_in_child() {
    RUNTIME.forget();
}
