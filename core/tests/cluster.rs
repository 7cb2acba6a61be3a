//! Redis Cluster: three masters on loopback, namespace `{cogworker}` so every
//! key shares one slot. The core scenarios run unchanged: push (single,
//! bulk, scheduled, unique), fetch and run, retry, orphan recovery, the
//! periodic claim; and a namespace without a hash tag is refused at start.

mod common;

use cogworker::{Api, Client, Failure, Job, JobSet, Periodic, Retry, Worker};
use common::cluster::{Cluster, NS};
use common::*;
use serde_json::json;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn push_run_retry_schedule_unique_and_periodic_on_a_cluster() {
    let cluster = Cluster::start();
    let config = cluster.config();
    let client = Client::new(&config).unwrap();
    let api = Api::new(client.clone());

    let ran = Arc::new(AtomicUsize::new(0));
    let (count, flaky) = (ran.clone(), Arc::new(AtomicUsize::new(0)));
    let flaky_count = flaky.clone();
    let worker = Worker::builder(config.clone())
        .register("Count", move |_job| {
            let count = count.clone();
            async move {
                count.fetch_add(1, Ordering::SeqCst);
                Ok(())
            }
        })
        .register("Flaky", move |_job| {
            let flaky = flaky_count.clone();
            async move {
                if flaky.fetch_add(1, Ordering::SeqCst) == 0 {
                    Err(Failure::new("E", "first attempt fails"))
                } else {
                    Ok(())
                }
            }
        })
        .retry_in("Flaky", |_count, _job| Some(0.5))
        .register("Dies", |_job| async { Err(Failure::new("E", "always")) })
        .periodic(Periodic::new("* * * * * *", "Tick").unwrap().queue("ticks").unwrap())
        .build()
        .unwrap();
    let handle = worker.handle();
    let running = tokio::spawn(worker.run());

    client.push(Job::new("Count")).await.unwrap().unwrap();
    let bulk = client
        .push_bulk((0..200).map(|i| Job::new("Count").args([json!(i)])).collect())
        .await
        .unwrap();
    assert_eq!(bulk.len(), 200);
    client.push(Job::new("Count").delay(1.0)).await.unwrap().unwrap();
    client.push(Job::new("Flaky")).await.unwrap().unwrap();
    client
        .push(Job::new("Dies").retry(Retry::Max(0)))
        .await
        .unwrap()
        .unwrap();
    assert!(client
        .push(Job::new("Count").args([json!("u")]).unique_for(60.0))
        .await
        .unwrap()
        .is_some());
    assert_eq!(
        client
            .push(Job::new("Count").args([json!("u")]).unique_for(60.0))
            .await
            .unwrap(),
        None
    );

    let r = ran.clone();
    wait_until(
        "all Count jobs ran (incl. the scheduled one)",
        Duration::from_secs(20),
        move || {
            let r = r.clone();
            async move { r.load(Ordering::SeqCst) == 203 }
        },
    )
    .await;
    let f = flaky.clone();
    wait_until("Flaky succeeded on its retry", Duration::from_secs(20), move || {
        let f = f.clone();
        async move { f.load(Ordering::SeqCst) == 2 }
    })
    .await;
    let a = api.clone();
    wait_until("Dies is dead and ticks fired", Duration::from_secs(20), move || {
        let a = a.clone();
        async move { a.set_size(JobSet::Dead).await.unwrap() == 1 && a.queue("ticks").await.unwrap().size >= 2 }
    })
    .await;
    assert!(api.unique_locks(10).await.unwrap().is_empty(), "released after the run");

    // Orphan recovery: a dead process's in-progress list goes back.
    let mut owner = cluster.owner().await;
    let orphan = Job::new("Count").jid("a".repeat(24)).to_json();
    let _: () = redis::pipe()
        .rpush(format!("{NS}:in_progress:ghost"), &orphan)
        .sadd(format!("{NS}:in_progress_identities"), "ghost")
        .hset(format!("{NS}:last_beat"), "ghost", 1)
        .query_async(&mut owner)
        .await
        .unwrap();
    let r = ran.clone();
    wait_until("the orphan was recovered and ran", Duration::from_secs(20), move || {
        let r = r.clone();
        async move { r.load(Ordering::SeqCst) == 204 }
    })
    .await;

    handle.stop();
    tokio::time::timeout(Duration::from_secs(20), running)
        .await
        .unwrap()
        .unwrap()
        .unwrap();
    // 204 Count runs and Flaky's successful retry.
    assert_eq!(api.stats().await.unwrap().processed, 205);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_namespace_without_a_hash_tag_is_refused_at_start() {
    let cluster = Cluster::start();
    let mut config = cluster.config();
    config.set_namespace("cogworker").unwrap();
    let err = Client::new(&config).err().expect("refused").to_string();
    assert!(err.contains("namespace") && err.contains("{cogworker}"), "{err}");
    let err = Worker::builder(config).build().err().expect("refused").to_string();
    assert!(err.contains("hash tag"), "{err}");
}
