//! `bench --mixed`: prefetch with long jobs among short ones. Two worker
//! processes at concurrency 10 share one queue. A producer pushes short
//! `Probe` jobs one at a time, 2 per millisecond, and every 2 s a burst of
//! 10 `Sleep` jobs of 1 s: enough to fill one worker's slots, perhaps
//! while it holds short jobs it read ahead, which then wait for a slot
//! instead of going to the other worker. Printed for prefetch on and off:
//! the short jobs' pickup latency (push to handler start) p50 / p99 /
//! p99.9 / max, and how many waited over 100 ms.

use cogworker::Job;
use redis::AsyncCommands;
use serde_json::json;
use std::time::{Duration, Instant};

use super::{percentile_ms, private_redis, start_workers, stop_and_read_latencies};

const WORKERS: usize = 2;
const RUN: Duration = Duration::from_secs(10);
const BURST_EVERY: Duration = Duration::from_secs(2);
const BURST: usize = 10;
const LONG_MS: u64 = 1000;

pub async fn run() -> Result<(), Box<dyn std::error::Error>> {
    println!(
        "cogworker {} mixed jobs (release build, private redis, {WORKERS} worker processes x concurrency 10, one queue; \
         short no-op jobs pushed one at a time at about 2,000/s, and every {}s {BURST} jobs of {LONG_MS} ms; {}s per row)",
        env!("CARGO_PKG_VERSION"),
        BURST_EVERY.as_secs(),
        RUN.as_secs()
    );
    println!("| prefetch | short jobs | pickup p50 / p99 / p99.9 / max | waited over 100 ms |");
    println!("|---|---|---|---|");
    for prefetch in [true, false] {
        let mut latencies = measure(prefetch).await?;
        latencies.sort_by(f64::total_cmp);
        let slow = latencies.iter().filter(|l| **l > 0.1).count();
        println!(
            "| {} | {} | {:.2} / {:.2} / {:.1} / {:.1} ms | {} |",
            if prefetch { "on" } else { "off" },
            latencies.len(),
            percentile_ms(&latencies, 0.5),
            percentile_ms(&latencies, 0.99),
            percentile_ms(&latencies, 0.999),
            latencies.last().copied().unwrap_or(0.0) * 1000.0,
            slow
        );
    }
    Ok(())
}

/// One run: the short jobs' pickup latencies (seconds), both workers'.
async fn measure(prefetch: bool) -> Result<Vec<f64>, Box<dyn std::error::Error>> {
    let (redis, client, mut conn) = private_redis().await?;
    let prefetch_env = [("BENCH_PREFETCH", if prefetch { "1" } else { "0" })];
    let children = start_workers(&redis.url(), WORKERS, &[], &prefetch_env, &client, &mut conn).await?;
    tokio::time::sleep(Duration::from_secs(1)).await;

    let (mut pushed, mut next_burst) = (0usize, Instant::now());
    let begin = Instant::now();
    let mut tick = tokio::time::interval(Duration::from_millis(1));
    while begin.elapsed() < RUN {
        tick.tick().await;
        if Instant::now() >= next_burst {
            let long = (0..BURST).map(|_| Job::new("Sleep").args([json!(LONG_MS)])).collect();
            client.push_bulk(long).await?;
            pushed += BURST;
            next_burst += BURST_EVERY;
        }
        for _ in 0..2 {
            client.push(Job::new("Probe").args([json!(cogworker::now())])).await?;
            pushed += 1;
        }
    }
    let processed = client.keys().stat("processed", None);
    let settle = Instant::now();
    while conn.get::<_, Option<usize>>(&processed).await?.unwrap_or(0) < pushed {
        assert!(settle.elapsed() < Duration::from_secs(30), "not every job ran");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let mut latencies = Vec::new();
    for mut child in children {
        latencies.extend(stop_and_read_latencies(&mut child)?);
    }
    drop(redis);
    Ok(latencies)
}
