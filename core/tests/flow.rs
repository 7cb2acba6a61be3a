//! Flow control by key (issue #46 part 3): a debounce collapses a burst of
//! one key's pushes into one run with the last args; a throttle keeps one
//! key's jobs a window apart (delaying or dropping the others); a
//! replacing push replaces its key's job still waiting on its queue; a
//! singleton (a unique job with a key) keeps one pending job per key and
//! answers every other push with its jid.

mod common;

use cogworker::{Client, Job};
use common::*;
use serde_json::json;
use std::sync::{Arc, Mutex};
use std::time::Duration;

fn debounced(n: i64, window: f64, longest: Option<f64>) -> Job {
    Job::new("Step").args([json!(n)]).key("doc:7").debounce(window, longest)
}

/// 1,000 pushes of one key in a burst: every push returns the same jid,
/// one job waits in the schedule, and it runs once, with the last push's
/// args, a window after the last push.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_burst_of_one_keys_pushes_runs_once_with_the_last_args() {
    let redis = TestRedis::start();
    let config = redis.config();
    let client = Client::new(&config).unwrap();
    let mut jids = std::collections::BTreeSet::new();
    for n in 0..1000 {
        jids.insert(client.push(debounced(n, 1.0, None)).await.unwrap().unwrap());
    }
    assert_eq!(jids.len(), 1, "one jid for the burst");
    let api = cogworker::Api::new(client.clone());
    assert_eq!(
        api.stats().await.unwrap().collapsed,
        999,
        "every push after the first collapsed"
    );
    // Another key, and another class with the same key, are bursts of
    // their own.
    let other_key = client
        .push(Job::new("Step").args([json!(5000)]).key("doc:8").debounce(1.0, None))
        .await
        .unwrap()
        .unwrap();
    let other_class = client
        .push(Job::new("Other").args([json!(1)]).key("doc:7").debounce(1.0, None))
        .await
        .unwrap()
        .unwrap();
    assert!(!jids.contains(&other_key) && !jids.contains(&other_class) && other_key != other_class);
    let mut conn = redis.conn().await;
    assert_eq!(zcard(&mut conn, "cogworker:schedule").await, 3);
    let pushed = std::time::Instant::now();
    let (worker, ran) = recording_worker(config, Duration::ZERO);
    let handle = worker.handle();
    let task = tokio::spawn(worker.run());
    wait_ran(&ran, 2).await;
    assert!(
        pushed.elapsed() >= Duration::from_millis(900),
        "ran before the window passed"
    );
    // The scheduler's next polls would move anything left.
    tokio::time::sleep(Duration::from_millis(600)).await;
    handle.stop();
    task.await.unwrap().unwrap();
    let mut ran = ran.lock().unwrap().clone();
    ran.sort();
    assert_eq!(ran, [999, 5000], "once, with the last args");
    assert_eq!(
        zcard(&mut conn, "cogworker:schedule").await,
        0,
        "every burst came due once"
    );
}

/// A steady stream, one push every 100 ms for 2.5 s with a window of
/// 0.5 s: without a longest wait it would never run; with one of 1 s it
/// runs at least twice, the last run with the last push's args.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_steady_stream_still_runs_once_per_longest_wait() {
    let redis = TestRedis::start();
    let config = redis.config();
    let client = Client::new(&config).unwrap();
    let (worker, ran) = recording_worker(config, Duration::ZERO);
    let handle = worker.handle();
    let task = tokio::spawn(worker.run());
    let mut jids = std::collections::BTreeSet::new();
    for n in 0..25 {
        jids.insert(client.push(debounced(n, 0.5, Some(1.0))).await.unwrap().unwrap());
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let during = ran.lock().unwrap().len();
    assert!(during >= 2, "ran {during} times during the stream");
    wait_until("the last burst ran", Duration::from_secs(10), || {
        let ran = ran.clone();
        async move { ran.lock().unwrap().last() == Some(&24) }
    })
    .await;
    handle.stop();
    task.await.unwrap().unwrap();
    let ran = ran.lock().unwrap().clone();
    assert_eq!(ran.len(), jids.len(), "one run per burst: {ran:?}");
    assert!(
        ran.windows(2).all(|pair| pair[0] < pair[1]),
        "each run the latest args: {ran:?}"
    );
}

/// 100 pushes at once of one singleton key (different args): one job is
/// queued and every push returns its jid; once it has run, the next push
/// is a new job.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_singleton_keeps_one_pending_job_per_key_and_returns_its_jid() {
    let redis = TestRedis::start();
    let config = redis.config();
    let client = Client::new(&config).unwrap();
    let singleton = |n: i64| Job::new("Step").args([json!(n)]).key("report:42").unique_for(60.0);
    let pushes: Vec<_> = (0..100)
        .map(|n| {
            let (client, job) = (client.clone(), singleton(n));
            tokio::spawn(async move { client.push(job).await.unwrap() })
        })
        .collect();
    let mut jids = std::collections::BTreeSet::new();
    for push in pushes {
        jids.insert(push.await.unwrap().expect("a singleton's push answers with a jid"));
    }
    assert_eq!(jids.len(), 1, "{jids:?}");
    let mut conn = redis.conn().await;
    assert_eq!(llen(&mut conn, "cogworker:queue:default").await, 1);
    // A unique job without a key is refused as before: no jid.
    let plain = Job::new("Step").args([json!(7)]).unique_for(60.0);
    assert!(client.push(plain.clone()).await.unwrap().is_some());
    assert_eq!(client.push(plain).await.unwrap(), None);
    let (worker, ran) = recording_worker(config, Duration::ZERO);
    let handle = worker.handle();
    let task = tokio::spawn(worker.run());
    wait_ran(&ran, 2).await;
    // The lock goes with the job's success.
    let c = conn.clone();
    wait_until("the key's lock is released", Duration::from_secs(10), move || {
        let mut c = c.clone();
        async move {
            let keys: Vec<String> = redis::cmd("KEYS")
                .arg("cogworker:unique:*")
                .query_async(&mut c)
                .await
                .unwrap();
            keys.is_empty()
        }
    })
    .await;
    let next = client.push(singleton(100)).await.unwrap().unwrap();
    assert!(!jids.contains(&next), "a new job once the last one ran");
    wait_ran(&ran, 3).await;
    handle.stop();
    task.await.unwrap().unwrap();
}

/// The flow options are checked at push, each error naming its field; a
/// raw payload carrying them runs (they act at the push only, as `at`
/// does).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn flow_options_are_checked_at_push_and_ignored_on_a_raw_payload() {
    let redis = TestRedis::start();
    let config = redis.config();
    let client = Client::new(&config).unwrap();
    let base = || Job::new("Step").args([json!(1)]);
    let refused: Vec<(Job, &str)> = vec![
        (base().debounce(1.0, None), "key"),
        (
            base()
                .key("k")
                .debounce(1.0, None)
                .field("at", json!(cogworker::now() + 5.0)),
            "at",
        ),
        (base().key("k").debounce(1.0, None).unique_for(5.0), "unique_for"),
        (base().key("k").debounce(2.0, Some(1.0)), "debounce_max"),
        (base().key("k").field("debounce_max", json!(5)), "debounce_max"),
        (base().key("k").field("debounce", json!(0)), "debounce"),
        (base().key("k").field("debounce", json!(-1)), "debounce"),
        (base().key("k").field("debounce", json!(1e300)), "debounce"),
        (base().key("k").field("debounce", json!("soon")), "debounce"),
        (base().key("k").field("debounce", json!(null)), "debounce"),
        (base().throttle(1.0, false), "key"),
        (base().key("k").throttle(1.0, false).debounce(1.0, None), "throttle"),
        (base().key("k").throttle(1.0, false).unique_for(5.0), "unique_for"),
        (base().key("k").field("throttle", json!(-2)), "throttle"),
        (
            base()
                .key("k")
                .throttle(1.0, false)
                .field("throttle_excess", json!("later")),
            "throttle_excess",
        ),
        (
            base()
                .key("k")
                .throttle(1.0, false)
                .field("throttle_excess", json!(true)),
            "throttle_excess",
        ),
        (
            base().key("k").field("throttle_excess", json!("drop")),
            "throttle_excess",
        ),
        (base().key(""), "key"),
        (base().key("x".repeat(257)), "key"),
        (base().key("a\nb"), "key"),
        (base().field("key", json!(42)), "key"),
        (base().field("key", json!(["k"])), "key"),
    ];
    for (job, field) in refused {
        let err = client.push(job.clone()).await.unwrap_err();
        assert_eq!(err.field(), Some(field), "{job:?}: {err}");
    }
    let raw = r#"{"class":"Step","args":[3],"queue":"default","key":42,"debounce":"soon","debounce_max":-1}"#;
    let mut conn = redis.conn().await;
    let _: () = redis::cmd("LPUSH")
        .arg("cogworker:queue:default")
        .arg(raw)
        .query_async(&mut conn)
        .await
        .unwrap();
    let (worker, ran) = recording_worker(config, Duration::ZERO);
    let handle = worker.handle();
    let task = tokio::spawn(worker.run());
    wait_ran(&ran, 1).await;
    handle.stop();
    task.await.unwrap().unwrap();
    assert_eq!(*ran.lock().unwrap(), [3]);
    assert_eq!(zcard(&mut conn, "cogworker:dead").await, 0);
}

/// Throttled with delay: five pushes of one key at once are due a window
/// (0.4 s) apart, the first at once, and run in push order, none before
/// its window; with drop, a
/// push before the key's next window is dropped (no jid) and counted.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_throttle_keeps_one_keys_jobs_a_window_apart_delaying_or_dropping_the_rest() {
    let redis = TestRedis::start();
    let config = redis.config();
    let client = Client::new(&config).unwrap();
    let throttled = |n: i64, drop: bool| Job::new("Step").args([json!(n)]).key("feed:1").throttle(0.4, drop);
    let started = std::time::Instant::now();
    let ran: Arc<Mutex<Vec<(i64, Duration)>>> = Arc::default();
    let seen = ran.clone();
    let worker = cogworker::Worker::builder(config)
        .register("Step", move |job| {
            let seen = seen.clone();
            async move {
                let n = job.args_slice()[0].as_i64().unwrap();
                seen.lock().unwrap().push((n, started.elapsed()));
                Ok(())
            }
        })
        .build()
        .unwrap();
    let handle = worker.handle();
    let task = tokio::spawn(worker.run());
    let first_push = started.elapsed();
    let mut jids = Vec::new();
    for n in 0..5 {
        jids.push(client.push(throttled(n, false)).await.unwrap());
    }
    assert!(jids.iter().all(Option::is_some), "delayed, never dropped");
    wait_until("five throttled jobs ran", Duration::from_secs(10), || {
        let ran = ran.clone();
        async move { ran.lock().unwrap().len() == 5 }
    })
    .await;
    let runs = ran.lock().unwrap().clone();
    assert_eq!(runs.iter().map(|(n, _)| *n).collect::<Vec<_>>(), [0, 1, 2, 3, 4]);
    // Due a window apart: the k-th no sooner than k windows after the
    // first push (the scheduler's polls may bring two closer than that
    // to each other, never one before its time).
    for (k, (_, at)) in runs.iter().enumerate() {
        let due = first_push + Duration::from_millis(400 * k as u64);
        assert!(
            *at + Duration::from_millis(20) >= due,
            "run {k} before its window: {runs:?}"
        );
    }
    // The key's next window is still ahead: a dropping push is dropped.
    let dropped = client.push(throttled(5, true)).await.unwrap();
    assert_eq!(dropped, None);
    let stats = cogworker::Api::new(client.clone()).stats_today().await.unwrap();
    assert_eq!((stats.throttled, stats.collapsed), (1, 0));
    handle.stop();
    task.await.unwrap().unwrap();
}

/// Replacing: pushes of one key while its job waits on the queue replace
/// it in place (its place in line and jid kept, the last args); another
/// key's job keeps its own place; once the key's job has been taken, the
/// next push is a new job.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_replacing_push_replaces_its_keys_waiting_job_in_place() {
    let redis = TestRedis::start();
    let config = redis.config();
    let client = Client::new(&config).unwrap();
    let replacing = |key: &str, n: i64| Job::new("Step").args([json!(n)]).key(key).replace();
    let first = client.push(replacing("user:1", 1)).await.unwrap().unwrap();
    let other = client.push(replacing("user:2", 100)).await.unwrap().unwrap();
    for n in 2..=5 {
        assert_eq!(client.push(replacing("user:1", n)).await.unwrap().unwrap(), first);
    }
    assert_ne!(first, other);
    let mut conn = redis.conn().await;
    assert_eq!(llen(&mut conn, "cogworker:queue:default").await, 2);
    let api = cogworker::Api::new(client.clone());
    assert_eq!(api.stats().await.unwrap().replaced, 4);
    let (worker, ran) = recording_worker(config, Duration::ZERO);
    let handle = worker.handle();
    let task = tokio::spawn(worker.run());
    wait_ran(&ran, 2).await;
    assert_eq!(*ran.lock().unwrap(), [5, 100], "user:1's job first, with the last args");
    let next = client.push(replacing("user:1", 6)).await.unwrap().unwrap();
    assert_ne!(next, first, "its job was taken: a new one");
    wait_ran(&ran, 3).await;
    handle.stop();
    task.await.unwrap().unwrap();
}

/// The ops API lists every flow key with state, with what its next push
/// would find: a debounce's burst (its jid, when it began and is due), a
/// throttle's next window, a replacing key's waiting job; a key whose
/// state expired is gone from the list.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_flow_keys_with_state_are_listed_with_what_a_push_would_find() {
    let redis = TestRedis::start();
    let client = Client::new(&redis.config()).unwrap();
    let api = cogworker::Api::new(client.clone());
    assert!(api.flow_keys(100).await.unwrap().is_empty());
    let burst = client.push(debounced(1, 30.0, None)).await.unwrap().unwrap();
    client.push(debounced(2, 30.0, None)).await.unwrap();
    let throttled = || Job::new("Sync").key("acct:1").throttle(30.0, true);
    client.push(throttled()).await.unwrap();
    let replaced = client
        .push(Job::new("Step").args([json!(7)]).key("doc:9").replace())
        .await
        .unwrap()
        .unwrap();
    // A throttle of 1 s: its state is gone 2 s later.
    client
        .push(Job::new("Sync").key("acct:2").throttle(1.0, true))
        .await
        .unwrap();
    let listed = api.flow_keys(100).await.unwrap();
    let find = |mode: &str, key: &str| {
        listed
            .iter()
            .find(|k| k.mode == mode && k.key == key)
            .unwrap_or_else(|| panic!("{mode} {key} in {listed:?}"))
            .clone()
    };
    let debounce = find("debounce", "doc:7");
    assert_eq!((debounce.class.as_str(), debounce.queue.as_str()), ("Step", "default"));
    assert_eq!(debounce.jid.as_deref(), Some(burst.as_str()));
    let (began, due) = (debounce.began.unwrap(), debounce.due.unwrap());
    assert!(
        (29.0..=31.0).contains(&(due - began)),
        "due a window after: {debounce:?}"
    );
    let throttle = find("throttle", "acct:1");
    assert!(throttle.due.unwrap() > cogworker::now() + 25.0, "{throttle:?}");
    let replace = find("replace", "doc:9");
    assert_eq!(
        (replace.jid.as_deref(), replace.waiting),
        (Some(replaced.as_str()), Some(true))
    );
    assert!(replace.expires_at > cogworker::now() + 6.0 * 24.0 * 3600.0);
    assert_eq!(api.flow_keys(2).await.unwrap().len(), 2, "count bounds the list");
    // The 1 s throttle's state expires (and the next flow push that
    // writes the index drops its entry; a dropped push writes nothing).
    tokio::time::sleep(Duration::from_millis(2100)).await;
    client.push(throttled()).await.unwrap();
    client
        .push(Job::new("Sync").key("acct:3").throttle(30.0, true))
        .await
        .unwrap();
    let listed = api.flow_keys(100).await.unwrap();
    assert!(listed.iter().all(|k| k.key != "acct:2"), "{listed:?}");
    let mut conn = redis.conn().await;
    assert_eq!(
        zcard(&mut conn, "cogworker:flow_keys").await,
        4,
        "the expired entry was dropped"
    );
    // Taken by a worker, the replacing key's job no longer waits.
    let (worker, ran) = recording_worker(redis.config(), Duration::ZERO);
    let handle = worker.handle();
    let task = tokio::spawn(worker.run());
    wait_ran(&ran, 1).await;
    handle.stop();
    task.await.unwrap().unwrap();
    let replace = api
        .flow_keys(100)
        .await
        .unwrap()
        .into_iter()
        .find(|k| k.mode == "replace")
        .unwrap();
    assert_eq!(replace.waiting, Some(false));
}

/// A flow push with `result_ttl` keeps the result of the job that runs:
/// a debounce's burst job (the last push's args), a throttled job queued
/// or delayed (none for one dropped), a replacing key's job (the last
/// push's args, under the first jid).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_flow_push_keeps_the_result_of_the_job_that_runs() {
    let redis = TestRedis::start();
    let client = Client::new(&redis.config()).unwrap();
    let api = cogworker::Api::new(client.clone());
    let burst = client
        .push(debounced(1, 0.3, None).result_ttl(60.0))
        .await
        .unwrap()
        .unwrap();
    assert_eq!(api.status(&burst).await.unwrap(), "scheduled");
    let collapsed = debounced(2, 0.3, None).result_ttl(60.0);
    let other_jid = collapsed.jid_str().to_string();
    assert_eq!(client.push(collapsed).await.unwrap().as_deref(), Some(burst.as_str()));
    assert_eq!(
        api.status(&other_jid).await.unwrap(),
        "unknown",
        "a collapsed push's own jid never runs"
    );
    let throttled = |n: i64| {
        Job::new("Step")
            .args([json!(n)])
            .key("feed:1")
            .throttle(30.0, true)
            .result_ttl(60.0)
    };
    let queued = client.push(throttled(10)).await.unwrap().unwrap();
    assert_eq!(api.status(&queued).await.unwrap(), "queued");
    let dropped = throttled(11);
    let dropped_jid = dropped.jid_str().to_string();
    assert_eq!(client.push(dropped).await.unwrap(), None);
    assert_eq!(api.status(&dropped_jid).await.unwrap(), "unknown");
    let replacing = |n: i64| {
        Job::new("Step")
            .args([json!(n)])
            .key("doc:1")
            .replace()
            .result_ttl(60.0)
    };
    let kept = client.push(replacing(20)).await.unwrap().unwrap();
    assert_eq!(
        client.push(replacing(21)).await.unwrap().as_deref(),
        Some(kept.as_str())
    );
    let (worker, ran) = recording_worker(redis.config(), Duration::ZERO);
    let handle = worker.handle();
    let task = tokio::spawn(worker.run());
    wait_ran(&ran, 3).await;
    for jid in [&burst, &queued, &kept] {
        let outcome = api.wait_result(jid, 10.0).await.unwrap().unwrap();
        assert_eq!(outcome["status"], "succeeded", "{jid}: {outcome}");
    }
    let mut ran = ran.lock().unwrap().clone();
    ran.sort();
    assert_eq!(ran, [2, 10, 21], "the last args of the burst and of the replaced job");
    handle.stop();
    task.await.unwrap().unwrap();
}

/// A throttled or replacing push that queues a job counts against its
/// group's backlog cap as any push: refused past it with nothing written
/// (its key's window not taken), or, with drop_oldest, the oldest dropped;
/// a debounce (one scheduled job per key) takes no backlog cap.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_throttled_or_replacing_push_counts_against_its_groups_backlog() {
    let redis = TestRedis::start();
    let client = Client::new(&redis.config()).unwrap();
    let capped = |job: Job| job.group("g").group_backlog(2, false);
    for n in 0..2 {
        client.push(capped(Job::new("Step").args([json!(n)]))).await.unwrap();
    }
    let throttled = || capped(Job::new("Step").key("k1").throttle(30.0, true));
    let replacing = || capped(Job::new("Step").key("d1").replace());
    for job in [throttled(), replacing()] {
        match client.push(job).await {
            Err(cogworker::Error::OverLimit { limiter, .. }) => assert!(limiter.contains("group g"), "{limiter}"),
            other => panic!("refused past the backlog: {other:?}"),
        }
    }
    let mut conn = redis.conn().await;
    let throttle_state: Vec<String> = redis::AsyncCommands::keys(&mut conn, "cogworker:throttle:*")
        .await
        .unwrap();
    let replace_state: Vec<String> = redis::AsyncCommands::keys(&mut conn, "cogworker:replace:*")
        .await
        .unwrap();
    assert!(throttle_state.is_empty() && replace_state.is_empty(), "nothing written");
    let dropping = Job::new("Step")
        .key("k2")
        .throttle(30.0, true)
        .group("g")
        .group_backlog(2, true);
    assert!(
        client.push(dropping).await.unwrap().is_some(),
        "queued, the oldest dropped"
    );
    let api = cogworker::Api::new(client.clone());
    assert_eq!(api.stats().await.unwrap().backlog_dropped, 1);
    assert_eq!(api.queue("default").await.unwrap().size, 2);
    let debounced = Job::new("Step")
        .key("k3")
        .debounce(1.0, None)
        .group("g")
        .group_backlog(2, false);
    assert_eq!(client.push(debounced).await.unwrap_err().field(), Some("group_backlog"));
}
