//! `layout = "sidekiq"` against real Sidekiq 6.4 (Debian's ruby-sidekiq):
//! its client pushes and cogworker's worker runs the jobs; Sidekiq's API
//! and Web UI see the cogworker process, its running job, its failures in
//! Sidekiq's format, its counts, and quiet and stop it; cogworker's client
//! pushes (now and scheduled) and a failure cogworker filed are run by a
//! real `sidekiq` process, each once. The Ruby side is `tests/sidekiq/`.

mod common;

use cogworker::{Client, Failure, Job, Layout, Worker};
use common::*;
use serde_json::{json, Value};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::Duration;

fn ruby_dir() -> std::path::PathBuf {
    std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/sidekiq")
}

/// `ruby client.rb <args>` against `redis`: its line of JSON.
fn sidekiq_client(redis: &TestRedis, args: &[&str]) -> Value {
    let output = Command::new("ruby")
        .arg(ruby_dir().join("client.rb"))
        .args(args)
        .env("REDIS_URL", redis.url())
        .output()
        .expect("ruby runs (scripts/setup installs ruby-sidekiq)");
    assert!(
        output.status.success(),
        "client.rb {args:?} failed: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    serde_json::from_slice(&output.stdout).expect("client.rb prints JSON")
}

fn sidekiq_config(redis: &TestRedis) -> cogworker::Config {
    let mut config = redis.config();
    config.set_layout(Layout::Sidekiq);
    config.set_sidekiq_version(6).unwrap();
    config
}

/// What Sidekiq's API sees, once `check` holds for it (within 15 s).
async fn sidekiq_sees(redis: &TestRedis, what: &str, check: impl Fn(&Value) -> bool) -> Value {
    let deadline = std::time::Instant::now() + Duration::from_secs(15);
    loop {
        let seen = sidekiq_client(redis, &["inspect"]);
        if check(&seen) {
            return seen;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "Sidekiq's API never saw {what}: {seen}"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_sidekiq_apps_jobs_run_on_cogworker_and_sidekiq_sees_it_work() {
    let redis = TestRedis::start();
    let pushed = sidekiq_client(&redis, &["push"]);
    let ran: Arc<Mutex<Vec<Value>>> = Arc::default();
    let gate = Arc::new(tokio::sync::Notify::new());
    let slow = gate.clone();
    let mut builder = Worker::builder(sidekiq_config(&redis));
    // A job class of the app and ActiveJob's wrapper: each records its args.
    for class in ["HardJob", "ActiveJob::QueueAdapters::SidekiqAdapter::JobWrapper"] {
        let ran = ran.clone();
        builder = builder.register(class, move |job| {
            let ran = ran.clone();
            async move {
                ran.lock().unwrap().push(json!(job.args_slice()));
                Ok(())
            }
        });
    }
    let worker = builder
        .register("Failing", |_job| async move {
            Err(Failure::new("RuntimeError", "went wrong").with_backtrace(vec![
                "app/jobs/failing.rb:3:in `perform'".into(),
                "lib/worker.rb:9:in `run'".into(),
            ]))
        })
        .register("Slow", move |_job| {
            let gate = slow.clone();
            async move {
                gate.notified().await;
                Ok(())
            }
        })
        .build()
        .unwrap();
    let identity = worker.identity().to_string();
    let running = tokio::spawn(worker.run());

    // Sidekiq's pushes ran: now, the scheduled one when due, ActiveJob's wrapper.
    wait_until("the three Sidekiq pushes ran", Duration::from_secs(15), || {
        let ran = ran.clone();
        async move { ran.lock().unwrap().len() == 3 }
    })
    .await;
    let mut args: Vec<String> = ran.lock().unwrap().iter().map(Value::to_string).collect();
    args.sort();
    assert_eq!(
        args,
        [
            r#"[1,"a"]"#,
            r#"[2,"b"]"#,
            r#"[{"job_class":"HardJob","arguments":[3]}]"#
        ]
    );

    // Its failure is in Sidekiq's retry set as Sidekiq writes one.
    let seen = sidekiq_sees(&redis, "the failed job's retry", |s| {
        s["retries"].as_array().unwrap().len() == 1
    })
    .await;
    let retry = &seen["retries"][0];
    assert_eq!(retry["jid"], pushed["failing"]);
    assert_eq!(retry["retry_count"], 0, "Sidekiq counts retries from 0: {retry}");
    assert_eq!(retry["error_class"], "RuntimeError");
    assert_eq!(
        retry["backtrace"],
        json!(["app/jobs/failing.rb:3:in `perform'", "lib/worker.rb:9:in `run'"]),
        "the job asked for its backtrace: Sidekiq's API reads it back"
    );
    assert!(retry["at"].as_f64().unwrap() > retry["failed_at"].as_f64().unwrap() + 14.0);

    // A running job: the process, its job and its counts, as Sidekiq shows them.
    let client = Client::new(&sidekiq_config(&redis)).unwrap();
    let slow_jid = client.push(Job::new("Slow")).await.unwrap().unwrap();
    let seen = sidekiq_sees(&redis, "the running job", |s| {
        s["running"]
            .as_array()
            .unwrap()
            .iter()
            .any(|r| r["jid"] == slow_jid.as_str())
    })
    .await;
    let process = seen["processes"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["identity"] == identity.as_str())
        .unwrap_or_else(|| panic!("Sidekiq's ProcessSet lists {identity}: {seen}"));
    assert_eq!(process["queues"], json!(["default"]));
    assert_eq!(process["concurrency"], 10);
    assert!(process["rss"].as_u64().unwrap() > 0, "{process}");
    assert_eq!(seen["running"][0]["identity"], identity.as_str());
    assert_eq!(seen["running"][0]["class"], "Slow");
    let page = sidekiq_client(&redis, &["busy_page"]);
    assert_eq!(page["status"], 200);
    assert!(
        page["body"].as_str().unwrap().contains(&identity),
        "the Web UI's Busy page shows {identity}"
    );
    assert_eq!(seen["queues"], json!(["default"]));

    // The Web UI's Quiet, then Stop: the process obeys at its next heartbeat.
    sidekiq_client(&redis, &["quiet", &identity]);
    sidekiq_sees(&redis, "the process quiet", |s| {
        s["processes"]
            .as_array()
            .unwrap()
            .iter()
            .any(|p| p["identity"] == identity.as_str() && p["quiet"] == true)
    })
    .await;
    sidekiq_client(&redis, &["stop", &identity]);
    gate.notify_waiters();
    tokio::time::timeout(Duration::from_secs(15), running)
        .await
        .expect("the worker stopped on Sidekiq's Stop")
        .unwrap()
        .unwrap();
    let seen = sidekiq_sees(&redis, "the counts", |s| s["processes"].as_array().unwrap().is_empty()).await;
    assert_eq!(
        seen["processed"], 5,
        "every run, as Sidekiq counts: three of Sidekiq's jobs, Failing's failed run and Slow: {seen}"
    );
    assert_eq!(seen["failed"], 1);
    assert_eq!(seen["enqueued"], 0);
}

/// A `sidekiq` process running `tests/sidekiq/jobs.rb` against `redis`.
fn start_sidekiq(redis: &TestRedis) -> Child {
    Command::new("sidekiq")
        .arg("-r")
        .arg(ruby_dir().join("jobs.rb"))
        .args(["-c", "2", "-q", "default", "-q", "failing"])
        .env("REDIS_URL", redis.url())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("sidekiq runs (scripts/setup installs ruby-sidekiq)")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cogworkers_pushes_and_filed_failures_run_on_sidekiq() {
    let redis = TestRedis::start();
    let config = sidekiq_config(&redis);
    let client = Client::new(&config).unwrap();
    let now_jid = client
        .push(Job::new("FromCogworker").args([json!(1)]))
        .await
        .unwrap()
        .unwrap();
    let later_jid = client
        .push(Job::new("FromCogworker").args([json!(2)]).delay(1.0))
        .await
        .unwrap()
        .unwrap();
    let mut conn = redis.conn().await;
    let scheduled: Vec<String> = redis::AsyncCommands::zrange(&mut conn, "schedule", 0, -1)
        .await
        .unwrap();
    assert_eq!(scheduled.len(), 1);
    assert!(
        !scheduled[0].contains("\"at\""),
        "Sidekiq's poller would schedule it again: {}",
        scheduled[0]
    );

    // A cogworker worker fails one job, filing its retry, then stops.
    let retried_jid = client
        .push(Job::new("RetriedBySidekiq").args([json!("x")]).queue("failing"))
        .await
        .unwrap()
        .unwrap();
    let mut failing = config.clone();
    failing.set_queues(&["failing"]).unwrap();
    let worker = Worker::builder(failing)
        .register("RetriedBySidekiq", |_job| async move {
            Err(Failure::new("RuntimeError", "once")
                .with_backtrace(vec!["lib/a.rb:1".into()])
                .with_retry_in(0.5))
        })
        .build()
        .unwrap();
    let handle = worker.handle();
    let running = tokio::spawn(worker.run());
    wait_until("the retry filed", Duration::from_secs(10), || {
        let mut conn = conn.clone();
        async move { zcard(&mut conn, "retry").await == 1 }
    })
    .await;
    handle.stop();
    running.await.unwrap().unwrap();
    let entry: Vec<String> = redis::AsyncCommands::zrange(&mut conn, "retry", 0, -1).await.unwrap();
    let entry: Value = serde_json::from_str(&entry[0]).unwrap();
    assert_eq!(entry["retry_count"], 0);
    assert!(
        entry.get("error_backtrace").is_none(),
        "asked for none, as Sidekiq keeps none"
    );

    // Sidekiq runs them all, each once: the scheduled one and the retry when due.
    let mut sidekiq = start_sidekiq(&redis);
    wait_until("Sidekiq ran the three jobs", Duration::from_secs(30), || {
        let mut conn = conn.clone();
        async move {
            llen(&mut conn, "sidekiq_ran").await == 3
                && zcard(&mut conn, "schedule").await == 0
                && zcard(&mut conn, "retry").await == 0
        }
    })
    .await;
    let ran: Vec<String> = redis::AsyncCommands::lrange(&mut conn, "sidekiq_ran", 0, -1)
        .await
        .unwrap();
    let mut ran: Vec<(String, String, Value)> = ran
        .iter()
        .map(|r| serde_json::from_str::<(String, String, Value)>(r).unwrap())
        .collect();
    ran.sort_by(|a, b| a.1.cmp(&b.1));
    let mut expected = vec![
        ("FromCogworker".to_string(), now_jid, json!([1])),
        ("FromCogworker".to_string(), later_jid, json!([2])),
        ("RetriedBySidekiq".to_string(), retried_jid, json!(["x"])),
    ];
    expected.sort_by(|a, b| a.1.cmp(&b.1));
    assert_eq!(ran, expected);
    send_signal(&sidekiq, libc::SIGTERM);
    assert!(wait_exit(&mut sidekiq, Duration::from_secs(30)).success());
}

/// Sidekiq 8 keeps a job's `created_at` and `enqueued_at` in integer
/// milliseconds: written so for `sidekiq_version = 8` (now, scheduled, and
/// moved when due), and read in either form.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sidekiq_8s_job_times_are_milliseconds() {
    let redis = TestRedis::start();
    let mut config = sidekiq_config(&redis);
    config.set_sidekiq_version(8).unwrap();
    let client = Client::new(&config).unwrap();
    let before = (cogworker::now() * 1000.0) as i64;
    client.push(Job::new("Later").delay(0.3)).await.unwrap();
    client.push(Job::new("Now")).await.unwrap();
    let mut conn = redis.conn().await;
    let queued: Vec<String> = redis::AsyncCommands::lrange(&mut conn, "queue:default", 0, -1)
        .await
        .unwrap();
    let scheduled: Vec<String> = redis::AsyncCommands::zrange(&mut conn, "schedule", 0, -1)
        .await
        .unwrap();
    let now: Value = serde_json::from_str(&queued[0]).unwrap();
    let later: Value = serde_json::from_str(&scheduled[0]).unwrap();
    for field in ["created_at", "enqueued_at"] {
        let ms = now[field]
            .as_i64()
            .unwrap_or_else(|| panic!("{field} in integer milliseconds: {now}"));
        assert!((before..before + 5_000).contains(&ms), "{field}: {ms}");
    }
    assert!(
        later["created_at"].is_i64() && later.get("enqueued_at").is_none(),
        "{later}"
    );
    // A worker moves the scheduled one when due, stamping it in milliseconds
    // too, and runs both; a raw Sidekiq 8 payload also runs.
    let raw = json!({"class": "Now", "args": [], "jid": "0123456789abcdef01234567", "queue": "default",
        "created_at": before, "enqueued_at": before, "retry": true});
    let _: i64 = redis::AsyncCommands::lpush(&mut conn, "queue:default", raw.to_string())
        .await
        .unwrap();
    let stamps: Arc<Mutex<Vec<Value>>> = Arc::default();
    let mut builder = Worker::builder(config);
    for class in ["Now", "Later"] {
        let seen = stamps.clone();
        builder = builder.register(class, move |job| {
            let seen = seen.clone();
            async move {
                seen.lock()
                    .unwrap()
                    .push(job.get("enqueued_at").cloned().unwrap_or_default());
                Ok(())
            }
        });
    }
    let worker = builder.build().unwrap();
    let handle = worker.handle();
    let running = tokio::spawn(worker.run());
    wait_until("three jobs ran", Duration::from_secs(10), || {
        let stamps = stamps.clone();
        async move { stamps.lock().unwrap().len() == 3 }
    })
    .await;
    handle.stop();
    running.await.unwrap().unwrap();
    assert!(
        stamps.lock().unwrap().iter().all(Value::is_i64),
        "{:?}",
        stamps.lock().unwrap()
    );
}

#[test]
fn the_sidekiq_layout_refuses_what_it_cannot_keep() {
    let mut config = cogworker::Config::default();
    config.set_layout(Layout::Sidekiq);
    config.set_shard_by_queue(true);
    let refused = config.validate().unwrap_err().to_string();
    assert!(
        refused.contains("layout") && refused.contains("shard_by_queue"),
        "{refused}"
    );
    let mut config = cogworker::Config::default();
    config.set_layout(Layout::Sidekiq);
    config.set_redis_url("redis+cluster://127.0.0.1:7000").unwrap();
    assert!(config.validate().unwrap_err().to_string().contains("Cluster"));
    let refused = cogworker::Config::default()
        .set_sidekiq_version(9)
        .unwrap_err()
        .to_string();
    assert!(
        refused.contains("sidekiq_version") && refused.contains('9'),
        "{refused}"
    );
    assert!("sidekick".parse::<Layout>().unwrap_err().to_string().contains("layout"));
}
