//! Fault injection with real processes and a real Redis: `kill -9` of a
//! worker mid-job, Redis killed and restarted mid-run, `SCRIPT FLUSH`
//! mid-run, a server without `LMOVE`. Every job is accounted for.

mod common;

use cogworker::{Api, Client, Job, Worker};
use common::*;
use redis::AsyncCommands;
use serde_json::json;
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

const NS: &str = "cogworker";

async fn ran_jids(conn: &mut redis::aio::MultiplexedConnection) -> Vec<String> {
    conn.lrange(format!("{NS}:test:ran"), 0, -1).await.unwrap()
}

async fn only_process(conn: &mut redis::aio::MultiplexedConnection) -> String {
    let c = conn.clone();
    wait_until("a process registered", Duration::from_secs(20), move || {
        let mut c = c.clone();
        async move { c.scard::<_, usize>(format!("{NS}:processes")).await.unwrap() == 1 }
    })
    .await;
    let members: Vec<String> = conn.smembers(format!("{NS}:processes")).await.unwrap();
    members[0].clone()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn killed_workers_jobs_are_recovered_by_another_process() {
    let redis = TestRedis::start();
    let url = redis.url();
    let mut conn = redis.conn().await;
    let client = Client::new(&redis.config()).unwrap();

    let mut a = spawn_worker(&url, NS, &[("TEST_CONCURRENCY", "3")]);
    let a_id = only_process(&mut conn).await;
    let jids = client
        .push_bulk((0..3).map(|_| Job::new("Sleep").args([json!(30)])).collect())
        .await
        .unwrap()
        .into_iter()
        .flatten()
        .collect::<Vec<String>>();
    let c = conn.clone();
    let workers_key = format!("{NS}:workers:{a_id}");
    wait_until("A runs all three", Duration::from_secs(10), move || {
        let (mut c, k) = (c.clone(), workers_key.clone());
        async move { c.hlen::<_, usize>(k).await.unwrap() == 3 }
    })
    .await;

    // B starts while A is alive: it must leave A's jobs alone.
    let mut b = spawn_worker(
        &url,
        NS,
        &[
            ("TEST_ORPHAN_THRESHOLD", "2"),
            ("TEST_SLEEP_SCALE", "0"),
            ("TEST_CONCURRENCY", "3"),
        ],
    );
    tokio::time::sleep(Duration::from_secs(3)).await;
    assert!(ran_jids(&mut conn).await.is_empty(), "a live process keeps its jobs");
    assert_eq!(held(&mut conn, &format!("{NS}:in_progress:{a_id}")).await, 3);

    kill9(&mut a);
    let c = conn.clone();
    let expected = jids.clone();
    wait_until("B ran A's jobs", Duration::from_secs(30), move || {
        let (mut c, expected) = (c.clone(), expected.clone());
        async move {
            let ran = ran_jids(&mut c).await;
            expected.iter().all(|j| ran.contains(j))
        }
    })
    .await;
    let ran = ran_jids(&mut conn).await;
    assert_eq!(ran.len(), 3, "each ran exactly once after recovery: {ran:?}");
    assert_eq!(held(&mut conn, &format!("{NS}:in_progress:{a_id}")).await, 0);
    let identities: Vec<String> = conn.smembers(format!("{NS}:in_progress_identities")).await.unwrap();
    assert!(!identities.contains(&a_id), "dead identity forgotten");

    send_signal(&b, 15);
    let status = wait_exit(&mut b, Duration::from_secs(15));
    assert!(status.success(), "TERM exits 0: {status:?}");
    let processes: Vec<String> = conn.smembers(format!("{NS}:processes")).await.unwrap();
    assert_eq!(processes, vec![a_id], "B unregistered; A's entry lapses with its TTL");
}

/// In-process worker counting runs per jid.
fn per_jid_worker(config: cogworker::Config) -> (Worker, Arc<Mutex<HashMap<String, usize>>>) {
    let runs: Arc<Mutex<HashMap<String, usize>>> = Arc::default();
    let r = runs.clone();
    let worker = Worker::builder(config)
        .register("Count", move |job| {
            let r = r.clone();
            async move {
                tokio::time::sleep(Duration::from_millis(1)).await;
                *r.lock().unwrap().entry(job.jid_str().to_string()).or_default() += 1;
                Ok(())
            }
        })
        .build()
        .unwrap();
    (worker, runs)
}

type Runs = Arc<Mutex<HashMap<String, usize>>>;

/// Pushes 50 jobs and runs a worker until each has run; the worker goes on.
async fn fifty_jobs_run(
    config: cogworker::Config,
) -> (
    Client,
    cogworker::WorkerHandle,
    tokio::task::JoinHandle<cogworker::Result<()>>,
    Runs,
) {
    let client = Client::new(&config).unwrap();
    let jids = push_counts(&client, 50).await;
    let (worker, runs) = per_jid_worker(config);
    let handle = worker.handle();
    let running = tokio::spawn(worker.run());
    all_ran(&runs, &jids, Duration::from_secs(20)).await;
    (client, handle, running, runs)
}

/// Pushes `n` `Count` jobs in one call; their jids.
async fn push_counts(client: &Client, n: usize) -> Vec<String> {
    client
        .push_bulk((0..n).map(|i| Job::new("Count").args([json!(i)])).collect())
        .await
        .unwrap()
        .into_iter()
        .flatten()
        .collect()
}

async fn all_ran(runs: &Arc<Mutex<HashMap<String, usize>>>, jids: &[String], limit: Duration) {
    let (r, expected) = (runs.clone(), jids.to_vec());
    wait_until(&format!("all {} jobs ran", jids.len()), limit, move || {
        let (r, expected) = (r.clone(), expected.clone());
        async move {
            let r = r.lock().unwrap();
            expected.iter().all(|j| r.contains_key(j))
        }
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn redis_restart_mid_run_loses_nothing() {
    let mut redis = TestRedis::start_with(&["--appendonly", "yes", "--appendfsync", "always"]);
    let config = redis.config();
    let client = Client::new(&config).unwrap();
    let jids = client
        .push_bulk((0..3000).map(|i| Job::new("Count").args([json!(i)])).collect())
        .await
        .unwrap()
        .into_iter()
        .flatten()
        .collect::<Vec<String>>();
    let (worker, runs) = per_jid_worker(config.clone());
    let handle = worker.handle();
    let running = tokio::spawn(worker.run());
    let r = runs.clone();
    wait_until("a third done", Duration::from_secs(30), move || {
        let r = r.clone();
        async move { r.lock().unwrap().len() >= 1000 }
    })
    .await;
    redis.kill();
    tokio::time::sleep(Duration::from_secs(1)).await;
    redis.spawn();
    all_ran(&runs, &jids, Duration::from_secs(60)).await;
    let api = Api::new(Client::new(&config).unwrap());
    let api2 = api.clone();
    wait_until("queue drained", Duration::from_secs(10), move || {
        let api = api2.clone();
        async move { api.queue("default").await.map(|q| q.size == 0).unwrap_or(false) }
    })
    .await;
    handle.stop();
    tokio::time::timeout(Duration::from_secs(15), running)
        .await
        .unwrap()
        .unwrap()
        .unwrap();
    let mut conn = redis.conn().await;
    assert_eq!(held(&mut conn, &client.keys().in_progress(handle.identity())).await, 0);
    let duplicates = runs.lock().unwrap().values().filter(|n| **n > 1).count();
    // Only jobs that finished while Redis was down can run twice.
    assert!(duplicates <= 20, "{duplicates} duplicates");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn script_flush_mid_run_is_survived() {
    let redis = TestRedis::start();
    let config = redis.config();
    let client = Client::new(&config).unwrap();
    let jids = client
        .push_bulk((0..2000).map(|i| Job::new("Count").args([json!(i)])).collect())
        .await
        .unwrap()
        .into_iter()
        .flatten()
        .collect::<Vec<String>>();
    let (worker, runs) = per_jid_worker(config);
    let handle = worker.handle();
    let running = tokio::spawn(worker.run());
    let mut conn = redis.conn().await;
    let flusher = tokio::spawn(async move {
        for _ in 0..100 {
            let _: () = redis::cmd("SCRIPT").arg("FLUSH").query_async(&mut conn).await.unwrap();
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    });
    all_ran(&runs, &jids, Duration::from_secs(60)).await;
    flusher.await.unwrap();
    let api = Api::new(client.clone());
    wait_processed("all acknowledged", &api, 2000, Duration::from_secs(10)).await;
    assert!(runs.lock().unwrap().values().all(|n| *n == 1), "no duplicates");
    handle.stop();
    running.await.unwrap().unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_without_lmove_still_fetches_reliably() {
    let redis = TestRedis::start_with(&["--rename-command", "LMOVE", "", "--rename-command", "BLMOVE", ""]);
    let config = redis.config();
    let (client, handle, running, _) = fifty_jobs_run(config).await;
    let api = Api::new(client.clone());
    let api2 = api.clone();
    wait_until("reliable fetch published", Duration::from_secs(5), move || {
        let api = api2.clone();
        async move {
            api.processes()
                .await
                .unwrap()
                .iter()
                .all(|p| p.info["fetch"] == json!("reliable"))
        }
    })
    .await;
    handle.stop();
    running.await.unwrap().unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn client_kill_is_survived_and_lost_fetch_replies_are_reconciled() {
    let redis = TestRedis::start();
    let config = redis.config();
    let client = Client::new(&config).unwrap();
    let (worker, runs) = per_jid_worker(config);
    let handle = worker.handle();
    let running = tokio::spawn(worker.run());
    let mut conn = redis.conn().await;
    let jids = client
        .push_bulk((0..500).map(|i| Job::new("Count").args([json!(i)])).collect())
        .await
        .unwrap()
        .into_iter()
        .flatten()
        .collect::<Vec<String>>();
    all_ran(&runs, &jids, Duration::from_secs(20)).await;
    // A job the server recorded in this process's in-progress hash whose
    // reply never arrived (as when a connection dies mid-call).
    let orphan = Job::new("Count").jid("0123456789abcdef01234567");
    let _: i64 = conn
        .hset(
            client.keys().in_progress(handle.identity()),
            "planted",
            orphan.to_json(),
        )
        .await
        .unwrap();
    // Every normal connection dies: the worker and the client carry on.
    let killed: i64 = redis::cmd("CLIENT")
        .arg("KILL")
        .arg("TYPE")
        .arg("normal")
        .query_async(&mut conn)
        .await
        .unwrap_or(0);
    assert!(killed > 0);
    let mut conn = redis.conn().await;
    let more = client
        .push_bulk((0..500).map(|i| Job::new("Count").args([json!(i)])).collect())
        .await
        .unwrap()
        .into_iter()
        .flatten()
        .collect::<Vec<String>>();
    all_ran(&runs, &more, Duration::from_secs(20)).await;
    // A fetch whose reply never arrives: the idle worker is woken, and the
    // server holds every command past the client's 10 s timeout, so its
    // fetch ends with an unknown outcome. (The idle wait holds no
    // connection the kill above could break: the wait is on pub/sub.)
    let _: redis::RedisResult<()> = redis::pipe()
        .publish(client.keys().wake(), "default")
        .ignore()
        .cmd("CLIENT")
        .arg("PAUSE")
        .arg(11_000)
        .arg("ALL")
        .ignore()
        .query_async(&mut conn)
        .await;
    all_ran(
        &runs,
        &["0123456789abcdef01234567".to_string()],
        Duration::from_secs(30),
    )
    .await;
    handle.stop();
    running.await.unwrap().unwrap();
    assert_eq!(held(&mut conn, &client.keys().in_progress(handle.identity())).await, 0);
}

/// Basic fetch takes a batch per `BLMPOP`; a server without it (Redis 6.2)
/// is served one `BRPOP` per job, and every job runs.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn basic_fetch_without_blmpop_takes_one_job_per_brpop() {
    let redis = TestRedis::start_with(&["--rename-command", "BLMPOP", ""]);
    let mut config = redis.config();
    config.set_fetch(cogworker::FetchMode::Basic);
    let (_, handle, running, runs) = fifty_jobs_run(config).await;
    handle.stop();
    running.await.unwrap().unwrap();
    let once = runs.lock().unwrap().values().all(|n| *n == 1);
    assert!(once, "each job ran exactly once");
}
