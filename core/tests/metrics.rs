//! Per-class metrics: written with each settled job (successes in batches,
//! failures one by one), read back per class over recent minutes and as
//! all-time counters by queue and class.

mod common;

use cogworker::{Api, Client, Failure, Job, Retry, Worker, BUCKETS_SECS};
use common::*;
use std::time::Duration;

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
        async move {
            a.class_metrics(5)
                .await
                .unwrap()
                .iter()
                .map(|c| c.processed)
                .sum::<u64>()
                == 24
        }
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
    let mut conn = redis.conn().await;
    let minute_ttl: i64 = redis::cmd("TTL")
        .arg(format!("cogworker:metrics:{}", (cogworker::now() / 60.0) as u64))
        .query_async(&mut conn)
        .await
        .unwrap();
    assert!(minute_ttl > 71 * 3600, "a minute is kept 72 h: {minute_ttl}");
    handle.stop();
    running.await.unwrap().unwrap();
}
