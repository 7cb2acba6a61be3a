//! An idle worker's cost does not grow with its queues: it waits on the
//! namespace's wake channel, not on each queue. A push that finds a queue
//! empty publishes its name (and only then); the worker picks the job up at
//! once, however many queues it serves; a job pushed without a wake-up (a
//! raw `LPUSH`) is still found by the fallback poll, which, sharded by
//! queue, reads one queue per poll.

mod common;

use cogworker::{Api, Client, Job, JobSet};
use common::*;
use futures_util::StreamExt;
use redis::AsyncCommands;
use std::time::{Duration, Instant};

fn queue_names(count: usize) -> Vec<String> {
    (0..count).map(|i| format!("q{i}")).collect()
}

/// The connections the server has besides `own` (this test's).
async fn worker_connections(own: &mut redis::aio::MultiplexedConnection) -> Vec<String> {
    let own_id: i64 = redis::cmd("CLIENT").arg("ID").query_async(own).await.unwrap();
    let list: String = redis::cmd("CLIENT").arg("LIST").query_async(own).await.unwrap();
    list.lines()
        .filter(|l| !l.starts_with(&format!("id={own_id} ")))
        .map(str::to_string)
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_worker_on_fifty_queues_holds_few_connections_and_wakes_on_a_push() {
    let redis = TestRedis::start();
    let mut config = redis.config();
    config.set_queues(&queue_names(50)).unwrap();
    // Far longer than the deadline below: only a wake-up can be that quick.
    config.set_fetch_idle_max_interval(30.0).unwrap();
    let client = Client::new(&config).unwrap();
    let (worker, ran) = counting_worker(config, "Count");
    let handle = worker.handle();
    let running = tokio::spawn(worker.run());
    let mut conn = redis.conn().await;
    let api = Api::new(client.clone());
    wait_registered(&api).await;
    // Let the first idle fetch start waiting.
    tokio::time::sleep(Duration::from_millis(300)).await;

    let connections = worker_connections(&mut conn).await;
    let subscribers = connections.iter().filter(|l| !l.contains(" sub=0 ")).count();
    assert_eq!(subscribers, 1, "one pub/sub connection: {connections:#?}");
    assert!(
        connections.len() <= 4,
        "at most 3 connections besides the pub/sub one, for 50 queues: {connections:#?}"
    );

    for (n, queue) in ["q37", "q0", "q49"].into_iter().enumerate() {
        let pushed = Instant::now();
        client.push(Job::new("Count").queue(queue)).await.unwrap();
        wait_for_count(&format!("the job on {queue} ran"), &ran, n + 1, Duration::from_secs(5)).await;
        assert!(
            pushed.elapsed() < Duration::from_secs(5),
            "picked up on the wake-up, not the 30 s poll"
        );
        // Idle again before the next push.
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    handle.stop();
    running.await.unwrap().unwrap();
    assert_eq!(api.set_size(JobSet::Dead).await.unwrap(), 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_push_publishes_a_wake_up_only_when_the_queue_was_empty() {
    let redis = TestRedis::start();
    let config = redis.config();
    let client = Client::new(&config).unwrap();
    let mut pubsub = redis::Client::open(redis.url())
        .unwrap()
        .get_async_pubsub()
        .await
        .unwrap();
    pubsub.subscribe(client.keys().wake()).await.unwrap();
    let mut messages = pubsub.on_message();

    client.push(Job::new("Any").queue("mail")).await.unwrap();
    client.push(Job::new("Any").queue("mail")).await.unwrap();
    client
        .push_bulk(vec![Job::new("Any").queue("mail"), Job::new("Any").queue("sms")])
        .await
        .unwrap();
    // A marker after them: everything published before it has arrived.
    let mut conn = redis.conn().await;
    let _: i64 = conn.publish(client.keys().wake(), "marker").await.unwrap();
    let mut woken = Vec::new();
    loop {
        let message = tokio::time::timeout(Duration::from_secs(5), messages.next())
            .await
            .expect("the marker arrives")
            .unwrap();
        let queue: String = message.get_payload().unwrap();
        if queue == "marker" {
            break;
        }
        woken.push(queue);
    }
    assert_eq!(woken, ["mail", "sms"], "only the pushes that found their queue empty");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_job_pushed_without_a_wake_up_is_found_by_the_fallback_poll() {
    let redis = TestRedis::start();
    let mut config = redis.config();
    config.set_fetch_idle_max_interval(0.5).unwrap();
    let (worker, ran) = counting_worker(config, "Count");
    let handle = worker.handle();
    let running = tokio::spawn(worker.run());
    let mut conn = redis.conn().await;
    let client = Client::new(&redis.config()).unwrap();
    wait_registered(&Api::new(client.clone())).await;
    // As a producer that knows nothing of the wake channel pushes.
    let _: i64 = conn
        .lpush(
            client.keys().queue("default"),
            r#"{"class":"Count","args":[],"jid":"raw1"}"#,
        )
        .await
        .unwrap();
    wait_for_count("the raw job ran", &ran, 1, Duration::from_secs(5)).await;
    handle.stop();
    running.await.unwrap().unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_without_lmpop_still_fetches_reliably_job_by_job() {
    // As Redis 6.2, which has LMOVE but not LMPOP.
    let redis = TestRedis::start_with(&["--rename-command", "LMPOP", ""]);
    let mut config = redis.config();
    config.set_queues(&queue_names(3)).unwrap();
    let client = Client::new(&config).unwrap();
    for queue in queue_names(3) {
        client
            .push_bulk((0..40).map(|_| Job::new("Count").queue(queue.as_str())).collect())
            .await
            .unwrap();
    }
    let (worker, ran) = counting_worker(config, "Count");
    let handle = worker.handle();
    let running = tokio::spawn(worker.run());
    wait_for_count("all 120 ran", &ran, 120, Duration::from_secs(20)).await;
    let api = Api::new(client.clone());
    let processes = api.processes().await.unwrap();
    assert!(processes
        .iter()
        .all(|p| p.info["fetch"] == serde_json::json!("reliable")));
    handle.stop();
    running.await.unwrap().unwrap();
}

/// The server's count of script calls (`EVALSHA`, `EVAL`) so far.
async fn script_calls(conn: &mut redis::aio::MultiplexedConnection) -> u64 {
    command_calls(conn, &["evalsha", "eval"]).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sharded_by_queue_a_fetch_reads_the_named_queue_and_the_poll_one_more() {
    let redis = TestRedis::start();
    let mut config = redis.config();
    config.set_shard_by_queue(true).set_queues(&queue_names(20)).unwrap();
    // 20 polls a second: reading all 20 queues each time would be 400 scripts.
    config.set_fetch_idle_max_interval(0.05).unwrap();
    let client = Client::new(&config).unwrap();
    let (worker, ran) = counting_worker(config, "Count");
    let handle = worker.handle();
    let running = tokio::spawn(worker.run());
    let mut conn = redis.conn().await;
    wait_registered(&Api::new(client.clone())).await;
    // Past startup (recovery, the first beat) before counting.
    tokio::time::sleep(Duration::from_millis(500)).await;

    let before = script_calls(&mut conn).await;
    tokio::time::sleep(Duration::from_secs(1)).await;
    let idle = script_calls(&mut conn).await - before;
    assert!(idle <= 60, "one queue per poll (about 20 scripts in 1 s), got {idle}");

    // As a producer that knows nothing of the wake channel pushes: the
    // turn reaches the queue within 20 polls.
    for (n, queue) in ["q13", "q2"].into_iter().enumerate() {
        let _: i64 = conn
            .lpush(
                client.keys().queue(queue),
                format!(r#"{{"class":"Count","args":[],"jid":"raw{n}"}}"#),
            )
            .await
            .unwrap();
        wait_for_count(
            &format!("the raw job on {queue} ran"),
            &ran,
            n + 1,
            Duration::from_secs(5),
        )
        .await;
    }
    // A push of ours names its queue: the fetch reads that queue, not all
    // 20 (which would be 20 scripts per job, and 20 more after it).
    let before = script_calls(&mut conn).await;
    let started = Instant::now();
    for (n, queue) in ["q19", "q4", "q11", "q19", "q0"].into_iter().enumerate() {
        client.push(Job::new("Count").queue(queue)).await.unwrap();
        wait_for_count(
            &format!("the job pushed on {queue} ran"),
            &ran,
            n + 3,
            Duration::from_secs(5),
        )
        .await;
    }
    let spent = script_calls(&mut conn).await - before;
    // Per job: its push, the fetch, the acknowledgement's two; and the
    // polls that fell meanwhile.
    let polls = (started.elapsed().as_secs_f64() * 20.0).ceil() as u64 + 2;
    assert!(
        spent <= 5 * 6 + polls,
        "{spent} scripts for 5 jobs, {polls} of them polls at most"
    );
    handle.stop();
    running.await.unwrap().unwrap();
}
