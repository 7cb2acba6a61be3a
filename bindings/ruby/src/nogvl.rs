//! The one way this extension blocks: run a Rust closure without the GVL
//! (`rb_thread_call_without_gvl2`), with an unblock function that raises a
//! flag the closure polls between short waits. So `Thread#kill`, Ctrl-C and
//! process exit never hang on a blocked thread. The closure never touches a
//! Ruby object; interrupts are handled by Ruby once we return.

use std::ffi::c_void;
use std::sync::atomic::{AtomicBool, Ordering};

struct Call<'a, F, R> {
    work: Option<F>,
    interrupted: &'a AtomicBool,
    result: Option<R>,
}

unsafe extern "C" fn run<F: FnOnce(&AtomicBool) -> R, R>(data: *mut c_void) -> *mut c_void {
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

/// Runs `work` with the GVL released. `work` must return soon after the
/// flag it is given turns true. `None` if Ruby had an interrupt pending
/// and `work` never ran.
pub fn without_gvl<F, R>(work: F) -> Option<R>
where
    F: FnOnce(&AtomicBool) -> R,
{
    let interrupted = AtomicBool::new(false);
    let mut call = Call {
        work: Some(work),
        interrupted: &interrupted,
        result: None,
    };
    // SAFETY: both pointers outlive the call; `run` and `unblock` only touch them.
    unsafe {
        rb_sys::rb_thread_call_without_gvl2(
            Some(run::<F, R>),
            &mut call as *mut Call<'_, F, R> as *mut c_void,
            Some(unblock),
            &interrupted as *const AtomicBool as *mut c_void,
        );
    }
    call.result
}
