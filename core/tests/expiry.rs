//! Expiry (issue #30, part 3, in the core): a job not started by its
//! `expires_at` is dropped when fetched, never run, counted as expired
//! (not failed), logged once per batch, and kept in dead only when it asks.

mod common;

use cogworker::{Api, Client, Error, Job, JobSet, Worker};
use common::*;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_expired_job_is_dropped_unrun_counted_and_kept_only_when_asked() {
    let redis = TestRedis::start();
    let config = redis.config();
    let client = Client::new(&config).unwrap();
    let api = Api::new(client.clone());
    // Pushed while the queue is paused, so they wait past their expiry.
    api.pause_queue("default").await.unwrap();
    let dropped = client
        .push(Job::new("Count").expires_in(0.2).result_ttl(600.0))
        .await
        .unwrap()
        .unwrap();
    let kept = client
        .push(Job::new("Count").expires_in(0.2).keep_expired())
        .await
        .unwrap()
        .unwrap();
    let past = cogworker::now() - 1.0;
    client.push(Job::new("Count").expires_at(past)).await.unwrap().unwrap();
    let fresh = client
        .push(Job::new("Count").expires_in(3600.0))
        .await
        .unwrap()
        .unwrap();
    let ran = Arc::new(AtomicUsize::new(0));
    let counter = ran.clone();
    let ran_jids = Arc::new(std::sync::Mutex::new(Vec::new()));
    let seen = ran_jids.clone();
    let worker = Worker::builder(config)
        .register("Count", move |job| {
            let (counter, seen) = (counter.clone(), seen.clone());
            async move {
                seen.lock().unwrap().push(job.jid_str().to_string());
                counter.fetch_add(1, Ordering::SeqCst);
                Ok(())
            }
        })
        .build()
        .unwrap();
    let handle = worker.handle();
    let task = tokio::spawn(worker.run());
    tokio::time::sleep(Duration::from_millis(400)).await;
    api.unpause_queue("default").await.unwrap();
    let a = api.clone();
    wait_until("three expired, one ran", Duration::from_secs(10), move || {
        let a = a.clone();
        async move { a.stats().await.unwrap().expired == 3 }
    })
    .await;
    wait_for_count("the fresh job ran", &ran, 1, Duration::from_secs(10)).await;
    assert_eq!(*ran_jids.lock().unwrap(), vec![fresh], "only the fresh job ran");
    wait_processed("the fresh job counted as processed", &api, 1, Duration::from_secs(10)).await;
    let stats = api.stats().await.unwrap();
    assert_eq!((stats.processed, stats.failed, stats.expired), (1, 0, 3));
    assert_eq!(
        api.set_size(JobSet::Dead).await.unwrap(),
        1,
        "only the one that asked is kept"
    );
    let entry = api
        .find_in_set(JobSet::Dead, &kept)
        .await
        .unwrap()
        .expect("kept in dead");
    let job: serde_json::Value = serde_json::from_slice(&entry.raw).unwrap();
    assert_eq!(job["error_class"], "cogworker::Expired", "{job}");
    assert_eq!(api.status(&dropped).await.unwrap(), "expired");
    let mut conn = redis.conn().await;
    assert_eq!(llen(&mut conn, "cogworker:queue:default").await, 0);
    assert_eq!(
        held(&mut conn, &format!("cogworker:in_progress:{}", handle.identity())).await,
        0
    );
    handle.stop();
    task.await.unwrap().unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_bad_expiry_is_refused_naming_the_field() {
    let redis = TestRedis::start();
    let client = Client::new(&redis.config()).unwrap();
    for (job, field) in [
        (Job::new("X").expires_in(0.0), "expires_in"),
        (Job::new("X").expires_in(f64::NAN), "expires_in"),
        (
            Job::new("X").field("expires_at", serde_json::json!("soon")),
            "expires_at",
        ),
        (
            Job::new("X").field("keep_expired", serde_json::json!(1)),
            "keep_expired",
        ),
    ] {
        match client.push(job).await {
            Err(Error::InvalidJob { field: named, .. }) => assert_eq!(named, field),
            other => panic!("{field}: refused, not {other:?}"),
        }
    }
}
