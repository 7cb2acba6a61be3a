//! What happens when jobs fail: retry with the recorded error, exhaustion to
//! dead, discard, bounded and UTF-8-safe error fields, garbage payloads
//! buried with their bytes kept while valid jobs keep flowing.

mod common;

use cogworker::{Api, Client, Failure, HandlerResult, Job, JobSet, Middleware, Next, Retry, Worker};
use common::*;
use futures_util::future::BoxFuture;
use redis::AsyncCommands;
use serde_json::json;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

async fn set_jobs(api: &Api, set: JobSet) -> Vec<Job> {
    api.set_page(set, 0, 1000)
        .await
        .unwrap()
        .iter()
        .map(|e| e.job().expect("set entries parse as jobs"))
        .collect()
}

async fn wait_failures(api: &Api, n: u64) {
    let api = api.clone();
    wait_until(&format!("{n} failures"), Duration::from_secs(20), move || {
        let api = api.clone();
        async move { api.stats().await.unwrap().failed == n }
    })
    .await;
}

async fn wait_set(api: &Api, set: JobSet, n: u64) {
    let api = api.clone();
    wait_until(&format!("{n} in {set:?}"), Duration::from_secs(20), move || {
        let api = api.clone();
        async move { api.set_size(set).await.unwrap() >= n }
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn failure_lands_in_retry_with_its_error_then_runs_again() {
    let redis = TestRedis::start();
    let config = redis.config();
    let client = Client::new(&config).unwrap();
    let api = Api::new(client.clone());
    let calls = Arc::new(AtomicUsize::new(0));
    let c = calls.clone();
    let worker = Worker::builder(config)
        .register("Flaky", move |_job| {
            let c = c.clone();
            async move {
                match c.fetch_add(1, Ordering::SeqCst) {
                    0 => Err(Failure::new("FlakyError", "first try fails").with_backtrace(vec!["flaky.rs:1".into()])),
                    _ => Ok(()),
                }
            }
        })
        .build()
        .unwrap();
    let handle = worker.handle();
    let running = tokio::spawn(worker.run());
    let jid = client.push(Job::new("Flaky").args([json!(7)])).await.unwrap().unwrap();
    wait_set(&api, JobSet::Retry, 1).await;

    let entry = api.find_in_set(JobSet::Retry, &jid).await.unwrap().expect("in retry");
    let job = entry.job().unwrap();
    assert_eq!(job.retry_count(), 1);
    assert_eq!(job.str_field("error_class"), Some("FlakyError"));
    assert_eq!(job.str_field("error_message"), Some("first try fails"));
    assert_eq!(job.get("error_backtrace").unwrap(), &json!(["flaky.rs:1"]));
    assert!(job.get("failed_at").is_some());
    let delay = entry.score - cogworker::now();
    assert!(
        (5.0..=25.0).contains(&delay),
        "default backoff for the first retry: {delay}"
    );
    let attempts = api.attempts(&jid).await.unwrap();
    assert_eq!(attempts.len(), 1);
    assert!(attempts[0].contains("\"outcome\":\"retry\""), "{}", attempts[0]);
    assert_eq!(api.stats().await.unwrap().failed, 1);

    // Retry it now (as the Web UI would): it runs and succeeds.
    assert!(api.retry_now(JobSet::Retry, &entry).await.unwrap());
    wait_processed("retried job processed", &api, 1, Duration::from_secs(10)).await;
    assert_eq!(calls.load(Ordering::SeqCst), 2);
    assert_eq!(api.set_size(JobSet::Retry).await.unwrap(), 0);
    handle.stop();
    running.await.unwrap().unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn exhausted_retries_go_to_dead_and_retry_false_discards() {
    let redis = TestRedis::start();
    let config = redis.config();
    let client = Client::new(&config).unwrap();
    let api = Api::new(client.clone());
    let worker = Worker::builder(config)
        .register("Boom", |_job| async { Err(Failure::new("Boom", "always")) })
        .retry_in("Boom", |_count, _job| Some(0.0))
        .build()
        .unwrap();
    let handle = worker.handle();
    let running = tokio::spawn(worker.run());
    let dies = client
        .push(Job::new("Boom").retry(Retry::Max(2)))
        .await
        .unwrap()
        .unwrap();
    let discarded = client
        .push(Job::new("Boom").retry(Retry::Discard))
        .await
        .unwrap()
        .unwrap();
    wait_set(&api, JobSet::Dead, 1).await;
    let dead = set_jobs(&api, JobSet::Dead).await;
    assert_eq!(dead.len(), 1);
    assert_eq!(dead[0].jid_str(), dies);
    assert_eq!(dead[0].retry_count(), 3, "first run + 2 retries");
    assert!(dead[0].get("retried_at").is_some());
    let attempts = api.attempts(&dies).await.unwrap();
    assert_eq!(attempts.len(), 3);
    assert!(attempts[2].contains("\"outcome\":\"dead\""));

    let api2 = api.clone();
    wait_until("4 failures counted", Duration::from_secs(5), move || {
        let api = api2.clone();
        async move { api.stats().await.unwrap().failed == 4 }
    })
    .await;
    assert!(api.find_in_set(JobSet::Retry, &discarded).await.unwrap().is_none());
    assert!(api.find_in_set(JobSet::Dead, &discarded).await.unwrap().is_none());
    handle.stop();
    running.await.unwrap().unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn error_fields_are_made_valid_utf8_and_bounded() {
    let redis = TestRedis::start();
    let config = redis.config();
    let client = Client::new(&config).unwrap();
    let api = Api::new(client.clone());
    let worker = Worker::builder(config)
        .register("BadBytes", |_job| async {
            let mut message = b"invalid \xff\xfe bytes ".to_vec();
            message.extend(std::iter::repeat_n(b'x', 20_000));
            Err(Failure::from_bytes(b"Enc\xffError", &message).with_backtrace(vec!["l".repeat(5000); 300]))
        })
        .register("Panics", |_job| async { panic!("handler blew up") })
        .build()
        .unwrap();
    let handle = worker.handle();
    let running = tokio::spawn(worker.run());
    let bad = client
        .push(Job::new("BadBytes").retry(Retry::Max(0)))
        .await
        .unwrap()
        .unwrap();
    let panics = client
        .push(Job::new("Panics").retry(Retry::Max(0)))
        .await
        .unwrap()
        .unwrap();
    let unknown = client
        .push(Job::new("NoSuchHandler").retry(Retry::Max(0)))
        .await
        .unwrap()
        .unwrap();
    wait_set(&api, JobSet::Dead, 3).await;

    let job = api
        .find_in_set(JobSet::Dead, &bad)
        .await
        .unwrap()
        .unwrap()
        .job()
        .unwrap();
    let message = job.str_field("error_message").unwrap();
    assert!(
        message.starts_with("invalid \u{fffd}\u{fffd} bytes"),
        "{}",
        &message[..30]
    );
    assert_eq!(message.chars().count(), 10_000);
    assert_eq!(job.str_field("error_class"), Some("Enc\u{fffd}Error"));
    let backtrace = job.get("error_backtrace").unwrap().as_array().unwrap();
    assert_eq!(backtrace.len(), 200);
    assert_eq!(backtrace[0].as_str().unwrap().len(), 1000);

    let job = api
        .find_in_set(JobSet::Dead, &panics)
        .await
        .unwrap()
        .unwrap()
        .job()
        .unwrap();
    assert_eq!(job.str_field("error_class"), Some("panic"));
    assert_eq!(job.str_field("error_message"), Some("handler blew up"));
    let job = api
        .find_in_set(JobSet::Dead, &unknown)
        .await
        .unwrap()
        .unwrap()
        .job()
        .unwrap();
    assert_eq!(job.str_field("error_class"), Some("cogworker::UnknownHandler"));
    handle.stop();
    running.await.unwrap().unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn garbage_payloads_are_buried_with_their_bytes_while_valid_jobs_flow() {
    let redis = TestRedis::start();
    let config = redis.config();
    let client = Client::new(&config).unwrap();
    let api = Api::new(client.clone());
    let (worker, ran) = counting_worker(config, "Ok");
    let handle = worker.handle();
    let running = tokio::spawn(worker.run());
    let garbage: Vec<&[u8]> = vec![
        b"not json at all",
        b"{\"class\":\"Ok\",\"args\":[\"\xff\xfe\"]}",
        b"[1,2,3]",
        b"{\"args\":[1]}",
        b"{\"class\":\"Ok\",\"args\":\"oops\"}",
        b"",
    ];
    let mut conn = redis.conn().await;
    let queue = client.keys().queue("default");
    for (i, raw) in garbage.iter().enumerate() {
        client
            .push_bulk((0..20).map(|_| Job::new("Ok")).collect())
            .await
            .unwrap();
        // A raw push, then the wake-up a producer of ours would publish:
        // an idle worker picks up a push that publishes none only at its
        // fallback poll (30 s in these tests), and with prefetch the fetch
        // after the bulk's wake-up may already have emptied the queue.
        let _: i64 = conn.lpush(&queue, &raw[..]).await.unwrap();
        let _: i64 = conn.sadd(client.keys().queues(), "default").await.unwrap();
        let _: i64 = conn.publish(client.keys().wake(), "default").await.unwrap();
        assert!(i < garbage.len());
    }
    wait_set(&api, JobSet::Dead, garbage.len() as u64).await;
    let r = ran.clone();
    wait_until("valid jobs ran", Duration::from_secs(10), move || {
        let r = r.clone();
        async move { r.load(Ordering::SeqCst) == 120 }
    })
    .await;
    let dead = set_jobs(&api, JobSet::Dead).await;
    let mut kept: Vec<Vec<u8>> = dead
        .iter()
        .map(|job| {
            assert_eq!(job.class(), cogworker::UNPARSEABLE_CLASS);
            assert_eq!(job.queue_name(), "default");
            assert!(!job.str_field("error_message").unwrap().is_empty());
            match job.str_field("raw_payload_base64") {
                Some(b64) => {
                    use base64::Engine as _;
                    base64::engine::general_purpose::STANDARD.decode(b64).unwrap()
                }
                None => job.str_field("raw_payload").unwrap().as_bytes().to_vec(),
            }
        })
        .collect();
    kept.sort();
    let mut expected: Vec<Vec<u8>> = garbage.iter().map(|g| g.to_vec()).collect();
    expected.sort();
    assert_eq!(kept, expected, "every garbage payload kept byte for byte");
    // The last successes are acknowledged a moment after their handlers end.
    let in_progress = client.keys().in_progress(handle.identity());
    wait_until("nothing left in progress", Duration::from_secs(10), move || {
        let (mut conn, key) = (conn.clone(), in_progress.clone());
        async move { held(&mut conn, &key).await == 0 }
    })
    .await;
    handle.stop();
    running.await.unwrap().unwrap();
}

/// A running worker whose `Boom` always fails, and `count` `Boom` jobs
/// without retries pushed to it.
async fn start_booms(
    config: cogworker::Config,
    count: usize,
) -> (
    Api,
    cogworker::WorkerHandle,
    tokio::task::JoinHandle<cogworker::Result<()>>,
) {
    let client = Client::new(&config).unwrap();
    let worker = Worker::builder(config)
        .register("Boom", |_job| async { Err(Failure::new("Boom", "x")) })
        .build()
        .unwrap();
    let handle = worker.handle();
    let running = tokio::spawn(worker.run());
    client
        .push_bulk((0..count).map(|_| Job::new("Boom").retry(Retry::Max(0))).collect())
        .await
        .unwrap();
    (Api::new(client), handle, running)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dead_set_is_capped() {
    let redis = TestRedis::start();
    let mut config = redis.config();
    config.set_dead_max_jobs(3).unwrap();
    let (api, handle, running) = start_booms(config, 6).await;
    wait_failures(&api, 6).await;
    assert_eq!(api.set_size(JobSet::Dead).await.unwrap(), 3);
    handle.stop();
    running.await.unwrap().unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn retry_all_moves_each_dead_job_once_though_it_dies_again_at_once() {
    let redis = TestRedis::start();
    // More than one ZSCAN page (a set of over 128 entries is scanned in
    // steps), while the worker runs each retried job into dead at once.
    let jobs = 300;
    let (api, handle, running) = start_booms(redis.config(), jobs).await;
    wait_failures(&api, jobs as u64).await;
    assert_eq!(api.retry_all(JobSet::Dead).await.unwrap(), jobs);
    wait_failures(&api, 2 * jobs as u64).await;
    let dead = set_jobs(&api, JobSet::Dead).await;
    assert_eq!(dead.len(), jobs, "each job once in dead");
    assert!(
        dead.iter().all(|job| job.get("retry_count") == Some(&json!(2))),
        "each failed twice: once before retry_all, once after"
    );
    handle.stop();
    running.await.unwrap().unwrap();
}

struct Tagging;

impl Middleware for Tagging {
    fn call(&self, job: Job, next: Next) -> BoxFuture<'static, HandlerResult> {
        Box::pin(async move {
            if job.args_slice().first() == Some(&json!("skip")) {
                return Ok(None);
            }
            next.run(job)
                .await
                .map_err(|f| Failure::new(f.class, format!("[mw] {}", f.message)))
        })
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn middleware_wraps_handlers() {
    let redis = TestRedis::start();
    let config = redis.config();
    let client = Client::new(&config).unwrap();
    let api = Api::new(client.clone());
    let worker = Worker::builder(config)
        .register("Boom", |_job| async { Err(Failure::new("Boom", "inner")) })
        .middleware(Arc::new(Tagging))
        .build()
        .unwrap();
    let handle = worker.handle();
    let running = tokio::spawn(worker.run());
    client.push(Job::new("Boom").args([json!("skip")])).await.unwrap();
    let failing = client
        .push(Job::new("Boom").retry(Retry::Max(0)))
        .await
        .unwrap()
        .unwrap();
    wait_set(&api, JobSet::Dead, 1).await;
    let job = api
        .find_in_set(JobSet::Dead, &failing)
        .await
        .unwrap()
        .unwrap()
        .job()
        .unwrap();
    assert_eq!(job.str_field("error_message"), Some("[mw] inner"));
    assert_eq!(
        api.stats().await.unwrap().processed,
        1,
        "the skipped job counts as done"
    );
    handle.stop();
    running.await.unwrap().unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn scheduler_leaves_unrequeueable_entries_in_place() {
    let redis = TestRedis::start();
    let config = redis.config();
    let client = Client::new(&config).unwrap();
    let mut conn = redis.conn().await;
    let keys = client.keys().clone();
    let past = cogworker::now() - 10.0;
    let bad: Vec<&[u8]> = vec![
        b"garbage",
        br#"{"class":"A","queue":""}"#,
        br#"{"class":"A","queue":7}"#,
    ];
    for raw in &bad {
        let _: i64 = conn.zadd(keys.retry(), &raw[..], past).await.unwrap();
    }
    let good = Job::new("A")
        .jid("aaaaaaaaaaaaaaaaaaaaaaaa")
        .field("enqueued_at", json!(1.0));
    let _: i64 = conn.zadd(keys.retry(), good.to_json(), past).await.unwrap();
    let worker = Worker::builder(config).host_slots().build().unwrap();
    let handle = worker.handle();
    handle.quiet(); // run the scheduler, take no jobs
    let running = tokio::spawn(worker.run());
    let c2 = conn.clone();
    let queue = keys.queue("default");
    wait_until("valid entry moved", Duration::from_secs(10), move || {
        let (mut c, q) = (c2.clone(), queue.clone());
        async move { llen(&mut c, &q).await == 1 }
    })
    .await;
    assert_eq!(zcard(&mut conn, &keys.retry()).await, 3, "bad entries stay");
    let moved: Vec<Vec<u8>> = conn.lrange(keys.queue("default"), 0, -1).await.unwrap();
    let moved = Job::parse(&moved[0]).unwrap();
    assert!(
        moved.get("enqueued_at").unwrap().as_f64().unwrap() > past,
        "enqueued_at re-stamped"
    );
    handle.stop();
    running.await.unwrap().unwrap();
}

/// A Rust client that cannot reach its Redis names it, as the Python and
/// Ruby clients do (issue #44 item 17: `Redis(Connection refused (os error
/// 111))`, but which Redis?).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_push_that_cannot_reach_redis_names_it() {
    let mut config = cogworker::Config::default();
    config.set_redis_url("redis://:secret@127.0.0.1:1/0").unwrap();
    let client = cogworker::Client::new(&config).unwrap();
    let error = client.push(cogworker::Job::new("Greet")).await.unwrap_err();
    let shown = error.to_string();
    assert!(shown.starts_with("redis at redis://127.0.0.1:1/0: "), "{shown}");
    assert!(!shown.contains("secret"), "{shown}");
}
