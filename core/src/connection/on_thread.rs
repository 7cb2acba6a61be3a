//! A connection that the calling thread drives itself: the command is
//! written and its reply read on the thread that asked, with no driver task
//! and no channel (see `host/lanes.rs`). A multiplexed connection, even on
//! a current-thread runtime, hands each command to its driver task and the
//! reply back through channels: about 10 µs of every push here, a tenth of
//! its round trip.
//!
//! A reply is first waited for by spinning, briefly (`spin.rs`): on a
//! virtual machine, sleeping in `read` and being woken costs more than the
//! reply takes to come over loopback. Then a read blocks for at most
//! [`TICK`] at a time. A call given a deadline
//! ([`ThreadConn::until`]) yields when it passes, and is resumed later
//! where it stopped: the parser keeps what it has read of a reply. A call
//! abandoned halfway (its future dropped) leaves replies unread, so the
//! next call opens a new connection first: those replies never meet it.
//!
//! Plain `redis://` and `redis+unix://` servers speaking RESP2 only (see
//! [`ThreadConn::serves`]); the rest keep the shared connection.

use redis::{Cmd, ConnectionAddr, ConnectionInfo, Pipeline, RedisFuture, RedisResult, Value};
use std::future::poll_fn;
use std::io::{self, Read, Write};
use std::net::{TcpStream, ToSocketAddrs};
use std::os::fd::{AsRawFd, RawFd};
use std::os::unix::net::UnixStream;
use std::sync::{Arc, Mutex, MutexGuard};
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use super::spin::Spin;
use super::{COMMAND_TIMEOUT, CONNECT_TIMEOUT};

/// The longest a read blocks before the deadline is looked at again.
const TICK: Duration = Duration::from_millis(1);

/// A handle on the connection (cheap to clone; every clone is the same
/// connection, used by one call at a time).
#[derive(Clone)]
pub struct ThreadConn(Arc<Mutex<State>>);

struct State {
    info: ConnectionInfo,
    /// `None` until the first call, and after a failure.
    stream: Option<Stream>,
    parser: redis::Parser,
    /// Replies the last call sent for and has not read.
    unread: usize,
    /// Where a call waiting for its reply yields (see `until`).
    deadline: Option<Instant>,
    /// Whether replies lately came while polled for (`spin.rs`).
    spin: Spin,
    /// How long a call waits for its replies in all ([`COMMAND_TIMEOUT`]).
    command_timeout: Duration,
}

pub(super) enum Stream {
    Tcp(TcpStream),
    Unix(UnixStream),
}

impl ThreadConn {
    /// Whether a server reached through `info` can be driven this way.
    pub(crate) fn serves(info: &ConnectionInfo) -> bool {
        matches!(info.addr(), ConnectionAddr::Tcp(..) | ConnectionAddr::Unix(_))
            && info.redis_settings().protocol() == redis::ProtocolVersion::RESP2
    }

    /// Nothing is dialled until the first command.
    pub(crate) fn new(info: ConnectionInfo) -> Self {
        ThreadConn(Arc::new(Mutex::new(State {
            info,
            stream: None,
            parser: redis::Parser::new(),
            unread: 0,
            deadline: None,
            spin: Spin::default(),
            command_timeout: COMMAND_TIMEOUT,
        })))
    }

    /// Calls waiting for a reply yield once `deadline` passes (`None`:
    /// they wait until the reply, or the command timeout).
    pub(crate) fn until(&self, deadline: Option<Instant>) {
        self.state().deadline = deadline;
    }

    fn state(&self) -> MutexGuard<'_, State> {
        self.0.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// Writes `bytes`, which ask for `replies` replies, then reads them.
    async fn exchange(&self, bytes: &[u8], replies: usize) -> RedisResult<Vec<Value>> {
        self.state().send(bytes, replies)?;
        let sent = Instant::now();
        let mut read = Vec::with_capacity(replies);
        poll_fn(|cx| self.state().poll_replies(cx, sent, &mut read)).await
    }
}

impl State {
    fn send(&mut self, bytes: &[u8], replies: usize) -> RedisResult<()> {
        if self.unread > 0 {
            // An earlier call was abandoned before its replies came.
            self.close();
        }
        if self.stream.is_none() {
            self.stream = Some(connect(&self.info)?);
            self.parser = redis::Parser::new();
        }
        let stream = self.stream.as_mut().expect("connected above");
        if let Err(e) = stream.write_all(bytes) {
            self.close();
            return Err(e.into());
        }
        self.unread = replies;
        // The reply is first polled for (`spin.rs`), then read in a
        // blocking read.
        self.spin.wait_for_reply(stream.as_raw_fd());
        Ok(())
    }

    fn poll_replies(
        &mut self,
        cx: &mut Context<'_>,
        sent: Instant,
        read: &mut Vec<Value>,
    ) -> Poll<RedisResult<Vec<Value>>> {
        while self.unread > 0 {
            let Some(stream) = self.stream.as_mut() else {
                return Poll::Ready(Err(io::Error::from(io::ErrorKind::NotConnected).into()));
            };
            match self.parser.parse_value(stream) {
                Ok(value) => {
                    read.push(value);
                    self.unread -= 1;
                }
                // The last read's own error (EAGAIN, "Resource temporarily
                // unavailable") would not say what happened.
                Err(e) if e.is_timeout() && sent.elapsed() >= self.command_timeout => {
                    self.close();
                    return Poll::Ready(Err(no_reply_within(self.command_timeout)));
                }
                Err(e) if e.is_timeout() => {
                    if self.deadline.is_some_and(|deadline| Instant::now() >= deadline) {
                        cx.waker().wake_by_ref();
                        return Poll::Pending;
                    }
                }
                Err(e) => {
                    self.close();
                    return Poll::Ready(Err(e));
                }
            }
        }
        Poll::Ready(Ok(std::mem::take(read)))
    }

    fn close(&mut self) {
        self.stream = None;
        self.unread = 0;
    }
}

impl redis::aio::ConnectionLike for ThreadConn {
    fn req_packed_command<'a>(&'a mut self, cmd: &'a Cmd) -> RedisFuture<'a, Value> {
        Box::pin(async move {
            let mut replies = self.exchange(&cmd.get_packed_command(), 1).await?;
            Ok(replies.pop().expect("one reply read"))
        })
    }

    /// The `count` replies after the first `offset` (a transaction's
    /// `MULTI` and `QUEUED`s), as a multiplexed connection gives them: a
    /// command refused while queued fails the whole transaction.
    fn req_packed_commands<'a>(
        &'a mut self,
        pipeline: &'a Pipeline,
        offset: usize,
        count: usize,
    ) -> RedisFuture<'a, Vec<Value>> {
        Box::pin(async move {
            let replies = self.exchange(&pipeline.get_packed_pipeline(), offset + count).await?;
            after_offset(replies, offset)
        })
    }

    fn get_db(&self) -> i64 {
        self.state().info.redis_settings().db()
    }
}

/// The replies after the first `offset` (a transaction's `MULTI` and
/// `QUEUED`s), or the error one of those was.
pub(super) fn after_offset(mut replies: Vec<Value>, offset: usize) -> RedisResult<Vec<Value>> {
    for skipped in replies.drain(..offset) {
        skipped.extract_error()?;
    }
    Ok(replies)
}

/// A new connection to `info`'s server, authenticated and on its database.
pub(super) fn connect(info: &ConnectionInfo) -> RedisResult<Stream> {
    let mut stream = match info.addr() {
        ConnectionAddr::Tcp(host, port) => Stream::Tcp(dial(host, *port)?),
        ConnectionAddr::Unix(path) => Stream::Unix(UnixStream::connect(path)?),
        _ => return Err(io::Error::from(io::ErrorKind::Unsupported).into()),
    };
    stream.set_timeouts()?;
    let settings = info.redis_settings();
    let mut handshake = Vec::new();
    if let Some(password) = settings.password() {
        let mut auth = redis::cmd("AUTH");
        if let Some(username) = settings.username() {
            auth.arg(username);
        }
        handshake.push(auth.arg(password).clone());
    }
    if settings.db() != 0 {
        handshake.push(redis::cmd("SELECT").arg(settings.db()).clone());
    }
    let mut parser = redis::Parser::new();
    let started = Instant::now();
    for cmd in handshake {
        stream.write_all(&cmd.get_packed_command())?;
        loop {
            match parser.parse_value(&mut stream) {
                Ok(reply) => break reply.extract_error().map(drop)?,
                Err(e) if e.is_timeout() && started.elapsed() >= CONNECT_TIMEOUT => {
                    return Err(no_reply_within(CONNECT_TIMEOUT));
                }
                Err(e) if e.is_timeout() => continue,
                Err(e) => return Err(e),
            }
        }
    }
    Ok(stream)
}

/// A server that sent no reply within `limit`: a timeout, said as one.
pub(super) fn no_reply_within(limit: Duration) -> redis::RedisError {
    io::Error::new(
        io::ErrorKind::TimedOut,
        format!("no reply from Redis within {} s", limit.as_secs_f64()),
    )
    .into()
}

fn dial(host: &str, port: u16) -> io::Result<TcpStream> {
    let mut last = io::Error::from(io::ErrorKind::AddrNotAvailable);
    for address in (host, port).to_socket_addrs()? {
        match TcpStream::connect_timeout(&address, CONNECT_TIMEOUT) {
            Ok(stream) => {
                stream.set_nodelay(true)?;
                return Ok(stream);
            }
            Err(e) => last = e,
        }
    }
    Err(last)
}

impl Stream {
    /// For a task's connection (`on_task.rs`), which waits in the reactor.
    pub(super) fn set_nonblocking(&self) -> io::Result<()> {
        match self {
            Stream::Tcp(s) => s.set_nonblocking(true),
            Stream::Unix(s) => s.set_nonblocking(true),
        }
    }

    fn set_timeouts(&self) -> io::Result<()> {
        match self {
            Stream::Tcp(s) => {
                s.set_read_timeout(Some(TICK))?;
                s.set_write_timeout(Some(COMMAND_TIMEOUT))
            }
            Stream::Unix(s) => {
                s.set_read_timeout(Some(TICK))?;
                s.set_write_timeout(Some(COMMAND_TIMEOUT))
            }
        }
    }
}

impl AsRawFd for Stream {
    fn as_raw_fd(&self) -> RawFd {
        match self {
            Stream::Tcp(s) => s.as_raw_fd(),
            Stream::Unix(s) => s.as_raw_fd(),
        }
    }
}

/// Reads and writes through a shared reference, as the sockets allow (a
/// task's connection reads from inside its `AsyncFd`).
impl Read for &Stream {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        match self {
            Stream::Tcp(s) => (&*s).read(buf),
            Stream::Unix(s) => (&*s).read(buf),
        }
    }
}

impl Write for &Stream {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        match self {
            Stream::Tcp(s) => (&*s).write(buf),
            Stream::Unix(s) => (&*s).write(buf),
        }
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

impl Read for Stream {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        (&*self).read(buf)
    }
}

impl Write for Stream {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        (&*self).write(buf)
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::redis_server::RedisServer;
    use redis::aio::ConnectionLike as _;
    use std::task::Waker;

    /// A command the server answers (nil) after `ms`.
    fn slow(ms: u32) -> Cmd {
        redis::cmd("BLPOP")
            .arg("nothing-here")
            .arg(f64::from(ms) / 1000.0)
            .clone()
    }

    fn conn_to(url: &str) -> ThreadConn {
        let client = redis::Client::open(url).unwrap();
        assert!(ThreadConn::serves(client.get_connection_info()));
        ThreadConn::new(client.get_connection_info().clone())
    }

    fn ask(conn: &mut ThreadConn, cmd: &Cmd) -> RedisResult<Value> {
        tokio::runtime::Builder::new_current_thread()
            .build()
            .unwrap()
            .block_on(cmd.query_async(conn))
    }

    #[test]
    fn a_reply_waited_for_past_the_deadline_is_read_where_it_stopped() {
        let redis = RedisServer::start(&[]).unwrap();
        let mut conn = conn_to(&redis.url());
        let cmd = slow(30);
        let (mut yields, mut reply) = (0, None);
        let handle = conn.clone();
        {
            let mut call = conn.req_packed_command(&cmd);
            let mut cx = Context::from_waker(Waker::noop());
            while reply.is_none() {
                handle.until(Some(Instant::now() + Duration::from_millis(2)));
                match call.as_mut().poll(&mut cx) {
                    Poll::Ready(value) => reply = Some(value.unwrap()),
                    Poll::Pending => yields += 1,
                }
            }
        }
        assert_eq!(reply, Some(Value::Nil));
        assert!(yields >= 5, "30 ms in slices of 2 ms yielded {yields} times");
        // The connection goes on, in step: the next reply is the next command's.
        assert_eq!(
            ask(&mut conn, &redis::cmd("PING")).unwrap(),
            Value::SimpleString("PONG".into())
        );
    }

    #[test]
    fn a_server_that_never_replies_is_a_timeout_that_says_so() {
        // Accepts (the kernel does, into its backlog) and never answers.
        let silent = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let mut conn = conn_to(&format!("redis://{}/0", silent.local_addr().unwrap()));
        conn.state().command_timeout = Duration::from_millis(50);
        let started = Instant::now();
        let error = ask(&mut conn, &redis::cmd("PING")).unwrap_err();
        assert!(started.elapsed() >= Duration::from_millis(50));
        assert!(error.is_timeout(), "{error}");
        assert!(
            error.to_string().contains("no reply from Redis within 0.05 s"),
            "{error}"
        );
    }

    #[test]
    fn a_call_abandoned_before_its_reply_leaves_nothing_for_the_next() {
        let redis = RedisServer::start(&[]).unwrap();
        let mut conn = conn_to(&redis.url());
        conn.until(Some(Instant::now()));
        let cmd = slow(20);
        {
            let mut call = conn.req_packed_command(&cmd);
            let pending = call.as_mut().poll(&mut Context::from_waker(Waker::noop()));
            assert!(pending.is_pending());
        }
        conn.until(None);
        assert_eq!(
            ask(&mut conn, &redis::cmd("PING")).unwrap(),
            Value::SimpleString("PONG".into())
        );
    }

    #[test]
    fn it_authenticates_selects_the_database_and_reconnects_after_a_restart() {
        let redis = RedisServer::start(&["--requirepass", "s3cret"]).unwrap();
        let url = format!("redis://:s3cret@127.0.0.1:{}/2", redis.port());
        let mut conn = conn_to(&url);
        let set = redis::cmd("SET").arg("k").arg("v").clone();
        assert!(ask(&mut conn, &set).is_ok());
        let mut check = redis::Client::open(url.as_str()).unwrap().get_connection().unwrap();
        assert_eq!(redis::cmd("GET").arg("k").query::<String>(&mut check).unwrap(), "v");

        // A server gone under an idle connection fails the next command
        // once (the caller's retry), then a new connection serves.
        redis.restart().unwrap();
        let first = ask(&mut conn, &redis::cmd("PING"));
        assert!(
            first
                .as_ref()
                .is_err_and(|e| e.is_connection_dropped() || e.is_io_error()),
            "{first:?}"
        );
        assert_eq!(
            ask(&mut conn, &redis::cmd("PING")).unwrap(),
            Value::SimpleString("PONG".into())
        );

        let refused = conn_to(&format!("redis://:wrong@127.0.0.1:{}/0", redis.port()));
        let error = ask(&mut refused.clone(), &redis::cmd("PING")).unwrap_err();
        assert!(error.to_string().contains("WRONGPASS"), "{error}");
    }

    #[test]
    fn a_unix_socket_serves() {
        let socket = std::env::temp_dir().join(format!("cogworker-on-thread-{}.sock", std::process::id()));
        let path = socket.to_str().unwrap();
        let _redis = RedisServer::start(&["--unixsocket", path, "--unixsocketperm", "700"]).unwrap();
        let mut conn = conn_to(&format!("redis+unix://{path}?db=3"));
        assert_eq!(conn.get_db(), 3);
        assert_eq!(
            ask(&mut conn, &redis::cmd("PING")).unwrap(),
            Value::SimpleString("PONG".into())
        );
        let _ = std::fs::remove_file(socket);
    }

    #[test]
    fn tls_and_resp3_are_left_to_the_shared_connection() {
        for url in ["rediss://127.0.0.1:6380/0", "redis://127.0.0.1:6379/0?protocol=resp3"] {
            let client = redis::Client::open(url).unwrap();
            assert!(!ThreadConn::serves(client.get_connection_info()), "{url}");
        }
    }
}
