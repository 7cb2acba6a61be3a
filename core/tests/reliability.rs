//! Corners where a job was lost, run twice or stranded (each test failed
//! before its fix).

mod common;

use cogworker::{Api, Client, Failure, JobSet, Worker};
use common::*;
use redis::AsyncCommands;
use std::time::Duration;

/// 200 byte-identical payloads without a jid, all failing: every one must
/// be filed, none collapsed into another's sorted-set member.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn identical_jidless_failures_are_all_kept() {
    let redis = TestRedis::start();
    let config = redis.config();
    let client = Client::new(&config).unwrap();
    let api = Api::new(client.clone());
    let mut conn = redis.conn().await;
    let raw = br#"{"class":"Fails","args":[],"retry":0}"#;
    for _ in 0..200 {
        let _: i64 = conn.lpush(client.keys().queue("default"), &raw[..]).await.unwrap();
    }
    let worker = Worker::builder(config)
        .register("Fails", |_job| async { Err(Failure::new("Boom", "fails")) })
        .build()
        .unwrap();
    let handle = worker.handle();
    let running = tokio::spawn(worker.run());
    let api2 = api.clone();
    wait_until("200 failures counted", Duration::from_secs(20), move || {
        let api = api2.clone();
        async move { api.stats().await.unwrap().failed == 200 }
    })
    .await;
    handle.stop();
    running.await.unwrap().unwrap();
    assert_eq!(
        api.set_size(JobSet::Dead).await.unwrap(),
        200,
        "one dead entry per failure"
    );
    let jids: std::collections::HashSet<String> = api
        .set_page(JobSet::Dead, 0, 300)
        .await
        .unwrap()
        .iter()
        .map(|e| e.job().unwrap().jid_str().to_string())
        .collect();
    assert_eq!(jids.len(), 200, "each given a jid of its own");
}

/// A raw job without `queue` fails once, is retried on `default` and runs.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_raw_job_without_a_queue_is_retried() {
    let redis = TestRedis::start();
    let config = redis.config();
    let client = Client::new(&config).unwrap();
    let api = Api::new(client.clone());
    let mut conn = redis.conn().await;
    let _: i64 = conn
        .lpush(
            client.keys().queue("default"),
            br#"{"class":"FailsOnce","args":[]}"#.as_slice(),
        )
        .await
        .unwrap();
    let runs = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let counter = runs.clone();
    let worker = Worker::builder(config)
        .register("FailsOnce", move |_job| {
            let n = counter.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
            async move {
                if n == 0 {
                    Err(Failure::new("Boom", "first run").with_retry_in(0.0))
                } else {
                    Ok(())
                }
            }
        })
        .build()
        .unwrap();
    let handle = worker.handle();
    let running = tokio::spawn(worker.run());
    wait_processed("ran again after its retry", &api, 1, Duration::from_secs(20)).await;
    handle.stop();
    running.await.unwrap().unwrap();
    assert_eq!(api.set_size(JobSet::Retry).await.unwrap(), 0);
}

/// Killing an entry that is gone from its set must not touch an identical
/// payload already in `dead`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn killing_a_vanished_entry_leaves_dead_alone() {
    let redis = TestRedis::start();
    let client = Client::new(&redis.config()).unwrap();
    let api = Api::new(client.clone());
    let mut conn = redis.conn().await;
    let raw = br#"{"class":"A","args":[],"jid":"aaaaaaaaaaaaaaaaaaaaaaaa"}"#;
    let _: i64 = conn.zadd(client.keys().dead(), &raw[..], 1.0).await.unwrap();
    let gone = cogworker::SetEntry {
        score: 5.0,
        raw: raw.to_vec(),
    };
    assert!(!api.kill(JobSet::Retry, &gone).await.unwrap(), "nothing to kill");
    assert_eq!(api.set_size(JobSet::Dead).await.unwrap(), 1, "the dead entry stays");
}

/// A unique job retried after longer than its `unique_for` keeps its lock
/// over the wait: a duplicate pushed meanwhile is refused.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_unique_jobs_lock_lasts_over_its_retry_delay() {
    let redis = TestRedis::start();
    let config = redis.config();
    let client = Client::new(&config).unwrap();
    let api = Api::new(client.clone());
    let job = || {
        cogworker::Job::new("Flaky")
            .args([serde_json::json!(1)])
            .unique_for(2.0)
    };
    assert!(client.push(job()).await.unwrap().is_some());
    let worker = Worker::builder(config)
        .register("Flaky", |_job| async {
            Err(Failure::new("Boom", "later").with_retry_in(60.0))
        })
        .build()
        .unwrap();
    let handle = worker.handle();
    let running = tokio::spawn(worker.run());
    let api2 = api.clone();
    wait_until("in retry", Duration::from_secs(10), move || {
        let api = api2.clone();
        async move { api.set_size(JobSet::Retry).await.unwrap() == 1 }
    })
    .await;
    handle.stop();
    running.await.unwrap().unwrap();
    let locks = api.unique_locks(10).await.unwrap();
    assert_eq!(locks.len(), 1);
    assert!(
        locks[0].ttl >= 60,
        "the lock outlives the retry delay: ttl {}",
        locks[0].ttl
    );
    tokio::time::sleep(Duration::from_millis(2500)).await; // past unique_for
    assert!(client.push(job()).await.unwrap().is_none(), "the duplicate is refused");
}

/// A heartbeat with 10,000 busy slots (async handlers make that realistic)
/// is written: every slot is in the workers hash.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_heartbeat_with_ten_thousand_busy_slots_is_written() {
    const SLOTS: usize = 10_000;
    let redis = TestRedis::start();
    let mut config = redis.config();
    config.set_concurrency(SLOTS as i64).unwrap();
    let client = Client::new(&config).unwrap();
    let (worker, release) = gated_worker(config, "Waits");
    let handle = worker.handle();
    let identity = handle.identity().to_string();
    let running = tokio::spawn(worker.run());
    let jobs: Vec<cogworker::Job> = (0..SLOTS)
        .map(|i| cogworker::Job::new("Waits").args([serde_json::json!(i)]))
        .collect();
    client.push_bulk(jobs).await.unwrap();
    let h = handle.clone();
    wait_until("every slot busy", Duration::from_secs(30), move || {
        let h = h.clone();
        async move { h.busy().len() == SLOTS }
    })
    .await;
    let workers = client.keys().workers(&identity);
    let conn = redis.conn().await;
    wait_until(
        "the heartbeat wrote every busy slot",
        Duration::from_secs(10),
        move || {
            let (mut conn, key) = (conn.clone(), workers.clone());
            async move { conn.hlen::<_, usize>(&key).await.unwrap() == SLOTS }
        },
    )
    .await;
    release.notify_waiters();
    handle.stop();
    running.await.unwrap().unwrap();
}

/// A job is busy (in the ops API and the dashboard) from its start until it
/// ends, however long before the next heartbeat.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_job_is_busy_from_its_start_not_from_the_next_heartbeat() {
    let redis = TestRedis::start();
    let mut config = redis.config();
    config.set_heartbeat_interval(30.0).unwrap(); // no beat during the test
    let client = Client::new(&config).unwrap();
    let api = Api::new(client.clone());
    let (worker, release) = gated_worker(config, "Short");
    let handle = worker.handle();
    let running = tokio::spawn(worker.run());
    let jid = client.push(cogworker::Job::new("Short")).await.unwrap().unwrap();
    let api2 = api.clone();
    wait_until("busy in the API", Duration::from_secs(3), move || {
        let api = api2.clone();
        async move { api.busy().await.unwrap().len() == 1 }
    })
    .await;
    assert_eq!(api.busy().await.unwrap()[0].job["jid"], serde_json::json!(jid));
    release.notify_waiters();
    let api2 = api.clone();
    wait_until("no longer busy once it ended", Duration::from_secs(3), move || {
        let api = api2.clone();
        async move { api.busy().await.unwrap().is_empty() }
    })
    .await;
    handle.stop();
    running.await.unwrap().unwrap();
}

/// Where `TIME` is refused (some managed Redis services), orphan recovery
/// still completes and periodic jobs still fire, on the host's clock.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn recovery_and_periodic_jobs_work_where_time_is_refused() {
    let redis = TestRedis::start_with(&["--rename-command", "TIME", ""]);
    let mut config = redis.config();
    config.set_orphan_threshold(2.0).unwrap();
    let client = Client::new(&config).unwrap();
    let keys = client.keys().clone();
    let mut conn = redis.conn().await;
    // A process that died long ago with a job in progress.
    let orphan = cogworker::Job::new("Count").jid("b".repeat(24)).to_json();
    let _: i64 = conn.sadd(keys.in_progress_identities(), "dead:1:x").await.unwrap();
    let _: i64 = conn.hset(keys.last_beat(), "dead:1:x", 1).await.unwrap();
    let _: i64 = conn.lpush(keys.in_progress("dead:1:x"), &orphan).await.unwrap();
    let ran = std::sync::Arc::new(std::sync::Mutex::new(Vec::<String>::new()));
    let seen = ran.clone();
    let worker = Worker::builder(config)
        .register("Count", move |job| {
            seen.lock().unwrap().push(job.jid_str().to_string());
            async { Ok(()) }
        })
        .periodic(cogworker::Periodic::new("* * * * * *", "Count").unwrap())
        .build()
        .unwrap();
    let handle = worker.handle();
    let running = tokio::spawn(worker.run());
    let ran2 = ran.clone();
    wait_until(
        "the orphan recovered and run, and a periodic slot fired",
        Duration::from_secs(15),
        move || {
            let ran = ran2.lock().unwrap().clone();
            async move { ran.contains(&"b".repeat(24)) && ran.len() >= 2 }
        },
    )
    .await;
    handle.stop();
    running.await.unwrap().unwrap();
}

/// Basic fetch: a failure that cannot be written for longer than shutdown's
/// retry limit is kept and written once Redis takes it, never dropped (the
/// job exists only in this process).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn basic_fetch_never_drops_a_failure_it_cannot_write_at_shutdown() {
    let redis = TestRedis::start();
    let mut config = redis.config();
    config.set_fetch(cogworker::FetchMode::Basic);
    let client = Client::new(&config).unwrap();
    let api = Api::new(client.clone());
    let mut conn = redis.conn().await;
    // The retry set made a string: filing the failure fails (WRONGTYPE).
    let _: () = conn.set(client.keys().retry(), "not a zset").await.unwrap();
    let worker = Worker::builder(config)
        .register("Fails", |_job| async { Err(Failure::new("Boom", "fails")) })
        .build()
        .unwrap();
    let handle = worker.handle();
    let running = tokio::spawn(worker.run());
    let jid = client.push(cogworker::Job::new("Fails")).await.unwrap().unwrap();
    let c2 = conn.clone();
    let queue = client.keys().queue("default");
    wait_until("taken", Duration::from_secs(5), move || {
        let (mut c, q) = (c2.clone(), queue.clone());
        async move { llen(&mut c, &q).await == 0 }
    })
    .await;
    tokio::time::sleep(Duration::from_millis(300)).await;
    handle.stop();
    tokio::time::sleep(Duration::from_secs(12)).await; // past the 10 s limit
    let _: () = conn.del(client.keys().retry()).await.unwrap();
    tokio::time::timeout(Duration::from_secs(20), running)
        .await
        .unwrap()
        .unwrap()
        .unwrap();
    let filed = api.find_in_set(JobSet::Retry, &jid).await.unwrap();
    assert!(filed.is_some(), "the failed job was filed once Redis took it");
}

/// An idle worker woken by pushes to several queues at once takes no more
/// jobs than it has free slots, in its queue order.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_idle_wake_takes_no_more_than_the_free_slots_in_queue_order() {
    let redis = TestRedis::start();
    let mut config = redis.config();
    config.set_concurrency(1).unwrap();
    config.set_queues_strict(&["first", "second"]).unwrap();
    let client = Client::new(&config).unwrap();
    let order = std::sync::Arc::new(std::sync::Mutex::new(Vec::<String>::new()));
    let seen = order.clone();
    let worker = Worker::builder(config)
        .register("Slow", move |job| {
            seen.lock().unwrap().push(job.queue_name().to_string());
            async {
                tokio::time::sleep(Duration::from_millis(500)).await;
                Ok(())
            }
        })
        .build()
        .unwrap();
    let handle = worker.handle();
    let identity = handle.identity().to_string();
    let running = tokio::spawn(worker.run());
    tokio::time::sleep(Duration::from_millis(500)).await; // idle, waiting
    let mut conn = redis.conn().await;
    let job = |queue: &str| {
        cogworker::Job::new("Slow")
            .queue(queue)
            .jid(format!("{queue:0>24}"))
            .to_json()
    };
    // Two queues filled at once, each push waking the worker (as
    // `push.lua` does for a queue it finds empty).
    let _: () = redis::pipe()
        .atomic()
        .lpush(client.keys().queue("second"), job("second"))
        .lpush(client.keys().queue("first"), job("first"))
        .publish(client.keys().wake(), "second")
        .publish(client.keys().wake(), "first")
        .query_async(&mut conn)
        .await
        .unwrap();
    tokio::time::sleep(Duration::from_millis(200)).await;
    let taken = held(&mut conn, &client.keys().in_progress(&identity)).await;
    assert_eq!(taken, 1, "one free slot, one job taken");
    let order2 = order.clone();
    wait_until("both ran", Duration::from_secs(10), move || {
        let n = order2.lock().unwrap().len();
        async move { n == 2 }
    })
    .await;
    assert_eq!(*order.lock().unwrap(), vec!["first", "second"], "strict order");
    handle.stop();
    running.await.unwrap().unwrap();
}

/// Orphan recovery reads both shapes of in-progress record: this release's
/// hash (one field per delivery token) and the list of payloads a process
/// of an earlier release left behind (a rolling deploy). Identical payloads
/// are separate entries and both run; garbage is buried with its bytes.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn recovery_takes_jobs_from_hash_and_list_records_alike() {
    let redis = TestRedis::start();
    let mut config = redis.config();
    config.set_orphan_threshold(2.0).unwrap();
    config.set_orphan_check_interval(0.2).unwrap();
    let client = Client::new(&config).unwrap();
    let keys = client.keys().clone();
    let mut conn = redis.conn().await;
    let twin = cogworker::Job::new("Count").jid("c".repeat(24)).to_json();
    let old = cogworker::Job::new("Count").jid("d".repeat(24)).to_json();
    for dead in ["dead:1:hash", "dead:2:list"] {
        let _: i64 = conn.sadd(keys.in_progress_identities(), dead).await.unwrap();
        let _: i64 = conn.hset(keys.last_beat(), dead, 1).await.unwrap();
    }
    let fields = [("7", twin.as_str()), ("8", twin.as_str()), ("9", "not json")];
    let _: () = conn
        .hset_multiple(keys.in_progress("dead:1:hash"), &fields)
        .await
        .unwrap();
    let _: i64 = conn.lpush(keys.in_progress("dead:2:list"), &old).await.unwrap();
    let (worker, ran) = counting_worker(config, "Count");
    let handle = worker.handle();
    let running = tokio::spawn(worker.run());
    wait_for_count("the three recovered jobs", &ran, 3, Duration::from_secs(20)).await;
    let dead = zmembers(&mut conn, &keys.dead()).await;
    assert_eq!(dead.len(), 1, "the garbage entry is buried");
    assert!(String::from_utf8_lossy(&dead[0]).contains("not json"));
    for dead in ["dead:1:hash", "dead:2:list"] {
        assert_eq!(held(&mut conn, &keys.in_progress(dead)).await, 0);
    }
    let c = conn.clone();
    let key = keys.in_progress_identities();
    wait_until("both identities forgotten", Duration::from_secs(10), move || {
        let (mut c, key) = (c.clone(), key.clone());
        async move {
            let left: Vec<String> = c.smembers(&key).await.unwrap();
            !left.iter().any(|i| i.starts_with("dead:"))
        }
    })
    .await;
    handle.stop();
    running.await.unwrap().unwrap();
    assert_eq!(ran.load(std::sync::atomic::Ordering::SeqCst), 3);
}
