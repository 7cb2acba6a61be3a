//! A process that stalled (SIGSTOP, a paused VM, cut off from Redis) for
//! longer than `orphan_threshold` may have had its jobs recovered by the
//! others: the jobs it held but had not started are not started on
//! waking; they are given back, and only the ones still its own go back
//! on the queue. (Its own binary: it plays the stall by moving this
//! process's clock.)

mod common;

use cogworker::{Client, Job, NextJob};
use common::*;
use redis::AsyncCommands;
use std::collections::HashMap;
use std::time::Duration;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn jobs_held_through_a_stall_are_not_started_unless_still_held() {
    let redis = TestRedis::start();
    let mut config = redis.config();
    config.set_concurrency(2).unwrap();
    config.set_heartbeat_interval(0.2).unwrap();
    config.set_orphan_threshold(2.0).unwrap();
    let client = Client::new(&config).unwrap();
    let worker = host_worker(config, &["Held"]);
    let handle = worker.handle();
    let running = tokio::spawn(worker.run());
    let mut conn = redis.conn().await;
    client
        .push_bulk(vec![Job::new("Held"), Job::new("Held")])
        .await
        .unwrap();
    let in_progress = format!("cogworker:in_progress:{}", handle.identity());
    let held_key = in_progress.clone();
    let (c, key) = (conn.clone(), in_progress.clone());
    wait_until("both held, none started", Duration::from_secs(10), move || {
        let (mut c, key) = (c.clone(), key.clone());
        async move { c.hlen::<_, usize>(key).await.unwrap() == 2 }
    })
    .await;

    // The stall: no heartbeat for longer than the threshold, meanwhile
    // another worker recovered one of the two (off this process's
    // in-progress hash, back on the queue).
    cogworker::redis_server::skew_host_clock(5.0);
    let held: HashMap<String, String> = conn.hgetall(&held_key).await.unwrap();
    let (field, recovered) = held.iter().next().unwrap();
    let _: () = conn.hdel(&held_key, field).await.unwrap();
    let _: () = conn.rpush("cogworker:queue:default", recovered).await.unwrap();

    // Every job runs once: the recovered one from the queue, the other
    // after it was given back (it was still held here).
    // Taken until nothing is queued or in progress, when no more can start.
    let (h, mut sync) = (handle.clone(), redis.sync_conn());
    let started = tokio::task::spawn_blocking(move || {
        let mut started = Vec::new();
        let deadline = std::time::Instant::now() + Duration::from_secs(20);
        loop {
            if let NextJob::Job(delivery) = h.next_job(Duration::from_millis(100)) {
                started.push(delivery.job().jid_str().to_string());
                delivery.complete();
            }
            let queued: usize = redis::Commands::llen(&mut sync, "cogworker:queue:default").unwrap();
            let held: usize = redis::Commands::hlen(&mut sync, &in_progress).unwrap();
            if (started.len() >= 2 && queued == 0 && held == 0) || std::time::Instant::now() > deadline {
                return started;
            }
        }
    })
    .await
    .unwrap();
    cogworker::redis_server::skew_host_clock(0.0);
    let mut distinct = started.clone();
    distinct.sort();
    distinct.dedup();
    assert_eq!(
        (started.len(), distinct.len()),
        (2, 2),
        "each job started once: {started:?}"
    );
    let queued: usize = conn.llen("cogworker:queue:default").await.unwrap();
    assert_eq!(queued, 0);
    handle.stop();
    running.await.unwrap().unwrap();
}
