//! A connection that one task at a time drives itself, for a Rust
//! `Client`'s pushes: the task writes the command and reads the reply
//! from the socket, with no driver task or channel in between, and first
//! polls for the reply before it lets the runtime park (`spin.rs`). The
//! shared multiplexed connection hands every command to its driver task,
//! and the thread that waits for the reply sleeps in `epoll_wait`: on a
//! virtual machine that sleep and wake-up cost more than the reply's trip
//! over loopback.
//!
//! One task uses it at a time ([`TaskConn::reserve`]); a push that finds
//! it taken goes through the shared connection, so concurrent pushes are
//! still pipelined there. A call whose future is dropped halfway takes its
//! socket with it: the next call dials again, so no reply of the
//! abandoned call ever meets it. Plain `redis://` and `redis+unix://`
//! servers speaking RESP2 only, as for a lane (`on_thread.rs`).

use redis::aio::ConnectionLike;
use redis::{Cmd, ConnectionInfo, Pipeline, RedisFuture, RedisResult, Value};
use std::io::{self, Write};
use std::os::fd::AsRawFd;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use tokio::io::unix::AsyncFd;

use super::on_thread::{after_offset, connect, no_reply_within, Stream};
use super::spin::Spin;
use super::COMMAND_TIMEOUT;

/// The connection, shared by the clones of one `Redis`.
pub(crate) struct TaskConn {
    info: ConnectionInfo,
    /// The open socket between calls (`None` before the first, after a
    /// failure, and while a call has it).
    idle: Mutex<Option<Open>>,
    /// Held by the one task using it.
    busy: AtomicBool,
}

struct Open {
    stream: AsyncFd<Stream>,
    parser: redis::Parser,
    spin: Spin,
}

impl TaskConn {
    /// Nothing is dialled until the first command.
    pub(crate) fn new(info: ConnectionInfo) -> Self {
        TaskConn {
            info,
            idle: Mutex::new(None),
            busy: AtomicBool::new(false),
        }
    }

    /// The connection for the calling task alone, until the handle (and
    /// its clones) are dropped; `None` while another task has it.
    pub(crate) fn reserve(self: &Arc<Self>) -> Option<OnTask> {
        self.busy
            .compare_exchange(false, true, Ordering::Acquire, Ordering::Relaxed)
            .ok()?;
        Some(OnTask(Arc::new(Reserved(self.clone()))))
    }

    /// The server's address, authentication and database.
    pub(crate) fn info(&self) -> &ConnectionInfo {
        &self.info
    }

    async fn exchange(&self, bytes: &[u8], replies: usize) -> RedisResult<Vec<Value>> {
        let idle = self.idle.lock().unwrap_or_else(|p| p.into_inner()).take();
        let mut open = match idle {
            Some(open) => open,
            None => self.open().await?,
        };
        let exchanged = tokio::time::timeout(COMMAND_TIMEOUT, open.exchange(bytes, replies)).await;
        let replies = exchanged.unwrap_or_else(|_| Err(no_reply_within(COMMAND_TIMEOUT)))?;
        // Only a connection in step goes back: after a failure the socket
        // closes here, with whatever it still had to say.
        *self.idle.lock().unwrap_or_else(|p| p.into_inner()) = Some(open);
        Ok(replies)
    }

    /// Dials, authenticates and selects the database on a blocking thread
    /// (as a lane does, bounded by the connect timeout), then hands the
    /// socket to the runtime's reactor.
    async fn open(&self) -> RedisResult<Open> {
        let info = self.info.clone();
        let stream = tokio::task::spawn_blocking(move || connect(&info))
            .await
            .map_err(|e| io::Error::other(e.to_string()))??;
        stream.set_nonblocking()?;
        // SAFETY: the `Stream` owns its socket, whose descriptor it always
        // gives, open until the `AsyncFd` drops it.
        let stream = unsafe { AsyncFd::register(stream) }.map_err(io::Error::from)?;
        Ok(Open {
            stream,
            parser: redis::Parser::new(),
            spin: Spin::default(),
        })
    }
}

impl Open {
    async fn exchange(&mut self, mut bytes: &[u8], replies: usize) -> RedisResult<Vec<Value>> {
        while !bytes.is_empty() {
            let mut ready = self.stream.writable().await?;
            match ready.try_io(|stream| stream.get_ref().write(bytes)) {
                Ok(written) => bytes = &bytes[written?..],
                Err(_would_block) => continue,
            }
        }
        self.spin.wait_for_reply(self.stream.as_raw_fd());
        let mut read = Vec::with_capacity(replies);
        while read.len() < replies {
            match self.parser.parse_value(&mut self.stream.get_ref()) {
                Ok(value) => read.push(value),
                // Nothing more to read yet: the parser keeps what it has.
                Err(e) if e.is_timeout() => self.stream.readable().await?.clear_ready(),
                Err(e) => return Err(e),
            }
        }
        Ok(read)
    }
}

/// [`TaskConn`] reserved for one task (and the clones of its [`OnTask`]).
struct Reserved(Arc<TaskConn>);

impl Drop for Reserved {
    fn drop(&mut self) {
        self.0.busy.store(false, Ordering::Release);
    }
}

/// What a `Conn` holds: the reservation, shared by the clones of a `Conn`.
#[derive(Clone)]
pub struct OnTask(Arc<Reserved>);

impl ConnectionLike for OnTask {
    fn req_packed_command<'a>(&'a mut self, cmd: &'a Cmd) -> RedisFuture<'a, Value> {
        Box::pin(async move {
            let mut replies = self.0 .0.exchange(&cmd.get_packed_command(), 1).await?;
            Ok(replies.pop().expect("one reply read"))
        })
    }

    /// The `count` replies after the first `offset`, as `on_thread.rs`
    /// gives them.
    fn req_packed_commands<'a>(
        &'a mut self,
        pipeline: &'a Pipeline,
        offset: usize,
        count: usize,
    ) -> RedisFuture<'a, Vec<Value>> {
        Box::pin(async move {
            let replies = self
                .0
                 .0
                .exchange(&pipeline.get_packed_pipeline(), offset + count)
                .await?;
            after_offset(replies, offset)
        })
    }

    fn get_db(&self) -> i64 {
        self.0 .0.info.redis_settings().db()
    }
}

#[cfg(test)]
mod tests {
    use crate::client::Client;
    use crate::config::Config;
    use crate::connection::{Conn, Redis};
    use crate::job::Job;
    use crate::redis_server::RedisServer;
    use redis::Value;
    use std::time::Duration;

    fn config_for(url: &str) -> Config {
        let mut config = Config::default();
        config.set_redis_url(url).unwrap();
        config
    }

    async fn ask(conn: &mut Conn, cmd: &str) -> redis::RedisResult<Value> {
        redis::cmd(cmd).query_async(conn).await
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn one_task_at_a_time_has_it_and_the_rest_share_the_multiplexed_connection() {
        let redis_server = RedisServer::start(&[]).unwrap();
        let redis = Redis::new(&config_for(&redis_server.url())).unwrap();
        let mut first = redis.conn_for_push();
        assert!(matches!(first, Conn::OnTask(_)));
        assert!(
            matches!(redis.conn_for_push(), Conn::Manager(_)),
            "taken: the shared one"
        );
        assert_eq!(
            ask(&mut first, "PING").await.unwrap(),
            Value::SimpleString("PONG".into())
        );
        drop(first);
        assert!(matches!(redis.conn_for_push(), Conn::OnTask(_)), "given back");

        // Neither a sentinel's master nor a lane's connection has one.
        let sentinel = Redis::new(&config_for("redis+sentinel://127.0.0.1:1/mymaster")).unwrap();
        assert!(!matches!(sentinel.conn_for_push(), Conn::OnTask(_)));
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_call_abandoned_before_its_reply_leaves_nothing_for_the_next() {
        let redis_server = RedisServer::start(&[]).unwrap();
        let redis = Redis::new(&config_for(&redis_server.url())).unwrap();
        let mut conn = redis.conn_for_push();
        let slow = redis::cmd("BLPOP").arg("nothing-here").arg(0.2).clone();
        let waited = tokio::time::timeout(Duration::from_millis(20), slow.query_async::<Value>(&mut conn)).await;
        assert!(waited.is_err(), "still waiting after 20 ms");
        assert_eq!(
            ask(&mut conn, "PING").await.unwrap(),
            Value::SimpleString("PONG".into())
        );
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn pushes_select_the_database_survive_a_restart_and_run_side_by_side() {
        let redis_server = RedisServer::start(&["--requirepass", "sesame"]).unwrap();
        let url = format!("redis://:sesame@127.0.0.1:{}/3", redis_server.port());
        let client = Client::new(&config_for(&url)).unwrap();
        let push = |i: i64| {
            let client = client.clone();
            async move { client.push(Job::new("OnTask").args([serde_json::json!(i)])).await }
        };
        assert!(push(0).await.unwrap().is_some());
        tokio::task::block_in_place(|| redis_server.restart().unwrap());
        assert!(push(1).await.unwrap().is_some(), "sent again on a new connection");
        let side_by_side: Vec<_> = (2..22).map(|i| tokio::spawn(push(i))).collect();
        for pushed in side_by_side {
            assert!(pushed.await.unwrap().unwrap().is_some());
        }
        let mut check = redis::Client::open(url.as_str()).unwrap().get_connection().unwrap();
        let queue = crate::keys::Keys::for_config(&config_for(&url)).queue("default");
        let queued: usize = redis::cmd("LLEN").arg(queue).query(&mut check).unwrap();
        assert_eq!(
            queued, 21,
            "every push since the restart (it kept nothing) in database 3"
        );
    }
}
