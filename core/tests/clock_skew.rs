//! One clock for due times: a host whose clock is off makes the same due
//! times as one in sync. A client an hour ahead once scheduled
//! `enqueue_in(3)` an hour out; a worker an hour behind filed retries
//! already due (no backoff). (Its own binary: it skews this process's
//! host clock.)

mod common;

use cogworker::{Client, Failure, Job, Retry, Worker};
use common::*;
use redis::AsyncCommands;
use std::time::Duration;

async fn redis_time(conn: &mut redis::aio::MultiplexedConnection) -> f64 {
    let (secs, micros): (u64, u64) = redis::cmd("TIME").query_async(conn).await.unwrap();
    secs as f64 + micros as f64 / 1e6
}

async fn only_score(conn: &mut redis::aio::MultiplexedConnection, key: &str) -> f64 {
    let entries: Vec<(String, f64)> = conn.zrange_withscores(key, 0, -1).await.unwrap();
    assert_eq!(entries.len(), 1, "{entries:?}");
    entries[0].1
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn due_times_follow_the_fleet_clock_whatever_the_host_clock_says() {
    let redis = TestRedis::start();
    let mut conn = redis.conn().await;

    // A pusher an hour ahead: `delay(3)` is due 3 s from now.
    cogworker::redis_server::skew_host_clock(3600.0);
    let client = Client::new(&redis.config()).unwrap();
    client.push(Job::new("Later").delay(3.0)).await.unwrap();
    let due = only_score(&mut conn, "cogworker:schedule").await;
    let now = redis_time(&mut conn).await;
    assert!((due - now - 3.0).abs() < 1.0, "due {:.1} s from now", due - now);

    // A worker an hour behind: a failure's retry waits its backoff.
    cogworker::redis_server::skew_host_clock(-3600.0);
    let worker = Worker::builder(redis.config())
        .register("Fails", |_job| async { Err(Failure::new("E", "no")) })
        .retry_in("Fails", |_count, _job| Some(60.0))
        .build()
        .unwrap();
    let handle = worker.handle();
    let running = tokio::spawn(worker.run());
    client.push(Job::new("Fails").retry(Retry::Max(3))).await.unwrap();
    let c = conn.clone();
    wait_until("the failure is filed", Duration::from_secs(10), move || {
        let mut c = c.clone();
        async move { c.zcard::<_, usize>("cogworker:retry").await.unwrap() == 1 }
    })
    .await;
    let due = only_score(&mut conn, "cogworker:retry").await;
    let now = redis_time(&mut conn).await;
    assert!((due - now - 60.0).abs() < 5.0, "retry due {:.1} s from now", due - now);
    handle.stop();
    running.await.unwrap().unwrap();
    cogworker::redis_server::skew_host_clock(0.0);
}
