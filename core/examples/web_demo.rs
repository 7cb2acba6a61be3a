//! The dashboard on a private Redis with something to look at: a worker
//! running (one slow job busy), jobs processed and failed, retries, dead
//! jobs (one whose args and error carry an HTML/script payload, which the
//! dashboard must show as text), scheduled jobs, a periodic entry, a
//! unique lock. Prints `cogworker web: <url>` and serves until TERM/INT.
//!
//! `cargo run --example web_demo --features web [-- --port 7890]`; the
//! browser test (`tests/web/`) starts it with `--port 0`.

use cogworker::web::{bind, WebOptions};
use cogworker::{Api, Client, Config, Failure, Job, Periodic, Retry, Worker};
use serde_json::json;
use std::time::Duration;

pub const XSS: &str = "<img src=x onerror=alert(1)><script>alert(2)</script>";

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let port: u16 = std::env::args()
        .skip_while(|a| a != "--port")
        .nth(1)
        .and_then(|p| p.parse().ok())
        .unwrap_or(7890);
    let redis = cogworker::redis_server::RedisServer::start(&[])?;
    let mut config = Config::default();
    config.set_redis_url(&redis.url())?;
    config.set_queues(&["critical,3", "default", "mail"])?;
    config.set_concurrency(4)?;
    config.set_heartbeat_interval(1.0)?;
    config.set_shutdown_timeout(1.0)?;
    let client = Client::new(&config)?;
    let api = Api::new(client.clone());

    // Failures first, on `billing`, which the long-running worker below does
    // not take: a dead job retried from the dashboard then stays queued.
    let mut billing = config.clone();
    billing.set_queues(&["billing"])?;
    let seeder = Worker::builder(billing)
        .register("ChargeCard", |job| async move {
            let card = job
                .args_slice()
                .first()
                .and_then(|v| v.as_str())
                .unwrap_or("")
                .to_string();
            Err(
                Failure::new("PaymentDeclined", format!("card {card} was declined")).with_backtrace(vec![
                    format!("billing/charge.rs:42 charging {card}"),
                    "worker.rs:7".into(),
                ]),
            )
        })
        .retry_in("ChargeCard", |_count, _job| Some(3600.0))
        .build()?;
    let seeding = seeder.handle();
    let seeder = tokio::spawn(seeder.run());
    let card = |arg: &str, retry: u32| {
        Job::new("ChargeCard")
            .queue("billing")
            .args([json!(arg)])
            .retry(Retry::Max(retry))
    };
    client
        .push_bulk(vec![
            card(XSS, 0),
            card("4242-declined", 0),
            card("5555-expired", 0),
            card("retry-me", 5),
        ])
        .await?;
    while api.stats().await?.failed < 4 {
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    seeding.stop();
    seeder.await??;

    let worker = Worker::builder(config.clone())
        .register("Thumbnail", |_job| async { Ok(()) })
        .register("Report", |_job| async {
            tokio::time::sleep(Duration::from_secs(3600)).await;
            Ok(())
        })
        .periodic(Periodic::new("*/30 * * * * *", "Thumbnail")?.args([json!("periodic")]))
        .build()?;
    let handle = worker.handle();
    let running = tokio::spawn(worker.run());

    let mut jobs: Vec<Job> = (0..300).map(|i| Job::new("Thumbnail").args([json!(i)])).collect();
    jobs.push(Job::new("Report").args([json!("quarterly")]).queue("critical"));
    client.push_bulk(jobs).await?;
    client
        .push_bulk(
            (0..5)
                .map(|i| Job::new("SendEmail").args([json!(i)]).delay(600.0 * (i + 1) as f64))
                .collect(),
        )
        .await?;
    client
        .push(
            Job::new("Reindex")
                .queue("maintenance")
                .args([json!(7)])
                .unique_for(3600.0),
        )
        .await?;
    // Left waiting on a queue no worker here takes.
    client
        .push_bulk(
            (0..12)
                .map(|i| Job::new("Newsletter").queue("marketing").args([json!(i)]))
                .collect(),
        )
        .await?;
    for _ in 0..200 {
        let stats = api.stats().await?;
        if stats.processed >= 300 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }

    // A steady trickle, so the live chart has something to draw.
    let trickle = client.clone();
    tokio::spawn(async move {
        for tick in 0u64.. {
            let burst = 5 + (tick * 7919) % 20;
            let jobs = (0..burst)
                .map(|i| Job::new("Thumbnail").args([json!(tick * 100 + i)]))
                .collect();
            let _ = trickle.push_bulk(jobs).await;
            tokio::time::sleep(Duration::from_millis(250)).await;
        }
    });

    let mut options = WebOptions::default();
    options.set_bind("127.0.0.1", port)?;
    let server = bind(&config, &options).await?;
    println!("cogworker web: http://{}/", server.local_addr());
    let stop = handle.clone();
    server
        .run(async move {
            let mut term = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()).unwrap();
            tokio::select! {
                _ = term.recv() => {}
                _ = tokio::signal::ctrl_c() => {}
            }
            stop.stop();
        })
        .await?;
    running.await??;
    Ok(())
}
