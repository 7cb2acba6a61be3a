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

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn client_middleware_adds_fields_or_stops_pushes_and_covers_periodic_jobs() {
    let redis = TestRedis::start();
    let config = redis.config();
    let tenant = |job: Job| {
        if job.args_slice().first() == Some(&serde_json::json!("stop")) {
            return None;
        }
        Some(job.field("tenant", serde_json::json!("acme")))
    };
    let client = Client::new(&config).unwrap().with_middleware(tenant);
    let mut conn = redis.conn().await;
    let queued = |raw: Vec<Vec<u8>>| -> Vec<serde_json::Value> {
        raw.iter().map(|r| serde_json::from_slice(r).unwrap()).collect()
    };

    let jid = client.push(Job::new("A").args([serde_json::json!(1)])).await.unwrap();
    assert!(jid.is_some());
    let stopped = client
        .push(Job::new("A").args([serde_json::json!("stop")]))
        .await
        .unwrap();
    assert_eq!(stopped, None, "a stopped push returns no jid");
    let bulk = client
        .push_bulk(vec![
            Job::new("A").args([serde_json::json!(2)]),
            Job::new("A").args([serde_json::json!("stop")]),
            Job::new("A").args([serde_json::json!(3)]).at(cogworker_now() + 3600.0),
        ])
        .await
        .unwrap();
    assert!(bulk[0].is_some() && bulk[1].is_none() && bulk[2].is_some(), "{bulk:?}");
    let on_queue: Vec<Vec<u8>> = redis::AsyncCommands::lrange(&mut conn, "cogworker:queue:default", 0, -1)
        .await
        .unwrap();
    let on_queue = queued(on_queue);
    assert_eq!(on_queue.len(), 2);
    assert!(on_queue.iter().all(|job| job["tenant"] == "acme"), "{on_queue:?}");
    let scheduled: Vec<Vec<u8>> = redis::AsyncCommands::zrange(&mut conn, "cogworker:schedule", 0, -1)
        .await
        .unwrap();
    assert_eq!(queued(scheduled)[0]["tenant"], "acme");
    // What middleware returns is checked like any job.
    let breaks = Client::new(&config)
        .unwrap()
        .with_middleware(|job: Job| Some(job.field("queue", serde_json::json!(""))));
    let err = breaks.push(Job::new("A")).await.unwrap_err().to_string();
    assert!(err.contains("queue"), "{err}");

    // The jobs a worker pushes itself (periodic) pass its client middleware.
    let worker = Worker::builder(config)
        .client_middleware(tenant)
        // On a queue this worker does not take: it has no handler for it.
        .periodic(
            cogworker::Periodic::new("* * * * * *", "Tick")
                .unwrap()
                .queue("ticks")
                .unwrap(),
        )
        .build()
        .unwrap();
    let handle = worker.handle();
    let running = tokio::spawn(worker.run());
    let redis_url = redis.url();
    wait_until("a periodic job with the field", Duration::from_secs(15), move || {
        let url = redis_url.clone();
        async move {
            let client = redis::Client::open(url).unwrap();
            let mut conn = client.get_multiplexed_async_connection().await.unwrap();
            let raw: Vec<Vec<u8>> = redis::AsyncCommands::lrange(&mut conn, "cogworker:queue:ticks", 0, -1)
                .await
                .unwrap();
            raw.iter()
                .map(|r| serde_json::from_slice::<serde_json::Value>(r).unwrap())
                .any(|job| job["class"] == "Tick" && job["tenant"] == "acme")
        }
    })
    .await;
    handle.stop();
    running.await.unwrap().unwrap();
}

fn cogworker_now() -> f64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs_f64()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn fields_middleware_adds_survive_dead_then_retry_now_and_the_shutdown_requeue() {
    let redis = TestRedis::start();
    let mut config = redis.config();
    config.set_shutdown_timeout(0.5).unwrap();
    let client = Client::new(&config)
        .unwrap()
        .with_middleware(|job: Job| Some(job.field("tenant", serde_json::json!("acme"))));
    let api = Api::new(client.clone());
    let tenant_on_queue = |queue: &'static str| {
        let url = redis.url();
        async move {
            let client = redis::Client::open(url).unwrap();
            let mut conn = client.get_multiplexed_async_connection().await.unwrap();
            let raw: Vec<Vec<u8>> = redis::AsyncCommands::lrange(&mut conn, format!("cogworker:queue:{queue}"), 0, -1)
                .await
                .unwrap();
            raw.iter()
                .map(|r| serde_json::from_slice::<serde_json::Value>(r).unwrap())
                .map(|job| job["tenant"].clone())
                .collect::<Vec<_>>()
        }
    };

    // Dead, then "retry now" from the dead set: the field is still there.
    let dies = Worker::builder(config.clone())
        .register("Dies", |_job| async { Err(Failure::new("Trouble", "no luck")) })
        .build()
        .unwrap();
    let handle = dies.handle();
    let running = tokio::spawn(dies.run());
    client.push(Job::new("Dies").retry(Retry::Max(0))).await.unwrap();
    let a = api.clone();
    wait_until("dead", Duration::from_secs(10), move || {
        let a = a.clone();
        async move { a.set_size(JobSet::Dead).await.unwrap() == 1 }
    })
    .await;
    handle.stop();
    running.await.unwrap().unwrap();
    let entry = api.set_page(JobSet::Dead, 0, 1).await.unwrap().remove(0);
    assert_eq!(entry.job().unwrap().get("tenant"), Some(&serde_json::json!("acme")));
    assert!(api.retry_now(JobSet::Dead, &entry).await.unwrap());
    assert_eq!(tenant_on_queue("default").await, vec![serde_json::json!("acme")]);

    // Still running past the shutdown deadline: put back with the field.
    let mut holding = config.clone();
    holding.set_queues(&["held"]).unwrap();
    let (worker, _release) = gated_worker(holding, "Holds");
    let handle = worker.handle();
    let running = tokio::spawn(worker.run());
    client.push(Job::new("Holds").queue("held")).await.unwrap();
    let h = handle.clone();
    wait_until("running", Duration::from_secs(10), move || {
        let h = h.clone();
        async move { h.busy().len() == 1 }
    })
    .await;
    handle.stop();
    running.await.unwrap().unwrap();
    assert_eq!(tenant_on_queue("held").await, vec![serde_json::json!("acme")]);
}
