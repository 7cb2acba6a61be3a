//! Benchmark (run with `scripts/bench`, a release build): on a private
//! Redis, prints enqueue rates (one by one, bulk), the drain rate of 20,000
//! no-op jobs by one worker process at concurrency 10 with reliable fetch
//! (`--basic`: basic fetch), pickup latency p50/p99 on an idle worker (200
//! single pushes), the worker's startup time and peak RSS, Redis commands
//! per job, and the CPU Redis and the worker used while draining (with
//! Redis's CPU per job, the capacity model of docs/scaling.md).
//!
//! `--idle`: what an idle worker costs as its queue count grows (1, 10,
//! 50, 200 queues): the Redis connections it holds, the commands it sends
//! per second (as `MONITOR` shows them) and those executed inside its
//! scripts, and pickup latency p50/p99 of pushes to random queues of its.
//! `--idle --sharded`: the same with `shard_by_queue`.
//!
//! `--cluster`: three queues on a three-master cluster, all on one master
//! vs `shard_by_queue` (see cluster.rs); `--cluster --sweep`: six queues
//! spread over 1, 2 and 3 masters, the table of docs/scaling.md.
//!
//! `--hosts`: the Rust, Ruby and Python workers drain the same jobs with the
//! same handlers, in alternating rounds (see hosts.rs).
//!
//! `--mixed`: short jobs among bursts of long ones, two workers, prefetch
//! on and off: the short jobs' pickup latency (see mixed.rs).
//!
//! `--fair`: fair groups: a second tenant's pickup behind a first one's
//! backlog, with and without groups, and the drain rate over 1,000
//! groups against a plain queue (see fair.rs); `--fair --drain-only`: the
//! drain rows alone (`--commandstats`: and INFO commandstats after each,
//! on stderr).
//!
//! `--durable`: one-by-one pushes to a master with a replica, with and
//! without `min_replicas_acked` (see durable.rs).
//!
//! `--progress`: long jobs' progress watched: commands per report and per
//! watch, and a report's latency to a watcher (see progress.rs).
//!
//! `--push-floor`: where a one-by-one push's time goes (see push_floor.rs).
//!
//! `--batch`: the bulk-pushed jobs are pushed into one batch (with a
//! `success` callback), so the push, drain and commands per job include
//! the batch's accounting.
//!
//! The worker runs in a child process (this binary with `--worker`), so
//! its RSS is its own.

use cogworker::{Client, Config, Job, Worker};
use redis::AsyncCommands;
use serde_json::json;
use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

const CONCURRENCY: i64 = 10;

mod cluster;
mod durable;
mod fair;
mod hosts;
mod idle;
mod mixed;
mod progress;
mod push_floor;

/// Pushes `jobs` no-op jobs 1,000 per call into one batch with a `success`
/// callback, opened first and closed last; jobs per second.
async fn enqueue_batch(client: &Client, jobs: usize) -> Result<f64, Box<dyn std::error::Error>> {
    let started = Instant::now();
    let batch = client
        .open_batch(cogworker::Batch::new("bench").on(cogworker::BatchEvent::Success, Job::new("Noop")))
        .await?;
    for chunk in 0..jobs.div_ceil(1000) {
        let n = (jobs - chunk * 1000).min(1000);
        batch
            .push_bulk((0..n).map(|i| Job::new("Noop").args([json!(i)])).collect())
            .await?;
    }
    batch.close().await?;
    Ok(jobs as f64 / started.elapsed().as_secs_f64())
}

/// `--basic`: the worker uses basic fetch (`BRPOP`, no in-progress record).
fn basic_fetch() -> bool {
    std::env::args().any(|a| a == "--basic")
}

/// `--sharded`: the queues have hash tags of their own (`shard_by_queue`).
fn sharded() -> bool {
    std::env::args().any(|a| a == "--sharded")
}

fn arg(name: &str) -> Option<String> {
    std::env::args().skip_while(|a| a != name).nth(1)
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    if let Some(url) = arg("--worker") {
        // Logging as a CLI worker does (its lines go to /dev/null here), so
        // the per-job lines are paid for as they would be.
        cogworker::logging::init(false);
        let queues = arg("--queues").and_then(|n| n.parse().ok()).unwrap_or(1);
        return worker(&url, queues, basic_fetch()).await;
    }
    if std::env::args().any(|a| a == "--idle") {
        return idle::run().await;
    }
    if let Some(url) = arg("--cluster-worker") {
        cogworker::logging::init(false);
        let queues = std::env::args()
            .skip_while(|a| a != "--cluster-worker")
            .nth(2)
            .unwrap_or_default();
        return cluster::worker(&url, &queues, sharded()).await;
    }
    if std::env::args().any(|a| a == "--cluster") {
        return cluster::run().await;
    }
    if std::env::args().any(|a| a == "--mixed") {
        return mixed::run().await;
    }
    if std::env::args().any(|a| a == "--fair") {
        let jobs = arg("--jobs").and_then(|n| n.parse().ok()).unwrap_or(100_000);
        return fair::run(jobs).await;
    }
    if std::env::args().any(|a| a == "--durable") {
        return durable::run().await;
    }
    if std::env::args().any(|a| a == "--progress") {
        return progress::run().await;
    }
    if std::env::args().any(|a| a == "--hosts") {
        return hosts::run().await;
    }
    if std::env::args().any(|a| a == "--push-floor") {
        let floor = std::thread::spawn(push_floor::run)
            .join()
            .expect("the push-floor thread");
        return floor.map_err(|e| e.to_string().into());
    }
    let jobs: usize = arg("--jobs").and_then(|n| n.parse().ok()).unwrap_or(20_000);
    let singles: usize = arg("--singles").and_then(|n| n.parse().ok()).unwrap_or(5_000);
    let (redis, client, mut conn) = private_redis().await?;

    // Enqueue one by one, then in bulk (1,000 per call): as `cogworker
    // bench` measures them.
    let single_rate = cogworker::bench::enqueue_one_by_one(&client, singles).await?;
    let _: () = redis::cmd("FLUSHALL").query_async(&mut conn).await?;
    reset_stats(&mut conn).await?;
    let batched = std::env::args().any(|a| a == "--batch");
    let bulk_rate = if batched {
        enqueue_batch(&client, jobs).await?
    } else {
        cogworker::bench::enqueue_in_bulk(&client, jobs).await?
    };

    // Drain: the worker starts with every job already queued.
    reset_stats(&mut conn).await?;
    let spawned = Instant::now();
    let mut child = Command::new(std::env::current_exe()?)
        .args(["--worker", &redis.url()])
        .args(basic_fetch().then_some("--basic"))
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()?;
    let mut polls = 0u64;
    let processes = client.keys().processes();
    let processed_key = client.keys().stat("processed", None);
    loop {
        polls += 1;
        if conn.scard::<_, u64>(&processes).await? > 0 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(2)).await;
    }
    let startup = spawned.elapsed().as_secs_f64();
    let redis_cpu_before = redis_cpu_secs(&mut conn).await?;
    let worker_cpu_before = process_cpu_secs(child.id());
    let drain_start = Instant::now();
    loop {
        polls += 1;
        let done: Option<u64> = conn.get(&processed_key).await?;
        if done.unwrap_or(0) >= jobs as u64 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    let drain_secs = drain_start.elapsed().as_secs_f64();
    let redis_cpu = redis_cpu_secs(&mut conn).await? - redis_cpu_before;
    let worker_cpu = process_cpu_secs(child.id()) - worker_cpu_before;
    let in_commands_usec = command_usec(&mut conn).await?;
    let per_command = command_counts(&mut conn).await?;
    let commands: u64 = per_command.iter().map(|(_, n)| n).sum::<u64>() - polls;

    // Pickup latency on the now idle worker.
    probe_pickup(&client, &mut conn, jobs).await?;
    let rss_mb = peak_rss_mb(child.id());
    let latencies = stop_and_read_latencies(&mut child)?;
    let pct = |p: f64| percentile_ms(&latencies, p);

    let fetch = if basic_fetch() { "basic" } else { "reliable" };
    println!("cogworker {} benchmark (release build, private redis, 1 worker process, concurrency {CONCURRENCY}, {fetch} fetch)", env!("CARGO_PKG_VERSION"));
    println!("| metric | value |");
    println!("|---|---|");
    println!("| enqueue 1-by-1 ({singles} jobs) | {:.0} jobs/s |", single_rate);
    println!("| enqueue bulk ({jobs} jobs, 1000/call) | {:.0} jobs/s |", bulk_rate);
    let batch_note = if batched { ", in one batch" } else { "" };
    println!(
        "| drain ({jobs} no-op jobs{batch_note}) | {:.0} jobs/s |",
        jobs as f64 / drain_secs
    );
    println!(
        "| redis commands per drained job (incl. inside scripts) | {:.2} |",
        commands as f64 / jobs as f64
    );
    let top: Vec<String> = per_command
        .iter()
        .filter(|(name, _)| name != "get" && name != "scard")
        .take(6)
        .map(|(name, n)| format!("{name} {:.2}", *n as f64 / jobs as f64))
        .collect();
    println!("| top commands per drained job | {} |", top.join(", "));
    println!(
        "| CPU while draining (share of one core) | redis {:.0}%, worker {:.0}%; redis inside scripts {:.1} µs/job |",
        100.0 * redis_cpu / drain_secs,
        100.0 * worker_cpu / drain_secs,
        in_commands_usec as f64 / jobs as f64
    );
    // The capacity model (docs/scaling.md): Redis's CPU per job, network
    // and protocol included, and what one Redis core could drain at that.
    let redis_usec_per_job = 1e6 * redis_cpu / jobs as f64;
    println!(
        "| redis CPU per drained job | {redis_usec_per_job:.1} µs (one Redis core: about {:.0} jobs/s) |",
        1e6 / redis_usec_per_job
    );
    println!(
        "| pickup latency p50 / p99 (200 pushes, idle worker) | {:.2} / {:.2} ms |",
        pct(0.5),
        pct(0.99)
    );
    println!("| worker startup | {:.3} s |", startup);
    println!("| worker peak RSS | {:.1} MB |", rss_mb);
    Ok(())
}

/// A private redis-server, a client of it, and a plain connection.
pub(crate) async fn private_redis() -> Result<
    (
        cogworker::redis_server::RedisServer,
        Client,
        redis::aio::MultiplexedConnection,
    ),
    Box<dyn std::error::Error>,
> {
    let redis = cogworker::redis_server::RedisServer::start(&[])?;
    let mut config = Config::default();
    config.set_redis_url(&redis.url())?;
    let client = Client::new(&config)?;
    let conn = redis::Client::open(redis.url())?
        .get_multiplexed_async_connection()
        .await?;
    Ok((redis, client, conn))
}

/// Starts `count` worker processes (this binary with `--worker url`, then
/// `args`, with `env` set; their stdout piped for
/// [`stop_and_read_latencies`]) and waits until all have registered.
pub(crate) async fn start_workers(
    url: &str,
    count: usize,
    args: &[&str],
    env: &[(&str, &str)],
    client: &Client,
    conn: &mut redis::aio::MultiplexedConnection,
) -> Result<Vec<std::process::Child>, Box<dyn std::error::Error>> {
    let mut children = Vec::new();
    for _ in 0..count {
        children.push(
            Command::new(std::env::current_exe()?)
                .args(["--worker", url])
                .args(args)
                .envs(env.iter().copied())
                .stdout(Stdio::piped())
                .stderr(Stdio::null())
                .spawn()?,
        );
    }
    let started = Instant::now();
    while conn.scard::<_, usize>(client.keys().processes()).await? < count {
        assert!(started.elapsed() < Duration::from_secs(20), "the workers did not start");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    Ok(children)
}

/// Pushes 200 `Probe` jobs one at a time, 5–15 ms apart (`--pickup-gap MS`:
/// MS apart), to a worker that processed `before` jobs, and waits until it
/// has run them (the worker notes each one's pickup latency).
pub(crate) async fn probe_pickup(
    client: &Client,
    conn: &mut redis::aio::MultiplexedConnection,
    before: usize,
) -> Result<(), Box<dyn std::error::Error>> {
    let processed = client.keys().stat("processed", None);
    let gap: Option<u64> = arg("--pickup-gap").and_then(|ms| ms.parse().ok());
    let mut wait = 3u64;
    for _ in 0..200 {
        client.push(Job::new("Probe").args([json!(cogworker::now())])).await?;
        wait = (wait * 7 + 3) % 11;
        tokio::time::sleep(Duration::from_millis(gap.unwrap_or(5 + wait))).await;
    }
    let settle = Instant::now();
    while conn.get::<_, Option<u64>>(&processed).await?.unwrap_or(0) < (before + 200) as u64 {
        if settle.elapsed() > Duration::from_secs(10) {
            return Err("the probes were not processed within 10 s".into());
        }
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    Ok(())
}

/// The server's CPU time so far (user + system), seconds.
async fn redis_cpu_secs(conn: &mut redis::aio::MultiplexedConnection) -> redis::RedisResult<f64> {
    let info: String = redis::cmd("INFO").arg("cpu").query_async(conn).await?;
    Ok(info
        .lines()
        .filter_map(|l| {
            l.strip_prefix("used_cpu_user:")
                .or_else(|| l.strip_prefix("used_cpu_sys:"))
        })
        .filter_map(|v| v.trim().parse::<f64>().ok())
        .sum())
}

/// A process's CPU time so far (user + system), seconds.
fn process_cpu_secs(pid: u32) -> f64 {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
    let fields: Vec<&str> = stat
        .rsplit_once(')')
        .map(|(_, r)| r.split_whitespace().collect())
        .unwrap_or_default();
    // utime and stime, fields 14 and 15 of stat(5), in clock ticks.
    let ticks: f64 = [11, 12]
        .iter()
        .filter_map(|&i| fields.get(i)?.parse::<f64>().ok())
        .sum();
    // SAFETY: sysconf reads a constant.
    ticks / unsafe { libc::sysconf(libc::_SC_CLK_TCK) } as f64
}

/// Microseconds the server spent running scripts since the last reset
/// (the commands they call included): during the drain, the worker's
/// whole cost inside Redis, as it sends nothing else per job.
async fn command_usec(conn: &mut redis::aio::MultiplexedConnection) -> redis::RedisResult<u64> {
    let info: String = redis::cmd("INFO").arg("commandstats").query_async(conn).await?;
    Ok(info
        .lines()
        .filter(|l| l.starts_with("cmdstat_evalsha:"))
        .filter_map(|l| l.split(',').find_map(|f| f.strip_prefix("usec=")))
        .filter_map(|v| v.parse::<u64>().ok())
        .sum())
}

async fn reset_stats(conn: &mut redis::aio::MultiplexedConnection) -> redis::RedisResult<()> {
    redis::cmd("CONFIG").arg("RESETSTAT").query_async(conn).await
}

/// Commands the server executed since the last reset (including those run
/// inside scripts), by name, most first; the benchmark's own `INFO` and
/// `CONFIG` left out.
async fn command_counts(conn: &mut redis::aio::MultiplexedConnection) -> redis::RedisResult<Vec<(String, u64)>> {
    let info: String = redis::cmd("INFO").arg("commandstats").query_async(conn).await?;
    let mut counts = Vec::new();
    for line in info.lines() {
        let Some((name, rest)) = line.split_once(':') else {
            continue;
        };
        let Some(name) = name.strip_prefix("cmdstat_") else {
            continue;
        };
        if name == "info" || name.starts_with("config") {
            continue;
        }
        if let Some(calls) = rest.split(',').find_map(|f| f.strip_prefix("calls=")) {
            counts.push((name.to_string(), calls.parse::<u64>().unwrap_or(0)));
        }
    }
    counts.sort_by_key(|(_, calls)| std::cmp::Reverse(*calls));
    Ok(counts)
}

/// Stops the worker child (TERM) and returns the pickup latencies it
/// printed, sorted (seconds).
pub(crate) fn stop_and_read_latencies(child: &mut std::process::Child) -> Result<Vec<f64>, Box<dyn std::error::Error>> {
    unsafe_kill(child.id(), 15);
    let mut latencies: Vec<f64> = Vec::new();
    for line in BufReader::new(child.stdout.take().expect("piped")).lines() {
        if let Some(rest) = line?.strip_prefix("LATENCIES ") {
            latencies = serde_json::from_str(rest)?;
        }
    }
    child.wait()?;
    latencies.sort_by(f64::total_cmp);
    Ok(latencies)
}

/// The `p` quantile of sorted `latencies` (seconds), in milliseconds.
pub(crate) fn percentile_ms(latencies: &[f64], p: f64) -> f64 {
    latencies[((latencies.len() as f64 - 1.0) * p).round() as usize] * 1000.0
}

fn peak_rss_mb(pid: u32) -> f64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<f64>().ok())
        .map_or(0.0, |kb| kb / 1024.0)
}

fn unsafe_kill(pid: u32, signal: i32) {
    // SAFETY: plain kill(2) on our own child.
    unsafe {
        libc::kill(pid as i32, signal);
    }
}

/// The worker process: `queues` queues (`default` for one, else `q0`..),
/// concurrency 10; prints the pickup latencies of its `Probe` jobs on exit.
async fn worker(url: &str, queues: usize, basic: bool) -> Result<(), Box<dyn std::error::Error>> {
    let mut config = Config::default();
    config.set_redis_url(url)?;
    config.set_concurrency(CONCURRENCY)?;
    config.set_prefetch(std::env::var("BENCH_PREFETCH").as_deref() != Ok("0"));
    config.set_shard_by_queue(sharded());
    if basic {
        config.set_fetch(cogworker::FetchMode::Basic);
    }
    if queues > 1 {
        config.set_queues(&idle::queue_names(queues))?;
    }
    let latencies: Arc<Mutex<Vec<f64>>> = Arc::default();
    let sink = latencies.clone();
    let worker = Worker::builder(config)
        .register("Noop", |_job| async { Ok(()) })
        .register("Sleep", |job| {
            let ms = job.args_slice().first().and_then(|v| v.as_u64()).unwrap_or(0);
            async move {
                tokio::time::sleep(Duration::from_millis(ms)).await;
                Ok(())
            }
        })
        .register("Probe", move |job| {
            let picked_up = cogworker::now();
            let pushed = job.args_slice()[0].as_f64().unwrap_or(picked_up);
            sink.lock().unwrap().push(picked_up - pushed);
            async { Ok(()) }
        })
        .build()?;
    let handle = worker.handle();
    handle.install_signal_handlers()?;
    worker.run().await?;
    let latencies = latencies.lock().unwrap().clone();
    println!("LATENCIES {}", serde_json::to_string(&latencies)?);
    Ok(())
}
