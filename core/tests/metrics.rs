//! Per-class metrics: written with each settled job (successes in batches,
//! failures one by one), read back per class over recent minutes and as
//! all-time counters by queue and class.

mod common;

use cogworker::{Api, Client, Failure, Job, Retry, Worker, BUCKETS_SECS};
use common::*;
use std::time::Duration;

/// Executions the per-class metrics of the last 5 minutes count.
async fn executions(api: &Api) -> u64 {
    api.class_metrics(5).await.unwrap().iter().map(|c| c.processed).sum()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn each_execution_is_counted_by_class_with_its_run_time() {
    let redis = TestRedis::start();
    let mut config = redis.config();
    config.set_queues(&["default", "low"]).unwrap();
    let client = Client::new(&config).unwrap();
    let api = Api::new(client.clone());
    let worker = Worker::builder(config)
        .register("Slow", |_job| async {
            tokio::time::sleep(Duration::from_millis(300)).await;
            Ok(())
        })
        .register("Quick", |_job| async { Ok(()) })
        .register("Breaks", |_job| async { Err(Failure::new("Broken", "no")) })
        .build()
        .unwrap();
    let handle = worker.handle();
    let running = tokio::spawn(worker.run());
    for _ in 0..3 {
        client.push(Job::new("Slow").queue("low")).await.unwrap();
    }
    for _ in 0..20 {
        client.push(Job::new("Quick")).await.unwrap();
    }
    client.push(Job::new("Breaks").retry(Retry::Max(0))).await.unwrap();
    let a = api.clone();
    wait_until("24 executions", Duration::from_secs(15), move || {
        let a = a.clone();
        async move { executions(&a).await == 24 }
    })
    .await;
    let classes = api.class_metrics(5).await.unwrap();
    assert_eq!(classes[0].class, "Slow", "ranked by total run time: {classes:?}");
    let slow = &classes[0];
    assert_eq!((slow.processed, slow.failed), (3, 0));
    assert!(slow.total_secs >= 0.9 && slow.total_secs < 3.0, "{slow:?}");
    let bucket = BUCKETS_SECS.iter().position(|b| *b == 0.5).unwrap();
    assert_eq!(
        slow.histogram[bucket], 3,
        "0.3 s runs are in the ≤ 0.5 s bucket: {slow:?}"
    );
    let breaks = classes.iter().find(|c| c.class == "Breaks").unwrap();
    assert_eq!((breaks.processed, breaks.failed), (1, 1));
    let quick = classes.iter().find(|c| c.class == "Quick").unwrap();
    assert_eq!(quick.histogram.iter().sum::<u64>(), 20);

    let (total, series) = api.class_metrics_series("Slow", 3).await.unwrap();
    assert_eq!(total.processed, 3);
    assert_eq!(series.len(), 3, "one entry per minute, empty ones too");
    assert_eq!(series.iter().map(|m| m.processed).sum::<u64>(), 3);

    let totals = api.metric_totals().await.unwrap();
    let by = |queue: &str, class: &str| {
        totals
            .iter()
            .find(|t| t.queue == queue && t.metrics.class == class)
            .map(|t| (t.metrics.processed, t.metrics.failed))
    };
    assert_eq!(by("low", "Slow"), Some((3, 0)));
    assert_eq!(by("default", "Quick"), Some((20, 0)));
    assert_eq!(by("default", "Breaks"), Some((1, 1)));
    // The runs may straddle a minute boundary, and the clock has moved on
    // since: look at every minute hash the runs wrote, not at "now".
    let mut conn = redis.conn().await;
    let minutes: Vec<String> = redis::cmd("KEYS")
        .arg("cogworker:metrics:[0-9]*")
        .query_async(&mut conn)
        .await
        .unwrap();
    assert!(!minutes.is_empty(), "the runs wrote a minute hash");
    for minute in minutes {
        let ttl: i64 = redis::cmd("TTL").arg(&minute).query_async(&mut conn).await.unwrap();
        assert!(ttl > 71 * 3600, "a minute is kept 72 h: {minute} {ttl}");
    }
    handle.stop();
    running.await.unwrap().unwrap();
}

/// Anyone who can push can name any class: a class no handler here runs
/// is counted under one label, and the classes the metrics hashes keep are
/// capped (20,000 pushed names once left 60,000 never-expiring fields and
/// a 34 MB `/metrics`).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unknown_classes_share_one_label_and_distinct_classes_are_capped() {
    let redis = TestRedis::start();
    let config = redis.config();
    let client = Client::new(&config).unwrap();
    let api = Api::new(client.clone());
    let known = cogworker::METRICS_MAX_CLASSES + 20;
    let mut builder = Worker::builder(config);
    for i in 0..known {
        builder = builder.register(&format!("Known{i}"), |_job| async { Ok(()) });
    }
    let worker = builder.build().unwrap();
    let handle = worker.handle();
    let running = tokio::spawn(worker.run());
    let mut jobs: Vec<Job> = (0..known).map(|i| Job::new(format!("Known{i}"))).collect();
    jobs.extend((0..50).map(|i| Job::new(format!("Pushed{i}")).retry(Retry::Max(0))));
    client.push_bulk(jobs).await.unwrap();
    let a = api.clone();
    let expected = (known + 50) as u64;
    wait_until("every execution counted", Duration::from_secs(30), move || {
        let a = a.clone();
        async move { executions(&a).await == expected }
    })
    .await;
    let classes = api.class_metrics(5).await.unwrap();
    assert_eq!(
        classes.len(),
        cogworker::METRICS_MAX_CLASSES + 2,
        "the cap, (other) and (unknown)"
    );
    assert!(!classes.iter().any(|c| c.class.starts_with("Pushed")));
    let unknown = classes
        .iter()
        .find(|c| c.class == "(unknown)")
        .expect("one label for unknown classes");
    assert_eq!((unknown.processed, unknown.failed), (50, 50));
    let other = classes
        .iter()
        .find(|c| c.class == "(other)")
        .expect("classes past the cap");
    assert!(other.processed >= 20, "{other:?}");
    let totals = api.metric_totals().await.unwrap();
    assert_eq!(totals.len(), cogworker::METRICS_MAX_CLASSES + 2, "one queue");
    assert_eq!(totals.iter().map(|t| t.metrics.processed).sum::<u64>(), expected);
    handle.stop();
    running.await.unwrap().unwrap();
}
