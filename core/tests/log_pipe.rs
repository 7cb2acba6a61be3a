//! A worker whose log reader went away (`cogworker worker | head`, a `tee`
//! that died) goes on running jobs and still stops cleanly on TERM: a log
//! line that cannot be written is dropped, never a panic that takes the
//! engine's threads down.

mod common;

use cogworker::{Client, Job};
use common::*;
use redis::AsyncCommands;
use std::io::Read as _;
use std::process::Stdio;
use std::time::Duration;

const NS: &str = "cogworker";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_worker_whose_log_pipe_closed_runs_jobs_and_stops_on_term() {
    let redis = TestRedis::start();
    let mut conn = redis.conn().await;
    let client = Client::new(&redis.config()).unwrap();
    let mut worker = std::process::Command::new(test_worker_bin())
        .env("COGWORKER_REDIS_URL", redis.url())
        .env("TEST_NAMESPACE", NS)
        .stdin(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // Its first line read, then the reader is gone: every later write fails.
    let mut log = worker.stderr.take().unwrap();
    let mut first = [0u8; 64];
    log.read_exact(&mut first).unwrap();
    drop(log);

    let jobs = (0..20).map(|_| Job::new("Record")).collect();
    client.push_bulk(jobs).await.unwrap();
    let c = conn.clone();
    wait_until("20 jobs ran", Duration::from_secs(20), move || {
        let mut c = c.clone();
        async move { c.llen::<_, usize>(format!("{NS}:test:ran")).await.unwrap() == 20 }
    })
    .await;
    client
        .push(Job::new("Sleep").args([serde_json::json!(30)]))
        .await
        .unwrap();
    let c = conn.clone();
    wait_until("the long job runs", Duration::from_secs(10), move || {
        let mut c = c.clone();
        async move { c.llen::<_, usize>(format!("{NS}:queue:default")).await.unwrap() == 0 }
    })
    .await;

    // The lines lost are counted where they still show: the process info.
    let identity: Vec<String> = conn.smembers(format!("{NS}:processes")).await.unwrap();
    let (c, key) = (conn.clone(), format!("{NS}:process:{}", identity[0]));
    wait_until(
        "the process info counts dropped lines",
        Duration::from_secs(10),
        move || {
            let (mut c, key) = (c.clone(), key.clone());
            async move {
                let info: String = c.hget(key, "info").await.unwrap();
                let info: serde_json::Value = serde_json::from_str(&info).unwrap();
                info["log_lines_dropped"].as_u64() > Some(0)
            }
        },
    )
    .await;

    send_signal(&worker, 15);
    let status = wait_exit(&mut worker, Duration::from_secs(15));
    assert!(status.success(), "exited {status:?}");
    let queued: usize = conn.llen(format!("{NS}:queue:default")).await.unwrap();
    assert_eq!(queued, 1, "the unfinished job was given back");
}
