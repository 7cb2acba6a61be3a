//! A forked child (gunicorn/Puma-style preloading) gets its own runtime and
//! connections: the parent's are unusable there and must never be touched.

mod common;

use cogworker::{Api, Client, Job};
use common::*;
use std::time::{Duration, Instant};

#[test]
fn forked_child_can_push_with_a_fresh_runtime() {
    let redis = TestRedis::start();
    let config = redis.config();
    let runtime = cogworker::runtime::global();
    let client = {
        let _entered = runtime.enter();
        Client::new(&config).unwrap()
    };
    runtime.block_on(client.push(Job::new("FromParent"))).unwrap();

    // SAFETY: the child only uses the core's fork-aware entry points and
    // leaves with _exit.
    let pid = unsafe { libc::fork() };
    if pid == 0 {
        // As the bindings do: spawn on the runtime and wait on a channel.
        // (Not `block_on` on this thread: its thread-local parker was copied
        // from the parent, possibly mid-wake by a parent runtime thread.)
        let ok = std::panic::catch_unwind(|| {
            let runtime = cogworker::runtime::global();
            let client = {
                let _entered = runtime.enter();
                Client::new(&config).unwrap()
            };
            let (done_tx, done_rx) = std::sync::mpsc::channel();
            runtime.spawn(async move {
                let _ = done_tx.send(client.push(Job::new("FromChild")).await.is_ok());
            });
            assert!(done_rx.recv_timeout(Duration::from_secs(15)).unwrap());
        })
        .is_ok();
        unsafe { libc::_exit(if ok { 0 } else { 1 }) };
    }
    assert!(pid > 0, "fork failed");
    let deadline = Instant::now() + Duration::from_secs(20);
    let mut status = 0;
    loop {
        let done = unsafe { libc::waitpid(pid, &mut status, libc::WNOHANG) };
        if done == pid {
            break;
        }
        if Instant::now() > deadline {
            unsafe { libc::kill(pid, libc::SIGKILL) };
            panic!("forked child hung");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    assert!(
        libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0,
        "child failed: {status}"
    );
    // The parent's runtime and connection still work after the fork.
    runtime.block_on(client.push(Job::new("FromParentAgain"))).unwrap();
    let api = Api::new(client);
    assert_eq!(runtime.block_on(api.queue("default")).unwrap().size, 3);
}
