//! Batches (issue #31, part 1, in the core): jobs pushed as one unit, the
//! batch counted in the scripts that settle its jobs, callbacks pushed
//! exactly once (complete, success, death), jobs added from inside a job,
//! child batches, status from the Api, and the counts under kill -9 and a
//! SCRIPT FLUSH.

mod common;

use cogworker::{Api, Batch, BatchEvent, Client, Failure, Job, JobSet, Retry, Worker};
use common::*;
use redis::AsyncCommands;
use serde_json::{json, Value};
use std::collections::{BTreeMap, HashMap};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// The callbacks a worker ran: (event, status, the args after it).
type Calls = Arc<Mutex<Vec<(String, Value, Vec<Value>)>>>;

/// A worker with `Work` (fails on its first try when its first arg says
/// "flaky", always when it says "doomed"; pushes `Child` jobs into its
/// batch when it says "spawn"), `Child`, and the callback `Done`, which
/// records what it was given.
fn batch_worker(config: cogworker::Config, client: Client) -> (Worker, Calls, Arc<AtomicUsize>) {
    let calls: Calls = Arc::default();
    let ran = Arc::new(AtomicUsize::new(0));
    let tries: Arc<Mutex<HashMap<String, usize>>> = Arc::default();
    let (c, r) = (calls.clone(), ran.clone());
    let worker = Worker::builder(config)
        .register("Work", move |job| {
            let (tries, r, client) = (tries.clone(), r.clone(), client.clone());
            async move {
                let attempt = {
                    let mut tries = tries.lock().unwrap();
                    let n = tries.entry(job.jid_str().to_string()).or_default();
                    *n += 1;
                    *n
                };
                match job.args_slice().first().and_then(|a| a.as_str()) {
                    Some("flaky") if attempt == 1 => return Err(Failure::new("Flaky", "first try")),
                    Some("doomed") => return Err(Failure::new("Doomed", "always")),
                    Some("spawn") => {
                        let batch = client.batch(job.batch_id().expect("a job of a batch"));
                        let more = (0..3).map(|_| Job::new("Child")).collect();
                        batch
                            .push_bulk(more)
                            .await
                            .map_err(|e| Failure::new("Push", e.to_string()))?;
                    }
                    _ => {}
                }
                r.fetch_add(1, Ordering::SeqCst);
                Ok(())
            }
        })
        .retry_in("Work", |_count, _job| Some(0.0))
        .register("Child", |_job| async { Ok(()) })
        .register("Done", move |job| {
            let c = c.clone();
            async move {
                let args = job.args_slice();
                let status = args.first().cloned().unwrap_or_default();
                let event = status["event"].as_str().unwrap_or("?").to_string();
                c.lock().unwrap().push((event, status, args[1..].to_vec()));
                Ok(())
            }
        })
        .build()
        .unwrap();
    (worker, calls, ran)
}

/// The status and args the callback of `bid` for `event` got (it ran once).
fn called(calls: &Calls, bid: &str, event: &str) -> (Value, Vec<Value>) {
    let calls = calls.lock().unwrap();
    let found: Vec<_> = calls
        .iter()
        .filter(|(e, status, _)| e == event && status["bid"] == bid)
        .collect();
    assert_eq!(found.len(), 1, "{event} of {bid} once: {calls:?}");
    (found[0].1.clone(), found[0].2.clone())
}

fn events(calls: &Calls) -> Vec<String> {
    calls
        .lock()
        .unwrap()
        .iter()
        .map(|(event, _, _)| event.clone())
        .collect()
}

async fn wait_calls(calls: &Calls, n: usize) {
    let c = calls.clone();
    wait_until(&format!("{n} callback(s) ran"), Duration::from_secs(20), move || {
        let c = c.clone();
        async move { c.lock().unwrap().len() >= n }
    })
    .await;
}

fn with_callbacks(description: &str) -> Batch {
    let done = |tag: &str| Job::new("Done").queue("callbacks").args([json!({ "tag": tag })]);
    Batch::new(description)
        .on(BatchEvent::Complete, done("complete"))
        .on(BatchEvent::Success, done("success"))
        .on(BatchEvent::Death, done("death"))
}

fn queues(config: &mut cogworker::Config) {
    config.set_queues(&["default", "callbacks"]).unwrap();
}

/// A private Redis, a config for the test's queues, a client and an Api.
fn setup() -> (TestRedis, cogworker::Config, Client, Api) {
    let redis = TestRedis::start();
    let mut config = redis.config();
    queues(&mut config);
    let client = Client::new(&config).unwrap();
    let api = Api::new(client.clone());
    (redis, config, client, api)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn complete_fires_once_every_job_ran_and_success_once_all_succeeded() {
    let (_redis, mut config, client, api) = setup();
    let batch = client.open_batch(with_callbacks("import")).await.unwrap();
    let mut jobs: Vec<Job> = (0..4).map(|_| Job::new("Work")).collect();
    jobs.push(Job::new("Work").args([json!("flaky")]));
    jobs.push(Job::new("Work").args([json!("flaky")]).queue("other").delay(0.5));
    let jids = batch.push_bulk(jobs).await.unwrap();
    assert_eq!(jids.len(), 6);
    let status = api.batch(batch.bid()).await.unwrap().unwrap();
    assert_eq!((status.total, status.pending, status.open), (6, 6, true));
    assert_eq!(status.state(), "open");

    config.set_queues(&["default", "callbacks", "other"]).unwrap();
    config.set_scheduler_poll_interval(0.2).unwrap();
    let (worker, calls, ran) = batch_worker(config, client.clone());
    let handle = worker.handle();
    let task = tokio::spawn(worker.run());
    // Open: every job runs, nothing fires.
    wait_for_count("all six succeeded", &ran, 6, Duration::from_secs(20)).await;
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert!(events(&calls).is_empty(), "an open batch fires nothing");
    batch.close().await.unwrap();
    wait_calls(&calls, 2).await;
    // Both due at the close.
    let mut seen = events(&calls);
    seen.sort();
    assert_eq!(seen, ["complete", "success"]);
    let success = called(&calls, batch.bid(), "success");
    let (status, args) = (&success.0, &success.1);
    assert_eq!(
        args,
        &vec![json!({ "tag": "success" })],
        "the callback's own args follow the status"
    );
    assert_eq!(status["bid"], batch.bid());
    assert_eq!(status["description"], "import");
    assert_eq!(
        (status["total"].as_u64(), status["pending"].as_u64()),
        (Some(6), Some(0))
    );
    let status = api.batch(batch.bid()).await.unwrap().unwrap();
    assert_eq!(status.state(), "success");
    assert!(status.failures.is_empty());
    assert!(status.callbacks.iter().all(|(_, count, _)| *count == 1));
    // Each callback's class, queue and jid, for the dashboard (issue #44
    // item 22: it showed the event alone).
    assert_eq!(status.callback_jobs.len(), status.callbacks.len());
    assert!(
        status
            .callback_jobs
            .iter()
            .all(|job| !job.class.is_empty() && !job.jid.is_empty()),
        "{:?}",
        status.callback_jobs
    );
    let fired: BTreeMap<String, bool> = status.callbacks.iter().map(|(e, _, f)| (e.clone(), *f)).collect();
    assert_eq!(
        fired,
        BTreeMap::from([
            ("complete".into(), true),
            ("death".into(), false),
            ("success".into(), true)
        ])
    );

    // A closed batch: complete fires when the last job has run once (a
    // failure included), success after its retry.
    let second = client.open_batch(with_callbacks("second")).await.unwrap();
    second
        .push_bulk(vec![Job::new("Work"), Job::new("Work").args([json!("flaky")])])
        .await
        .unwrap();
    second.close().await.unwrap();
    wait_calls(&calls, 4).await;
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_eq!(calls.lock().unwrap().len(), 4, "once each: {:?}", events(&calls));
    let (status, _) = called(&calls, second.bid(), "complete");
    assert_eq!(
        (status["pending"].as_u64(), status["failures"].as_u64()),
        (Some(1), Some(1)),
        "complete with the flaky job failed once: {status}"
    );
    called(&calls, second.bid(), "success");
    assert_eq!(api.batches(10).await.unwrap().len(), 2);
    handle.stop();
    task.await.unwrap().unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_dead_job_fires_death_once_and_success_never() {
    let (_redis, config, client, api) = setup();
    let batch = client.open_batch(with_callbacks("doomed")).await.unwrap();
    let pushed = batch
        .push_bulk(vec![
            Job::new("Work").args([json!("doomed")]).retry(Retry::Max(0)),
            Job::new("Work").args([json!("doomed")]).retry(Retry::Max(0)),
            Job::new("Work"),
        ])
        .await
        .unwrap();
    batch.close().await.unwrap();
    let (worker, calls, _) = batch_worker(config, client.clone());
    let handle = worker.handle();
    let task = tokio::spawn(worker.run());
    wait_calls(&calls, 2).await;
    tokio::time::sleep(Duration::from_millis(500)).await;
    let mut seen = events(&calls);
    seen.sort();
    assert_eq!(seen, ["complete", "death"], "death once for two dead jobs; no success");
    let status = api.batch(batch.bid()).await.unwrap().unwrap();
    assert_eq!((status.pending, status.dead), (2, 2));
    let mut dead: Vec<String> = status.failures.iter().map(|(jid, _)| jid.clone()).collect();
    dead.sort();
    let mut expected: Vec<String> = pushed[..2].iter().flatten().cloned().collect();
    expected.sort();
    assert_eq!(dead, expected);
    assert!(status.failures.iter().all(|(_, state)| state == "dead"));
    assert_eq!(status.state(), "dead");
    assert_eq!(api.set_size(JobSet::Dead).await.unwrap(), 2);
    handle.stop();
    task.await.unwrap().unwrap();
}

/// A job of a batch deleted from the schedule (the dashboard's delete)
/// will never run: it counts as failed, so the batch completes (and does
/// not succeed) instead of waiting for it until it expires.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_job_deleted_from_a_set_counts_as_failed_so_its_batch_completes() {
    let (_redis, config, client, api) = setup();
    let batch = client.open_batch(with_callbacks("deleted")).await.unwrap();
    let pushed = batch
        .push_bulk(vec![Job::new("Work"), Job::new("Work").delay(3600.0)])
        .await
        .unwrap();
    batch.close().await.unwrap();
    let (worker, calls, _) = batch_worker(config, client.clone());
    let handle = worker.handle();
    let task = tokio::spawn(worker.run());
    let later = pushed[1].clone().unwrap();
    let entry = api.find_in_set(JobSet::Scheduled, &later).await.unwrap().unwrap();
    assert!(api.delete_from_set(JobSet::Scheduled, &entry).await.unwrap());
    assert!(!api.delete_from_set(JobSet::Scheduled, &entry).await.unwrap(), "gone");
    wait_calls(&calls, 1).await;
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_eq!(events(&calls), ["complete"], "complete, never success");
    let status = api.batch(batch.bid()).await.unwrap().unwrap();
    assert_eq!((status.pending, status.dead), (1, 0));
    assert_eq!(status.failures, vec![(later, "failed".to_string())]);
    handle.stop();
    task.await.unwrap().unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn jobs_added_by_a_running_job_and_a_child_batch_count_before_success() {
    let (_redis, config, client, api) = setup();
    let parent = client.open_batch(with_callbacks("parent")).await.unwrap();
    parent.push(Job::new("Work").args([json!("spawn")])).await.unwrap();
    let child = parent.open_child(with_callbacks("child")).await.unwrap();
    child.push(Job::new("Work").args([json!("flaky")])).await.unwrap();
    child.close().await.unwrap();
    parent.close().await.unwrap();
    let status = api.batch(parent.bid()).await.unwrap().unwrap();
    assert_eq!((status.total, status.pending), (2, 2), "a job and a child batch");
    assert_eq!(
        api.batch(child.bid()).await.unwrap().unwrap().parent.as_deref(),
        Some(parent.bid())
    );

    let (worker, calls, _) = batch_worker(config, client.clone());
    let handle = worker.handle();
    let task = tokio::spawn(worker.run());
    wait_calls(&calls, 4).await;
    tokio::time::sleep(Duration::from_millis(500)).await;
    let calls_now = calls.lock().unwrap().clone();
    let fired: Vec<(String, String)> = calls_now
        .iter()
        .map(|(event, status, _)| (status["description"].as_str().unwrap().to_string(), event.clone()))
        .collect();
    assert_eq!(fired.len(), 4, "{fired:?}");
    for who in ["parent", "child"] {
        for event in ["complete", "success"] {
            assert!(
                fired.contains(&(who.to_string(), event.to_string())),
                "{who} {event}: {fired:?}"
            );
        }
    }
    let status = api.batch(parent.bid()).await.unwrap().unwrap();
    assert_eq!(
        (status.total, status.pending),
        (5, 0),
        "1 + 3 added from the job + the child"
    );
    let child_status = api.batch(child.bid()).await.unwrap().unwrap();
    assert!(child_status.succeeded_at.unwrap() <= status.succeeded_at.unwrap());
    handle.stop();
    task.await.unwrap().unwrap();
}

/// A unique job joins its batch in the step that takes its lock and
/// pushes it (now or scheduled); a duplicate joins nothing; a repeat of a
/// push whose reply was lost counts nothing more. The batch completes once
/// its unique jobs have run.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_unique_job_joins_its_batch_and_a_duplicate_joins_nothing() {
    let (_redis, config, client, api) = setup();
    let batch = client.open_batch(with_callbacks("unique")).await.unwrap();
    let unique = |n: i64| Job::new("Work").args([json!(n)]).unique_for(60.0);
    let first = batch.push(unique(1)).await.unwrap().unwrap();
    assert_eq!(batch.push(unique(1)).await.unwrap(), None, "a duplicate");
    batch.push(unique(2).delay(0.3)).await.unwrap().unwrap();
    // The first push again, as a repeat after a lost reply sends it.
    let again = unique(1).jid(first.as_str()).field("bid", json!(batch.bid()));
    assert_eq!(
        client.push(again).await.unwrap(),
        Some(first.clone()),
        "holds its own lock: answered as pushed, pushed once"
    );
    let status = api.batch(batch.bid()).await.unwrap().unwrap();
    assert_eq!((status.total, status.pending), (2, 2), "two joined");
    batch.close().await.unwrap();
    let (worker, calls, ran) = batch_worker(config, client.clone());
    let handle = worker.handle();
    let task = tokio::spawn(worker.run());
    wait_calls(&calls, 2).await;
    called(&calls, batch.bid(), "success");
    called(&calls, batch.bid(), "complete");
    assert_eq!(ran.load(Ordering::SeqCst), 2);
    handle.stop();
    task.await.unwrap().unwrap();
    let status = api.batch(batch.bid()).await.unwrap().unwrap();
    assert_eq!((status.total, status.pending, status.state()), (2, 0, "success"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_batches_are_refused_and_a_killed_or_cancelled_job_counts() {
    let (redis, _config, client, api) = setup();
    let error = client.batch("nosuchbatch").push(Job::new("Work")).await.unwrap_err();
    assert_eq!(error.field(), Some("bid"), "{error}");
    let batch = client.open_batch(with_callbacks("bad")).await.unwrap();
    let error = client
        .batch("nosuchbatch")
        .push(Job::new("Work").unique_for(60.0))
        .await
        .unwrap_err();
    assert_eq!(error.field(), Some("bid"), "a unique job into no batch: {error}");
    let error = client
        .open_batch(Batch::new("x").on(BatchEvent::Success, Job::new("Done").delay(5.0)))
        .await
        .unwrap_err();
    assert!(error.to_string().contains("callbacks[0]"), "{error}");
    // A ttl or keep_for past a year is a mistake (milliseconds, a
    // sentinel), refused naming the field before anything is written.
    for (batch, field) in [
        (Batch::new("x").ttl(u64::MAX), "ttl"),
        (Batch::new("x").keep_for(40_000_000), "keep_for"),
    ] {
        let error = client.open_batch(batch).await.unwrap_err();
        assert_eq!(error.field(), Some(field), "{error}");
    }
    let error = client
        .open_batch(Batch::new("x").parent("nosuchbatch"))
        .await
        .unwrap_err();
    assert_eq!(error.field(), Some("bid"), "{error}");
    let error = client
        .push(Job::new("Work").field("bid", json!("bad id!")))
        .await
        .unwrap_err();
    assert_eq!(error.field(), Some("bid"), "{error}");
    assert_eq!(
        api.batch(batch.bid()).await.unwrap().unwrap().total,
        0,
        "nothing joined"
    );

    // A job waiting in the schedule is killed from the dashboard (it dies
    // in its batch); another is cancelled (it will never run: dead there
    // too, and the batch's death fires once).
    let mut conn = redis.conn().await;
    let waiting = Job::new("Work")
        .field("bid", json!(batch.bid()))
        .jid("waiting1")
        .delay(3600.0);
    batch.push(waiting).await.unwrap();
    batch
        .push(Job::new("Work").jid("scheduled1").delay(3600.0))
        .await
        .unwrap();
    batch.close().await.unwrap();
    let entry = api.find_in_set(JobSet::Scheduled, "waiting1").await.unwrap().unwrap();
    assert!(api.kill(JobSet::Scheduled, &entry).await.unwrap());
    assert_eq!(api.cancel("scheduled1").await.unwrap(), "scheduled");
    let status = api.batch(batch.bid()).await.unwrap().unwrap();
    assert_eq!(
        status.failures,
        vec![
            ("scheduled1".to_string(), "dead".to_string()),
            ("waiting1".to_string(), "dead".to_string())
        ]
    );
    assert!(status.completed_at.is_some() && status.died_at.is_some());
    // Their callbacks wait on the callbacks queue: complete and death.
    assert_eq!(llen(&mut conn, "cogworker:queue:callbacks").await, 2);
    let outbox: usize = conn.hlen("cogworker:outbox").await.unwrap();
    assert_eq!(outbox, 0, "handed over and pushed");
    assert_eq!(
        api.batch_events().await.unwrap(),
        vec![("complete", 1), ("success", 0), ("death", 1)]
    );
}

/// The old way, counted by the worker after the fact, pushes a callback
/// twice when a job runs twice (a kill -9 after the handler, before the
/// ack): here the worker of a job that ran is killed before its ack, the
/// job runs again elsewhere, and the batch still counts it once and its
/// callbacks fire once; the counts end exact (pending 0, not -1), across
/// kill -9 of workers and a SCRIPT FLUSH, over many batches.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn batches_under_kill_9_and_script_flush_count_each_job_once_and_fire_once() {
    const BATCHES: usize = 20;
    const JOBS: usize = 50;
    let mut redis = TestRedis::start_with(&["--appendonly", "yes", "--appendfsync", "always"]);
    let url = redis.url();
    let mut conn = redis.conn().await;
    let client = Client::new(&redis.config()).unwrap();
    let dir = std::env::temp_dir().join(format!("cogworker-batch-chaos-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let results = dir.join("results");
    let fail_dir = dir.join("fail");
    std::fs::create_dir_all(&fail_dir).unwrap();
    let env = [
        ("TEST_RESULTS_FILE", results.to_str().unwrap()),
        ("TEST_FAIL_DIR", fail_dir.to_str().unwrap()),
        ("TEST_ORPHAN_THRESHOLD", "2"),
        ("TEST_CONCURRENCY", "10"),
    ];
    let mut workers: Vec<_> = (0..3).map(|_| spawn_worker(&url, "cogworker", &env)).collect();
    let mut bids = Vec::new();
    for b in 0..BATCHES {
        let callback = Job::new("BatchCallback");
        let batch = client
            .open_batch(
                Batch::new(format!("chaos {b}"))
                    .on(BatchEvent::Complete, callback.clone())
                    .on(BatchEvent::Success, callback),
            )
            .await
            .unwrap();
        let jobs = (0..JOBS)
            .map(|j| Job::new("Account").args([json!(format!("{b}-{j}")), json!(100), json!(j % 10 == 0)]))
            .collect();
        batch.push_bulk(jobs).await.unwrap();
        batch.close().await.unwrap();
        bids.push(batch.bid().to_string());
    }
    // Chaos while they run: a worker killed every 300 ms (and a new one
    // started), a SCRIPT FLUSH, and Redis killed and restarted (from its
    // append-only file).
    for round in 0..10 {
        tokio::time::sleep(Duration::from_millis(300)).await;
        let victim = round % workers.len();
        kill9(&mut workers[victim]);
        workers[victim] = spawn_worker(&url, "cogworker", &env);
        if round == 3 {
            let _: () = redis::cmd("SCRIPT").arg("FLUSH").query_async(&mut conn).await.unwrap();
        }
        if round == 6 {
            redis.kill();
            tokio::time::sleep(Duration::from_millis(500)).await;
            redis.spawn();
            conn = redis.conn().await;
        }
    }
    // A worker started while Redis was down exited (it cannot boot without
    // it): start it again.
    for worker in &mut workers {
        if worker.try_wait().unwrap().is_some() {
            *worker = spawn_worker(&url, "cogworker", &env);
        }
    }
    let c = conn.clone();
    let ids = bids.clone();
    wait_until("every batch succeeded", Duration::from_secs(90), move || {
        let (mut c, ids) = (c.clone(), ids.clone());
        async move {
            for bid in &ids {
                let at: Option<String> = c.hget(format!("cogworker:batch:{bid}"), "succeeded_at").await.unwrap();
                if at.is_none() {
                    return false;
                }
            }
            true
        }
    })
    .await;
    let r = results.clone();
    wait_until("every callback ran", Duration::from_secs(30), move || {
        let r = r.clone();
        async move {
            let text = std::fs::read_to_string(&r).unwrap_or_default();
            text.lines().filter(|l| l.starts_with("callback ")).count() >= 2 * BATCHES
        }
    })
    .await;
    tokio::time::sleep(Duration::from_secs(1)).await;
    for worker in &mut workers {
        kill9(worker);
    }
    let text = std::fs::read_to_string(&results).unwrap();
    let mut callbacks: BTreeMap<String, usize> = BTreeMap::new();
    let mut ran: BTreeMap<String, usize> = BTreeMap::new();
    for line in text.lines() {
        if let Some(callback) = line.strip_prefix("callback ") {
            *callbacks.entry(callback.to_string()).or_default() += 1;
        } else {
            *ran.entry(line.to_string()).or_default() += 1;
        }
    }
    assert_eq!(ran.len(), BATCHES * JOBS, "every job ran");
    // The chaos reached running jobs: some ran twice (killed after their
    // handler, before their settle), yet each counted once below.
    let twice = ran.values().filter(|n| **n > 1).count();
    eprintln!("{twice} job(s) ran more than once");
    for bid in &bids {
        for event in ["complete", "success"] {
            assert_eq!(
                callbacks.get(&format!("{event} {bid}")),
                Some(&1),
                "{event} of {bid}: {callbacks:?}"
            );
        }
        let counts: Vec<Option<String>> = redis::cmd("HMGET")
            .arg(format!("cogworker:batch:{bid}"))
            .arg(&["total", "pending", "dead"])
            .query_async(&mut conn)
            .await
            .unwrap();
        assert_eq!(
            counts,
            vec![Some(JOBS.to_string()), Some("0".into()), Some("0".into())],
            "{bid} counted each job once"
        );
        let failures: usize = conn.hlen(format!("cogworker:batch:{bid}:failures")).await.unwrap();
        assert_eq!(failures, 0);
    }
    assert_eq!(callbacks.len(), 2 * BATCHES, "{callbacks:?}");
    let _ = std::fs::remove_dir_all(&dir);
}
