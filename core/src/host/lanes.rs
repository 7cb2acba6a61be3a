//! Client calls that a host thread drives itself. Through the engine's
//! shared connection, a push hands its command to the connection's driver
//! task on a runtime thread, and that thread wakes the caller when the
//! reply is in: two cross-thread wake-ups per push (a `perf record` of
//! Ruby pushes put 46% of its samples on the runtime's threads). A lane is
//! a current-thread runtime and a connection of its own
//! (`connection/on_thread.rs`): the calling thread writes the command and
//! reads the reply itself, in a blocking read, with no task in between.
//!
//! Lanes are pooled per session, not kept per thread, so a host that makes
//! a thread per request does not make a connection per request: a process
//! holds as many as it ever had calls at once, at most [`MAX_IDLE`] idle.

use super::wait::{Pending, Started};
use crate::client::Client;
use crate::connection::ThreadConn;
use crate::error::Result;
use crate::runtime::ForkSafe;
use std::future::{poll_fn, Future};
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::Poll;
use std::time::{Duration, Instant};

/// Idle lanes kept for the next calls; more are closed when they finish.
const MAX_IDLE: usize = 16;

/// A current-thread runtime (for what a call awaits besides its replies)
/// and a client whose connection this thread drives.
struct Lane {
    runtime: Option<tokio::runtime::Runtime>,
    client: Client,
    /// The client's connection, told where each slice ends.
    conn: ThreadConn,
}

impl Lane {
    fn runtime(&self) -> &tokio::runtime::Runtime {
        self.runtime.as_ref().expect("a lane has its runtime until dropped")
    }
}

impl Drop for Lane {
    fn drop(&mut self) {
        // A runtime dropped where another is current (a host object freed
        // on an engine thread) would panic; this way it never blocks.
        if let Some(runtime) = self.runtime.take() {
            runtime.shutdown_background();
        }
    }
}

/// A session's idle lanes, kept for the process that made them
/// ([`ForkSafe`]): a forked child must not touch its parent's sockets, nor
/// drop its runtimes.
#[derive(Default)]
pub(crate) struct Lanes {
    idle: ForkSafe<Mutex<Vec<Lane>>>,
}

type Call<T> = Pin<Box<dyn Future<Output = Result<T>> + Send>>;

impl Lanes {
    /// Runs `call` on a lane of `client`'s server, on this thread, for up
    /// to `first`; one still running then is handed back to wait for in
    /// slices (still on this thread). `Err(call)` untouched where no lane
    /// can serve: no connection of our own reaches the server (sentinel,
    /// cluster, TLS, RESP3), or this thread is inside a runtime already
    /// (`block_on` would panic).
    pub(crate) fn start<T: Send + 'static, F: FnOnce(Client) -> Call<T>>(
        self: &Arc<Self>,
        client: &Client,
        call: F,
        first: Duration,
    ) -> std::result::Result<Started<T>, F> {
        // Checked first: a server no lane reaches must not pay for building
        // a runtime on every call to find that out.
        if tokio::runtime::Handle::try_current().is_ok() || !client.reachable_directly() {
            return Err(call);
        }
        let Some(lane) = self.take(client) else {
            return Err(call);
        };
        let future = call(lane.client.clone());
        let mut running = LaneCall {
            lane: Some(lane),
            future,
            home: self.clone(),
        };
        Ok(match running.poll(first) {
            Some(result) => Ok(result),
            None => Err(Pending::on_lane(running)),
        })
    }

    /// This process's idle lanes.
    fn idle(&self) -> Arc<Mutex<Vec<Lane>>> {
        self.idle
            .get_or_try_init(|| Ok::<_, std::convert::Infallible>(Mutex::default()))
            .unwrap_or_else(|never| match never {})
    }

    fn take(&self, client: &Client) -> Option<Lane> {
        let pooled = self.idle().lock().unwrap_or_else(|p| p.into_inner()).pop();
        if pooled.is_some() {
            return pooled;
        }
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .ok()?;
        let (client, conn) = {
            let _entered = runtime.enter();
            client.for_calling_thread()?
        };
        Some(Lane {
            runtime: Some(runtime),
            client,
            conn,
        })
    }

    fn put_back(&self, lane: Lane) {
        let idle = self.idle();
        let mut lanes = idle.lock().unwrap_or_else(|p| p.into_inner());
        if lanes.len() < MAX_IDLE {
            lanes.push(lane);
        }
    }
}

/// A call running on a lane; the lane goes back to its pool when the call
/// ends. Dropped unfinished (the host gave up waiting), its lane is closed
/// with it: a command half-sent must not reach the next call's replies.
pub(crate) struct LaneCall<T> {
    lane: Option<Lane>,
    future: Call<T>,
    home: Arc<Lanes>,
}

impl<T> LaneCall<T> {
    /// Drives the call on this thread for up to `slice`. A wait for a
    /// reply yields when the slice ends (the connection is told); a wait
    /// for anything else is bounded by a timer, made only then.
    pub(crate) fn poll(&mut self, slice: Duration) -> Option<Result<T>> {
        let lane = self.lane.as_ref()?;
        let deadline = Instant::now() + slice;
        lane.conn.until(Some(deadline));
        let future = &mut self.future;
        let mut timer = None;
        let done = lane.runtime().block_on(poll_fn(|cx| {
            if let Poll::Ready(done) = future.as_mut().poll(cx) {
                return Poll::Ready(Some(done));
            }
            if Instant::now() >= deadline {
                return Poll::Ready(None);
            }
            let timer = timer.get_or_insert_with(|| Box::pin(tokio::time::sleep_until(deadline.into())));
            timer.as_mut().poll(cx).map(|()| None)
        }))?;
        if let Some(lane) = self.lane.take() {
            self.home.put_back(lane);
        }
        Some(done)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::Config;
    use crate::redis_server::RedisServer;
    use std::thread::{self, ThreadId};

    fn on_lane<T: Send + 'static>(
        lanes: &Arc<Lanes>,
        client: &Client,
        call: impl Future<Output = Result<T>> + Send + 'static,
        first: Duration,
    ) -> Started<T> {
        lanes
            .start(client, |_| Box::pin(call), first)
            .unwrap_or_else(|_| panic!("a plain redis:// URL gets a lane"))
    }

    fn client_of(url: &str) -> Client {
        let mut config = Config::default();
        config.set_redis_url(url).unwrap();
        super::super::in_runtime(|| Client::new(&config)).unwrap()
    }

    async fn here() -> Result<ThreadId> {
        Ok(thread::current().id())
    }

    #[test]
    fn a_call_runs_on_the_calling_thread_and_its_lane_serves_the_next() {
        let redis = RedisServer::start(&[]).unwrap();
        let client = client_of(&redis.url());
        let lanes = Arc::new(Lanes::default());
        let ran_on = on_lane(&lanes, &client, here(), Duration::from_secs(5));
        assert_eq!(ran_on.ok().unwrap().unwrap(), thread::current().id());
        // The lane went back, and the next call takes it: one lane in all.
        let push = |client: Client| -> Call<Option<String>> {
            Box::pin(async move {
                client
                    .push(crate::job::Job::new("Lane").args([serde_json::json!(1)]))
                    .await
            })
        };
        for _ in 0..3 {
            let pushed = lanes.start(&client, push, Duration::from_secs(5)).ok().unwrap();
            assert!(pushed.ok().unwrap().unwrap().is_some());
        }
        assert_eq!(lanes.idle().lock().unwrap().len(), 1);

        // Redis restarted under the idle lane: the push is sent again once
        // on a new connection, as through the shared one.
        redis.restart().unwrap();
        let pushed = lanes.start(&client, push, Duration::from_secs(5)).ok().unwrap();
        assert!(pushed.ok().unwrap().unwrap().is_some());
    }

    #[test]
    fn a_slow_call_is_driven_to_its_end_in_slices_on_the_same_thread() {
        let redis = RedisServer::start(&[]).unwrap();
        let client = client_of(&redis.url());
        let lanes = Arc::new(Lanes::default());
        let slow = async {
            tokio::time::sleep(Duration::from_millis(40)).await;
            Ok(thread::current().id())
        };
        let Err(mut pending) = on_lane(&lanes, &client, slow, Duration::from_millis(1)) else {
            panic!("still running after 1 ms")
        };
        let finished = match super::super::wait(None, |slice| pending.poll(slice), || false) {
            super::super::Waited::Ready(result) => result.unwrap(),
            other => panic!("{other:?}"),
        };
        assert_eq!(finished, thread::current().id());
        assert_eq!(lanes.idle().lock().unwrap().len(), 1, "back in the pool");

        // Given up unfinished, its lane is closed, not pooled.
        let never = async {
            tokio::time::sleep(Duration::from_secs(60)).await;
            Ok(())
        };
        let abandoned = on_lane(&lanes, &client, never, Duration::from_millis(1));
        assert!(abandoned.is_err());
        drop(abandoned);
        assert_eq!(lanes.idle().lock().unwrap().len(), 0);
    }

    #[test]
    fn no_lane_inside_a_runtime_or_for_a_server_that_moves() {
        let redis = RedisServer::start(&[]).unwrap();
        let client = client_of(&redis.url());
        let lanes = Arc::new(Lanes::default());
        crate::runtime::global().block_on(async {
            assert!(lanes
                .start(&client, |_| Box::pin(here()), Duration::from_secs(1))
                .is_err());
        });
        let moving = client_of("redis+sentinel://127.0.0.1:1/mymaster");
        assert!(lanes
            .start(&moving, |_| Box::pin(here()), Duration::from_secs(1))
            .is_err());
        // Nor over TLS, which a lane's plain socket cannot speak.
        let tls = client_of("rediss://127.0.0.1:1/0");
        assert!(!tls.reachable_directly());
        assert!(lanes.start(&tls, |_| Box::pin(here()), Duration::from_secs(1)).is_err());
    }
}
