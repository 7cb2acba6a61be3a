//! Time limits (issue #30, part 4, in the core): a job pushed with
//! `timeout` whose handler runs past it is stopped and fails as
//! `cogworker::Timeout`, retried by its policy; a Rust handler's future is
//! dropped, a host thread is told through the timekeeper loop, and a host
//! handler that returns after its limit passed still fails as timed out.
//! A job within its limit is not touched.

mod common;

use cogworker::host::{Described, Ended, HostFailure, HostValue, HostWorker, SettledBy};
use cogworker::{Api, Client, Job, JobSet, Worker, TIMEOUT_CLASS};
use common::*;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// The retry set's jobs: (class, error_class, error_message).
async fn retried(api: &Api) -> Vec<(String, String, String)> {
    let mut entries: Vec<_> = api
        .set_page(JobSet::Retry, 0, 100)
        .await
        .unwrap()
        .iter()
        .map(|e| {
            let job = e.job().unwrap();
            let field = |name: &str| job.str_field(name).unwrap_or_default().to_string();
            (job.class().to_string(), field("error_class"), field("error_message"))
        })
        .collect();
    entries.sort();
    entries
}

async fn wait_retried(api: &Api, n: u64) {
    let api = api.clone();
    wait_until(&format!("{n} in retry"), Duration::from_secs(15), move || {
        let api = api.clone();
        async move { api.set_size(JobSet::Retry).await.unwrap() == n }
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_rust_handler_past_its_limit_is_dropped_and_retried_as_timed_out() {
    let redis = TestRedis::start();
    let config = redis.config();
    let client = Client::new(&config).unwrap();
    let api = Api::new(client.clone());
    let (started, finished) = (Arc::new(AtomicUsize::new(0)), Arc::new(AtomicUsize::new(0)));
    let (s, f) = (started.clone(), finished.clone());
    let worker = Worker::builder(config)
        .register("Sleeps", move |job| {
            let (s, f) = (s.clone(), f.clone());
            let seconds = job.args_slice()[0].as_f64().unwrap();
            async move {
                s.fetch_add(1, Ordering::SeqCst);
                tokio::time::sleep(Duration::from_secs_f64(seconds)).await;
                f.fetch_add(1, Ordering::SeqCst);
                Ok(())
            }
        })
        .build()
        .unwrap();
    let handle = worker.handle();
    let task = tokio::spawn(worker.run());
    let pushed = Instant::now();
    let slow = Job::new("Sleeps").args([30.0.into()]).timeout(0.5);
    client.push(slow).await.unwrap().unwrap();
    // Within its limit: runs to the end, untouched.
    client
        .push(Job::new("Sleeps").args([0.1.into()]).timeout(5.0))
        .await
        .unwrap();
    wait_retried(&api, 1).await;
    assert!(pushed.elapsed() < Duration::from_secs(5), "{:?}", pushed.elapsed());
    let entries = retried(&api).await;
    assert_eq!(
        entries,
        vec![(
            "Sleeps".to_string(),
            TIMEOUT_CLASS.to_string(),
            "ran past its time limit of 0.5s".to_string()
        )]
    );
    wait_for_count(
        "the job within its limit finished",
        &finished,
        1,
        Duration::from_secs(5),
    )
    .await;
    assert_eq!(started.load(Ordering::SeqCst), 2);
    wait_processed(
        "the finished job counted as processed",
        &api,
        1,
        Duration::from_secs(10),
    )
    .await;
    let stats = api.stats().await.unwrap();
    assert_eq!((stats.processed, stats.failed), (1, 1));
    handle.stop();
    task.await.unwrap().unwrap();
    assert_eq!(
        finished.load(Ordering::SeqCst),
        1,
        "the timed-out handler ran no further"
    );
}

/// A host thread's handler is told through the timekeeper (as Python's
/// asynchronous exception or Ruby's `Thread#raise` would be), once, while
/// it runs; one that ignores the interruption and returns later still
/// fails as timed out, with what it raised (if it raised) as the backtrace.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_host_handler_is_told_by_the_timekeeper_and_fails_as_timed_out_however_it_ends() {
    let redis = TestRedis::start();
    let config = redis.config();
    let client = Client::new(&config).unwrap();
    let api = Api::new(client.clone());
    let worker = Arc::new(HostWorker::new(config, &["Stops", "Ignores", "Quick"], &[], false).unwrap());
    worker.start().unwrap();
    // The "host thread" 7's flag, raised by the timekeeper.
    let told = Arc::new(AtomicUsize::new(0));
    let timekeeper = {
        let (worker, told) = (worker.clone(), told.clone());
        std::thread::spawn(move || {
            let no_hook = |_: &str, _: u32| Ok(cogworker::host::RetryHint::Default);
            worker.run_timekeeper(&mut PlainWait, no_hook, |thread| {
                assert_eq!(thread, 7);
                told.fetch_add(1, Ordering::SeqCst);
                Ok(())
            })
        })
    };
    let stopped_early = Arc::new(AtomicBool::new(false));
    let slot = {
        let (worker, told, stopped_early) = (worker.clone(), told.clone(), stopped_early.clone());
        std::thread::spawn(move || {
            worker.run_slot(&mut PlainWait, |delivery| {
                let class = delivery.info.class.clone();
                let ended = delivery.perform(7, || {
                    let started = Instant::now();
                    let before = told.load(Ordering::SeqCst);
                    while started.elapsed() < Duration::from_secs(3) {
                        if class == "Stops" && told.load(Ordering::SeqCst) > before {
                            stopped_early.store(true, Ordering::SeqCst);
                            return Ended::Raised("JobTimeout".to_string());
                        }
                        if class == "Quick" {
                            break;
                        }
                        std::thread::sleep(Duration::from_millis(10));
                    }
                    Ended::Returned(HostValue::Null)
                });
                worker.settle(
                    SettledBy::Slot,
                    &delivery,
                    ended,
                    |value| value,
                    |error| error.to_string(),
                    |raised| {
                        Some(Described {
                            failure: HostFailure {
                                class: Some(raised),
                                message: Some("stopped".into()),
                                backtrace: vec!["handler.py:3".into()],
                                ..Default::default()
                            },
                            stops_worker: false,
                        })
                    },
                );
                Ok(())
            })
        })
    };
    client.push(Job::new("Stops").timeout(0.3)).await.unwrap();
    client.push(Job::new("Ignores").timeout(0.3)).await.unwrap();
    client.push(Job::new("Quick").timeout(0.3)).await.unwrap();
    wait_retried(&api, 2).await;
    let entries = retried(&api).await;
    let expected = |class: &str| {
        (
            class.to_string(),
            TIMEOUT_CLASS.to_string(),
            "ran past its time limit of 0.3s".to_string(),
        )
    };
    assert_eq!(entries, vec![expected("Ignores"), expected("Stops")]);
    let stopped = &api.set_page(JobSet::Retry, 0, 10).await.unwrap();
    let stops = stopped
        .iter()
        .map(|e| e.job().unwrap())
        .find(|job| job.class() == "Stops")
        .unwrap();
    assert_eq!(stops.get("error_backtrace"), Some(&serde_json::json!(["handler.py:3"])));
    assert!(stopped_early.load(Ordering::SeqCst));
    assert_eq!(told.load(Ordering::SeqCst), 2, "each timed-out handler told once");
    let stats = api.stats().await.unwrap();
    assert_eq!((stats.processed, stats.failed), (1, 2), "the quick one succeeded");
    worker.stop();
    let finished = tokio::task::spawn_blocking({
        let worker = worker.clone();
        move || worker.finished(Duration::from_secs(15))
    });
    assert_eq!(finished.await.unwrap(), Some(Ok(())));
    assert_eq!(slot.join().unwrap(), Ok(()));
    assert_eq!(timekeeper.join().unwrap(), Ok(()));
}
