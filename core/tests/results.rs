//! Job results (`result_ttl`): statuses from push to settle, the record of
//! a success and of a job that died, waiting without polling, and nothing
//! kept for a job without `result_ttl`.

mod common;

use cogworker::{Api, Client, Failure, Job, Retry, Worker};
use common::*;
use std::time::Duration;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn results_from_push_to_settle() {
    let redis = TestRedis::start();
    let config = redis.config();
    let client = Client::new(&config).unwrap();
    let api = Api::new(client.clone());
    let ok = client.push(Job::new("Ok").result_ttl(600.0)).await.unwrap().unwrap();
    let later = client
        .push(Job::new("Ok").result_ttl(600.0).delay(3600.0))
        .await
        .unwrap()
        .unwrap();
    let dies = client
        .push(Job::new("Dies").result_ttl(600.0).retry(Retry::Max(0)))
        .await
        .unwrap()
        .unwrap();
    let plain = client.push(Job::new("Ok")).await.unwrap().unwrap();
    let unique = client
        .push(
            Job::new("Ok")
                .result_ttl(600.0)
                .unique_for(60.0)
                .args([serde_json::json!("u")]),
        )
        .await
        .unwrap()
        .unwrap();
    assert_eq!(api.status(&ok).await.unwrap(), "queued");
    assert_eq!(api.status(&later).await.unwrap(), "scheduled");
    assert_eq!(
        api.status(&unique).await.unwrap(),
        "queued",
        "unique pushes write it too"
    );
    assert_eq!(api.status("nope").await.unwrap(), "unknown");
    let bad = client
        .push(Job::new("Ok").result_ttl(0.5))
        .await
        .unwrap_err()
        .to_string();
    assert!(bad.contains("result_ttl"), "{bad}");

    let release = std::sync::Arc::new(tokio::sync::Notify::new());
    let gate = release.clone();
    let held = client.push(Job::new("Held").result_ttl(600.0)).await.unwrap().unwrap();
    let worker = Worker::builder(config)
        .register("Held", move |_job| {
            let gate = gate.clone();
            async move {
                gate.notified().await;
                Ok(())
            }
        })
        .register("Ok", |_job| async { Ok(()) })
        .register("Dies", |_job| async { Err(Failure::new("Trouble", "no luck")) })
        .build()
        .unwrap();
    let handle = worker.handle();
    let running = tokio::spawn(worker.run());
    let a = api.clone();
    let held_jid = held.clone();
    wait_until("running", Duration::from_secs(10), move || {
        let (a, jid) = (a.clone(), held_jid.clone());
        async move { a.status(&jid).await.unwrap() == "running" }
    })
    .await;
    release.notify_one();
    assert_eq!(
        api.wait_result(&held, 10.0).await.unwrap().unwrap()["status"],
        "succeeded"
    );
    let record = api.wait_result(&ok, 10.0).await.unwrap().unwrap();
    assert_eq!(record["status"], "succeeded");
    assert_eq!(record["value"], serde_json::Value::Null, "Rust handlers return nothing");
    assert_eq!(record["worker"].as_str(), Some(handle.identity()), "who ran it");
    assert!(record["created_at"].as_f64().is_some(), "{record}");
    let record = api.wait_result(&unique, 10.0).await.unwrap().unwrap();
    assert_eq!(record["args"], serde_json::json!(["u"]), "what was asked");
    let record = api.wait_result(&dies, 10.0).await.unwrap().unwrap();
    assert_eq!(
        (record["status"].as_str(), record["error_class"].as_str()),
        (Some("dead"), Some("Trouble"))
    );
    assert_eq!(record["worker"].as_str(), Some(handle.identity()));
    let attempts = api.attempts(&dies).await.unwrap();
    let attempt: serde_json::Value = serde_json::from_str(&attempts[0]).unwrap();
    assert_eq!(
        attempt["worker"].as_str(),
        Some(handle.identity()),
        "attempts say where they ran"
    );
    let plain_jid = plain.clone();
    wait_processed("the plain job ran", &api, 4, Duration::from_secs(10)).await;
    assert_eq!(
        api.status(&plain_jid).await.unwrap(),
        "unknown",
        "nothing kept without result_ttl"
    );
    // A wait that times out returns the record as it stands.
    let started = std::time::Instant::now();
    let pending = api.wait_result(&later, 0.3).await.unwrap().unwrap();
    assert_eq!(pending["status"], "scheduled");
    assert!(started.elapsed() >= Duration::from_millis(250));
    handle.stop();
    running.await.unwrap().unwrap();
}
