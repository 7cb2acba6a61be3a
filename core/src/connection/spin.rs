//! Waiting for a reply without going to sleep, for a short while first.
//!
//! On this project's virtual machines a thread that blocks in `read` and is
//! woken when the reply lands pays 40-50 µs for the sleep and the wake-up,
//! more than the reply takes to come back over loopback (a bare `LPUSH`
//! read in a blocking `read`: 63-74 µs a round trip; the same command with
//! its reply polled for: 24-26 µs). So a thread that has just sent a
//! command asks the socket for its reply without blocking, again and
//! again, for up to [`WINDOW`], and only then blocks.
//!
//! A server farther away (a reply that takes longer than the window) would
//! make every call spin in vain: after [`GIVE_UP_AFTER`] misses in a row,
//! only every [`PROBE_EVERY`]th call spins, until one catches its reply
//! again. A machine with one CPU never spins: the server the thread waits
//! for may need that CPU.

use std::os::fd::RawFd;
use std::sync::OnceLock;
use std::time::{Duration, Instant};

/// The longest a thread spins before it blocks: a `push.lua` reply comes
/// back over loopback in about 30 µs here.
pub(super) const WINDOW: Duration = Duration::from_micros(60);

/// Misses in a row after which spinning is only probed.
const GIVE_UP_AFTER: u32 = 4;

/// While given up, one call in this many spins, to find that replies come
/// quickly again.
const PROBE_EVERY: u32 = 32;

/// Whether the replies of one connection lately came within the window.
#[derive(Debug, Default)]
pub(super) struct Spin {
    misses: u32,
    calls_since_probe: u32,
}

impl Spin {
    /// Waits up to [`WINDOW`] for `fd` to have something to read (a
    /// reply, or the end of the stream), when spinning has paid lately;
    /// the read that follows then finds it without blocking.
    pub(super) fn wait_for_reply(&mut self, fd: RawFd) {
        if !several_cpus() || !self.worth_it() {
            return;
        }
        let arrived = readable_within(fd, WINDOW);
        self.misses = if arrived { 0 } else { self.misses.saturating_add(1) };
    }

    fn worth_it(&mut self) -> bool {
        if self.misses < GIVE_UP_AFTER {
            return true;
        }
        self.calls_since_probe += 1;
        if self.calls_since_probe < PROBE_EVERY {
            return false;
        }
        self.calls_since_probe = 0;
        true
    }
}

fn several_cpus() -> bool {
    static SEVERAL: OnceLock<bool> = OnceLock::new();
    *SEVERAL.get_or_init(|| std::thread::available_parallelism().is_ok_and(|n| n.get() > 1))
}

/// Whether `fd` became readable within `window`, asked without blocking.
fn readable_within(fd: RawFd, window: Duration) -> bool {
    let started = Instant::now();
    let mut byte = 0u8;
    loop {
        // SAFETY: a one-byte buffer on this stack; MSG_PEEK leaves the
        // byte in the socket, MSG_DONTWAIT never blocks.
        let got = unsafe {
            libc::recv(
                fd,
                (&mut byte as *mut u8).cast(),
                1,
                libc::MSG_PEEK | libc::MSG_DONTWAIT,
            )
        };
        if got >= 0 {
            // A byte, or the end of the stream: the read will tell which.
            return true;
        }
        match std::io::Error::last_os_error().kind() {
            std::io::ErrorKind::WouldBlock | std::io::ErrorKind::Interrupted => {}
            // A broken socket: the read reports it.
            _ => return true,
        }
        if started.elapsed() >= window {
            return false;
        }
        std::hint::spin_loop();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;
    use std::os::fd::AsRawFd;
    use std::os::unix::net::UnixStream;

    #[test]
    fn a_reply_already_there_is_seen_at_once_and_a_late_one_is_a_miss() {
        let (mut server, client) = UnixStream::pair().unwrap();
        let mut spin = Spin::default();
        let started = Instant::now();
        spin.wait_for_reply(client.as_raw_fd());
        assert!(
            started.elapsed() >= WINDOW || !several_cpus(),
            "nothing to read: the whole window"
        );
        assert_eq!(spin.misses, u32::from(several_cpus()));
        server.write_all(b"+OK\r\n").unwrap();
        spin.wait_for_reply(client.as_raw_fd());
        assert_eq!(spin.misses, 0, "a reply there resets the misses");
    }

    #[test]
    fn after_misses_in_a_row_only_a_probe_spins_until_one_hits() {
        let mut spin = Spin::default();
        for _ in 0..GIVE_UP_AFTER {
            assert!(spin.worth_it());
            spin.misses += 1;
        }
        let spun = (0..PROBE_EVERY * 2).filter(|_| spin.worth_it()).count();
        assert_eq!(spun, 2, "one probe in {PROBE_EVERY} calls");
        spin.misses = 0;
        assert!(spin.worth_it() && spin.worth_it(), "a hit: every call spins again");
    }
}
