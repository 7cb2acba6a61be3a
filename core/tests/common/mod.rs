//! Test support: a private `redis-server` per test on a free loopback port
//! (so a test can stop, restart or flush it), stopped by pid; helpers to
//! await conditions with a deadline; a worker process to kill.
#![allow(dead_code)]

pub mod cluster;
pub mod sentinel;
pub mod tls;

use cogworker::redis_server::RedisServer;
use cogworker::{Config, Worker};
use redis::AsyncCommands;
use std::future::Future;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// The core's private server ([`RedisServer`]) with the conveniences the
/// tests use (a failure to start fails the test).
pub struct TestRedis {
    server: RedisServer,
    pub port: u16,
}

impl TestRedis {
    pub fn start() -> Self {
        Self::start_with(&[])
    }
    /// Extra `redis-server` arguments, e.g. `["--appendonly", "yes"]`.
    pub fn start_with(extra: &[&str]) -> Self {
        Self::from(RedisServer::start(extra).expect("redis-server starts"))
    }
    pub fn start_cluster_node() -> Self {
        Self::from(RedisServer::cluster_node().expect("a cluster node starts"))
    }
    /// A port nothing listens on yet (for "Redis down at boot").
    pub fn unstarted() -> Self {
        Self::from(RedisServer::unstarted().expect("a data directory"))
    }
    fn from(server: RedisServer) -> Self {
        TestRedis {
            port: server.port(),
            server,
        }
    }
    pub fn spawn(&mut self) {
        self.server.spawn().expect("redis-server starts");
    }
    pub fn kill(&mut self) {
        self.server.kill();
    }
    pub fn url(&self) -> String {
        self.server.url()
    }
    pub fn sync_conn(&self) -> redis::Connection {
        redis::Client::open(self.url()).unwrap().get_connection().unwrap()
    }
    pub async fn conn(&self) -> redis::aio::MultiplexedConnection {
        redis::Client::open(self.url())
            .unwrap()
            .get_multiplexed_async_connection()
            .await
            .unwrap()
    }
}

/// A config for a test server with short intervals, so tests run fast.
pub trait TestConfig {
    fn config(&self) -> Config;
}

impl TestConfig for TestRedis {
    fn config(&self) -> Config {
        // Set COGWORKER_TEST_LOG=1 to see the engine's log while debugging.
        if std::env::var_os("COGWORKER_TEST_LOG").is_some() {
            cogworker::logging::init(false);
        }
        let mut c = Config::default();
        c.set_redis_url(&self.url()).unwrap();
        c.set_heartbeat_interval(0.5).unwrap();
        c.set_scheduler_poll_interval(0.2).unwrap();
        c.set_orphan_check_interval(0.5).unwrap();
        c.set_shutdown_timeout(5.0).unwrap();
        // Longer than any wait in the suite: idle workers run on wake-ups
        // alone, so a path that pushes without publishing one times out
        // (tests of the fallback poll set their own).
        c.set_fetch_idle_max_interval(30.0).unwrap();
        c
    }
}

/// Waits until `counter` (a [`counting_worker`]'s) is exactly `n`.
pub async fn wait_for_count(what: &str, counter: &Arc<AtomicUsize>, n: usize, limit: Duration) {
    wait_until(what, limit, || {
        let counter = counter.clone();
        async move { counter.load(Ordering::SeqCst) == n }
    })
    .await;
}

/// Waits until a worker process has registered in `api`'s namespace.
pub async fn wait_registered(api: &cogworker::Api) {
    wait_until("a worker registered", Duration::from_secs(10), || {
        let api = api.clone();
        async move { !api.processes().await.unwrap().is_empty() }
    })
    .await;
}

/// Waits until `api`'s namespace counts exactly `n` jobs processed: a
/// handler's own counter reaches its number before the job's
/// acknowledgement counts it, so a test reads the counts after this.
pub async fn wait_processed(what: &str, api: &cogworker::Api, n: u64, limit: Duration) {
    wait_until(what, limit, || {
        let api = api.clone();
        async move { api.stats().await.unwrap().processed == n }
    })
    .await;
}

/// Polls `check` until it returns true, failing the test after `limit`.
pub async fn wait_until<F, Fut>(what: &str, limit: Duration, mut check: F)
where
    F: FnMut() -> Fut,
    Fut: Future<Output = bool>,
{
    let deadline = Instant::now() + limit;
    while !check().await {
        assert!(
            Instant::now() < deadline,
            "timed out after {limit:?} waiting for: {what}"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// Until the master behind `master` lists the replica listening on
/// `replica_port` as online (its first acknowledgement came): a `WAIT`
/// counts it from then on.
pub async fn wait_replica_online(master: &redis::aio::MultiplexedConnection, replica_port: u16) {
    wait_until("the replica is in sync", Duration::from_secs(20), || {
        let mut conn = master.clone();
        async move {
            let info: String = redis::cmd("INFO")
                .arg("replication")
                .query_async(&mut conn)
                .await
                .unwrap();
            info.contains(&format!("port={replica_port},state=online"))
        }
    })
    .await;
}

pub async fn llen(conn: &mut redis::aio::MultiplexedConnection, key: &str) -> usize {
    conn.llen(key).await.unwrap()
}

/// The first argument (a number) of each job waiting on list `key`, head
/// (newest) first.
pub async fn first_args_on(conn: &mut redis::aio::MultiplexedConnection, key: &str) -> Vec<i64> {
    let waiting: Vec<String> = conn.lrange(key, 0, -1).await.unwrap();
    waiting
        .iter()
        .map(|raw| {
            serde_json::from_str::<serde_json::Value>(raw).unwrap()["args"][0]
                .as_i64()
                .unwrap()
        })
        .collect()
}

/// Jobs held in progress under `key`: a hash (this release) or a list (an
/// earlier one, as recovery tests plant).
pub async fn held(conn: &mut redis::aio::MultiplexedConnection, key: &str) -> usize {
    let kind: String = conn.key_type(key).await.unwrap();
    match kind.as_str() {
        "hash" => conn.hlen(key).await.unwrap(),
        "list" => conn.llen(key).await.unwrap(),
        _ => 0,
    }
}

/// How many times the server has run `commands` so far (summed; inside
/// scripts too), from `INFO commandstats`.
pub async fn command_calls(conn: &mut redis::aio::MultiplexedConnection, commands: &[&str]) -> u64 {
    let info: String = redis::cmd("INFO").arg("commandstats").query_async(conn).await.unwrap();
    info.lines()
        .filter_map(|l| {
            let (name, stats) = l.strip_prefix("cmdstat_")?.split_once(':')?;
            commands.contains(&name).then_some(stats)
        })
        .filter_map(|stats| stats.split("calls=").nth(1)?.split(',').next()?.parse::<u64>().ok())
        .sum()
}

pub async fn zcard(conn: &mut redis::aio::MultiplexedConnection, key: &str) -> usize {
    conn.zcard(key).await.unwrap()
}

pub async fn zmembers(conn: &mut redis::aio::MultiplexedConnection, key: &str) -> Vec<Vec<u8>> {
    conn.zrange(key, 0, -1).await.unwrap()
}

/// The `test_worker` example binary (`scripts/test` builds it first).
pub fn test_worker_bin() -> PathBuf {
    let exe = std::env::current_exe().unwrap();
    let target = exe.parent().unwrap().parent().unwrap();
    let bin = target.join("examples").join("test_worker");
    assert!(
        bin.exists(),
        "{} missing: run `cargo build --examples` first (scripts/test does)",
        bin.display()
    );
    bin
}

/// Starts the test worker process against `url`.
pub fn spawn_worker(url: &str, namespace: &str, extra_env: &[(&str, &str)]) -> Child {
    let mut cmd = Command::new(test_worker_bin());
    cmd.env("COGWORKER_REDIS_URL", url)
        .env("TEST_NAMESPACE", namespace)
        .stdin(Stdio::null());
    for (k, v) in extra_env {
        cmd.env(k, v);
    }
    cmd.spawn().unwrap()
}

pub fn kill9(child: &mut Child) {
    unsafe {
        libc_kill(child.id() as i32, 9);
    }
    let _ = child.wait();
}

pub fn send_signal(child: &Child, signal: i32) {
    unsafe {
        libc_kill(child.id() as i32, signal);
    }
}

extern "C" {
    #[link_name = "kill"]
    fn libc_kill(pid: i32, sig: i32) -> i32;
}

/// Waits for a child to exit within `limit`; returns its exit status.
pub fn wait_exit(child: &mut Child, limit: Duration) -> std::process::ExitStatus {
    let deadline = Instant::now() + limit;
    loop {
        if let Some(status) = child.try_wait().unwrap() {
            return status;
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            panic!("process {} did not exit within {limit:?}", child.id());
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// A worker whose handler for `class` only counts the jobs it ran.
pub fn counting_worker(config: Config, class: &str) -> (Worker, Arc<AtomicUsize>) {
    let ran = Arc::new(AtomicUsize::new(0));
    let counter = ran.clone();
    let worker = Worker::builder(config)
        .register(class, move |_job| {
            let counter = counter.clone();
            async move {
                counter.fetch_add(1, Ordering::SeqCst);
                Ok(())
            }
        })
        .build()
        .unwrap();
    (worker, ran)
}

/// A worker whose slots are host threads (as Python's and Ruby's are),
/// running only `classes`.
pub fn host_worker(config: Config, classes: &[&str]) -> Worker {
    Worker::builder(config)
        .host_slots()
        .host_classes(classes.iter().copied())
        .build()
        .unwrap()
}

/// A worker whose handler for `class` waits until the returned `Notify`
/// is notified (`notify_waiters` releases every job running then).
pub fn gated_worker(config: Config, class: &str) -> (Worker, Arc<tokio::sync::Notify>) {
    let release = Arc::new(tokio::sync::Notify::new());
    let gate = release.clone();
    let worker = Worker::builder(config)
        .register(class, move |_job| {
            let gate = gate.clone();
            async move {
                gate.notified().await;
                Ok(())
            }
        })
        .build()
        .unwrap();
    (worker, release)
}

/// How many checks the rate limiter `name` refused (field `over`).
pub async fn limiter_refusals(redis: &TestRedis, name: &str) -> i64 {
    let mut conn = redis.conn().await;
    redis::cmd("HGET")
        .arg(format!("cogworker:limiter:{name}"))
        .arg("over")
        .query_async::<Option<i64>>(&mut conn)
        .await
        .unwrap()
        .unwrap_or(0)
}

/// Waits until `ran`, a record of runs (a [`recording_worker`]'s, or the
/// cursors `Resume` began with), holds `n` of them.
pub async fn wait_ran<T: Send + 'static>(ran: &Arc<Mutex<Vec<T>>>, n: usize) {
    let ran = ran.clone();
    wait_until(&format!("{n} jobs ran"), Duration::from_secs(15), move || {
        let ran = ran.clone();
        async move { ran.lock().unwrap().len() >= n }
    })
    .await;
}

/// `payload` held in progress (entry `field`) by the process `ghost`,
/// whose last beat was long ago: recovery's to give back.
pub async fn leave_orphan(conn: &mut redis::aio::MultiplexedConnection, field: &str, payload: &str) {
    let _: () = redis::pipe()
        .hset("cogworker:in_progress:ghost", field, payload)
        .sadd("cogworker:in_progress_identities", "ghost")
        .hset("cogworker:last_beat", "ghost", 1)
        .query_async(conn)
        .await
        .unwrap();
}

/// A worker with one slot that records the first arg of each `Step` it
/// runs, each taking `pause`.
pub fn recording_worker(config: Config, pause: Duration) -> (Worker, Arc<Mutex<Vec<i64>>>) {
    let ran = Arc::new(Mutex::new(Vec::new()));
    let seen = ran.clone();
    let mut config = config;
    config.set_concurrency(1).unwrap();
    let worker = Worker::builder(config)
        .register("Step", move |job| {
            let seen = seen.clone();
            async move {
                seen.lock().unwrap().push(job.args_slice()[0].as_i64().unwrap());
                tokio::time::sleep(pause).await;
                Ok(())
            }
        })
        .build()
        .unwrap();
    (worker, ran)
}

/// A host with no interpreter lock, for tests of the host loops: it just
/// blocks.
pub struct PlainWait;

impl cogworker::host::HostWait for PlainWait {
    type Error = String;
    fn wait<T: Send>(
        &mut self,
        slice: Duration,
        mut poll: impl FnMut(Duration) -> Option<T> + Send,
    ) -> Result<Option<T>, String> {
        Ok(poll(slice))
    }
}

/// A worker whose `Long` handler counts its start, sleeps 30 s and counts
/// its end: (the worker, started, finished), for cancellation tests.
pub fn long_worker(config: Config) -> (Worker, Arc<AtomicUsize>, Arc<AtomicUsize>) {
    let (started, finished) = (Arc::new(AtomicUsize::new(0)), Arc::new(AtomicUsize::new(0)));
    let (s, f) = (started.clone(), finished.clone());
    let worker = Worker::builder(config)
        .register("Long", move |_job| {
            let (s, f) = (s.clone(), f.clone());
            async move {
                s.fetch_add(1, Ordering::SeqCst);
                tokio::time::sleep(Duration::from_secs(30)).await;
                f.fetch_add(1, Ordering::SeqCst);
                Ok(())
            }
        })
        .build()
        .unwrap();
    (worker, started, finished)
}

/// Waits up to `limit` until `jid`, cancelled while it ran, was stopped
/// and filed by its worker (its kept result says so).
pub async fn wait_stopped_and_filed(api: &cogworker::Api, jid: &str, limit: Duration) {
    let (api, jid) = (api.clone(), jid.to_string());
    wait_until("stopped and filed", limit, move || {
        let (api, jid) = (api.clone(), jid.clone());
        async move {
            api.result(&jid)
                .await
                .unwrap()
                .is_some_and(|record| record["error_message"] == "cancelled while it ran; stopped")
        }
    })
    .await;
}

/// Every event of a watch of `jid` (see `Api::watch`), which must end
/// within `limit`, and the percents of its progress reports, in order.
pub async fn watched(api: &cogworker::Api, jid: &str, limit: Duration) -> (Vec<cogworker::WatchEvent>, Vec<f64>) {
    use futures_util::StreamExt;
    let watch = api.watch(jid).await.unwrap();
    let events: Vec<cogworker::WatchEvent> = tokio::time::timeout(limit, watch.into_stream().collect::<Vec<_>>())
        .await
        .expect("the watch ends with the job")
        .into_iter()
        .map(Result::unwrap)
        .collect();
    let percents = events
        .iter()
        .filter_map(|event| match event {
            cogworker::WatchEvent::Progress(report) => report["percent"].as_f64(),
            cogworker::WatchEvent::Finished(_) => None,
        })
        .collect();
    (events, percents)
}

/// A worker whose handler for `class` hands its running job's handle to
/// `report` (long jobs: progress, checkpoints), then waits until the
/// returned `Notify` is notified (`notify_waiters` ends every such job).
pub fn reporting_worker(
    config: Config,
    class: &str,
    report: impl Fn(&cogworker::Running) + Send + Sync + 'static,
) -> (Worker, Arc<tokio::sync::Notify>) {
    let release = Arc::new(tokio::sync::Notify::new());
    let gate = release.clone();
    let report = Arc::new(report);
    let worker = Worker::builder(config)
        .register(class, move |_job| {
            let (gate, report) = (gate.clone(), report.clone());
            async move {
                report(&cogworker::Running::current().expect("run by a worker"));
                gate.notified().await;
                Ok(())
            }
        })
        .build()
        .unwrap();
    (worker, release)
}

/// The cursors each run of `Resume` began with, in order.
pub type ResumeStarts = Arc<Mutex<Vec<Option<serde_json::Value>>>>;

/// A worker whose `Resume` handler records the cursor it began with,
/// then does what its first argument says: `"fail"` reports 50%,
/// checkpoints 5 and fails on its first run (retried at once); `"interrupt"` checkpoints 7 and interrupts on
/// its first run; `"until_stopping"` checkpoints a count until `stopping`,
/// then interrupts. Later runs report 100% and succeed.
pub fn resuming_worker(config: Config) -> (Worker, ResumeStarts) {
    let starts: ResumeStarts = Default::default();
    let seen = starts.clone();
    let worker = Worker::builder(config)
        .register("Resume", move |job| {
            let seen = seen.clone();
            async move {
                let running = cogworker::Running::current().expect("a worker runs it");
                assert_eq!(running.jid(), job.jid_str());
                let cursor = running.cursor();
                assert_eq!(
                    cursor.as_ref(),
                    job.cursor(),
                    "the job carries the cursor it resumes from"
                );
                let first = cursor.is_none();
                seen.lock().unwrap().push(cursor);
                let checkpoint = |n: i64| running.checkpoint(serde_json::json!({"at": n})).unwrap();
                match job.args_slice()[0].as_str().unwrap() {
                    "fail" if first => {
                        running.progress(Some(50.0), Some("half"), None).unwrap();
                        checkpoint(5);
                        return Err(cogworker::Failure::new("Flaky", "fails once"));
                    }
                    "interrupt" if first => {
                        checkpoint(7);
                        running.interrupt();
                    }
                    "overrun" if first => {
                        checkpoint(3);
                        // Past its time limit: stopped where it waits.
                        tokio::time::sleep(Duration::from_secs(30)).await;
                    }
                    "until_stopping" if first => {
                        let mut n = 0;
                        while !running.stopping() {
                            n += 1;
                            checkpoint(n);
                            tokio::time::sleep(Duration::from_millis(5)).await;
                        }
                        running.interrupt();
                    }
                    _ => {}
                }
                if !first {
                    running.progress(Some(100.0), Some("done"), None).unwrap();
                }
                Ok(())
            }
        })
        .register_blocking("BlockingResume", |_job| {
            // A blocking handler finds its handle on its thread.
            let running = cogworker::Running::current().expect("a worker runs it");
            if running.cursor().is_none() {
                running.checkpoint(serde_json::json!("blocking")).unwrap();
                running.interrupt();
            }
            Ok(())
        })
        .retry_in("Resume", |_, _| Some(0.0))
        .build()
        .unwrap();
    (worker, starts)
}

/// Waits until `Resume` has begun `n` runs; the cursors each began with.
pub async fn wait_starts(starts: &ResumeStarts, n: usize) -> Vec<Option<serde_json::Value>> {
    wait_ran(starts, n).await;
    starts.lock().unwrap().clone()
}
