//! The demo: starts a private Redis, pushes a few thousand jobs of several
//! kinds (some fail and retry, some are scheduled, one is garbage), works
//! them off with a worker at concurrency 10, prints progress and the final
//! figures, then stops everything.
//!
//! Run it with `scripts/demo` (options: `--jobs N`).

use cogworker::{Api, Client, Config, Failure, Job, JobSet, Worker};
use redis::AsyncCommands;
use serde_json::json;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    cogworker::logging::init(false);
    let jobs: usize = std::env::args()
        .skip_while(|a| a != "--jobs")
        .nth(1)
        .and_then(|n| n.parse().ok())
        .unwrap_or(5_000);

    let redis = cogworker::redis_server::RedisServer::start(&[])?;
    println!("demo: private redis-server on {}", redis.url());
    let mut config = Config::default();
    config.set_redis_url(&redis.url())?;
    config.set_queues(&["critical,3", "default"])?;
    config.set_scheduler_poll_interval(0.5)?;
    let client = Client::new(&config)?;
    let api = Api::new(client.clone());

    // Handlers: a checksum job, an email that fails on its first attempt and
    // succeeds on the retry, and a report scheduled for two seconds from now.
    let checksum_total = Arc::new(AtomicU64::new(0));
    let total = checksum_total.clone();
    let worker = Worker::builder(config)
        .register("Checksum", move |job| {
            let total = total.clone();
            async move {
                let text = job.args_slice().first().and_then(|v| v.as_str()).unwrap_or("");
                let sum: u64 = text.bytes().map(u64::from).sum();
                total.fetch_add(sum, Ordering::Relaxed);
                Ok(())
            }
        })
        .register("SendEmail", |job| async move {
            if job.retry_count() == 0 {
                return Err(Failure::new("SmtpTimeout", "mail server did not answer"));
            }
            Ok(())
        })
        .retry_in("SendEmail", |_count, _job| Some(1.0))
        .register_blocking("BuildReport", |job| {
            std::thread::sleep(Duration::from_millis(50));
            println!("demo: report {} built", job.args_slice()[0]);
            Ok(())
        })
        .build()?;
    let handle = worker.handle();
    let running = tokio::spawn(worker.run());

    let started = Instant::now();
    let mut batch = Vec::new();
    for i in 0..jobs {
        let job = match i % 50 {
            0 => Job::new("SendEmail")
                .queue("critical")
                .args([json!(format!("user{i}@example.com"))]),
            _ => Job::new("Checksum").args([json!(format!("document #{i}"))]),
        };
        batch.push(job);
    }
    let emails = jobs.div_ceil(50);
    client.push_bulk(batch).await?;
    client
        .push(Job::new("BuildReport").args([json!("weekly")]).delay(2.0))
        .await?;
    // Garbage, as a buggy producer might push it: buried in dead, bytes kept.
    let mut raw = redis::Client::open(redis.url())?
        .get_multiplexed_async_connection()
        .await?;
    raw.lpush::<_, _, i64>(client.keys().queue("default"), &b"{not json \xff"[..])
        .await?;
    println!("demo: pushed {jobs} jobs, 1 scheduled report and 1 garbage payload");

    let expected = (jobs + 1) as u64; // every job (emails count once, on their successful retry) and the report
    loop {
        let stats = api.stats().await?;
        let queued = api.queue("default").await?.size + api.queue("critical").await?.size;
        println!(
            "demo: {:>6.1}s processed={} failed={} queued={} retry={} scheduled={}",
            started.elapsed().as_secs_f64(),
            stats.processed,
            stats.failed,
            queued,
            api.set_size(JobSet::Retry).await?,
            api.set_size(JobSet::Scheduled).await?,
        );
        if stats.processed >= expected || started.elapsed() > Duration::from_secs(60) {
            break;
        }
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
    let stats = api.stats().await?;
    let dead = api.set_page(JobSet::Dead, 0, 10).await?;
    println!(
        "demo: done in {:.1}s: processed={} failed={} (first attempts of {} emails, then retried) dead={} checksum={}",
        started.elapsed().as_secs_f64(),
        stats.processed,
        stats.failed,
        emails,
        dead.len(),
        checksum_total.load(Ordering::Relaxed)
    );
    for entry in &dead {
        if let Some(job) = entry.job() {
            println!(
                "demo: dead: {} ({}) raw_payload={:?}",
                job.class(),
                job.str_field("error_message").unwrap_or(""),
                job.str_field("raw_payload").unwrap_or("")
            );
        }
    }
    handle.stop();
    running.await??;
    println!("demo: worker stopped; stopping redis");
    Ok(())
}
