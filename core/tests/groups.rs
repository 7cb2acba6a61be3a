//! Fair groups inside a queue (issue #46, part 1): a queue whose jobs
//! carry groups is worked round-robin across the groups that have jobs,
//! decided in the fetch; every path that queues a grouped job enters its
//! group in the ring; an empty group leaves no key behind.

mod common;

use cogworker::{Api, Client, FetchMode, Job};
use common::*;
use serde_json::json;
use std::collections::HashMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

async fn push_steps(client: &Client, numbers: std::ops::Range<i64>, group: Option<&str>, level: Option<u8>) {
    let jobs = numbers
        .map(|n| {
            let mut job = Job::new("Step").args([json!(n)]);
            if let Some(group) = group {
                job = job.group(group);
            }
            if let Some(level) = level {
                job = job.priority(level);
            }
            job
        })
        .collect();
    client.push_bulk(jobs).await.unwrap();
}

/// The keys that hold anything of a group (lists and rings).
async fn group_keys(conn: &mut redis::aio::MultiplexedConnection) -> Vec<String> {
    let mut keys: Vec<String> = redis::cmd("KEYS")
        .arg("cogworker:group*")
        .query_async(conn)
        .await
        .unwrap();
    keys.sort();
    keys
}

/// Tenant A's backlog does not hold back tenant B's jobs nor the queue's
/// ungrouped ones: each takes its turn; priorities order a group's own
/// jobs; the queue's size counts every group; and once drained, no group
/// key is left.
async fn groups_take_turns(fetch: FetchMode) {
    let redis = TestRedis::start();
    let mut config = redis.config();
    config.set_fetch(fetch);
    let client = Client::new(&config).unwrap();
    let api = Api::new(client.clone());
    push_steps(&client, 0..30, Some("tenant-a"), None).await;
    push_steps(&client, 30..32, Some("tenant-a"), Some(9)).await;
    push_steps(&client, 100..103, Some("tenant b"), None).await;
    push_steps(&client, 200..202, None, None).await;
    let mut conn = redis.conn().await;
    assert_eq!(
        group_keys(&mut conn).await,
        [
            "cogworker:group:default tenant b",
            "cogworker:group:default tenant-a",
            "cogworker:group@9:default tenant-a",
            "cogworker:groups:default",
        ]
    );
    assert_eq!(api.queue("default").await.unwrap().size, 37, "every group counts");

    let (worker, ran) = recording_worker(config, Duration::ZERO);
    let handle = worker.handle();
    let task = tokio::spawn(worker.run());
    wait_ran(&ran, 37).await;
    let order = ran.lock().unwrap().clone();
    let position = |n: i64| order.iter().position(|&m| m == n).unwrap();
    // Three members take turns (the ungrouped jobs are one): B's three
    // jobs and the two ungrouped run within the first 3 rounds.
    for n in [100, 101, 102, 200, 201] {
        assert!(position(n) < 9, "{n} waited behind A's backlog: {order:?}");
    }
    let a: Vec<i64> = order.iter().copied().filter(|n| *n < 100).collect();
    assert_eq!(
        a[..3],
        [30, 31, 0],
        "A's own jobs by priority, then in push order: {order:?}"
    );
    assert_eq!(order.len(), 37, "each ran once: {order:?}");
    let c = conn.clone();
    wait_until("no group key left", Duration::from_secs(5), move || {
        let mut c = c.clone();
        async move { group_keys(&mut c).await.is_empty() }
    })
    .await;
    handle.stop();
    task.await.unwrap().unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn groups_take_turns_with_reliable_fetch() {
    groups_take_turns(FetchMode::Reliable).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn groups_take_turns_with_basic_fetch() {
    groups_take_turns(FetchMode::Basic).await;
}

/// A running worker hears of a queue's first group (the push says so on
/// the wake channel) and gives the new tenant its turn at once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_running_worker_learns_a_queue_is_grouped() {
    let redis = TestRedis::start();
    let config = redis.config();
    let client = Client::new(&config).unwrap();
    let (worker, ran) = recording_worker(config, Duration::from_millis(10));
    let handle = worker.handle();
    let task = tokio::spawn(worker.run());
    push_steps(&client, 0..1, None, None).await;
    wait_ran(&ran, 1).await;
    push_steps(&client, 1..80, Some("a"), None).await;
    wait_ran(&ran, 4).await;
    push_steps(&client, 100..101, Some("b"), None).await;
    wait_ran(&ran, 81).await;
    let order = ran.lock().unwrap().clone();
    let position = order.iter().position(|&m| m == 100).unwrap();
    assert!(position < 20, "b's job waited behind a's: {order:?}");
    handle.stop();
    task.await.unwrap().unwrap();
}

/// A grouped job that fails goes back to its group when its retry is due,
/// and one taken by a process that died goes back to its group's list, on
/// the end taken next; both enter the group in the ring again.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn retries_and_given_back_jobs_return_to_their_group() {
    let redis = TestRedis::start();
    let config = redis.config();
    let client = Client::new(&config).unwrap();
    let mut conn = redis.conn().await;
    // A dead process held a grouped job.
    client
        .push(Job::new("Step").args([json!(-1)]).group("g"))
        .await
        .unwrap();
    let orphan = Job::new("Step")
        .args([json!(7)])
        .group("g")
        .jid("a".repeat(24))
        .to_json();
    leave_orphan(&mut conn, "3", &orphan).await;
    // A due retry of a grouped job, as the retry set holds it.
    let due = json!({"class": "Step", "args": [8], "queue": "default", "group": "h",
                     "jid": "b".repeat(24), "retry_count": 1});
    let _: () = redis::cmd("ZADD")
        .arg("cogworker:retry")
        .arg(cogworker::now() - 1.0)
        .arg(due.to_string())
        .query_async(&mut conn)
        .await
        .unwrap();
    let api = Api::new(client.clone());
    api.pause_queue("default").await.unwrap();
    let (worker, ran) = recording_worker(config, Duration::ZERO);
    let handle = worker.handle();
    let task = tokio::spawn(worker.run());
    let c = conn.clone();
    wait_until(
        "the orphan and the retry are queued",
        Duration::from_secs(10),
        move || {
            let mut c = c.clone();
            async move {
                held(&mut c, "cogworker:in_progress:ghost").await == 0 && zcard(&mut c, "cogworker:retry").await == 0
            }
        },
    )
    .await;
    assert_eq!(llen(&mut conn, "cogworker:group:default g").await, 2);
    assert_eq!(llen(&mut conn, "cogworker:group:default h").await, 1);
    let mut ring: Vec<String> = redis::cmd("ZRANGE")
        .arg("cogworker:groups:default")
        .arg(0)
        .arg(-1)
        .query_async(&mut conn)
        .await
        .unwrap();
    ring.sort();
    assert_eq!(ring, ["", "g", "h"]);
    api.unpause_queue("default").await.unwrap();
    wait_ran(&ran, 3).await;
    let order = ran.lock().unwrap().clone();
    let g: Vec<i64> = order.iter().copied().filter(|n| *n != 8).collect();
    assert_eq!(g, [7, -1], "given back on the end taken next: {order:?}");
    handle.stop();
    task.await.unwrap().unwrap();
    assert!(group_keys(&mut conn).await.is_empty());
}

/// A group key is checked at push (the error names the field), and a raw
/// payload with one no fetch could read back is buried, bytes kept.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_bad_group_is_refused_at_push_and_buried_when_raw() {
    let redis = TestRedis::start();
    let config = redis.config();
    let client = Client::new(&config).unwrap();
    for bad in [
        json!(""),
        json!("x".repeat(257)),
        json!("a\nb"),
        json!(42),
        json!(-1),
        json!(1e300),
        json!(null),
    ] {
        let err = client
            .push(Job::new("Step").field("group", bad.clone()))
            .await
            .unwrap_err();
        assert_eq!(err.field(), Some("group"), "{bad}: {err}");
    }
    let raw = r#"{"class":"Step","args":[1],"queue":"default","jid":"cccccccccccccccccccccccc","group":42}"#;
    let (reason, ran) = buried_when_raw(&redis, config, raw).await;
    assert!(reason.contains("`group` is 42"), "{reason}");
    assert!(ran.is_empty());
}

/// Writes `raw` onto the default queue and runs a [`recording_worker`]
/// until it is buried in `dead`: the reason it gives, and the jobs the
/// worker ran (those queued before it).
async fn buried_when_raw(redis: &TestRedis, config: cogworker::Config, raw: &str) -> (String, Vec<i64>) {
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
    let c = conn.clone();
    wait_until("the payload is buried", Duration::from_secs(10), move || {
        let mut c = c.clone();
        async move { zcard(&mut c, "cogworker:dead").await == 1 }
    })
    .await;
    handle.stop();
    task.await.unwrap().unwrap();
    let dead = zmembers(&mut conn, "cogworker:dead").await;
    let dead: serde_json::Value = serde_json::from_slice(&dead[0]).unwrap();
    let ran = ran.lock().unwrap().clone();
    (dead["error_message"].as_str().unwrap().to_string(), ran)
}

/// A job without a group costs nothing: the queue is one list and nothing
/// is listed.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn no_group_touches_no_group_key() {
    let redis = TestRedis::start();
    let config = redis.config();
    let client = Client::new(&config).unwrap();
    push_steps(&client, 0..3, None, None).await;
    let mut conn = redis.conn().await;
    assert!(group_keys(&mut conn).await.is_empty());
    let listed: bool = redis::cmd("EXISTS")
        .arg("cogworker:priorities")
        .query_async(&mut conn)
        .await
        .unwrap();
    assert!(!listed);
}

/// A group's weight gives it that many turns for another's one; a paused
/// group's jobs wait, counted, while the others run (also those pushed
/// after the pause), and run once it is resumed, its turn next.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_weight_gives_turns_and_a_paused_group_waits_until_resumed() {
    let redis = TestRedis::start();
    let config = redis.config();
    let client = Client::new(&config).unwrap();
    let api = Api::new(client.clone());
    push_steps(&client, 0..60, Some("heavy"), None).await;
    push_steps(&client, 100..160, Some("light"), None).await;
    push_steps(&client, 200..202, Some("held"), None).await;
    api.set_group_weight("default", "heavy", Some(3.0)).await.unwrap();
    assert!(api.pause_group("default", "held").await.unwrap());
    assert!(!api.pause_group("default", "held").await.unwrap(), "paused already");
    assert!(
        api.pause_group("default", "later").await.unwrap(),
        "a group without jobs yet"
    );
    push_steps(&client, 300..301, Some("later"), None).await;
    let groups = api.groups("default", 0, 10).await.unwrap();
    let named: Vec<(&str, u64, f64, bool)> = groups
        .iter()
        .map(|g| (g.name.as_str(), g.size, g.weight, g.paused))
        .collect();
    assert_eq!(
        named,
        [
            ("heavy", 60, 3.0, false),
            ("light", 60, 1.0, false),
            ("held", 2, 1.0, true),
            ("later", 1, 1.0, true)
        ]
    );
    assert_eq!(groups[2].turns, None);
    assert_eq!(api.groups("default", 1, 1).await.unwrap()[0].name, "light");
    for (group, weight, field) in [
        ("heavy", Some(0.0), "weight"),
        ("heavy", Some(f64::NAN), "weight"),
        ("heavy", Some(2e6), "weight"),
        ("", Some(2.0), "group"),
    ] {
        let err = api.set_group_weight("default", group, weight).await.unwrap_err();
        assert_eq!(err.field(), Some(field), "{err}");
    }

    let (worker, ran) = recording_worker(config, Duration::ZERO);
    let handle = worker.handle();
    let task = tokio::spawn(worker.run());
    wait_ran(&ran, 120).await;
    let order = ran.lock().unwrap().clone();
    let heavy = order[..40].iter().filter(|n| **n < 100).count();
    assert!(
        (28..=32).contains(&heavy),
        "3 turns of heavy's for 1 of light's: {order:?}"
    );
    assert!(order.iter().all(|n| *n < 200), "a paused group ran: {order:?}");
    assert_eq!(
        api.queue("default").await.unwrap().size,
        3,
        "the paused groups' jobs wait, counted"
    );
    assert!(api.resume_group("default", "held").await.unwrap());
    assert!(api.resume_group("default", "later").await.unwrap());
    assert!(!api.resume_group("default", "later").await.unwrap(), "not paused");
    wait_ran(&ran, 123).await;
    handle.stop();
    task.await.unwrap().unwrap();
    let mut conn = redis.conn().await;
    assert_eq!(group_keys(&mut conn).await, ["cogworker:group_weights:default"]);
}

/// A worker killed with signal 9 while it runs grouped jobs: another
/// process recovers them onto their groups' lists and runs them, with the
/// jobs still waiting in those groups, each once; no group key is left.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_killed_workers_grouped_jobs_go_back_to_their_groups_and_run_once() {
    let redis = TestRedis::start();
    let url = redis.url();
    let mut conn = redis.conn().await;
    let client = Client::new(&redis.config()).unwrap();
    let mut a = spawn_worker(&url, "cogworker", &[("TEST_CONCURRENCY", "3")]);
    let sleeping = (0..3)
        .map(|i| Job::new("Sleep").args([json!(30)]).group(format!("tenant-{i}")))
        .collect();
    let mut jids: Vec<String> = client
        .push_bulk(sleeping)
        .await
        .unwrap()
        .into_iter()
        .flatten()
        .collect();
    let c = conn.clone();
    wait_until("A runs one job of each group", Duration::from_secs(20), move || {
        let mut c = c.clone();
        async move {
            let identities: Vec<String> = redis::AsyncCommands::smembers(&mut c, "cogworker:processes")
                .await
                .unwrap();
            let mut running = 0;
            for identity in identities {
                running += redis::AsyncCommands::hlen::<_, usize>(&mut c, format!("cogworker:workers:{identity}"))
                    .await
                    .unwrap();
            }
            running == 3
        }
    })
    .await;
    let waiting = (0..15)
        .map(|i| Job::new("Record").group(format!("tenant-{}", i % 3)))
        .collect();
    jids.extend(client.push_bulk(waiting).await.unwrap().into_iter().flatten());
    kill9(&mut a);
    let mut b = spawn_worker(
        &url,
        "cogworker",
        &[
            ("TEST_ORPHAN_THRESHOLD", "2"),
            ("TEST_SLEEP_SCALE", "0"),
            ("TEST_CONCURRENCY", "3"),
        ],
    );
    let c = conn.clone();
    let expected = jids.clone();
    wait_until("B ran every job", Duration::from_secs(30), move || {
        let (mut c, expected) = (c.clone(), expected.clone());
        async move {
            let ran: Vec<String> = redis::AsyncCommands::lrange(&mut c, "cogworker:test:ran", 0, -1)
                .await
                .unwrap();
            expected.iter().all(|j| ran.contains(j))
        }
    })
    .await;
    let ran: Vec<String> = redis::AsyncCommands::lrange(&mut conn, "cogworker:test:ran", 0, -1)
        .await
        .unwrap();
    assert_eq!(ran.len(), 18, "each ran exactly once: {ran:?}");
    let c = conn.clone();
    wait_until("no group key left", Duration::from_secs(5), move || {
        let mut c = c.clone();
        async move { group_keys(&mut c).await.is_empty() }
    })
    .await;
    send_signal(&b, 15);
    assert!(wait_exit(&mut b, Duration::from_secs(15)).success());
}

/// Per group: how many of its jobs run now, and the most that ran at once.
type Concurrency = Arc<Mutex<HashMap<String, (usize, usize)>>>;

/// Once the default queue's ring is gone (a fetch found its groups empty),
/// stops the worker and returns the group keys left.
async fn stop_once_drained(
    redis: &TestRedis,
    api: &Api,
    handle: cogworker::WorkerHandle,
    task: tokio::task::JoinHandle<cogworker::Result<()>>,
) -> Vec<String> {
    wait_until("the ring is empty", Duration::from_secs(10), || {
        let api = api.clone();
        async move { api.groups("default", 0, 10).await.unwrap().is_empty() }
    })
    .await;
    handle.stop();
    task.await.unwrap().unwrap();
    group_keys(&mut redis.conn().await).await
}

/// A worker whose `Slow` jobs sleep 30 ms and note, per group, the most
/// of that group's jobs that ran at once; and how many ran.
fn concurrency_worker(config: cogworker::Config) -> (cogworker::Worker, Concurrency, Arc<AtomicUsize>) {
    let seen: Concurrency = Arc::default();
    let done = Arc::new(AtomicUsize::new(0));
    let (s, d) = (seen.clone(), done.clone());
    let worker = cogworker::Worker::builder(config)
        .register("Slow", move |job| {
            let (seen, done) = (s.clone(), d.clone());
            async move {
                let group = job.group_key().unwrap_or("").to_string();
                {
                    let mut seen = seen.lock().unwrap();
                    let (now, most) = seen.entry(group.clone()).or_default();
                    *now += 1;
                    *most = (*most).max(*now);
                }
                tokio::time::sleep(Duration::from_millis(30)).await;
                seen.lock().unwrap().get_mut(&group).unwrap().0 -= 1;
                done.fetch_add(1, Ordering::SeqCst);
                Ok(())
            }
        })
        .build()
        .unwrap();
    (worker, seen, done)
}

/// Runs a [`concurrency_worker`] until `n` jobs ran and its queue's ring
/// is gone, stops it, and returns what it noted.
async fn run_slow_jobs(config: cogworker::Config, n: usize) -> HashMap<String, (usize, usize)> {
    let config_url = config.redis_url().to_string();
    let (worker, seen, done) = concurrency_worker(config);
    let handle = worker.handle();
    let task = tokio::spawn(worker.run());
    wait_until(&format!("{n} jobs ran"), Duration::from_secs(30), move || {
        let done = done.clone();
        async move { done.load(Ordering::SeqCst) == n }
    })
    .await;
    // A later fetch finds the groups empty and takes them off the ring.
    let client = redis::Client::open(config_url).unwrap();
    wait_until("the ring is empty", Duration::from_secs(10), move || {
        let client = client.clone();
        async move {
            let mut conn = client.get_multiplexed_async_connection().await.unwrap();
            let left: i64 = redis::cmd("EXISTS")
                .arg("cogworker:groups:default")
                .query_async(&mut conn)
                .await
                .unwrap();
            left == 0
        }
    })
    .await;
    handle.stop();
    task.await.unwrap().unwrap();
    let most = seen.lock().unwrap().clone();
    most
}

async fn push_slow(client: &Client, n: usize, group: &str) {
    let jobs = (0..n).map(|_| Job::new("Slow").group(group)).collect();
    client.push_bulk(jobs).await.unwrap();
}

/// A group's concurrency cap: never more of its jobs run at once than its
/// cap, while the other groups' jobs fill the other slots (a group at its
/// cap is parked: it holds no slot and is not polled); when its jobs end,
/// its parked successors run; no lease is left behind.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_capped_group_runs_at_most_its_cap_and_holds_no_slot() {
    let redis = TestRedis::start();
    let mut config = redis.config();
    config.set_concurrency(10).unwrap();
    let client = Client::new(&config).unwrap();
    let api = Api::new(client.clone());
    api.set_group_cap("default", Some("capped"), Some(2)).await.unwrap();
    api.set_group_cap("default", None, Some(8)).await.unwrap();
    for (cap, field) in [(Some(0), "cap"), (Some(2_000_000), "cap")] {
        let err = api.set_group_cap("default", Some("capped"), cap).await.unwrap_err();
        assert_eq!(err.field(), Some(field), "{err}");
    }
    push_slow(&client, 20, "capped").await;
    push_slow(&client, 60, "free").await;
    let most = run_slow_jobs(config, 80).await;
    assert_eq!(most["capped"].1, 2, "at most its cap, and its cap used: {most:?}");
    assert_eq!(most["free"].1, 8, "the default cap, the other slots busy: {most:?}");
    let mut conn = redis.conn().await;
    assert_eq!(
        group_keys(&mut conn).await,
        ["cogworker:group_caps:default"],
        "no lease, count or parked group left"
    );
}

/// A lease whose job is no longer in progress (its process died after
/// settling it, or was recovered) is ended by the orphan check's sweep,
/// and the group it parked runs.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_lease_left_by_a_dead_process_is_swept_and_its_group_runs() {
    let redis = TestRedis::start();
    let config = redis.config();
    let client = Client::new(&config).unwrap();
    let api = Api::new(client.clone());
    api.set_group_cap("default", Some("g"), Some(1)).await.unwrap();
    let mut conn = redis.conn().await;
    let _: () = redis::pipe()
        .hset("cogworker:group_leases:default", "ghost 7", "g")
        .hset("cogworker:group_running:default", "g", 1)
        .query_async(&mut conn)
        .await
        .unwrap();
    push_slow(&client, 3, "g").await;
    let most = run_slow_jobs(config, 3).await;
    assert_eq!(most["g"].1, 1, "one at a time");
    assert_eq!(group_keys(&mut conn).await, ["cogworker:group_caps:default"]);
}

/// A worker stopped while it runs a capped group's job gives the job back
/// and ends its lease as it stops: the group is neither counted as running
/// nor parked afterwards, so another worker runs both jobs at once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stopping_worker_ends_the_leases_of_the_jobs_it_gives_back() {
    let redis = TestRedis::start();
    let mut config = redis.config();
    config.set_shutdown_timeout(0.2).unwrap();
    let client = Client::new(&config).unwrap();
    let api = Api::new(client.clone());
    api.set_group_cap("default", Some("g"), Some(1)).await.unwrap();
    let started = Arc::new(AtomicUsize::new(0));
    let s = started.clone();
    let worker = cogworker::Worker::builder(config)
        .register("Long", move |_job| {
            let s = s.clone();
            async move {
                s.fetch_add(1, Ordering::SeqCst);
                tokio::time::sleep(Duration::from_secs(30)).await;
                Ok(())
            }
        })
        .build()
        .unwrap();
    client
        .push_bulk((0..2).map(|_| Job::new("Long").group("g")).collect())
        .await
        .unwrap();
    let handle = worker.handle();
    let task = tokio::spawn(worker.run());
    let s = started.clone();
    wait_until("the first job runs", Duration::from_secs(10), move || {
        let s = s.clone();
        async move { s.load(Ordering::SeqCst) == 1 }
    })
    .await;
    let mut conn = redis.conn().await;
    let c = conn.clone();
    wait_until("the group is parked at its cap", Duration::from_secs(10), move || {
        let mut c = c.clone();
        async move {
            redis::AsyncCommands::sismember(&mut c, "cogworker:group_parked:default", "g")
                .await
                .unwrap()
        }
    })
    .await;
    assert_eq!(started.load(Ordering::SeqCst), 1, "one at a time");
    handle.stop();
    task.await.unwrap().unwrap();
    assert_eq!(llen(&mut conn, "cogworker:group:default g").await, 2, "both given back");
    assert_eq!(
        group_keys(&mut conn).await,
        [
            "cogworker:group:default g",
            "cogworker:group_caps:default",
            "cogworker:groups:default"
        ],
        "no lease, count or parked group left"
    );
}

/// A concurrency limit keyed by the job's arguments: the class declares a
/// cap for its group (`group_cap`), which travels with every job, so no
/// process defines anything first. It holds for jobs pushed now and for
/// scheduled ones (requeued when due); a cap set for one group by the API
/// comes first; and once drained, no key or field is left.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cap_declared_by_the_jobs_limits_each_key() {
    let redis = TestRedis::start();
    let mut config = redis.config();
    config.set_concurrency(12).unwrap();
    let client = Client::new(&config).unwrap();
    let api = Api::new(client.clone());
    let keyed = |key: usize| Job::new("Slow").group(format!("acct:{key}")).group_cap(2);
    let mut jobs: Vec<Job> = (0..60).map(|n| keyed(n % 4)).collect();
    let soon = cogworker::now() + 0.5;
    jobs.extend((0..8).map(|n| keyed(n % 4).field("at", json!(soon))));
    client.push_bulk(jobs).await.unwrap();
    api.set_group_cap("default", Some("acct:3"), Some(1)).await.unwrap();
    let listed = api.groups("default", 0, 10).await.unwrap();
    let cap_of = |name: &str| listed.iter().find(|g| g.name == name).and_then(|g| g.cap);
    assert_eq!((cap_of("acct:0"), cap_of("acct:3")), (Some(2), Some(1)), "{listed:?}");
    let most = run_slow_jobs(config, 68).await;
    for key in 0..3 {
        assert_eq!(most[&format!("acct:{key}")].1, 2, "the declared cap, used: {most:?}");
    }
    assert_eq!(most["acct:3"].1, 1, "the API's cap first: {most:?}");
    api.set_group_cap("default", Some("acct:3"), None).await.unwrap();
    let mut conn = redis.conn().await;
    assert!(
        group_keys(&mut conn).await.is_empty(),
        "no declared cap, lease, count or parked group left: {:?}",
        group_keys(&mut conn).await
    );
}

/// `group_cap` is checked at push (the error names it), and a raw
/// payload carrying one no worker can keep is buried, bytes kept.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_bad_group_cap_is_refused_at_push_and_buried_when_raw() {
    let redis = TestRedis::start();
    let config = redis.config();
    let client = Client::new(&config).unwrap();
    for bad in [
        json!(0),
        json!(-1),
        json!(1_000_001),
        json!(1.5),
        json!(1e300),
        json!("2"),
        json!(null),
        json!([2]),
    ] {
        let err = client
            .push(Job::new("Step").group("g").field("group_cap", bad.clone()))
            .await
            .unwrap_err();
        assert_eq!(err.field(), Some("group_cap"), "{bad}: {err}");
    }
    // A class's computed group may be None for some of its jobs: their
    // cap has no group to cap.
    client
        .push(Job::new("Step").args([json!(7)]).group_cap(2))
        .await
        .unwrap();
    let raw = r#"{"class":"Step","args":[1],"queue":"default","jid":"dddddddddddddddddddddddd","group":"g","group_cap":"many"}"#;
    let (reason, ran) = buried_when_raw(&redis, config, raw).await;
    assert!(reason.contains("`group_cap` is \"many\""), "{reason}");
    assert_eq!(ran, [7], "the ungrouped job with a cap ran first");
}

/// Each job's group and when it started.
type Starts = Arc<Mutex<Vec<(String, Duration)>>>;

/// A worker whose `Slow` jobs (10 ms) note their group and when they
/// started, from now.
fn start_recording_worker(config: cogworker::Config) -> (cogworker::Worker, Starts) {
    let started = std::time::Instant::now();
    let starts: Starts = Arc::default();
    let seen = starts.clone();
    let worker = cogworker::Worker::builder(config)
        .register("Slow", move |job| {
            let seen = seen.clone();
            async move {
                let group = job.group_key().unwrap_or("").to_string();
                seen.lock().unwrap().push((group, started.elapsed()));
                tokio::time::sleep(Duration::from_millis(10)).await;
                Ok(())
            }
        })
        .build()
        .unwrap();
    (worker, starts)
}

/// The starts noted once `n` jobs started (awaited, 20 s at most).
async fn await_starts(starts: &Starts, n: usize) -> Vec<(String, Duration)> {
    wait_until(&format!("{n} jobs started"), Duration::from_secs(20), || {
        let starts = starts.clone();
        async move { starts.lock().unwrap().len() == n }
    })
    .await;
    starts.lock().unwrap().clone()
}

/// When `group`'s jobs started, in order.
fn starts_of(starts: &[(String, Duration)], group: &str) -> Vec<Duration> {
    starts.iter().filter(|(g, _)| g == group).map(|(_, at)| *at).collect()
}

/// A rate limit keyed by the job's arguments: the class declares a rate
/// for its group (`group_rate`, 5 per 0.5 s here), which travels with every
/// job. The rated key's jobs start no faster than its rate (30 of them take
/// at least five periods), while another key's 30 jobs, pushed beside them
/// at concurrency 10, run at once: a group out of its rate waits, off the
/// ring, without holding a slot, and comes back when its period ends; once
/// drained, nothing is left but counts expiring with their period.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_rate_declared_by_the_jobs_paces_its_key_without_holding_slots() {
    let redis = TestRedis::start();
    let mut config = redis.config();
    config.set_concurrency(10).unwrap();
    let client = Client::new(&config).unwrap();
    let (worker, starts) = start_recording_worker(config);
    let rated: Vec<Job> = (0..30)
        .map(|_| Job::new("Slow").group("api:1").group_rate(5, 0.5))
        .collect();
    client.push_bulk(rated).await.unwrap();
    push_slow(&client, 30, "free").await;
    let handle = worker.handle();
    let task = tokio::spawn(worker.run());
    let starts = await_starts(&starts, 60).await;
    let (rated, free) = (starts_of(&starts, "api:1"), starts_of(&starts, "free"));
    let spread = *rated.last().unwrap() - rated[0];
    assert!(spread >= Duration::from_millis(2400), "30 at 5 per 0.5 s: {rated:?}");
    // In any 0.5 s, at most two periods' worth (the end of one and the
    // start of the next).
    for (i, at) in rated.iter().enumerate() {
        let within = rated[i..]
            .iter()
            .take_while(|later| **later - *at < Duration::from_millis(490))
            .count();
        assert!(within <= 10, "{within} starts within 0.5 s from {at:?}: {rated:?}");
    }
    let free_done = *free.last().unwrap();
    assert!(
        free_done < rated[15],
        "the free key's jobs did not wait behind the rated one: {starts:?}"
    );
    let api = Api::new(client.clone());
    let left: Vec<String> = stop_once_drained(&redis, &api, handle, task)
        .await
        .into_iter()
        .filter(|key| !key.starts_with("cogworker:group_rate:"))
        .collect();
    assert!(
        left.is_empty(),
        "no key left but counts expiring with their period: {left:?}"
    );
}

/// A rate's kind: a leaky rate spaces its group's starts evenly (10 per
/// second: one every 100 ms), a bucket lets a burst of its limit start at
/// once and then one per refill (4 per second: one every 250 ms), each
/// without holding a slot meanwhile.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_leaky_rate_spaces_starts_and_a_bucket_allows_a_burst() {
    let redis = TestRedis::start();
    let mut config = redis.config();
    config.set_concurrency(10).unwrap();
    let client = Client::new(&config).unwrap();
    let (worker, starts) = start_recording_worker(config);
    let leaky = (0..6).map(|_| {
        Job::new("Slow")
            .group("leaky")
            .group_rate(10, 1.0)
            .group_rate_kind("leaky")
    });
    let bucket = (0..8).map(|_| {
        Job::new("Slow")
            .group("bucket")
            .group_rate(4, 1.0)
            .group_rate_kind("bucket")
    });
    client.push_bulk(leaky.chain(bucket).collect()).await.unwrap();
    let api = Api::new(client.clone());
    let kinds = |groups: Vec<cogworker::GroupInfo>| -> Vec<(String, Option<String>)> {
        let mut kinds: Vec<_> = groups.into_iter().map(|g| (g.name, g.rate_kind)).collect();
        kinds.sort();
        kinds
    };
    let declared = kinds(api.groups("default", 0, 10).await.unwrap());
    assert_eq!(
        declared,
        [
            ("bucket".into(), Some("bucket".into())),
            ("leaky".into(), Some("leaky".into()))
        ]
    );
    // One set through the API comes first, counted as it says.
    api.set_group_rate_counted("default", Some("bucket"), Some((4, 1.0)), "leaky")
        .await
        .unwrap();
    assert_eq!(
        kinds(api.groups("default", 0, 10).await.unwrap())[0].1.as_deref(),
        Some("leaky")
    );
    let refused = api
        .set_group_rate_counted("default", None, Some((4, 1.0)), "fast")
        .await;
    assert_eq!(refused.unwrap_err().field(), Some("kind"));
    api.set_group_rate("default", Some("bucket"), None).await.unwrap();
    let handle = worker.handle();
    let task = tokio::spawn(worker.run());
    let starts = await_starts(&starts, 14).await;
    handle.stop();
    task.await.unwrap().unwrap();
    let (leaky, bucket) = (starts_of(&starts, "leaky"), starts_of(&starts, "bucket"));
    for pair in leaky.windows(2) {
        assert!(
            pair[1] - pair[0] >= Duration::from_millis(90),
            "one every 100 ms: {leaky:?}"
        );
    }
    assert!(
        bucket[3] - bucket[0] < Duration::from_millis(150),
        "a burst of 4 at once: {bucket:?}"
    );
    assert!(
        bucket[4] - bucket[0] >= Duration::from_millis(200),
        "then a refill's wait: {bucket:?}"
    );
    assert!(
        bucket[7] - bucket[0] >= Duration::from_millis(950),
        "4 more at 4 per second: {bucket:?}"
    );
}

/// `group_rate` and its period are checked at push, each error naming
/// its field.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_bad_group_rate_is_refused_at_push() {
    let redis = TestRedis::start();
    let client = Client::new(&redis.config()).unwrap();
    let base = || Job::new("Step").group("g");
    let refused = [
        (base().field("group_rate", json!(0)), "group_rate"),
        (base().field("group_rate", json!(-5)), "group_rate"),
        (base().field("group_rate", json!(2.5)), "group_rate"),
        (base().field("group_rate", json!("10/s")), "group_rate"),
        (base().field("group_rate", json!(1_000_001)), "group_rate"),
        (base().group_rate(5, 0.0), "group_rate_period"),
        (base().group_rate(5, -1.0), "group_rate_period"),
        (base().group_rate(5, 1e300), "group_rate_period"),
        (base().field("group_rate_period", json!(1)), "group_rate_period"),
        (base().group_rate(5, 1.0).group_rate_kind("fast"), "group_rate_kind"),
        (
            base().group_rate(5, 1.0).field("group_rate_kind", json!(2)),
            "group_rate_kind",
        ),
        (base().group_rate_kind("leaky"), "group_rate_kind"),
    ];
    for (job, field) in refused {
        let err = client.push(job.clone()).await.unwrap_err();
        assert_eq!(err.field(), Some(field), "{job:?}: {err}");
    }
}

/// A group off the turns (parked at its cap here) still counts in its
/// queue's size, and clearing the queue clears its jobs too, leaving the
/// running job's lease alone.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_parked_groups_jobs_count_in_the_queue_and_are_cleared_with_it() {
    let redis = TestRedis::start();
    let mut config = redis.config();
    config.set_concurrency(3).unwrap();
    let client = Client::new(&config).unwrap();
    let api = Api::new(client.clone());
    let jobs = (0..3).map(|_| Job::new("Gate").group("g").group_cap(1)).collect();
    client.push_bulk(jobs).await.unwrap();
    let (worker, release) = gated_worker(config, "Gate");
    let handle = worker.handle();
    let task = tokio::spawn(worker.run());
    let a = api.clone();
    wait_until("the group is parked at its cap", Duration::from_secs(10), move || {
        let api = a.clone();
        async move {
            api.groups("default", 0, 10)
                .await
                .unwrap()
                .first()
                .is_some_and(|g| g.parked)
        }
    })
    .await;
    assert_eq!(api.queue("default").await.unwrap().size, 2);
    assert_eq!(api.clear_queue("default").await.unwrap(), 2);
    let mut conn = redis.conn().await;
    assert_eq!(
        group_keys(&mut conn).await,
        ["cogworker:group_leases:default", "cogworker:group_running:default"],
        "only the running job's lease"
    );
    release.notify_waiters();
    handle.stop();
    task.await.unwrap().unwrap();
}

/// A backlog cap its class declares for its group (`group_backlog`): a
/// push past it is refused, naming the group, and writes nothing (a bulk
/// push with it too); with drop_oldest, the group's oldest waiting jobs
/// make room, counted. Other groups are not touched.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_backlog_cap_refuses_a_push_past_it_or_drops_the_oldest() {
    let redis = TestRedis::start();
    let client = Client::new(&redis.config()).unwrap();
    let api = Api::new(client.clone());
    let capped = |n: i64| {
        Job::new("Step")
            .args([json!(n)])
            .group("tenant:1")
            .group_backlog(3, false)
    };
    for n in 0..3 {
        client.push(capped(n)).await.unwrap();
    }
    let err = client.push(capped(3)).await.unwrap_err();
    assert!(matches!(err, cogworker::Error::OverLimit { .. }), "{err}");
    assert!(
        err.to_string().contains("group tenant:1") && err.to_string().contains("at most 3"),
        "{err}"
    );
    let unique = capped(4).unique_for(60.0);
    assert!(matches!(
        client.push(unique).await.unwrap_err(),
        cogworker::Error::OverLimit { .. }
    ));
    let bulk = vec![Job::new("Step").args([json!(9)]).group("tenant:2"), capped(5)];
    assert!(client.push_bulk(bulk).await.is_err());
    let sizes = |groups: Vec<cogworker::GroupInfo>| -> Vec<(String, u64)> {
        groups.into_iter().map(|g| (g.name, g.size)).collect()
    };
    assert_eq!(
        sizes(api.groups("default", 0, 10).await.unwrap()),
        [("tenant:1".to_string(), 3)],
        "nothing written by a refused push, nor by the bulk push with it"
    );
    let dropping = |n: i64| {
        Job::new("Step")
            .args([json!(n)])
            .group("tenant:3")
            .group_backlog(2, true)
    };
    for n in 10..15 {
        client.push(dropping(n)).await.unwrap();
    }
    let mut conn = redis.conn().await;
    let args = first_args_on(&mut conn, "cogworker:group:default tenant:3").await;
    assert_eq!(args, [14, 13], "the newest two kept");
    assert_eq!(api.stats().await.unwrap().backlog_dropped, 3);
    for (field, bad) in [
        ("group_backlog", json!(0)),
        ("group_backlog", json!(-1)),
        ("group_backlog", json!("many")),
        ("group_backlog_full", json!("block")),
    ] {
        let job = Job::new("Step")
            .group("g")
            .group_backlog(5, false)
            .field(field, bad.clone());
        let err = client.push(job).await.unwrap_err();
        assert_eq!(err.field(), Some(field), "{bad}: {err}");
    }
}

/// A sequence: the jobs of one key run one at a time in push order, and a
/// failed job's retry runs before the next job of its key (its group held
/// for it, then the retry put back at its head), while another key's jobs
/// run beside them; a hold whose retry entry is deleted by hand is ended
/// by the orphan check's sweep.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_sequences_failed_job_is_retried_before_the_next_of_its_key() {
    let redis = TestRedis::start();
    let mut config = redis.config();
    config.set_concurrency(4).unwrap();
    let client = Client::new(&config).unwrap();
    let ran: Arc<Mutex<Vec<(String, i64, u32)>>> = Arc::default();
    let seen = ran.clone();
    let worker = cogworker::Worker::builder(config)
        .register("Hook", move |job| {
            let seen = seen.clone();
            async move {
                let n = job.args_slice()[0].as_i64().unwrap();
                let key = job.group_key().unwrap().to_string();
                seen.lock().unwrap().push((key, n, job.retry_count()));
                tokio::time::sleep(Duration::from_millis(20)).await;
                if n == 1 && job.retry_count() == 0 {
                    return Err(cogworker::Failure::new("Down", "the endpoint is down").with_retry_in(0.6));
                }
                if n == 100 {
                    return Err(cogworker::Failure::new("Down", "down for an hour").with_retry_in(3600.0));
                }
                Ok(())
            }
        })
        .build()
        .unwrap();
    let jobs = (0..5)
        .flat_map(|n| ["acct:1", "acct:2"].map(|key| Job::new("Hook").args([json!(n)]).key(key).sequence()))
        .collect();
    client.push_bulk(jobs).await.unwrap();
    let handle = worker.handle();
    let task = tokio::spawn(worker.run());
    wait_until("12 runs", Duration::from_secs(20), || {
        let ran = ran.clone();
        async move { ran.lock().unwrap().len() == 12 }
    })
    .await;
    let runs = ran.lock().unwrap().clone();
    let of = |key: &str| -> Vec<(i64, u32)> {
        runs.iter()
            .filter(|(k, ..)| k == key)
            .map(|(_, n, tries)| (*n, *tries))
            .collect()
    };
    assert_eq!(
        of("acct:1"),
        [(0, 0), (1, 0), (1, 1), (2, 0), (3, 0), (4, 0)],
        "the retry first"
    );
    assert_eq!(of("acct:2"), [(0, 0), (1, 0), (1, 1), (2, 0), (3, 0), (4, 0)]);
    // A retry due in an hour holds its key; deleted by hand, its hold is
    // ended by the next orphan check, and the key's next job runs.
    let held = |n: i64| Job::new("Hook").args([json!(n)]).key("acct:3").sequence();
    client.push_bulk(vec![held(100), held(101)]).await.unwrap();
    let api = Api::new(client.clone());
    let a = api.clone();
    wait_until(
        "the failed job waits to be retried",
        Duration::from_secs(10),
        move || {
            let a = a.clone();
            async move { a.set_size(cogworker::JobSet::Retry).await.unwrap() == 1 }
        },
    )
    .await;
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert!(
        !ran.lock().unwrap().iter().any(|(_, n, _)| *n == 101),
        "held for the retry"
    );
    let entry = api.set_page(cogworker::JobSet::Retry, 0, 1).await.unwrap().remove(0);
    assert!(api.delete_from_set(cogworker::JobSet::Retry, &entry).await.unwrap());
    wait_until("the next job runs", Duration::from_secs(10), || {
        let ran = ran.clone();
        async move { ran.lock().unwrap().iter().any(|(_, n, _)| *n == 101) }
    })
    .await;
    let left: Vec<String> = stop_once_drained(&redis, &api, handle, task)
        .await
        .into_iter()
        .filter(|key| !key.ends_with("group_declared:default"))
        .collect();
    assert!(left.is_empty(), "no hold, lease or count left: {left:?}");
}

/// A sequence's options: a key (or a group) is required, a group other
/// than its key and a cap other than 1 are refused, each naming its field.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_sequences_options_are_checked_at_push() {
    let redis = TestRedis::start();
    let client = Client::new(&redis.config()).unwrap();
    let base = || Job::new("Step").args([json!(1)]).sequence();
    for (job, field) in [
        (base(), "key"),
        (base().key("a").group("b"), "group"),
        (base().key("a").group_cap(2), "group_cap"),
        (base().key("a").debounce(1.0, None), "debounce"),
        (Job::new("Step").key("a").field("sequence", json!("yes")), "sequence"),
    ] {
        let err = client.push(job.clone()).await.unwrap_err();
        assert_eq!(err.field(), Some(field), "{job:?}: {err}");
    }
    client.push(base().group("a")).await.unwrap();
    client.push(base().key("a").group("a").group_cap(1)).await.unwrap();
}

/// A rate set for a group through the API paces it as a declared one does
/// (and comes first); bad values are refused naming them; unset, the group
/// runs at once again.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_rate_set_through_the_api_paces_a_group() {
    let redis = TestRedis::start();
    let mut config = redis.config();
    config.set_concurrency(10).unwrap();
    let client = Client::new(&config).unwrap();
    let api = Api::new(client.clone());
    push_slow(&client, 12, "api:7").await;
    api.set_group_rate("default", Some("api:7"), Some((4, 0.5)))
        .await
        .unwrap();
    for (rate, field) in [((0, 1.0), "rate"), ((4, 0.0), "period"), ((4, f64::NAN), "period")] {
        let err = api
            .set_group_rate("default", Some("api:7"), Some(rate))
            .await
            .unwrap_err();
        assert_eq!(err.field(), Some(field), "{err}");
    }
    let listed = api.groups("default", 0, 10).await.unwrap();
    assert_eq!((listed[0].rate, listed[0].rate_period), (Some(4), Some(0.5)));
    let started = std::time::Instant::now();
    run_slow_jobs(config.clone(), 12).await;
    assert!(
        started.elapsed() >= Duration::from_millis(1000),
        "12 at 4 per 0.5 s: {:?}",
        started.elapsed()
    );
    api.set_group_rate("default", Some("api:7"), None).await.unwrap();
    push_slow(&client, 12, "api:7").await;
    let started = std::time::Instant::now();
    run_slow_jobs(config, 12).await;
    assert!(
        started.elapsed() < Duration::from_millis(1000),
        "no rate: {:?}",
        started.elapsed()
    );
}
