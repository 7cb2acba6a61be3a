//! A delivery settles exactly once, whatever the handler does: dropped
//! unsettled, a panic in any part of a Rust handler, middleware or retry
//! hook, a class no handler is registered for. Every such job is filed (or
//! requeued at shutdown), its slot is freed, and the worker goes on running
//! new jobs at full concurrency.

mod common;

use cogworker::{
    Api, Client, Failure, HandlerResult, Job, JobSet, Middleware, Next, NextJob, Worker, HANDLER_ABORTED,
    UNKNOWN_HANDLER,
};
use common::*;
use futures_util::future::BoxFuture;
use serde_json::json;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Barrier};
use std::time::Duration;

async fn wait_for_stats(api: &Api, processed: u64, failed: u64) {
    let api = api.clone();
    wait_until(
        &format!("{processed} processed, {failed} failed"),
        Duration::from_secs(15),
        move || {
            let api = api.clone();
            async move {
                let s = api.stats().await.unwrap();
                s.processed == processed && s.failed == failed
            }
        },
    )
    .await;
}

/// The `error_class` of every job in the retry set, sorted.
async fn retried_error_classes(api: &Api) -> Vec<String> {
    let mut classes: Vec<String> = api
        .set_page(JobSet::Retry, 0, 1000)
        .await
        .unwrap()
        .iter()
        .map(|e| e.job().unwrap().str_field("error_class").unwrap().to_string())
        .collect();
    classes.sort();
    classes
}

/// Host threads that each take one job and drop it unsettled, then run
/// `concurrency` jobs that all wait for each other: they can only finish if
/// every slot is free again.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dropped_deliveries_are_filed_and_free_their_slots() {
    let redis = TestRedis::start();
    let mut config = redis.config();
    const SLOTS: usize = 4;
    config.set_concurrency(SLOTS as i64).unwrap();
    let client = Client::new(&config).unwrap();
    let api = Api::new(client.clone());
    let worker = host_worker(config, &["Host"]);
    let handle = worker.handle();
    let running = tokio::spawn(worker.run());

    let drop_jobs: Vec<Job> = (0..SLOTS)
        .map(|i| Job::new("Host").args([json!("drop"), json!(i)]))
        .collect();
    client.push_bulk(drop_jobs).await.unwrap();
    let all_at_once = Arc::new(Barrier::new(SLOTS));
    let threads: Vec<_> = (0..SLOTS)
        .map(|_| {
            let (h, barrier) = (handle.clone(), all_at_once.clone());
            std::thread::spawn(move || loop {
                match h.next_job(Duration::from_millis(100)) {
                    NextJob::Job(delivery) if delivery.job().args_slice()[0] == json!("drop") => drop(delivery),
                    NextJob::Job(delivery) => {
                        barrier.wait(); // every slot busy at once
                        delivery.complete();
                    }
                    NextJob::Idle => {}
                    NextJob::Stopped => return,
                }
            })
        })
        .collect();
    wait_for_stats(&api, 0, SLOTS as u64).await;
    assert_eq!(retried_error_classes(&api).await, vec![HANDLER_ABORTED; SLOTS]);

    let together: Vec<Job> = (0..SLOTS)
        .map(|i| Job::new("Host").args([json!("run"), json!(i)]))
        .collect();
    client.push_bulk(together).await.unwrap();
    wait_for_stats(&api, SLOTS as u64, SLOTS as u64).await;
    handle.stop();
    running.await.unwrap().unwrap();
    for t in threads {
        t.join().unwrap();
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_class_nobody_registered_is_failed_by_the_core_and_never_handed_over() {
    let redis = TestRedis::start();
    let config = redis.config();
    let client = Client::new(&config).unwrap();
    let api = Api::new(client.clone());
    let worker = host_worker(config, &["Known"]);
    let handle = worker.handle();
    let running = tokio::spawn(worker.run());
    let seen = Arc::new(AtomicUsize::new(0));
    let (h, seen2) = (handle.clone(), seen.clone());
    let slot = std::thread::spawn(move || loop {
        match h.next_job(Duration::from_millis(100)) {
            NextJob::Job(delivery) => {
                assert_eq!(delivery.job().class(), "Known");
                seen2.fetch_add(1, Ordering::SeqCst);
                delivery.complete();
            }
            NextJob::Idle => {}
            NextJob::Stopped => return,
        }
    });
    client
        .push_bulk(vec![Job::new("Kernel"), Job::new("Known"), Job::new("Object")])
        .await
        .unwrap();
    wait_for_stats(&api, 1, 2).await;
    assert_eq!(seen.load(Ordering::SeqCst), 1);
    assert_eq!(retried_error_classes(&api).await, vec![UNKNOWN_HANDLER; 2]);
    handle.stop();
    running.await.unwrap().unwrap();
    slot.join().unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_delivery_abandoned_while_stopping_is_requeued_by_shutdown() {
    let redis = TestRedis::start();
    let config = redis.config();
    let client = Client::new(&config).unwrap();
    let worker = host_worker(config, &["Host"]);
    let handle = worker.handle();
    let running = tokio::spawn(worker.run());
    client.push(Job::new("Host").jid("a".repeat(24))).await.unwrap();
    let delivery = take_one(&handle).await;
    handle.stop();
    delivery.abandon("the thread running it was killed at exit");
    running.await.unwrap().unwrap();
    let mut conn = redis.conn().await;
    let queued = queue_contents(&mut conn, &client.keys().queue("default")).await;
    assert_eq!(queued.len(), 1, "back on its queue");
    assert_eq!(Job::parse(&queued[0]).unwrap().jid_str(), "a".repeat(24));
    assert_eq!(Api::new(client).stats().await.unwrap().failed, 0, "not a failure");
}

/// A handler still running when the shutdown timeout runs out: its job
/// goes back to the queue, and what the handler reports afterwards is not
/// recorded (no success counted, no result, no `done` line): the job runs
/// again, once, elsewhere.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_delivery_settled_after_shutdown_gave_it_back_is_not_recorded() {
    let redis = TestRedis::start();
    let mut config = redis.config();
    config.set_shutdown_timeout(0.2).unwrap();
    let client = Client::new(&config).unwrap();
    let worker = host_worker(config, &["Host"]);
    let handle = worker.handle();
    let running = tokio::spawn(worker.run());
    client
        .push(Job::new("Host").jid("b".repeat(24)).result_ttl(60.0))
        .await
        .unwrap();
    let delivery = take_one(&handle).await;
    assert_eq!(handle.given_back(), None);
    handle.stop();
    running.await.unwrap().unwrap();
    assert_eq!(handle.given_back(), Some(1));
    delivery.complete_with(serde_json::json!("late"));
    let mut conn = redis.conn().await;
    let queued = queue_contents(&mut conn, &client.keys().queue("default")).await;
    assert_eq!(queued.len(), 1, "back on its queue");
    let api = Api::new(client);
    assert_eq!(api.stats().await.unwrap().processed, 0, "not counted");
    let record = api.result(&"b".repeat(24)).await.unwrap().unwrap();
    assert_ne!(record["status"], "succeeded", "no result kept: {record}");
}

/// The next delivery, taken as a host thread takes it.
async fn take_one(handle: &cogworker::WorkerHandle) -> cogworker::Delivery {
    let h = handle.clone();
    tokio::task::spawn_blocking(move || loop {
        if let NextJob::Job(d) = h.next_job(Duration::from_millis(100)) {
            return d;
        }
    })
    .await
    .unwrap()
}

async fn queue_contents(conn: &mut redis::aio::MultiplexedConnection, key: &str) -> Vec<Vec<u8>> {
    use redis::AsyncCommands;
    conn.lrange(key, 0, -1).await.unwrap()
}

/// Panics in the synchronous part of a `Middleware::call`.
struct PanickingMiddleware;

impl Middleware for PanickingMiddleware {
    fn call(&self, job: Job, next: Next) -> BoxFuture<'static, HandlerResult> {
        if job.args_slice().first() == Some(&json!("middleware")) {
            panic!("middleware blew up before returning its future");
        }
        next.run(job)
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rust_panics_anywhere_are_filed_and_the_worker_runs_on_at_full_concurrency() {
    let redis = TestRedis::start();
    let mut config = redis.config();
    const SLOTS: usize = 3;
    config.set_concurrency(SLOTS as i64).unwrap();
    let client = Client::new(&config).unwrap();
    let api = Api::new(client.clone());
    let all_at_once = Arc::new(tokio::sync::Barrier::new(SLOTS));
    let worker = Worker::builder(config)
        // The closure itself panics before it makes a future.
        .register("SyncPanic", |_job| -> std::future::Ready<Result<(), Failure>> {
            panic!("handler closure blew up")
        })
        .register("Fails", |_job| async { Err(Failure::new("Boom", "failed")) })
        .retry_in("Fails", |_count, _job| panic!("retry hook blew up"))
        .register("Together", move |_job| {
            let barrier = all_at_once.clone();
            async move {
                barrier.wait().await;
                Ok(())
            }
        })
        .middleware(Arc::new(PanickingMiddleware))
        .build()
        .unwrap();
    let handle = worker.handle();
    let running = tokio::spawn(worker.run());
    client
        .push_bulk(vec![
            Job::new("SyncPanic"),
            Job::new("Fails"),
            Job::new("Together").args([json!("middleware")]),
        ])
        .await
        .unwrap();
    wait_for_stats(&api, 0, 3).await;
    let classes = retried_error_classes(&api).await;
    assert_eq!(classes, vec!["Boom", "panic", "panic"]);
    let together: Vec<Job> = (0..SLOTS).map(|_| Job::new("Together")).collect();
    client.push_bulk(together).await.unwrap();
    wait_for_stats(&api, SLOTS as u64, 3).await;
    handle.stop();
    running.await.unwrap().unwrap();
}

/// The slot loop and the settle rule both hosts run (`host/slot.rs`), from
/// Rust closures standing in for a host: a handler that returns, one that
/// raises, one whose value JSON cannot hold (its failure is described from
/// the core's error), one whose failure stops the worker; the hooks loop
/// dispatches the worker's lifecycle by name; then the join sees every
/// slot and the hooks thread out of their loops.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_host_slot_loop_settles_each_delivery_by_how_its_handler_ended() {
    use cogworker::host::{Described, Ended, HostFailure, HostValue, HostWorker, SettledBy};
    let redis = TestRedis::start();
    let config = redis.config();
    let client = Client::new(&config).unwrap();
    let api = Api::new(client.clone());
    for class in ["Returns", "Raises", "NotJson"] {
        client.push(Job::new(class).result_ttl(60.0)).await.unwrap();
    }
    let worker = Arc::new(HostWorker::new(config, &["Returns", "Raises", "NotJson", "Exits"], &[], false).unwrap());
    worker.start().unwrap();
    let hooks = {
        let worker = worker.clone();
        std::thread::spawn(move || {
            let mut names = Vec::new();
            worker
                .run_hooks(&mut PlainWait, |name, _job| {
                    names.push(name);
                    Ok(())
                })
                .map(|()| names)
        })
    };
    let slot = {
        let worker = worker.clone();
        std::thread::spawn(move || {
            worker.run_slot(&mut PlainWait, |delivery| {
                let ended = match delivery.info.class.as_str() {
                    "Returns" => Ended::Returned(HostValue::Int(7)),
                    "NotJson" => Ended::Returned(HostValue::Float(f64::NAN)),
                    other => Ended::Raised(format!("{other}Error")),
                };
                let stops = delivery.info.class == "Exits";
                worker.settle(
                    SettledBy::Slot,
                    &delivery,
                    ended,
                    |value| value,
                    |error| format!("cogworker::InvalidArgument: {error}"),
                    |raised| {
                        Some(Described {
                            failure: HostFailure {
                                class: Some(raised),
                                message: Some("it failed".into()),
                                ..Default::default()
                            },
                            stops_worker: stops,
                        })
                    },
                );
                Ok(())
            })
        })
    };
    wait_for_stats(&api, 1, 2).await;
    let classes = retried_error_classes(&api).await;
    assert_eq!(classes[0], "RaisesError");
    assert!(
        classes[1].starts_with("cogworker::InvalidArgument: invalid argument result"),
        "{classes:?}"
    );
    // A failure that stops the worker (SystemExit, Ruby's `exit`).
    client.push(Job::new("Exits")).await.unwrap();
    let finished = tokio::task::spawn_blocking({
        let worker = worker.clone();
        move || worker.finished(Duration::from_secs(15))
    });
    assert_eq!(finished.await.unwrap(), Some(Ok(())));
    assert!(
        tokio::task::spawn_blocking(move || worker.join(Duration::from_secs(5), true))
            .await
            .unwrap()
    );
    assert_eq!(slot.join().unwrap(), Ok(()));
    let names = hooks.join().unwrap().unwrap();
    assert_eq!(names.first(), Some(&"startup"), "{names:?}");
    assert!(names.contains(&"shutdown"), "{names:?}");
    assert_eq!(api.stats().await.unwrap().failed, 3);
}
