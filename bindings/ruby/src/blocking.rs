//! The one way this extension blocks: a core wait run without the GVL
//! (`rb_nogvl`), with an unblock function that raises a flag the wait looks
//! at between short slices. Woken (Ctrl-C, `Thread#kill`, a signal trap,
//! process exit), it lets Ruby run the pending interrupts, raising if they
//! raise, and otherwise waits on: never a busy loop. The wait never touches
//! a Ruby object.
//!
//! Both regions fail rather than run when an interrupt is pending
//! (`RB_NOGVL_INTR_FAIL`) and never run interrupts themselves on the way
//! out: an exception raised there would unwind through Rust frames. The
//! interruptible one declares its unblock function async-signal-safe (an
//! atomic store): in a process with one Ruby thread, Ruby then calls it
//! from the signal handler itself, instead of starting a helper thread for
//! every wait to watch for signals (a Ctrl-C a loaded machine's helper
//! thread missed left a push waiting out its 10 s timeout).

use cogworker::host::{self, Waited};
use magnus::{prelude::*, Error, Ruby};
use std::ffi::{c_int, c_void};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

struct Call<'a, F, R> {
    work: Option<F>,
    interrupted: &'a AtomicBool,
    result: Option<R>,
}

unsafe extern "C" fn call_work<F: FnOnce(&AtomicBool) -> R, R>(data: *mut c_void) -> *mut c_void {
    // SAFETY: `data` is the `Call` on `without_gvl`'s stack, alive until it returns.
    let call = unsafe { &mut *(data as *mut Call<'_, F, R>) };
    if let Some(work) = call.work.take() {
        call.result = Some(work(call.interrupted));
    }
    std::ptr::null_mut()
}

unsafe extern "C" fn unblock(data: *mut c_void) {
    // SAFETY: `data` is the flag on `without_gvl`'s stack.
    let flag = unsafe { &*(data as *const AtomicBool) };
    flag.store(true, Ordering::SeqCst);
}

/// Runs `work` with the GVL released; `None` if an interrupt was pending and
/// it never ran.
pub fn without_gvl<F: FnOnce(&AtomicBool) -> R, R>(work: F) -> Option<R> {
    run_without_gvl(work).ok()
}

/// Runs `work` with the GVL released, or hands it back unrun when an
/// interrupt was pending (Ruby's thread scheduler asks for one routinely).
fn run_without_gvl<F: FnOnce(&AtomicBool) -> R, R>(work: F) -> Result<R, F> {
    let interrupted = AtomicBool::new(false);
    let mut call = Call {
        work: Some(work),
        interrupted: &interrupted,
        result: None,
    };
    // SAFETY: both pointers outlive the call; `run` and `unblock` only
    // touch them, and `unblock` only stores to an atomic (signal-safe).
    unsafe {
        rb_sys::rb_nogvl(
            Some(call_work::<F, R>),
            &mut call as *mut Call<'_, F, R> as *mut c_void,
            Some(unblock),
            &interrupted as *const AtomicBool as *mut c_void,
            (rb_sys::RB_NOGVL_INTR_FAIL | rb_sys::RB_NOGVL_UBF_ASYNC_SAFE) as c_int,
        );
    }
    match (call.result, call.work) {
        (Some(result), _) => Ok(result),
        (None, Some(work)) => Err(work),
        (None, None) => unreachable!("work that ran leaves its result"),
    }
}

/// `work` without the GVL. An interrupt pending first is run (raising if it
/// raises: Ctrl-C, `Thread#kill`), then `work` is tried again; a pending
/// thread switch once made this fail with "interrupted before it could start".
pub fn nogvl<T>(ruby: &Ruby, work: impl FnOnce() -> T) -> Result<T, Error> {
    let mut work = |_: &AtomicBool| work();
    loop {
        match run_without_gvl(work) {
            Ok(result) => return Ok(result),
            Err(unrun) => {
                ruby.thread_check_ints()?;
                work = unrun;
            }
        }
    }
}

/// `poll` (blocking up to the time it is given) until it yields: `None`
/// once `timeout` seconds pass. Interrupts Ruby has pending run between
/// slices; one that raises ends the wait with its exception.
pub fn wait<T>(
    ruby: &Ruby,
    timeout: Option<f64>,
    mut poll: impl FnMut(Duration) -> Option<T>,
) -> Result<Option<T>, Error> {
    let deadline = host::deadline_after(timeout).map_err(|e| crate::errors::to_ruby(ruby, e))?;
    loop {
        let waited = without_gvl(|flag| host::wait(deadline, &mut poll, || flag.load(Ordering::SeqCst)));
        match waited {
            Some(Waited::Ready(value)) => return Ok(Some(value)),
            Some(Waited::TimedOut) => return Ok(None),
            Some(Waited::Interrupted) | None => {
                ruby.thread_check_ints()?;
                if deadline.is_some_and(|d| Instant::now() >= d) {
                    return Ok(None);
                }
            }
        }
    }
}

/// The core's slot and events loops wait as above ([`host::HostWait`]).
pub struct Blocking<'a>(pub &'a Ruby);

impl host::HostWait for Blocking<'_> {
    type Error = Error;

    fn wait<T: Send>(
        &mut self,
        slice: Duration,
        poll: impl FnMut(Duration) -> Option<T> + Send,
    ) -> Result<Option<T>, Error> {
        wait(self.0, Some(slice.as_secs_f64()), poll)
    }

    /// `Thread.current.name`.
    fn thread_name(&self) -> Option<String> {
        self.0
            .thread_current()
            .funcall::<_, _, Option<String>>("name", ())
            .ok()
            .flatten()
    }
}

/// Runs a core operation to completion: for `host::ON_CALLING_THREAD` on
/// this thread, without the GVL in a blocking region with no unblock
/// function, then, if still running, in the interruptible wait above.
/// Measured on Ruby 3.1.2, 30,000 `status` calls on a loopback Redis: 140 µs
/// each in a region with an unblock function, 86 µs in one without (as
/// long as holding the GVL). Such a region cannot be interrupted (Ctrl-C,
/// `Thread#kill`, `Timeout`), hence its short bound.
pub fn run<F, T>(ruby: &Ruby, future: F) -> Result<T, Error>
where
    F: std::future::Future<Output = cogworker::Result<T>> + Send + 'static,
    T: Send + 'static,
{
    finish(ruby, |first| host::start(future, first))
}

/// [`run`] for an operation `start` begins (given how long it may run on
/// this thread): `host::start`, or `Session::start` on a lane.
pub fn finish<T>(ruby: &Ruby, start: impl FnOnce(Duration) -> host::Started<T>) -> Result<T, Error> {
    let result = match uninterruptible(ruby, || start(host::ON_CALLING_THREAD))? {
        Ok(result) => result,
        Err(mut pending) => wait(ruby, None, |slice| pending.poll(slice))?.expect("a wait without deadline yields"),
    };
    result.map_err(|e| crate::errors::to_ruby(ruby, e))
}

/// `work` with the GVL released and no unblock function: once begun,
/// nothing can cut it short (keep it brief). An interrupt pending before it
/// begins is run first (raising if it raises: then `work` never runs).
fn uninterruptible<W: FnOnce() -> R, R>(ruby: &Ruby, work: W) -> Result<R, Error> {
    struct Plain<W, R> {
        work: Option<W>,
        result: Option<std::thread::Result<R>>,
    }
    unsafe extern "C" fn call_plain<W: FnOnce() -> R, R>(data: *mut c_void) -> *mut c_void {
        // SAFETY: `data` is the `Plain` on `uninterruptible`'s stack, alive until it returns.
        let plain = unsafe { &mut *(data as *mut Plain<W, R>) };
        if let Some(work) = plain.work.take() {
            // A panic must not unwind through Ruby's C frames: it resumes
            // below, with the GVL held again, where magnus turns it into an
            // exception.
            plain.result = Some(std::panic::catch_unwind(std::panic::AssertUnwindSafe(work)));
        }
        std::ptr::null_mut()
    }
    let mut plain = Plain {
        work: Some(work),
        result: None,
    };
    loop {
        // SAFETY: `plain` outlives the call; `call_plain` only touches it.
        unsafe {
            rb_sys::rb_nogvl(
                Some(call_plain::<W, R>),
                &mut plain as *mut Plain<W, R> as *mut c_void,
                None,
                std::ptr::null_mut(),
                rb_sys::RB_NOGVL_INTR_FAIL as c_int,
            );
        }
        match plain.result.take() {
            Some(Ok(result)) => return Ok(result),
            Some(Err(panic)) => std::panic::resume_unwind(panic),
            None => ruby.thread_check_ints()?,
        }
    }
}
