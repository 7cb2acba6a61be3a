//! Quiet, stop within and past the shutdown timeout, remote signals, Redis
//! down at boot, the process registry, and the host-slot API the Python and
//! Ruby layers use.

mod common;

use cogworker::{Api, Client, Config, FetchMode, Job, JobSet, NextJob, Outcome, Worker, WorkerHandle};
use common::*;
use redis::AsyncCommands;
use serde_json::json;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// A worker whose `Sleep [secs]` handler counts completed runs.
fn sleeping_worker(config: Config) -> (Worker, Arc<AtomicUsize>) {
    let done = Arc::new(AtomicUsize::new(0));
    let d = done.clone();
    let worker = Worker::builder(config)
        .register("Sleep", move |job| {
            let d = d.clone();
            async move {
                let secs = job.args_slice().first().and_then(|v| v.as_f64()).unwrap_or(0.0);
                tokio::time::sleep(Duration::from_secs_f64(secs)).await;
                d.fetch_add(1, Ordering::SeqCst);
                Ok(())
            }
        })
        .build()
        .unwrap();
    (worker, done)
}

async fn wait_busy(handle: &WorkerHandle, n: usize) {
    let h = handle.clone();
    wait_until(&format!("{n} busy"), Duration::from_secs(10), move || {
        let h = h.clone();
        async move { h.busy().len() >= n }
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stop_waits_for_running_jobs_to_finish() {
    let redis = TestRedis::start();
    let config = redis.config();
    let client = Client::new(&config).unwrap();
    let (worker, done) = sleeping_worker(config);
    let handle = worker.handle();
    let running = tokio::spawn(worker.run());
    client.push(Job::new("Sleep").args([json!(0.6)])).await.unwrap();
    wait_busy(&handle, 1).await;
    handle.stop();
    tokio::time::timeout(Duration::from_secs(5), running)
        .await
        .unwrap()
        .unwrap()
        .unwrap();
    assert_eq!(done.load(Ordering::SeqCst), 1, "the running job finished");
    let api = Api::new(client.clone());
    assert_eq!(
        api.stats().await.unwrap().processed,
        1,
        "and was acknowledged before exit"
    );
    assert_eq!(api.queue("default").await.unwrap().size, 0, "not requeued");
}

async fn stop_past_timeout_requeues(fetch: FetchMode) {
    let redis = TestRedis::start();
    let mut config = redis.config();
    config.set_fetch(fetch);
    config.set_shutdown_timeout(0.3).unwrap();
    config.set_concurrency(2).unwrap();
    let client = Client::new(&config).unwrap();
    let (worker, done) = sleeping_worker(config);
    let handle = worker.handle();
    let running = tokio::spawn(worker.run());
    let jids = client
        .push_bulk(vec![
            Job::new("Sleep").args([json!(30)]),
            Job::new("Sleep").args([json!(30)]),
        ])
        .await
        .unwrap()
        .into_iter()
        .flatten()
        .collect::<Vec<String>>();
    wait_busy(&handle, 2).await;
    let started = Instant::now();
    handle.stop();
    tokio::time::timeout(Duration::from_secs(5), running)
        .await
        .unwrap()
        .unwrap()
        .unwrap();
    assert!(
        started.elapsed() < Duration::from_secs(3),
        "stop took {:?}",
        started.elapsed()
    );
    assert_eq!(done.load(Ordering::SeqCst), 0);
    let mut conn = redis.conn().await;
    let keys = client.keys();
    let queued: Vec<Vec<u8>> = conn.lrange(keys.queue("default"), 0, -1).await.unwrap();
    let mut requeued: Vec<String> = queued
        .iter()
        .map(|r| Job::parse(r).unwrap().jid_str().to_string())
        .collect();
    requeued.sort();
    let mut expected = jids.clone();
    expected.sort();
    assert_eq!(requeued, expected, "both cut-off jobs are back on the queue");
    assert_eq!(held(&mut conn, &keys.in_progress(handle.identity())).await, 0);
    let identities: Vec<String> = conn.smembers(keys.in_progress_identities()).await.unwrap();
    assert!(identities.is_empty(), "nothing left for recovery: {identities:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stop_past_timeout_requeues_reliable() {
    stop_past_timeout_requeues(FetchMode::Reliable).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stop_past_timeout_requeues_basic() {
    stop_past_timeout_requeues(FetchMode::Basic).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn quiet_takes_no_new_jobs_and_remote_stop_ends_the_run() {
    let redis = TestRedis::start();
    let config = redis.config();
    let client = Client::new(&config).unwrap();
    let api = Api::new(client.clone());
    let (worker, done) = sleeping_worker(config);
    let handle = worker.handle();
    let identity = handle.identity().to_string();
    let running = tokio::spawn(worker.run());
    let api2 = api.clone();
    wait_until("registered", Duration::from_secs(5), move || {
        let api = api2.clone();
        async move { !api.processes().await.unwrap().is_empty() }
    })
    .await;
    // Sent as soon as the process is registered, which is before its
    // listener has subscribed: the command waits on its signal list.
    api.quiet_process(&identity).await.unwrap();
    let h = handle.clone();
    wait_until("quiet", Duration::from_secs(5), move || {
        let h = h.clone();
        async move { h.lifecycle() == cogworker::Lifecycle::Quiet }
    })
    .await;
    client.push(Job::new("Sleep")).await.unwrap();
    tokio::time::sleep(Duration::from_millis(700)).await;
    assert_eq!(done.load(Ordering::SeqCst), 0, "quiet: not taken");
    let api2 = api.clone();
    wait_until("quiet visible in the registry", Duration::from_secs(5), move || {
        let api = api2.clone();
        async move { api.processes().await.unwrap().iter().all(|p| p.quiet) }
    })
    .await;
    api.stop_process(&identity).await.unwrap();
    tokio::time::timeout(Duration::from_secs(5), running)
        .await
        .unwrap()
        .unwrap()
        .unwrap();
    assert_eq!(
        api.queue("default").await.unwrap().size,
        1,
        "the untaken job is still queued"
    );
    assert!(api.processes().await.unwrap().is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stop_sent_before_the_process_listens_still_stops_it() {
    let redis = TestRedis::start();
    let config = redis.config();
    let api = Api::new(Client::new(&config).unwrap());
    let (worker, _) = sleeping_worker(config);
    let identity = worker.handle().identity().to_string();
    // Nobody is subscribed yet: a bare publish would reach no one.
    api.stop_process(&identity).await.unwrap();
    tokio::time::timeout(Duration::from_secs(10), worker.run())
        .await
        .expect("the queued stop ended the run")
        .unwrap();
    let mut conn = redis.conn().await;
    let left: bool = conn.exists(format!("cogworker:signals:{identity}")).await.unwrap();
    assert!(!left, "the signal was taken off its list");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn registry_shows_the_process_and_its_busy_slots() {
    let redis = TestRedis::start();
    let mut config = redis.config();
    config.set_labels(&["blue"]);
    let client = Client::new(&config).unwrap();
    let api = Api::new(client.clone());
    let (worker, _) = sleeping_worker(config);
    let handle = worker.handle();
    let running = tokio::spawn(worker.run());
    let jid = client.push(Job::new("Sleep").args([json!(3)])).await.unwrap().unwrap();
    wait_busy(&handle, 1).await;
    let api2 = api.clone();
    let identity = handle.identity().to_string();
    wait_until("busy slot published", Duration::from_secs(5), move || {
        let api = api2.clone();
        async move { !api.busy().await.unwrap().is_empty() }
    })
    .await;
    let busy = api.busy().await.unwrap();
    assert_eq!(busy[0].identity, identity);
    assert_eq!(busy[0].job["jid"], json!(jid), "{busy:?}");
    let processes = api.processes().await.unwrap();
    assert_eq!(processes.len(), 1);
    assert_eq!(processes[0].identity, identity);
    assert_eq!(processes[0].info["labels"], json!(["blue"]));
    assert_eq!(processes[0].info["pid"], json!(std::process::id()));
    let mut conn = redis.conn().await;
    let beat: Option<f64> = conn.hget(client.keys().last_beat(), &identity).await.unwrap();
    let (server_now, _): (u64, u64) = redis::cmd("TIME").query_async(&mut conn).await.unwrap();
    assert!(
        (server_now as f64 - beat.unwrap()).abs() < 3.0,
        "last beat in Redis's clock"
    );
    handle.stop();
    running.await.unwrap().unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn redis_down_at_boot_waits_then_starts() {
    let mut redis = TestRedis::unstarted();
    let config = redis.config();
    let (worker, done) = sleeping_worker(config.clone());
    let handle = worker.handle();
    let running = tokio::spawn(worker.run());
    tokio::time::sleep(Duration::from_millis(1500)).await;
    assert!(!running.is_finished(), "still waiting for Redis");
    redis.spawn();
    let client = Client::new(&config).unwrap();
    client.push(Job::new("Sleep")).await.unwrap();
    let d = done.clone();
    wait_until("job ran once Redis came up", Duration::from_secs(10), move || {
        let d = d.clone();
        async move { d.load(Ordering::SeqCst) == 1 }
    })
    .await;
    handle.stop();
    running.await.unwrap().unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stop_while_redis_is_down_at_boot_exits_cleanly() {
    let redis = TestRedis::unstarted();
    let (worker, _) = sleeping_worker(redis.config());
    let handle = worker.handle();
    let running = tokio::spawn(worker.run());
    tokio::time::sleep(Duration::from_millis(800)).await;
    let started = Instant::now();
    handle.stop();
    tokio::time::timeout(Duration::from_secs(3), running)
        .await
        .unwrap()
        .unwrap()
        .unwrap();
    assert!(started.elapsed() < Duration::from_secs(2));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn host_threads_take_and_settle_jobs() {
    let redis = TestRedis::start();
    let mut config = redis.config();
    config.set_concurrency(4).unwrap();
    let client = Client::new(&config).unwrap();
    let api = Api::new(client.clone());
    let worker = host_worker(config, &["Host"]);
    let handle = worker.handle();
    let running = tokio::spawn(worker.run());
    // Plain OS threads, as Python or Ruby slots would be: no tokio here.
    let threads: Vec<_> = (0..4)
        .map(|_| {
            let h = handle.clone();
            std::thread::spawn(move || {
                let mut ran = 0;
                loop {
                    match h.next_job(Duration::from_millis(100)) {
                        NextJob::Job(delivery) => {
                            let outcome = if delivery.job().args_slice()[0] == json!("fail") {
                                Outcome::Failure(cogworker::Failure::new("HostError", "from a host thread"))
                            } else {
                                Outcome::Success
                            };
                            h.complete(delivery, outcome);
                            ran += 1;
                        }
                        NextJob::Idle => {}
                        NextJob::Stopped => return ran,
                    }
                }
            })
        })
        .collect();
    let mut jobs: Vec<Job> = (0..100).map(|i| Job::new("Host").args([json!(i)])).collect();
    jobs.push(Job::new("Host").args([json!("fail")]));
    client.push_bulk(jobs).await.unwrap();
    let api2 = api.clone();
    wait_until("100 processed, 1 failed", Duration::from_secs(10), move || {
        let api = api2.clone();
        async move {
            let s = api.stats().await.unwrap();
            s.processed == 100 && s.failed == 1
        }
    })
    .await;
    assert_eq!(api.set_size(JobSet::Retry).await.unwrap(), 1);
    handle.stop();
    running.await.unwrap().unwrap();
    let total: usize = threads.into_iter().map(|t| t.join().unwrap()).sum();
    assert_eq!(total, 101);
}
