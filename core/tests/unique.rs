//! Unique jobs: a duplicate push returns no jid while the lock is held; the
//! lock is released when the job succeeds or dies (kept across a retry),
//! and is visible and clearable through the ops API.

mod common;

use cogworker::{Api, Client, Failure, Job, Retry, Worker};
use common::*;
use redis::AsyncCommands;
use serde_json::json;
use std::time::Duration;

const NS: &str = "cogworker";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn duplicates_are_refused_until_the_job_succeeds_or_dies() {
    let redis = TestRedis::start();
    let mut conn = redis.conn().await;
    let config = redis.config();
    let client = Client::new(&config).unwrap();
    let api = Api::new(client.clone());
    let unique = |class: &str, arg: i64| Job::new(class).args([json!(arg)]).unique_for(60.0);

    // Pushed before any worker runs: the duplicates are refused.
    let first = client.push(unique("Ok", 1)).await.unwrap().expect("first push");
    assert_eq!(client.push(unique("Ok", 1)).await.unwrap(), None, "duplicate");
    let bulk = client
        .push_bulk(vec![unique("Ok", 1), unique("Ok", 2), Job::new("Ok")])
        .await
        .unwrap();
    assert_eq!(bulk[0], None);
    assert!(bulk[1].is_some() && bulk[2].is_some());
    assert_eq!(llen(&mut conn, &format!("{NS}:queue:default")).await, 3);

    let locks = api.unique_locks(100).await.unwrap();
    assert_eq!(locks.len(), 2);
    let lock = locks.iter().find(|l| l.owner == first).expect("listed with its owner");
    assert!((55..=60).contains(&lock.ttl), "{lock:?}");

    // A scheduled unique job holds its lock until it is due, plus unique_for.
    let later = Job::new("Later").unique_for(10.0).delay(100.0);
    client.push(later).await.unwrap().unwrap();
    let later_lock = api
        .unique_locks(100)
        .await
        .unwrap()
        .into_iter()
        .find(|l| l.ttl > 60)
        .expect("the scheduled job's lock");
    assert!((105..=110).contains(&later_lock.ttl), "{later_lock:?}");
    assert!(api.clear_unique_lock(&later_lock.name).await.unwrap());
    assert!(client
        .push(Job::new("Later").unique_for(10.0).delay(100.0))
        .await
        .unwrap()
        .is_some());

    // Run them: success releases the lock.
    let worker = Worker::builder(config)
        .register("Ok", |_job| async { Ok(()) })
        .register("Boom", |_job| async { Err(Failure::new("E", "boom")) })
        .retry_in("Boom", |_count, _job| Some(60.0))
        .build()
        .unwrap();
    let handle = worker.handle();
    let running = tokio::spawn(worker.run());
    let c = conn.clone();
    wait_until("the three jobs ran", Duration::from_secs(10), move || {
        let mut c = c.clone();
        async move { c.get::<_, Option<u64>>(format!("{NS}:stat:processed")).await.unwrap() == Some(3) }
    })
    .await;
    assert!(
        client.push(unique("Ok", 1)).await.unwrap().is_some(),
        "released on success"
    );

    // A retried failure keeps its lock; a job that dies releases it.
    let retried = client
        .push(unique("Boom", 1).retry(Retry::Max(3)))
        .await
        .unwrap()
        .unwrap();
    let dies = client
        .push(unique("Boom", 2).retry(Retry::Max(0)))
        .await
        .unwrap()
        .unwrap();
    let c = conn.clone();
    wait_until("both failed", Duration::from_secs(10), move || {
        let mut c = c.clone();
        async move { c.get::<_, Option<u64>>(format!("{NS}:stat:failed")).await.unwrap() == Some(2) }
    })
    .await;
    handle.stop();
    running.await.unwrap().unwrap();
    assert_eq!(client.push(unique("Boom", 1).retry(Retry::Max(3))).await.unwrap(), None);
    assert!(
        client.push(unique("Boom", 2)).await.unwrap().is_some(),
        "released when it died"
    );
    let owners: Vec<String> = api
        .unique_locks(100)
        .await
        .unwrap()
        .into_iter()
        .map(|l| l.owner)
        .collect();
    assert!(owners.contains(&retried) && !owners.contains(&dies), "{owners:?}");
}

#[tokio::test]
async fn unique_for_must_be_positive() {
    let redis = TestRedis::start();
    let client = Client::new(&redis.config()).unwrap();
    let err = client
        .push(Job::new("A").unique_for(0.0))
        .await
        .unwrap_err()
        .to_string();
    assert!(err.contains("unique_for"), "{err}");
}
