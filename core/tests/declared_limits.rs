//! Limits a job declares (`Job::limits`, issue #30 part 1): taken before a
//! slot runs it; over one, the job goes back to the schedule, not run and
//! not counted as a failure, until `over_limit_max` reschedules, then it
//! fails with `cogworker::OverLimit`; a limiter nobody defined fails it.

mod common;

use cogworker::{Api, Client, Error, Failure, Job, JobSet, Limit, Retry, Worker};
use common::*;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

/// A worker whose `Limited` handler records how many run at once.
fn limited_worker(
    config: cogworker::Config,
    running: Arc<AtomicUsize>,
    most: Arc<AtomicUsize>,
    ran: Arc<AtomicUsize>,
) -> Worker {
    limited_builder(config, running, most, ran).build().unwrap()
}

fn limited_builder(
    config: cogworker::Config,
    running: Arc<AtomicUsize>,
    most: Arc<AtomicUsize>,
    ran: Arc<AtomicUsize>,
) -> cogworker::WorkerBuilder {
    Worker::builder(config)
        .register("Limited", move |_job| {
            let (running, most, ran) = (running.clone(), most.clone(), ran.clone());
            async move {
                let now = running.fetch_add(1, Ordering::SeqCst) + 1;
                most.fetch_max(now, Ordering::SeqCst);
                tokio::time::sleep(Duration::from_millis(150)).await;
                running.fetch_sub(1, Ordering::SeqCst);
                ran.fetch_add(1, Ordering::SeqCst);
                Ok(())
            }
        })
        .register("Never", |_job| async { Err(Failure::new("Ran", "it must not run")) })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_declared_concurrent_limit_holds_and_every_job_runs_once() {
    let redis = TestRedis::start();
    let mut config = redis.config();
    config.set_concurrency(8).unwrap();
    let client = Client::new(&config).unwrap();
    let api = Api::new(client.clone());
    client.limiter(Limit::concurrent("pair", 2).unwrap()).await.unwrap();
    for _ in 0..8 {
        client.push(Job::new("Limited").limits(["pair"])).await.unwrap();
    }
    let (running, most, ran) = (
        Arc::default(),
        Arc::new(AtomicUsize::new(0)),
        Arc::new(AtomicUsize::new(0)),
    );
    let worker = limited_worker(config, running, most.clone(), ran.clone());
    let handle = worker.handle();
    let task = tokio::spawn(worker.run());
    wait_for_count("all 8 limited jobs ran", &ran, 8, Duration::from_secs(60)).await;
    assert_eq!(
        most.load(Ordering::SeqCst),
        2,
        "never more than 2 at once, and 2 were reached"
    );
    // The handlers have run; their acknowledgements count them a moment
    // later (a clean-clone run once read 6 of 8 here).
    wait_processed("all 8 counted as processed", &api, 8, Duration::from_secs(10)).await;
    let stats = api.stats().await.unwrap();
    assert_eq!((stats.processed, stats.failed), (8, 0), "a reschedule is no failure");
    let mut conn = redis.conn().await;
    wait_until("every lease released", Duration::from_secs(5), || {
        let mut conn = conn.clone();
        async move { zcard(&mut conn, "cogworker:limiter_state:concurrent:pair").await == 0 }
    })
    .await;
    assert_eq!(zcard(&mut conn, "cogworker:schedule").await, 0);
    handle.stop();
    task.await.unwrap().unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn limits_declared_on_a_class_hold_for_jobs_pushed_without_them() {
    let redis = TestRedis::start();
    let mut config = redis.config();
    config.set_concurrency(6).unwrap();
    let client = Client::new(&config).unwrap();
    client
        .limiter(Limit::concurrent("class-pair", 2).unwrap())
        .await
        .unwrap();
    for _ in 0..6 {
        client.push(Job::new("Limited")).await.unwrap();
    }
    let (most, ran) = (Arc::new(AtomicUsize::new(0)), Arc::new(AtomicUsize::new(0)));
    let worker = limited_builder(config.clone(), Arc::default(), most.clone(), ran.clone())
        .limits("Limited", ["class-pair"])
        .build()
        .unwrap();
    let handle = worker.handle();
    let task = tokio::spawn(worker.run());
    wait_for_count("all 6 ran", &ran, 6, Duration::from_secs(30)).await;
    assert_eq!(most.load(Ordering::SeqCst), 2);
    handle.stop();
    task.await.unwrap().unwrap();
    let refused = limited_builder(config, Arc::default(), Arc::default(), Arc::default())
        .limits("Limited", ["not ok"])
        .build()
        .err()
        .expect("a bad name is refused at build");
    assert!(refused.to_string().contains("limits of Limited"), "{refused}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn past_over_limit_max_the_job_fails_with_over_limit_and_never_ran() {
    let redis = TestRedis::start();
    let mut config = redis.config();
    config.set_over_limit_max(2);
    config.set_over_limit_wait(0.1).unwrap();
    let client = Client::new(&config).unwrap();
    let api = Api::new(client.clone());
    // The test holds the only place the whole time.
    let busy = client.limiter(Limit::concurrent("busy", 1).unwrap()).await.unwrap();
    let _held = busy.acquire(Duration::ZERO).await.unwrap();
    let jid = client
        .push(
            Job::new("Never")
                .limits(["busy"])
                .retry(Retry::Max(0))
                .result_ttl(600.0),
        )
        .await
        .unwrap()
        .unwrap();
    let unknown = client
        .push(Job::new("Never").limits(["nobody-defined-me"]).retry(Retry::Max(0)))
        .await
        .unwrap()
        .unwrap();
    let worker = limited_worker(config, Arc::default(), Arc::default(), Arc::default());
    let handle = worker.handle();
    let task = tokio::spawn(worker.run());
    let a = api.clone();
    wait_until("both jobs dead", Duration::from_secs(30), move || {
        let a = a.clone();
        async move { a.set_size(JobSet::Dead).await.unwrap() == 2 }
    })
    .await;
    let dead = |jid: String| {
        let api = api.clone();
        async move {
            let entry = api.find_in_set(JobSet::Dead, &jid).await.unwrap().expect("in dead");
            serde_json::from_slice::<serde_json::Value>(&entry.raw).unwrap()
        }
    };
    let job = dead(jid.clone()).await;
    assert_eq!(job["error_class"], "cogworker::OverLimit", "{job}");
    assert_eq!(job["over_limit"], 2, "rescheduled twice first: {job}");
    assert!(job["error_message"].as_str().unwrap().contains("busy"), "{job}");
    let job = dead(unknown).await;
    assert_eq!(job["error_class"], "cogworker::UnknownLimiter", "{job}");
    assert!(job["error_message"].as_str().unwrap().contains("nobody-defined-me"));
    let stats = api.stats().await.unwrap();
    assert_eq!((stats.processed, stats.failed), (0, 2), "only the final failures count");
    assert_eq!(api.status(&jid).await.unwrap(), "dead");
    handle.stop();
    task.await.unwrap().unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_job_over_its_limit_waits_in_the_worker_for_a_place_about_to_free() {
    let redis = TestRedis::start();
    let config = redis.config();
    let client = Client::new(&config).unwrap();
    let api = Api::new(client.clone());
    let one = client.limiter(Limit::concurrent("one", 1).unwrap()).await.unwrap();
    let held = one.acquire(Duration::ZERO).await.unwrap();
    client.push(Job::new("Limited").limits(["one"])).await.unwrap();
    let ran = Arc::new(AtomicUsize::new(0));
    let worker = limited_worker(config, Arc::default(), Arc::default(), ran.clone());
    let handle = worker.handle();
    let task = tokio::spawn(worker.run());
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert_eq!(ran.load(Ordering::SeqCst), 0, "the place is taken");
    held.release().await;
    wait_for_count("it ran once the place was free", &ran, 1, Duration::from_secs(3)).await;
    assert_eq!(api.set_size(JobSet::Scheduled).await.unwrap(), 0, "never rescheduled");
    let over = limiter_refusals(&redis, "one").await;
    assert_eq!(
        over, 1,
        "one job turned away, counted once however often it looked (issue #44 item 11)"
    );
    handle.stop();
    task.await.unwrap().unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_push_with_bad_limits_is_refused_naming_the_field() {
    let redis = TestRedis::start();
    let client = Client::new(&redis.config()).unwrap();
    let refused = |job: Job| {
        let client = client.clone();
        async move {
            match client.push(job).await {
                Err(Error::InvalidJob { field, .. }) => field,
                other => panic!("refused, not {other:?}"),
            }
        }
    };
    assert_eq!(
        refused(Job::new("X").field("limits", serde_json::json!("erp"))).await,
        "limits"
    );
    assert_eq!(refused(Job::new("X").limits(Vec::<String>::new())).await, "limits");
    assert_eq!(refused(Job::new("X").limits(["ok", "not ok"])).await, "limits[1]");
    assert_eq!(
        refused(Job::new("X").field("limits", serde_json::json!([1]))).await,
        "limits[0]"
    );
    let nine: Vec<String> = (0..9).map(|i| format!("l{i}")).collect();
    assert_eq!(refused(Job::new("X").limits(nine)).await, "limits");
    let mut conn = redis.conn().await;
    assert_eq!(
        llen(&mut conn, "cogworker:queue:default").await,
        0,
        "nothing was written"
    );
}
