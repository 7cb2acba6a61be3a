//! Multi-process workers (`cogworker worker -p N`, `cogworker -p N`): a
//! parent that loads the app once and keeps N forked children running it.
//!
//! The host forks (only `os.fork` / `Process.fork` run the interpreter's own
//! at-fork hooks, so only the host can fork itself safely) and runs an
//! ordinary worker in each child. Everything else is decided here, once for
//! both languages: which child to start and when, the backoff before a dead
//! child is restarted, which signals reach the children, when the parent
//! exits, and how a child dies with its parent.
//!
//! The host's loop: `poll()`, fork each child it names (reporting the pid
//! with `started`, or `fork_failed`), sleep for the wait it returns, and pass
//! every signal it receives to `signal`; stop when `poll` gives an exit code.

use std::time::{Duration, Instant};

use crate::error::{Error, Result};

/// The most children one parent runs: more is a typo, not a deployment.
pub const MAX_PROCESSES: usize = 256;

/// A child that ran this long before dying counts as healthy: its restart
/// is immediate-ish again, whatever came before.
const STABLE_AFTER: Duration = Duration::from_secs(30);
/// The first restart's delay; each quick death in a row doubles it.
const FIRST_BACKOFF: Duration = Duration::from_millis(250);
const MAX_BACKOFF: Duration = Duration::from_secs(30);
/// How long the host may sleep between polls: how soon a death is noticed.
const POLL_INTERVAL: Duration = Duration::from_millis(200);

/// What the host does after a [`Supervisor::poll`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Poll {
    /// Children (by index, 0-based) to fork now.
    pub spawn: Vec<usize>,
    /// Set once every child has stopped after a stop signal: the parent's
    /// exit status.
    pub exit: Option<i32>,
    /// How long to sleep before the next poll.
    pub wait: Duration,
}

#[derive(Debug)]
enum State {
    /// To be forked at `due`.
    Waiting {
        due: Instant,
    },
    /// Named by `poll`, not reported `started` yet.
    Forking,
    Running {
        pid: libc::pid_t,
        since: Instant,
    },
    /// Will not run again (stopping, or quiet).
    Done,
}

#[derive(Debug)]
struct Child {
    state: State,
    /// Deaths in a row, each within `STABLE_AFTER` of its start.
    quick_deaths: u32,
}

/// The parent's state: its children and whether it is stopping or quiet.
#[derive(Debug)]
pub struct Supervisor {
    children: Vec<Child>,
    stopping: bool,
    quiet: bool,
}

impl Supervisor {
    /// A parent of `processes` children, none started yet.
    pub fn new(processes: i64) -> Result<Self> {
        if processes < 1 || processes > MAX_PROCESSES as i64 {
            return Err(Error::InvalidArgument {
                field: "processes".into(),
                value: processes.to_string(),
                reason: format!("must be between 1 and {MAX_PROCESSES}"),
            });
        }
        let now = Instant::now();
        let children = (0..processes)
            .map(|_| Child {
                state: State::Waiting { due: now },
                quick_deaths: 0,
            })
            .collect();
        Ok(Supervisor {
            children,
            stopping: false,
            quiet: false,
        })
    }

    /// Reaps children that ended, schedules their restarts, and says what
    /// to do now.
    pub fn poll(&mut self) -> Poll {
        let now = Instant::now();
        self.reap(now);
        let mut spawn = Vec::new();
        let mut next_due: Option<Instant> = None;
        for (index, child) in self.children.iter_mut().enumerate() {
            if let State::Waiting { due } = child.state {
                if self.stopping || self.quiet {
                    // A quiet parent is being drained: a fresh child would
                    // only sit idle. It stays down until the stop.
                    child.state = State::Done;
                } else if due <= now {
                    child.state = State::Forking;
                    spawn.push(index);
                } else {
                    next_due = Some(next_due.map_or(due, |d| d.min(due)));
                }
            }
        }
        let all_done = self.children.iter().all(|c| matches!(c.state, State::Done));
        let exit = (self.stopping && all_done).then(|| {
            tracing::info!("all {} worker processes stopped", self.children.len());
            0
        });
        let wait = next_due.map_or(POLL_INTERVAL, |due| {
            due.saturating_duration_since(now).min(POLL_INTERVAL)
        });
        Poll { spawn, exit, wait }
    }

    /// The host forked child `index` as `pid`.
    pub fn started(&mut self, index: usize, pid: i64) {
        let Some(child) = self.children.get_mut(index) else {
            return;
        };
        child.state = State::Running {
            pid: pid as libc::pid_t,
            since: Instant::now(),
        };
        tracing::info!(
            "started worker process {} of {} (pid {pid})",
            index + 1,
            self.children.len()
        );
        if self.stopping {
            // The stop came while it was being forked: it must hear it too.
            send(pid as libc::pid_t, libc::SIGTERM);
        }
    }

    /// The host could not fork child `index`: retried after a backoff.
    pub fn fork_failed(&mut self, index: usize, reason: &str) {
        let Some(child) = self.children.get_mut(index) else {
            return;
        };
        child.quick_deaths += 1;
        let delay = backoff(child.quick_deaths);
        tracing::error!(
            "could not start worker process {}: {reason}; retrying in {:.2} s",
            index + 1,
            delay.as_secs_f64()
        );
        child.state = State::Waiting {
            due: Instant::now() + delay,
        };
    }

    /// A signal the parent received, by name (`TERM`, `INT`, `TSTP`,
    /// `TTIN`): forwarded to every running child. TERM/INT also stop the
    /// parent once its children have stopped; after TSTP, a child that ends
    /// is not restarted.
    pub fn signal(&mut self, name: &str) -> Result<()> {
        let signum = match name {
            "TERM" => libc::SIGTERM,
            "INT" => libc::SIGINT,
            "TSTP" => libc::SIGTSTP,
            "TTIN" => libc::SIGTTIN,
            other => {
                return Err(Error::InvalidArgument {
                    field: "signal".into(),
                    value: other.to_string(),
                    reason: "must be one of TERM, INT, TSTP, TTIN".into(),
                })
            }
        };
        match signum {
            libc::SIGTERM | libc::SIGINT => {
                if !self.stopping {
                    tracing::info!("{name} received: stopping {} worker processes", self.running().count());
                }
                self.stopping = true;
            }
            libc::SIGTSTP => {
                tracing::info!("TSTP received: quieting the worker processes");
                self.quiet = true;
            }
            _ => {}
        }
        for pid in self.running().collect::<Vec<_>>() {
            send(pid, signum);
        }
        Ok(())
    }

    /// Runs the parent until every child has stopped after TERM/INT; its
    /// exit status. `fork(index)` forks child `index` (the pid; a reason
    /// when the fork failed; the child never returns from it); `wait(for)`
    /// sleeps where the host's signal handlers run, and they call
    /// [`Supervisor::signal`] meanwhile: the supervisor is locked only
    /// between waits. An error from either ends the run with it.
    pub fn run<E>(
        supervisor: &std::sync::Mutex<Supervisor>,
        mut fork: impl FnMut(usize) -> std::result::Result<std::result::Result<i64, String>, E>,
        mut wait: impl FnMut(Duration) -> std::result::Result<(), E>,
    ) -> std::result::Result<i32, E> {
        let lock = || supervisor.lock().unwrap_or_else(|p| p.into_inner());
        loop {
            let poll = lock().poll();
            for index in poll.spawn {
                match fork(index)? {
                    Ok(pid) => lock().started(index, pid),
                    Err(reason) => lock().fork_failed(index, &reason),
                }
            }
            if let Some(status) = poll.exit {
                return Ok(status);
            }
            wait(poll.wait)?;
        }
    }

    /// Pids of the children running now.
    pub fn pids(&self) -> Vec<i64> {
        self.running().map(i64::from).collect()
    }

    fn running(&self) -> impl Iterator<Item = libc::pid_t> + '_ {
        self.children.iter().filter_map(|c| match c.state {
            State::Running { pid, .. } => Some(pid),
            _ => None,
        })
    }

    fn reap(&mut self, now: Instant) {
        let total = self.children.len();
        for (index, child) in self.children.iter_mut().enumerate() {
            let State::Running { pid, since } = child.state else {
                continue;
            };
            let Some(ended) = try_wait(pid) else { continue };
            if self.stopping {
                tracing::info!("worker process {} (pid {pid}) {ended}", index + 1);
                child.state = State::Done;
                continue;
            }
            if now.duration_since(since) >= STABLE_AFTER {
                child.quick_deaths = 0;
            }
            child.quick_deaths += 1;
            if self.quiet {
                tracing::warn!(
                    "worker process {} (pid {pid}) {ended}; quiet, so not restarted",
                    index + 1
                );
                child.state = State::Done;
                continue;
            }
            let delay = backoff(child.quick_deaths);
            tracing::warn!(
                "worker process {} of {total} (pid {pid}) {ended}; restarting in {:.2} s",
                index + 1,
                delay.as_secs_f64()
            );
            child.state = State::Waiting { due: now + delay };
        }
    }
}

/// The delay before the `deaths`-th quick restart in a row.
fn backoff(deaths: u32) -> Duration {
    let factor = 2u32.saturating_pow(deaths.saturating_sub(1).min(16));
    FIRST_BACKOFF.saturating_mul(factor).min(MAX_BACKOFF)
}

fn send(pid: libc::pid_t, signum: libc::c_int) {
    // SAFETY: kill(2) takes plain integers; a pid that already ended is
    // ESRCH, which is fine (it is reaped on the next poll).
    unsafe {
        libc::kill(pid, signum);
    }
}

/// How `pid` ended, if it has (reaping it), as words for the log.
fn try_wait(pid: libc::pid_t) -> Option<String> {
    let mut status: libc::c_int = 0;
    // SAFETY: waitpid(2) on our own child, writing into a local.
    let reaped = unsafe { libc::waitpid(pid, &mut status, libc::WNOHANG) };
    if reaped == 0 {
        return None;
    }
    if reaped < 0 {
        // ECHILD: someone else reaped it (a host that waits on its own);
        // either way it is gone.
        return Some("ended (status unknown)".into());
    }
    Some(if libc::WIFEXITED(status) {
        format!("exited with status {}", libc::WEXITSTATUS(status))
    } else if libc::WIFSIGNALED(status) {
        format!("was killed by signal {}", libc::WTERMSIG(status))
    } else {
        "ended".into()
    })
}

/// The exit status of a child whose parent was gone before it began: it
/// has nothing to do.
pub const PARENT_GONE: i32 = 0;

/// The exit status of a child whose worker ended by an error that escaped
/// it (its jobs are recovered; the parent starts another child).
pub const CHILD_FAILED: i32 = 1;

/// Logs that child `index` found its parent gone; its exit status. Each
/// host logged a line of its own.
pub fn child_parent_gone(index: usize) -> i32 {
    tracing::info!("worker process {}: the parent is gone; exiting", index + 1);
    PARENT_GONE
}

/// Logs what ended child `index`'s worker (an error that escaped it, its
/// backtrace as a field); its exit status. Python logged the traceback,
/// Ruby only the class and message.
pub fn child_failed(index: usize, error_class: &str, message: &str, backtrace: &[String]) -> i32 {
    // An absent field (None) is not written at all.
    let backtrace = (!backtrace.is_empty()).then(|| backtrace.join("\n"));
    tracing::error!(
        backtrace = backtrace.as_deref(),
        "worker process {} failed: {error_class}: {message}",
        index + 1
    );
    CHILD_FAILED
}

/// In a freshly forked child: ask the kernel to send it TERM (a graceful
/// stop) when the parent dies, even by `kill -9`. Returns false if the
/// parent (`parent_pid`) is already gone, in which case the child should
/// exit at once.
pub fn bind_to_parent(parent_pid: i64) -> bool {
    // Its parent replaces it: a job that will not stop past its time limit
    // may end it (see time_limit.rs).
    crate::time_limit::end_process_on_overrun();
    #[cfg(target_os = "linux")]
    // SAFETY: prctl(PR_SET_PDEATHSIG) takes a signal number.
    unsafe {
        libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGTERM as libc::c_ulong);
    }
    // The parent may have died before the prctl: then no signal will come.
    // SAFETY: getppid(2) cannot fail.
    i64::from(unsafe { libc::getppid() }) == parent_pid
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_childs_end_is_said_once_with_its_exit_status() {
        assert_eq!(child_parent_gone(0), PARENT_GONE);
        assert_eq!(
            child_failed(1, "RuntimeError", "boom", &["at app.rb:1".into()]),
            CHILD_FAILED
        );
        assert_ne!(
            PARENT_GONE, CHILD_FAILED,
            "a failed child is told from one with nothing to do"
        );
    }
    use std::process::Command;

    fn sleeper(seconds: &str) -> i64 {
        let child = Command::new("sleep").arg(seconds).spawn().unwrap();
        let pid = child.id() as i64;
        // The supervisor reaps it, not std.
        std::mem::forget(child);
        pid
    }

    fn poll_until(sup: &mut Supervisor, done: impl Fn(&Poll) -> bool) -> Poll {
        let deadline = Instant::now() + Duration::from_secs(10);
        loop {
            let poll = sup.poll();
            if done(&poll) {
                return poll;
            }
            assert!(Instant::now() < deadline, "timed out; last poll {poll:?}");
            std::thread::sleep(poll.wait.min(Duration::from_millis(20)));
        }
    }

    #[test]
    fn run_forks_retries_a_failed_fork_and_returns_once_the_children_stopped_after_term() {
        let supervisor = std::sync::Mutex::new(Supervisor::new(2).unwrap());
        let (mut forks, mut waits) = (Vec::new(), 0);
        let status = Supervisor::run(
            &supervisor,
            |index| {
                forks.push(index);
                // The first fork fails: child 0 is forked again after a backoff.
                Ok::<_, ()>(if forks.len() == 1 {
                    Err("no memory".into())
                } else {
                    Ok(sleeper("30"))
                })
            },
            |wait| {
                waits += 1;
                let running = supervisor.lock().unwrap().pids().len();
                if running == 2 {
                    supervisor.lock().unwrap().signal("TERM").unwrap();
                }
                assert!(waits < 500, "the run never ended");
                std::thread::sleep(wait.min(Duration::from_millis(20)));
                Ok(())
            },
        );
        assert_eq!(status, Ok(0));
        assert_eq!(forks, [0, 1, 0]);
        assert!(supervisor.lock().unwrap().pids().is_empty());
    }

    #[test]
    fn refuses_a_process_count_out_of_range_naming_it() {
        for bad in [0, -1, 257] {
            let err = Supervisor::new(bad).unwrap_err().to_string();
            assert!(err.contains("processes") && err.contains(&bad.to_string()), "{err}");
        }
        assert!(Supervisor::new(1).is_ok());
    }

    #[test]
    fn starts_every_child_once_then_restarts_one_that_dies() {
        let mut sup = Supervisor::new(2).unwrap();
        let first = sup.poll();
        assert_eq!(first.spawn, vec![0, 1]);
        assert_eq!(
            sup.poll().spawn,
            Vec::<usize>::new(),
            "forking children are not named twice"
        );
        let doomed = sleeper("0");
        sup.started(0, doomed);
        sup.started(1, sleeper("30"));
        let restart = poll_until(&mut sup, |p| !p.spawn.is_empty());
        assert_eq!(restart.spawn, vec![0]);
        assert!(!sup.pids().contains(&doomed));
        sup.started(0, sleeper("30"));
        sup.signal("TERM").unwrap();
        let stopped = poll_until(&mut sup, |p| p.exit.is_some());
        assert_eq!(stopped.exit, Some(0));
        assert!(sup.pids().is_empty());
    }

    #[test]
    fn quick_deaths_back_off_and_a_stop_cancels_the_restart() {
        assert_eq!(backoff(1), Duration::from_millis(250));
        assert_eq!(backoff(3), Duration::from_secs(1));
        assert_eq!(backoff(40), MAX_BACKOFF);
        let mut sup = Supervisor::new(1).unwrap();
        assert_eq!(sup.poll().spawn, vec![0]);
        sup.fork_failed(0, "EAGAIN");
        sup.fork_failed(0, "EAGAIN");
        let poll = sup.poll();
        assert!(poll.spawn.is_empty() && poll.wait <= POLL_INTERVAL);
        sup.signal("INT").unwrap();
        assert_eq!(
            sup.poll().exit,
            Some(0),
            "a child waiting to restart is never started after a stop"
        );
    }

    #[test]
    fn a_quiet_parent_does_not_restart_and_unknown_signals_are_refused() {
        let mut sup = Supervisor::new(1).unwrap();
        sup.poll();
        sup.started(0, sleeper("0"));
        let deadline = Instant::now() + Duration::from_secs(10);
        while !sup.pids().is_empty() {
            assert!(Instant::now() < deadline);
            std::thread::sleep(Duration::from_millis(20));
            sup.poll();
        }
        // Dead and waiting for its restart when the parent is quieted.
        sup.signal("TSTP").unwrap();
        std::thread::sleep(backoff(1) * 2);
        let poll = sup.poll();
        assert_eq!(
            (poll.spawn.len(), poll.exit),
            (0, None),
            "quiet: no restart, and no exit before a stop"
        );
        let err = sup.signal("HUP").unwrap_err().to_string();
        assert!(err.contains("signal") && err.contains("HUP"), "{err}");
        sup.signal("TERM").unwrap();
        assert_eq!(sup.poll().exit, Some(0));
    }
}
