//! Long jobs (issue #48, in the core): progress anyone can read, a
//! checkpoint whatever runs the job again resumes from (a retry, an
//! interruption, shutdown's give-back, recovery after `kill -9`), and
//! `stopping`.

mod common;

use cogworker::{Api, Client, Error, Failure, Job, JobSet, Running, Worker};
use common::*;
use serde_json::json;
use std::sync::{Arc, Mutex};
use std::time::Duration;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_retry_and_an_interruption_resume_from_the_checkpoint() {
    let redis = TestRedis::start();
    let config = redis.config();
    let client = Client::new(&config).unwrap();
    let api = Api::new(client.clone());
    let (worker, starts) = resuming_worker(config);
    let handle = worker.handle();
    let task = tokio::spawn(worker.run());

    let failing = client
        .push(Job::new("Resume").args(vec![json!("fail")]))
        .await
        .unwrap()
        .unwrap();
    assert_eq!(wait_starts(&starts, 2).await, [None, Some(json!({"at": 5}))]);
    let interrupted = client
        .push(Job::new("Resume").args(vec![json!("interrupt")]).result_ttl(600.0))
        .await
        .unwrap()
        .unwrap();
    assert_eq!(wait_starts(&starts, 4).await[2..], [None, Some(json!({"at": 7}))]);
    let record = api.wait_result(&interrupted, 5.0).await.unwrap().expect("kept");
    assert_eq!(record["status"], "succeeded");
    assert_eq!(record["retry_count"], 0, "an interruption is not a retry");
    // Pushed with a cursor: it starts there.
    client
        .push(
            Job::new("Resume")
                .args(vec![json!("fail")])
                .with_cursor(json!({"at": 1})),
        )
        .await
        .unwrap();
    assert_eq!(wait_starts(&starts, 5).await[4], Some(json!({"at": 1})));
    // Past its time limit: failed as timed out, filed for its retry with
    // its checkpoint; retried now, it resumes there.
    let overran = client
        .push(
            Job::new("Resume")
                .args(vec![json!("overrun")])
                .timeout(0.5)
                .result_ttl(600.0),
        )
        .await
        .unwrap()
        .unwrap();
    let (a, jid) = (api.clone(), overran.clone());
    wait_until("filed for its retry", Duration::from_secs(10), move || {
        let (a, jid) = (a.clone(), jid.clone());
        async move { a.find_in_set(JobSet::Retry, &jid).await.unwrap().is_some() }
    })
    .await;
    let entry = api.find_in_set(JobSet::Retry, &overran).await.unwrap().unwrap();
    let filed = entry.job().unwrap();
    assert_eq!(filed.cursor(), Some(&json!({"at": 3})));
    assert_eq!(filed.str_field("error_class"), Some(cogworker::TIMEOUT_CLASS));
    assert!(api.retry_now(JobSet::Retry, &entry).await.unwrap());
    assert_eq!(wait_starts(&starts, 7).await[5..], [None, Some(json!({"at": 3}))]);
    let record = api.wait_result(&overran, 5.0).await.unwrap().expect("kept");
    assert_eq!(record["status"], "succeeded", "{record}");
    assert_eq!(record["retry_count"], 1, "one timed-out attempt: {record}");
    let blocking = client
        .push(Job::new("BlockingResume").result_ttl(600.0))
        .await
        .unwrap()
        .unwrap();
    let record = api.wait_result(&blocking, 5.0).await.unwrap().expect("kept");
    assert_eq!(record["status"], "succeeded", "interrupted, then resumed: {record}");
    wait_processed("all ran", &api, 5, Duration::from_secs(10)).await;
    let stats = api.stats().await.unwrap();
    assert_eq!(
        stats.failed, 2,
        "the failing job's and the overrunning job's first runs ({failing})"
    );
    assert_eq!(api.set_size(JobSet::Dead).await.unwrap(), 0);
    handle.stop();
    task.await.unwrap().unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn shutdown_gives_a_stopping_job_back_with_its_cursor() {
    for basic in [false, true] {
        let redis = TestRedis::start();
        let mut config = redis.config();
        if basic {
            config.set_fetch(cogworker::FetchMode::Basic);
        }
        let client = Client::new(&config).unwrap();
        let api = Api::new(client.clone());
        let (worker, starts) = resuming_worker(config.clone());
        let handle = worker.handle();
        let task = tokio::spawn(worker.run());
        let jid = client
            .push(Job::new("Resume").args(vec![json!("until_stopping")]))
            .await
            .unwrap()
            .unwrap();
        wait_starts(&starts, 1).await;
        // Checkpoints are written to its in-progress record as it goes
        // (reliable fetch), at most every 250 ms.
        if !basic {
            let mut conn = redis.conn().await;
            wait_until("a checkpoint in the in-progress record", Duration::from_secs(5), || {
                let mut conn = conn.clone();
                async move {
                    let held: Vec<String> = redis::cmd("EVAL")
                        .arg("local out = {} for _, k in ipairs(redis.call('KEYS', 'cogworker:in_progress:*')) do for _, v in ipairs(redis.call('HVALS', k)) do out[#out+1] = v end end return out")
                        .arg(0)
                        .query_async(&mut conn)
                        .await
                        .unwrap();
                    held.iter().any(|payload| payload.contains("\"cursor\""))
                }
            })
            .await;
            let _ = &mut conn;
        }
        handle.stop();
        task.await.unwrap().unwrap();
        let queued = api.queue_jobs("default", 0, 10).await.unwrap();
        assert_eq!(
            queued.len(),
            1,
            "given back ({})",
            if basic { "basic" } else { "reliable" }
        );
        let queued: Vec<Job> = queued.iter().map(|raw| Job::parse(raw).unwrap()).collect();
        let cursor = queued[0].cursor().cloned().expect("with its cursor");
        assert_eq!(queued[0].jid_str(), jid);
        assert_eq!(queued[0].retry_count(), 0);

        // The next worker resumes there, and the job completes.
        let (worker, starts) = resuming_worker(config);
        let handle = worker.handle();
        let task = tokio::spawn(worker.run());
        assert_eq!(wait_starts(&starts, 1).await, [Some(cursor)]);
        wait_processed("resumed and done", &api, 1, Duration::from_secs(10)).await;
        handle.stop();
        task.await.unwrap().unwrap();
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn progress_is_coalesced_and_read_from_anywhere() {
    let redis = TestRedis::start();
    let config = redis.config();
    let client = Client::new(&config).unwrap();
    let api = Api::new(client.clone());
    let (worker, release) = reporting_worker(config, "Report", |running| {
        for i in 0..=10_000u32 {
            let percent = f64::from(i) / 100.0;
            let message = format!("row {i}");
            running
                .progress(Some(percent), Some(&message), Some(json!({"rows": i})))
                .unwrap();
        }
    });
    let handle = worker.handle();
    let task = tokio::spawn(worker.run());
    let mut conn = redis.conn().await;
    let _: () = redis::cmd("CONFIG")
        .arg("RESETSTAT")
        .query_async(&mut conn)
        .await
        .unwrap();
    let jid = client
        .push(Job::new("Report").result_ttl(600.0))
        .await
        .unwrap()
        .unwrap();
    let api2 = api.clone();
    let jid2 = jid.clone();
    wait_until("the last report is stored", Duration::from_secs(10), move || {
        let (api, jid) = (api2.clone(), jid2.clone());
        async move { api.progress(&jid).await.unwrap().is_some_and(|p| p["percent"] == 100.0) }
    })
    .await;
    let progress = api.progress(&jid).await.unwrap().unwrap();
    assert_eq!(progress["message"], "row 10000");
    assert_eq!(progress["data"], json!({"rows": 10000}));
    assert_eq!(progress["jid"], jid.as_str());
    let record = api.result(&jid).await.unwrap().unwrap();
    assert_eq!(record["status"], "running");
    assert_eq!(record["progress"]["percent"], 100.0);
    // 10,001 reports, a handful of writes (the first at once, then the
    // latest at most every 250 ms).
    let writes = command_calls(&mut conn, &["set", "publish"]).await;
    assert!(
        (2..=12).contains(&writes),
        "{writes} SET/PUBLISH calls for 10,001 reports"
    );
    let ttl: i64 = redis::AsyncCommands::ttl(&mut conn, format!("cogworker:progress:{jid}"))
        .await
        .unwrap();
    assert!((590..=600).contains(&ttl), "kept as long as its result: {ttl}");
    release.notify_waiters();
    let record = api.wait_result(&jid, 5.0).await.unwrap().unwrap();
    assert_eq!(record["status"], "succeeded");
    assert_eq!(record["progress"]["percent"], 100.0, "kept after it finished");
    handle.stop();
    task.await.unwrap().unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_reports_and_cursors_are_named_errors() {
    let redis = TestRedis::start();
    let config = redis.config();
    let client = Client::new(&config).unwrap();
    let huge = json!("x".repeat(cogworker::long_jobs::CURSOR_MAX + 1));
    match client.push(Job::new("Resume").with_cursor(huge.clone())).await {
        Err(Error::InvalidJob { field, .. }) => assert_eq!(field, "cursor"),
        other => panic!("a huge cursor: {other:?}"),
    }
    let mut deep = json!(1);
    for _ in 0..150 {
        deep = json!([deep]);
    }
    match client.push(Job::new("Resume").with_cursor(deep)).await {
        Err(Error::InvalidJob { field, .. }) => assert_eq!(field, "cursor"),
        other => panic!("a deep cursor: {other:?}"),
    }
    let errors = Arc::new(Mutex::new(Vec::new()));
    let seen = errors.clone();
    let worker = Worker::builder(config)
        .register("Bad", move |_job| {
            let (seen, huge) = (seen.clone(), huge.clone());
            async move {
                let running = Running::current().unwrap();
                let field = |result: cogworker::Result<()>| match result {
                    Err(Error::InvalidArgument { field, .. }) => field,
                    other => format!("{other:?}"),
                };
                let mut seen = seen.lock().unwrap();
                for percent in [f64::NAN, f64::INFINITY, -1.0, 100.5] {
                    seen.push(field(running.progress(Some(percent), None, None)));
                }
                seen.push(field(running.progress(None, Some(&"m".repeat(1001)), None)));
                seen.push(field(running.progress(None, None, Some(json!("d".repeat(20_000))))));
                seen.push(field(running.checkpoint(huge)));
                // The job's own reports are untouched by the refusals.
                assert!(running.progress(None, Some("fine"), None).is_ok());
                Ok(())
            }
        })
        .build()
        .unwrap();
    let handle = worker.handle();
    let task = tokio::spawn(worker.run());
    client.push(Job::new("Bad")).await.unwrap();
    let api = Api::new(client);
    wait_processed("ran", &api, 1, Duration::from_secs(10)).await;
    assert_eq!(
        *errors.lock().unwrap(),
        ["percent", "percent", "percent", "percent", "message", "data", "cursor"]
    );
    handle.stop();
    task.await.unwrap().unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_watcher_sees_each_report_then_the_end() {
    use cogworker::WatchEvent;
    let redis = TestRedis::start();
    let config = redis.config();
    let client = Client::new(&config).unwrap();
    let api = Api::new(client.clone());
    let worker = Worker::builder(config)
        .register("Steps", |_job| async move {
            let running = Running::current().unwrap();
            for step in 1..=3 {
                running.progress(Some(f64::from(step) * 25.0), None, None).unwrap();
                tokio::time::sleep(Duration::from_millis(400)).await;
            }
            Ok(())
        })
        .build()
        .unwrap();
    let handle = worker.handle();
    let task = tokio::spawn(worker.run());
    for keeps_result in [true, false] {
        let job = if keeps_result {
            Job::new("Steps").result_ttl(600.0)
        } else {
            Job::new("Steps")
        };
        let jid = client.push(job).await.unwrap().unwrap();
        let (events, percents) = watched(&api, &jid, Duration::from_secs(15)).await;
        // The last report may come again, with the run's state, when it ends.
        assert!(percents.starts_with(&[25.0, 50.0, 75.0]), "{events:?}");
        assert!(percents.len() <= 4, "{events:?}");
        let Some(WatchEvent::Finished(end)) = events.last() else {
            panic!("ends with the end: {events:?}")
        };
        if keeps_result {
            assert_eq!(end["status"], "succeeded", "{end}");
        } else {
            assert_eq!(end["state"], "succeeded", "{end}");
            assert_eq!(end["percent"], 75.0);
        }
    }
    handle.stop();
    task.await.unwrap().unwrap();
}

/// A run that ends sooner than the writer's next pass (250 ms after its
/// last) still has its last report written before its outcome: a retry
/// that reported at once and succeeded showed, before, the failed run's
/// report as the last, in the kept result and to a watcher, which ended
/// without the retry's report.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_quick_runs_last_report_goes_before_its_end() {
    use cogworker::WatchEvent;
    let redis = TestRedis::start();
    let config = redis.config();
    let client = Client::new(&config).unwrap();
    let api = Api::new(client.clone());
    let worker = Worker::builder(config)
        .register("Quick", |_job| async move {
            let running = Running::current().unwrap();
            if running.cursor().is_none() {
                running.progress(Some(50.0), Some("half"), None).unwrap();
                running.checkpoint(json!(1)).unwrap();
                return Err(Failure::new("Flaky", "fails once"));
            }
            running.progress(Some(100.0), Some("done"), None).unwrap();
            Ok(())
        })
        .retry_in("Quick", |_, _| Some(0.0))
        .build()
        .unwrap();
    let handle = worker.handle();
    let task = tokio::spawn(worker.run());
    let jid = client.push(Job::new("Quick").result_ttl(600.0)).await.unwrap().unwrap();
    let (events, percents) = watched(&api, &jid, Duration::from_secs(15)).await;
    assert_eq!(percents.last(), Some(&100.0), "{events:?}");
    let Some(WatchEvent::Finished(end)) = events.last() else {
        panic!("ends with the end: {events:?}")
    };
    assert_eq!(end["retry_count"], 1, "{end}");
    assert_eq!(end["progress"]["percent"], 100.0, "{end}");
    assert_eq!(end["progress"]["state"], "succeeded", "{end}");
    handle.stop();
    task.await.unwrap().unwrap();
}
