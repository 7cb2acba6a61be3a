//! `bench --fair`: fair groups (issue #46). One worker process at
//! concurrency 10, reliable fetch, on a private Redis each row:
//!
//! 1. Tenant A's backlog of `--jobs` no-op jobs (100,000) is queued, the
//!    worker starts draining it, then tenant B pushes 10 `Probe` jobs one
//!    at a time: B's pickup latency (push to handler start) p50 / p99 /
//!    max, with A and B as groups of the queue, and with no groups (B then
//!    waits behind A's backlog).
//! 2. The drain rate of the same number of jobs on a plain queue, in one
//!    group, spread over 1,000 groups, and over 1,000 groups each capped
//!    at 2 running, with Redis CPU and commands per job (INFO
//!    commandstats, scripts' inner commands included).
//! 3. The drain rate of the same number of unrelated no-op jobs in a queue
//!    where one key is saturated: 2,000 jobs of 50 ms whose class caps
//!    their key at 2 (`group_cap`) were pushed first. Parked, the key holds
//!    2 slots and no more: the other 8 work the unrelated jobs.

use cogworker::{Client, Job};
use redis::AsyncCommands;
use serde_json::json;
use std::time::{Duration, Instant};

use super::{
    command_counts, percentile_ms, private_redis, process_cpu_secs, redis_cpu_secs, reset_stats, start_workers,
    stop_and_read_latencies,
};

const B_JOBS: usize = 10;

pub async fn run(jobs: usize) -> Result<(), Box<dyn std::error::Error>> {
    println!(
        "cogworker {} fair groups (release build, private redis, 1 worker process x concurrency 10, reliable fetch)",
        env!("CARGO_PKG_VERSION")
    );
    let drain_only = std::env::args().any(|a| a == "--drain-only");
    if !drain_only {
        println!("| run | B's pickup p50 / p99 / max |");
        println!("|---|---|");
    }
    for grouped in [true, false].into_iter().filter(|_| !drain_only) {
        let latencies = tenant_b_behind_a(jobs, grouped).await?;
        println!(
            "| {} | {:.1} / {:.1} / {:.1} ms |",
            if grouped { "A and B are groups" } else { "no groups" },
            percentile_ms(&latencies, 0.5),
            percentile_ms(&latencies, 0.99),
            latencies.iter().copied().fold(0.0, f64::max) * 1000.0,
        );
    }
    println!();
    println!(
        "| drain of {jobs} no-op jobs | jobs/s | of the plain queue's | worker CPU per job | redis CPU per job | redis commands per job | top commands per job |"
    );
    println!("|---|---|---|---|---|---|---|");
    let mut plain = None;
    for (groups, cap) in [(0usize, None), (1, None), (1000, None), (1000, Some(2))] {
        let (rate, worker_cpu, cpu, per_job, top) = drain(jobs, groups, cap).await?;
        let label = match (groups, cap) {
            (0, _) => "plain queue".to_string(),
            (1, _) => "one group".to_string(),
            (n, None) => format!("over {n} groups"),
            (n, Some(cap)) => format!("over {n} groups, each capped at {cap}"),
        };
        let plain_rate = *plain.get_or_insert(rate);
        let share = 100.0 * rate / plain_rate;
        println!("| {label} | {rate:.0} | {share:.0}% | {worker_cpu:.1} µs | {cpu:.1} µs | {per_job:.2} | {top} |");
    }
    if drain_only {
        return Ok(());
    }
    println!();
    let (rate, running) = beside_a_saturated_key(jobs).await?;
    println!("| {jobs} unrelated no-op jobs beside a key capped at 2 with 2,000 jobs of 50 ms | jobs/s | the key's jobs running at the end |");
    println!("|---|---|---|");
    println!("| same queue | {rate:.0} | {running} |");
    Ok(())
}

/// The drain rate of `jobs` unrelated no-op jobs queued behind 2,000 jobs
/// of one key capped at 2 (50 ms each), and how many of the key's jobs
/// ran when they were drained.
async fn beside_a_saturated_key(jobs: usize) -> Result<(f64, u64), Box<dyn std::error::Error>> {
    let (redis, client, mut conn) = private_redis().await?;
    let hot: Vec<Job> = (0..2000)
        .map(|_| Job::new("Sleep").args([json!(50)]).group("hot").group_cap(2))
        .collect();
    client.push_bulk(hot).await?;
    push_backlog(&client, jobs, 0).await?;
    let started = Instant::now();
    let mut children = start_workers(&redis.url(), 1, &[], &[], &client, &mut conn).await?;
    let unrelated = client.keys().queue("default");
    while conn.llen::<_, usize>(&unrelated).await? > 0 {
        if started.elapsed() > Duration::from_secs(120) {
            return Err("the unrelated jobs were not drained within 120 s".into());
        }
        tokio::time::sleep(Duration::from_millis(2)).await;
    }
    let secs = started.elapsed().as_secs_f64();
    let running: Option<u64> = conn.hget(client.keys().group_running("default"), "hot").await?;
    stop_and_read_latencies(&mut children[0])?;
    drop(redis);
    Ok((jobs as f64 / secs, running.unwrap_or(0)))
}

async fn push_backlog(client: &Client, jobs: usize, groups: usize) -> Result<(), Box<dyn std::error::Error>> {
    for chunk in 0..jobs.div_ceil(1000) {
        let bulk = (chunk * 1000..((chunk + 1) * 1000).min(jobs))
            .map(|n| match groups {
                0 => Job::new("Noop"),
                groups => Job::new("Noop").group(format!("tenant-{}", n % groups)),
            })
            .collect();
        client.push_bulk(bulk).await?;
    }
    Ok(())
}

async fn wait_processed(
    client: &Client,
    conn: &mut redis::aio::MultiplexedConnection,
    n: usize,
    limit: Duration,
) -> Result<(), Box<dyn std::error::Error>> {
    let processed = client.keys().stat("processed", None);
    let started = Instant::now();
    while conn.get::<_, Option<usize>>(&processed).await?.unwrap_or(0) < n {
        if started.elapsed() > limit {
            return Err(format!("{n} jobs were not processed within {limit:?}").into());
        }
        tokio::time::sleep(Duration::from_millis(2)).await;
    }
    Ok(())
}

/// B's pickup latencies (seconds).
async fn tenant_b_behind_a(jobs: usize, grouped: bool) -> Result<Vec<f64>, Box<dyn std::error::Error>> {
    let (redis, client, mut conn) = private_redis().await?;
    let group = |name: &str, job: Job| if grouped { job.group(name) } else { job };
    for chunk in 0..jobs.div_ceil(1000) {
        let bulk = (chunk * 1000..((chunk + 1) * 1000).min(jobs))
            .map(|_| group("a", Job::new("Noop")))
            .collect();
        client.push_bulk(bulk).await?;
    }
    let mut children = start_workers(&redis.url(), 1, &[], &[], &client, &mut conn).await?;
    wait_processed(&client, &mut conn, 1000, Duration::from_secs(30)).await?;
    for _ in 0..B_JOBS {
        client
            .push(group("b", Job::new("Probe").args([json!(cogworker::now())])))
            .await?;
        tokio::time::sleep(Duration::from_millis(1)).await;
    }
    // B's probes are the only jobs whose pickup the worker notes.
    wait_processed(&client, &mut conn, jobs + B_JOBS, Duration::from_secs(120)).await?;
    let latencies = stop_and_read_latencies(&mut children[0])?;
    drop(redis);
    Ok(latencies)
}

/// Drains `jobs` no-op jobs over `groups` groups (0: none), each capped at
/// `cap` if given: jobs per second, the worker's and Redis's CPU per job
/// (µs), Redis commands per job and the top commands.
async fn drain(
    jobs: usize,
    groups: usize,
    cap: Option<u64>,
) -> Result<(f64, f64, f64, f64, String), Box<dyn std::error::Error>> {
    let (redis, client, mut conn) = private_redis().await?;
    if let Some(cap) = cap {
        cogworker::Api::new(client.clone())
            .set_group_cap("default", None, Some(cap))
            .await?;
    }
    push_backlog(&client, jobs, groups).await?;
    reset_stats(&mut conn).await?;
    let cpu_before = redis_cpu_secs(&mut conn).await?;
    let started = Instant::now();
    let mut children = start_workers(&redis.url(), 1, &[], &[], &client, &mut conn).await?;
    wait_processed(&client, &mut conn, jobs, Duration::from_secs(120)).await?;
    let secs = started.elapsed().as_secs_f64();
    let cpu = redis_cpu_secs(&mut conn).await? - cpu_before;
    let worker_cpu = process_cpu_secs(children[0].id());
    let counts = command_counts(&mut conn).await?;
    if std::env::args().any(|a| a == "--commandstats") {
        let info: String = redis::cmd("INFO").arg("commandstats").query_async(&mut conn).await?;
        eprintln!("{groups} groups, cap {cap:?}:\n{info}");
    }
    let polls: u64 = counts
        .iter()
        .filter(|(name, _)| name == "get" || name == "scard")
        .map(|(_, n)| n)
        .sum();
    let total: u64 = counts.iter().map(|(_, n)| n).sum::<u64>() - polls;
    let top: Vec<String> = counts
        .iter()
        .filter(|(name, _)| name != "get" && name != "scard")
        .take(6)
        .map(|(name, n)| format!("{name} {:.2}", *n as f64 / jobs as f64))
        .collect();
    stop_and_read_latencies(&mut children[0])?;
    drop(redis);
    Ok((
        jobs as f64 / secs,
        1e6 * worker_cpu / jobs as f64,
        1e6 * cpu / jobs as f64,
        total as f64 / jobs as f64,
        top.join(", "),
    ))
}
