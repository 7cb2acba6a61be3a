//! Priority within a queue (issue #30, part 2): levels 0 (last) to 9
//! (first), strict, decided in the fetch; a queue whose jobs use no
//! priority is read and pushed as before.

mod common;

use cogworker::{Api, Client, FetchMode, Job};
use common::*;
use serde_json::json;
use std::sync::{Arc, Mutex};
use std::time::Duration;

async fn push_steps(client: &Client, numbers: std::ops::Range<i64>, level: Option<u8>) {
    let jobs = numbers
        .map(|n| {
            let job = Job::new("Step").args([json!(n)]);
            match level {
                Some(level) => job.priority(level),
                None => job,
            }
        })
        .collect();
    client.push_bulk(jobs).await.unwrap();
}

/// Jobs pushed before the worker starts run highest level first, each
/// level in push order; the queue's size and pages count every level.
async fn levels_run_strictly_in_order(fetch: FetchMode) {
    let redis = TestRedis::start();
    let mut config = redis.config();
    config.set_fetch(fetch);
    let client = Client::new(&config).unwrap();
    let api = Api::new(client.clone());
    push_steps(&client, 0..4, None).await; // the default level, 5
    push_steps(&client, 10..13, Some(9)).await;
    push_steps(&client, 20..22, Some(0)).await;
    push_steps(&client, 30..32, Some(7)).await;
    push_steps(&client, 40..41, Some(5)).await;
    let queue = api.queue("default").await.unwrap();
    assert_eq!(queue.size, 12, "every level counts");
    let page: Vec<i64> = api
        .queue_jobs("default", 2, 4)
        .await
        .unwrap()
        .iter()
        .map(|raw| {
            serde_json::from_slice::<serde_json::Value>(raw).unwrap()["args"][0]
                .as_i64()
                .unwrap()
        })
        .collect();
    assert_eq!(
        page,
        vec![10, 31, 30, 40],
        "in the order taken, newest first within a level"
    );
    let (worker, ran) = recording_worker(config, Duration::ZERO);
    let handle = worker.handle();
    let task = tokio::spawn(worker.run());
    wait_ran(&ran, 12).await;
    assert_eq!(
        *ran.lock().unwrap(),
        vec![10, 11, 12, 30, 31, 0, 1, 2, 3, 40, 20, 21],
        "{fetch:?}"
    );
    handle.stop();
    task.await.unwrap().unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn levels_run_strictly_in_order_with_reliable_fetch() {
    levels_run_strictly_in_order(FetchMode::Reliable).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn levels_run_strictly_in_order_with_basic_fetch() {
    levels_run_strictly_in_order(FetchMode::Basic).await;
}

/// A running worker hears of a level used for the first time (the push
/// says so on the wake channel) and of a scheduled job's, and takes them
/// before the backlog of lower ones.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_running_worker_takes_a_new_level_and_a_due_scheduled_one_first() {
    let redis = TestRedis::start();
    let config = redis.config();
    let client = Client::new(&config).unwrap();
    push_steps(&client, 0..40, None).await;
    let (worker, ran) = recording_worker(config, Duration::from_millis(20));
    let handle = worker.handle();
    let task = tokio::spawn(worker.run());
    wait_ran(&ran, 3).await;
    client
        .push(Job::new("Step").args([json!(100)]).priority(8))
        .await
        .unwrap();
    let soon = cogworker::now() + 0.3;
    client
        .push(Job::new("Step").args([json!(200)]).priority(9).at(soon))
        .await
        .unwrap();
    wait_ran(&ran, 42).await;
    let order = ran.lock().unwrap().clone();
    let position = |n: i64| order.iter().position(|&m| m == n).unwrap();
    assert!(position(100) < 12, "the new level ran within a batch or two: {order:?}");
    assert!(
        position(200) < 35,
        "the due scheduled job ran before the backlog: {order:?}"
    );
    handle.stop();
    task.await.unwrap().unwrap();
}

/// A job that uses no priority costs nothing: no level is listed, and the
/// queue is one list; a bad level is refused by name.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn no_priority_lists_nothing_and_a_bad_level_is_refused() {
    let redis = TestRedis::start();
    let config = redis.config();
    let client = Client::new(&config).unwrap();
    push_steps(&client, 0..3, None).await;
    push_steps(&client, 3..4, Some(5)).await;
    let mut conn = redis.conn().await;
    let listed: bool = redis::cmd("EXISTS")
        .arg("cogworker:priorities")
        .query_async(&mut conn)
        .await
        .unwrap();
    assert!(!listed, "no level listed for the default");
    assert_eq!(llen(&mut conn, "cogworker:queue:default").await, 4);
    let err = client.push(Job::new("Step").priority(10)).await.unwrap_err();
    assert_eq!(err.field(), Some("priority"), "{err}");
    // Clearing a queue clears every level.
    push_steps(&client, 4..6, Some(2)).await;
    let api = Api::new(client.clone());
    assert_eq!(api.clear_queue("default").await.unwrap(), 6);
    assert_eq!(api.queue("default").await.unwrap().size, 0);
}

/// A job at a level taken by a process that died goes back to its
/// level's list, and is taken before the backlog.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_dead_processs_job_goes_back_to_its_level() {
    let redis = TestRedis::start();
    let config = redis.config();
    let client = Client::new(&config).unwrap();
    // The level is listed by a push, as the job's own push listed it.
    client
        .push(Job::new("Step").args([json!(-1)]).priority(9))
        .await
        .unwrap();
    push_steps(&client, 0..60, None).await;
    let orphan = Job::new("Step")
        .args([json!(100)])
        .priority(9)
        .jid("a".repeat(24))
        .to_json();
    let mut conn = redis.conn().await;
    leave_orphan(&mut conn, "7", &orphan).await;
    let api = Api::new(client.clone());
    api.pause_queue("default").await.unwrap();
    let (worker, ran) = recording_worker(config, Duration::ZERO);
    let handle = worker.handle();
    let task = tokio::spawn(worker.run());
    let c = conn.clone();
    wait_until("the orphan was requeued", Duration::from_secs(10), move || {
        let mut c = c.clone();
        async move { held(&mut c, "cogworker:in_progress:ghost").await == 0 }
    })
    .await;
    assert_eq!(llen(&mut conn, "cogworker:queue@9:default").await, 2, "onto its level");
    assert_eq!(llen(&mut conn, "cogworker:queue:default").await, 60);
    api.unpause_queue("default").await.unwrap();
    wait_ran(&ran, 62).await;
    let order = ran.lock().unwrap().clone();
    // Put back on the end taken next, as every requeue is.
    assert_eq!(order[..2], [100, -1], "its level first: {order:?}");
    handle.stop();
    task.await.unwrap().unwrap();
}

/// Every path that puts a job on a level's list lists the level, and
/// every path that puts a job on a queue lists the queue (issue #44,
/// items 2 and 3): a due scheduled job that carries a priority (pushed
/// raw, as another client writes it) and a batch callback at a level on
/// a queue nothing else used. Both once landed on lists no worker read,
/// and the callback's queue was missing from every listing.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_job_put_on_a_level_when_due_or_handed_over_is_listed_and_runs() {
    let redis = TestRedis::start();
    let mut config = redis.config();
    config.set_queues(&["handed"]).unwrap();
    let client = Client::new(&config).unwrap();
    let api = Api::new(client.clone());
    let mut conn = redis.conn().await;
    let due = json!({"class": "Step", "args": [200], "queue": "handed", "priority": 8, "jid": "d".repeat(24)});
    let _: () = redis::cmd("ZADD")
        .arg("cogworker:schedule")
        .arg(cogworker::now() - 1.0)
        .arg(due.to_string())
        .query_async(&mut conn)
        .await
        .unwrap();
    // A callback gets the batch's status first, then its own args.
    let callback = Job::new("Callback").args([json!(300)]).queue("callbacks").priority(7);
    let batch = cogworker::Batch::new("levels").on(cogworker::BatchEvent::Success, callback);
    let open = client.open_batch(batch).await.unwrap();
    open.push(Job::new("Step").args([json!(1)]).queue("handed"))
        .await
        .unwrap();
    open.close().await.unwrap();

    let (worker, ran) = recording_worker(config.clone(), Duration::ZERO);
    let (handle, task) = (worker.handle(), tokio::spawn(worker.run()));
    wait_ran(&ran, 2).await;
    let api_ = api.clone();
    wait_until("the callback's queue is listed", Duration::from_secs(15), move || {
        let api = api_.clone();
        async move { api.queues().await.unwrap().iter().any(|q| q.name == "callbacks") }
    })
    .await;
    let mut levels: Vec<String> = redis::cmd("SMEMBERS")
        .arg("cogworker:priorities")
        .query_async(&mut conn)
        .await
        .unwrap();
    levels.sort();
    assert_eq!(levels, ["7 callbacks", "8 handed"]);
    assert_eq!(
        api.queue("callbacks").await.unwrap().size,
        1,
        "the callback waits, counted"
    );
    handle.stop();
    task.await.unwrap().unwrap();

    config.set_queues(&["callbacks"]).unwrap();
    let ran = Arc::new(Mutex::new(Vec::new()));
    let seen = ran.clone();
    let worker = cogworker::Worker::builder(config)
        .register("Callback", move |job| {
            seen.lock().unwrap().push(job.args_slice()[1].as_i64().unwrap());
            async { Ok(()) }
        })
        .build()
        .unwrap();
    let (handle, task) = (worker.handle(), tokio::spawn(worker.run()));
    wait_ran(&ran, 1).await;
    assert_eq!(*ran.lock().unwrap(), [300]);
    handle.stop();
    task.await.unwrap().unwrap();
}

/// A job given back from a process's in-progress key onto a level nobody
/// listed (its listing lost, or the job taken by another client's fetch)
/// lists its level in the same step, as every path that puts a job on a
/// level's list does (issue #44, item 2): recovery once put it on a list
/// no worker read.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_dead_processs_job_at_an_unlisted_level_is_listed_and_runs() {
    let redis = TestRedis::start();
    let config = redis.config();
    let orphan = Job::new("Step")
        .args([json!(600)])
        .priority(6)
        .jid("b".repeat(24))
        .to_json();
    let mut conn = redis.conn().await;
    leave_orphan(&mut conn, "3", &orphan).await;
    let (worker, ran) = recording_worker(config, Duration::ZERO);
    let (handle, task) = (worker.handle(), tokio::spawn(worker.run()));
    wait_ran(&ran, 1).await;
    assert_eq!(*ran.lock().unwrap(), [600]);
    let levels: Vec<String> = redis::cmd("SMEMBERS")
        .arg("cogworker:priorities")
        .query_async(&mut conn)
        .await
        .unwrap();
    assert_eq!(levels, ["6 default"]);
    handle.stop();
    task.await.unwrap().unwrap();
}
