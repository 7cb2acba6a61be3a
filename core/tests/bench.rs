//! `cogworker bench` (the admin command both CLIs run): it measures the
//! Redis it is pointed at in a namespace of its own, prints the table, and
//! leaves nothing behind and the application's keys as they were.

mod common;

use cogworker::host::admin;
use cogworker::{Api, Client, Job};
use common::*;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bench_measures_in_its_own_namespace_and_deletes_it() {
    let redis = TestRedis::start();
    let config = redis.config();
    let client = Client::new(&config).unwrap();
    let api = Api::new(client.clone());
    client.push(Job::new("AppJob")).await.unwrap();
    let mut conn = redis.conn().await;
    let before: Vec<String> = redis::cmd("KEYS").arg("*").query_async(&mut conn).await.unwrap();

    let table = admin::run(&api, "bench", Some("200")).await.unwrap();
    for line in [
        "| enqueue one by one (200 jobs, each awaited) |",
        "| enqueue in bulk (200 jobs, 1,000 per call) |",
        "| drain (400 no-op jobs, one worker, concurrency 10) |",
        "| pickup p50 / p99 (200 pushes 20 ms apart, idle worker) |",
    ] {
        assert!(table.contains(line), "{line} in:\n{table}");
    }
    let mut after: Vec<String> = redis::cmd("KEYS").arg("*").query_async(&mut conn).await.unwrap();
    let mut before = before;
    before.sort();
    after.sort();
    assert_eq!(
        after, before,
        "the bench's namespace is gone, the app's keys are as they were"
    );
    assert_eq!(api.queues().await.unwrap()[0].size, 1);

    let refused = admin::run(&api, "bench", Some("0")).await.unwrap_err();
    assert!(
        refused.to_string().contains("takes a number of jobs from 1 to 1000000"),
        "{refused}"
    );
}

/// A bench cut short (Ctrl-C drops its call; `kill -9` ends its process)
/// leaves no key for good (issue #44 item 14: 11 keys were left in the
/// user's Redis, 9 of them for good): every key of its namespace gets a
/// short TTL, renewed every 250 ms while the bench runs. A key its worker
/// empties and makes again as it drains (the in-progress hash, the queue,
/// the busy hash) has none until the next sweep: the clean-clone CI saw
/// the in-progress hash at TTL -1, and docs/benchmarks.md says so. A
/// dropped call still stops the bench's worker and deletes the namespace
/// (the worker once kept running, writing keys without a TTL).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_bench_cut_short_leaves_no_key_for_good() {
    let redis = TestRedis::start();
    let api = Api::new(Client::new(&redis.config()).unwrap());
    let mut conn = redis.conn().await;
    let bench = tokio::spawn(async move { admin::run(&api, "bench", Some("20000")).await });
    let keys = |conn: &mut redis::aio::MultiplexedConnection| {
        let mut conn = conn.clone();
        async move {
            let keys: Vec<String> = redis::cmd("KEYS").arg("*").query_async(&mut conn).await.unwrap();
            keys
        }
    };
    // Its worker's keys too: the drain has begun (the pushes come first,
    // and take long on a loaded machine).
    let c = conn.clone();
    wait_until(
        "the bench's worker wrote keys",
        std::time::Duration::from_secs(60),
        move || {
            let mut c = c.clone();
            async move { keys(&mut c).await.iter().any(|key| key.contains(":in_progress")) }
        },
    )
    .await;
    // Past a sweep (every 250 ms), as a `kill -9` now would leave them.
    tokio::time::sleep(std::time::Duration::from_millis(600)).await;
    for key in keys(&mut conn).await {
        let ttl: i64 = redis::cmd("TTL").arg(&key).query_async(&mut conn).await.unwrap();
        // -2: gone meanwhile (a run that ended deletes its namespace).
        let remade = [":in_progress:", ":queue:", ":workers"].iter().any(|k| key.contains(k));
        assert!(
            ttl == -2 || (1..=120).contains(&ttl) || (remade && ttl == -1),
            "{key} has TTL {ttl}"
        );
    }
    bench.abort();
    let _ = bench.await;
    let c = conn.clone();
    wait_until("the namespace is gone", std::time::Duration::from_secs(30), move || {
        let mut c = c.clone();
        async move { keys(&mut c).await.is_empty() }
    })
    .await;
}
