//! Push → fetch → run → acknowledge, for both fetch modes; bulk and
//! scheduled pushes; validation; queue order and pausing.

mod common;

use cogworker::{Api, Client, Config, FetchMode, Job, JobSet, Worker};
use common::*;
use redis::AsyncCommands;
use serde_json::json;
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex};
use std::time::Duration;

type Seen = Arc<Mutex<Vec<Job>>>;

/// A worker whose `Record` handler remembers every job it ran.
fn recording_worker(config: Config) -> (Worker, Seen) {
    let seen: Seen = Arc::default();
    let sink = seen.clone();
    let worker = Worker::builder(config)
        .register("Record", move |job| {
            let sink = sink.clone();
            async move {
                sink.lock().unwrap().push(job);
                Ok(())
            }
        })
        .build()
        .unwrap();
    (worker, seen)
}

async fn ran(seen: &Seen, n: usize) {
    let seen = seen.clone();
    wait_until(&format!("{n} jobs ran"), Duration::from_secs(20), move || {
        let seen = seen.clone();
        async move { seen.lock().unwrap().len() >= n }
    })
    .await;
}

async fn push_and_run(fetch: FetchMode) {
    let redis = TestRedis::start();
    let mut config = redis.config();
    config.set_fetch(fetch);
    let client = Client::new(&config).unwrap();
    let (worker, seen) = recording_worker(config);
    let handle = worker.handle();
    let running = tokio::spawn(worker.run());

    let args = vec![
        json!("héllo ✓"),
        serde_json::from_str::<serde_json::Value>("123456789012345678901234567890").unwrap(),
        json!({"nested": [1, null, {"x": true}]}),
        json!(null),
    ];
    let jid = client
        .push(Job::new("Record").args(args.clone()).field("x_custom", json!("kept")))
        .await
        .unwrap()
        .unwrap();
    let bulk: Vec<Job> = (0..200).map(|i| Job::new("Record").args([json!(i)])).collect();
    let bulk_jids = client
        .push_bulk(bulk)
        .await
        .unwrap()
        .into_iter()
        .flatten()
        .collect::<Vec<String>>();
    assert_eq!(bulk_jids.len(), 200);
    ran(&seen, 201).await;

    let jobs = seen.lock().unwrap().clone();
    let first = jobs.iter().find(|j| j.jid_str() == jid).unwrap();
    assert_eq!(first.args_slice(), &args[..], "args round-trip exactly");
    assert_eq!(first.str_field("x_custom"), Some("kept"), "unknown fields kept");
    assert!(first.get("enqueued_at").is_some());

    let api = Api::new(client.clone());
    wait_processed("processed counted", &api, 201, Duration::from_secs(5)).await;
    assert_eq!(api.stats_today().await.unwrap().processed, 201);
    assert!(!api.history(10).await.unwrap().is_empty());

    handle.stop();
    tokio::time::timeout(Duration::from_secs(10), running)
        .await
        .unwrap()
        .unwrap()
        .unwrap();
    let mut conn = redis.conn().await;
    let keys = client.keys();
    assert_eq!(llen(&mut conn, &keys.queue("default")).await, 0);
    assert_eq!(held(&mut conn, &keys.in_progress(handle.identity())).await, 0);
    let processes: Vec<String> = conn.smembers(keys.processes()).await.unwrap();
    assert!(processes.is_empty(), "presence removed at stop: {processes:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reliable_fetch_runs_pushed_jobs() {
    push_and_run(FetchMode::Reliable).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn basic_fetch_runs_pushed_jobs() {
    push_and_run(FetchMode::Basic).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn invalid_jobs_are_refused_and_nothing_is_written() {
    let redis = TestRedis::start();
    let client = Client::new(&redis.config()).unwrap();
    let bad = Job::from_value(json!({"class": "A", "args": "nope"}));
    assert!(bad.unwrap_err().to_string().contains("args"));
    let jobs = vec![Job::new("A"), Job::new("").args([json!(1)])];
    let err = client.push_bulk(jobs).await.unwrap_err().to_string();
    assert!(err.contains("jobs[1].class"), "{err}");
    let mut conn = redis.conn().await;
    let keys: Vec<String> = conn.keys("*").await.unwrap();
    assert!(keys.is_empty(), "nothing written: {keys:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn scheduled_jobs_run_on_time() {
    let redis = TestRedis::start();
    let config = redis.config();
    let client = Client::new(&config).unwrap();
    let (worker, seen) = recording_worker(config);
    let handle = worker.handle();
    let running = tokio::spawn(worker.run());
    let due = cogworker::now() + 1.0;
    client.push(Job::new("Record").at(due)).await.unwrap();
    let api = Api::new(client.clone());
    assert_eq!(api.set_size(JobSet::Scheduled).await.unwrap(), 1);
    ran(&seen, 1).await;
    let finished = cogworker::now();
    assert!(finished >= due, "not early");
    assert!(finished < due + 2.0, "late by {:.2}s", finished - due);
    let job = seen.lock().unwrap()[0].clone();
    let enqueued = job.get("enqueued_at").unwrap().as_f64().unwrap();
    assert!(enqueued >= due - 0.01, "enqueued_at re-stamped when moved");
    assert!(job.get("at").is_none());
    handle.stop();
    running.await.unwrap().unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn strict_order_and_paused_queues() {
    let redis = TestRedis::start();
    let mut config = redis.config();
    config.set_queues_strict(&["high", "low"]).unwrap();
    config.set_concurrency(1).unwrap();
    let client = Client::new(&config).unwrap();
    let api = Api::new(client.clone());
    api.pause_queue("low").await.unwrap();
    let mut jobs: Vec<Job> = (0..5)
        .map(|i| Job::new("Record").queue("low").args([json!(i)]))
        .collect();
    jobs.extend((0..5).map(|i| Job::new("Record").queue("high").args([json!(i)])));
    client.push_bulk(jobs).await.unwrap();

    let (worker, seen) = recording_worker(config);
    let handle = worker.handle();
    let running = tokio::spawn(worker.run());
    ran(&seen, 5).await;
    tokio::time::sleep(Duration::from_millis(700)).await;
    assert_eq!(seen.lock().unwrap().len(), 5, "paused queue untouched");
    assert!(seen.lock().unwrap().iter().all(|j| j.queue_name() == "high"));
    assert!(api.queue("low").await.unwrap().paused);
    api.unpause_queue("low").await.unwrap();
    ran(&seen, 10).await;
    let order: Vec<i64> = seen.lock().unwrap()[5..]
        .iter()
        .map(|j| j.args_slice()[0].as_i64().unwrap())
        .collect();
    assert_eq!(order, vec![0, 1, 2, 3, 4], "FIFO within a queue");
    handle.stop();
    running.await.unwrap().unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn idle_worker_picks_up_quickly() {
    let redis = TestRedis::start();
    let mut config = redis.config();
    config.set_queues(&["a", "b,2"]).unwrap();
    let client = Client::new(&config).unwrap();
    let (worker, count) = counting_worker(config, "Tick");
    let handle = worker.handle();
    let running = tokio::spawn(worker.run());
    tokio::time::sleep(Duration::from_millis(300)).await;
    // Both queues are waited on at once: each push is taken without polling.
    for (i, queue) in ["a", "b", "a", "b"].iter().enumerate() {
        let start = std::time::Instant::now();
        client.push(Job::new("Tick").queue(*queue)).await.unwrap();
        let c = count.clone();
        wait_until("pickup", Duration::from_secs(5), move || {
            let c = c.clone();
            async move { c.load(Ordering::SeqCst) > i }
        })
        .await;
        assert!(
            start.elapsed() < Duration::from_millis(250),
            "pickup took {:?}",
            start.elapsed()
        );
    }
    handle.stop();
    running.await.unwrap().unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn password_protected_redis() {
    let redis = TestRedis::start_with(&["--requirepass", "s3cret"]);
    let mut config = redis.config();
    config
        .set_redis_url(&format!("redis://:s3cret@127.0.0.1:{}/0", redis.port))
        .unwrap();
    let client = Client::new(&config).unwrap();
    let (worker, seen) = recording_worker(config.clone());
    let handle = worker.handle();
    let running = tokio::spawn(worker.run());
    client.push(Job::new("Record")).await.unwrap();
    ran(&seen, 1).await;
    handle.stop();
    running.await.unwrap().unwrap();

    let mut wrong = config.clone();
    wrong
        .set_redis_url(&format!("redis://:nope@127.0.0.1:{}/0", redis.port))
        .unwrap();
    let err = Client::new(&wrong).unwrap().push(Job::new("Record")).await.unwrap_err();
    // Naming the server, not the password.
    assert!(matches!(err, cogworker::Error::RedisAt { .. }), "{err}");
    assert!(
        err.to_string().contains("WRONGPASS") && !err.to_string().contains("nope"),
        "{err}"
    );
}
