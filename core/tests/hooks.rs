//! Error hooks see every handler failure (one that panics changes
//! nothing), and event hooks see startup, heartbeats, each job filed in
//! `dead`, quiet and shutdown, in that order.

mod common;

use cogworker::{Api, Client, Failure, Job, JobSet, Retry, Worker, WorkerEvent};
use common::*;
use std::sync::{Arc, Mutex};
use std::time::Duration;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn error_and_event_hooks_see_what_happens() {
    let redis = TestRedis::start();
    let config = redis.config();
    let client = Client::new(&config).unwrap();
    let api = Api::new(client.clone());
    let seen: Arc<Mutex<Vec<String>>> = Arc::default();
    let (errors, events) = (seen.clone(), seen.clone());
    let worker = Worker::builder(config)
        .register("Fails", |_job| async { Err(Failure::new("Trouble", "no luck")) })
        .retry_in("Fails", |_count, _job| Some(3600.0))
        .on_error(|_job, _failure| panic!("the reporter is down"))
        .on_error(move |job, failure| {
            errors
                .lock()
                .unwrap()
                .push(format!("error {} {} {}", job.jid_str(), failure.class, failure.message));
        })
        .on_event(|_event| panic!("a hook that panics"))
        .on_event(move |event| {
            let line = match event {
                WorkerEvent::Died { job } => {
                    let job: serde_json::Value = serde_json::from_str(job).unwrap();
                    format!("death {} {}", job["jid"].as_str().unwrap(), job["error_class"])
                }
                other => other.name().to_string(),
            };
            events.lock().unwrap().push(line);
        })
        .build()
        .unwrap();
    let handle = worker.handle();
    let running = tokio::spawn(worker.run());
    let has = |line: String| {
        let seen = seen.clone();
        move || {
            let seen = seen.clone();
            let line = line.clone();
            async move { seen.lock().unwrap().contains(&line) }
        }
    };
    wait_until("startup", Duration::from_secs(10), has("startup".into())).await;
    wait_until("a heartbeat", Duration::from_secs(10), has("heartbeat".into())).await;

    let retried = client.push(Job::new("Fails")).await.unwrap().unwrap();
    let dies = client
        .push(Job::new("Fails").retry(Retry::Max(0)))
        .await
        .unwrap()
        .unwrap();
    let death = format!("death {dies} \"Trouble\"");
    wait_until("the death event", Duration::from_secs(10), has(death.clone())).await;
    let a = api.clone();
    let retried_jid = retried.clone();
    wait_until("the other in retry", Duration::from_secs(10), move || {
        let (a, jid) = (a.clone(), retried_jid.clone());
        async move { a.find_in_set(JobSet::Retry, &jid).await.unwrap().is_some() }
    })
    .await;
    handle.quiet();
    wait_until("quiet", Duration::from_secs(10), has("quiet".into())).await;
    handle.stop();
    running.await.unwrap().unwrap();
    wait_until("shutdown", Duration::from_secs(10), has("shutdown".into())).await;

    let seen = seen.lock().unwrap().clone();
    for jid in [&retried, &dies] {
        assert!(seen.contains(&format!("error {jid} Trouble no luck")), "{seen:?}");
    }
    let position = |line: &str| seen.iter().position(|l| l == line).unwrap();
    assert!(position("startup") < position(&death) && position(&death) < position("quiet"));
    assert!(position("quiet") < position("shutdown"), "{seen:?}");
    assert_eq!(api.set_size(JobSet::Dead).await.unwrap(), 1);
}
