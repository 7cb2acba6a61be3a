//! `bench --hosts`: the engine against its Python and Ruby hosts, measured
//! the same way (#18's "hosts near the engine"). Each round drains `--jobs`
//! queued no-op jobs (default 50,000) with one worker process at
//! concurrency 10 per host, in turn on the same private Redis: this
//! binary's Rust worker, `cogworker -r ruby/bench/engine_app.rb` and
//! `python -m cogworker worker engine_app`. The handlers are the same in all
//! three (`Noop` does nothing; `Probe` notes its pickup latency), and the
//! drain is timed as `bench` times it: from the worker's registration to the
//! `processed` counter reaching the job count, polled every 5 ms. Printed per
//! round and as medians: drain jobs/s and its ratio to the Rust worker's
//! in the same round, the worker's CPU per job, pickup p50/p99 (200 single
//! pushes to the idle worker). `--no-prefetch`: every worker with
//! `prefetch = false`.
//!
//! `BENCH_PYTHON` (default `.venv-bench/bin/python`) must have cogworker
//! installed (`scripts/bench-hosts` installs a release build); `BENCH_RUBY`
//! (default `ruby`) loads the extension from ruby/lib.

use cogworker::{Client, Job};
use serde_json::json;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use super::{arg, percentile_ms, private_redis, probe_pickup, process_cpu_secs, stop_and_read_latencies};

#[derive(Clone, Copy, PartialEq)]
enum Host {
    Rust,
    Ruby,
    Python,
}

const HOSTS: [Host; 3] = [Host::Rust, Host::Ruby, Host::Python];

impl Host {
    fn name(self) -> &'static str {
        match self {
            Host::Rust => "Rust",
            Host::Ruby => "Ruby",
            Host::Python => "Python",
        }
    }

    fn spawn(self, url: &str) -> std::io::Result<Child> {
        let root = repository_root();
        let mut command = match self {
            Host::Rust => {
                let mut c = Command::new(std::env::current_exe()?);
                c.args(["--worker", url]);
                c
            }
            Host::Ruby => {
                let mut c = Command::new(std::env::var("BENCH_RUBY").unwrap_or_else(|_| "ruby".into()));
                c.arg("-I")
                    .arg(root.join("ruby/lib"))
                    .arg(root.join("ruby/exe/cogworker"))
                    .arg("-r")
                    .arg(root.join("ruby/bench/engine_app.rb"))
                    .args(["-c", "10"]);
                c
            }
            Host::Python => {
                let python = std::env::var("BENCH_PYTHON")
                    .map(PathBuf::from)
                    .unwrap_or_else(|_| root.join(".venv-bench/bin/python"));
                let mut c = Command::new(python);
                c.args(["-m", "cogworker", "worker", "engine_app", "-c", "10"])
                    .current_dir(root.join("python/bench"));
                c
            }
        };
        command
            .env("COGWORKER_REDIS_URL", url)
            .env("BENCH_PREFETCH", if prefetch() { "1" } else { "0" })
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
    }
}

/// `--no-prefetch`: every worker runs with `prefetch = false`.
fn prefetch() -> bool {
    !std::env::args().any(|a| a == "--no-prefetch")
}

fn repository_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

struct Round {
    drain: f64,
    cpu_usec_per_job: f64,
    p50_ms: f64,
    p99_ms: f64,
}

pub async fn run() -> Result<(), Box<dyn std::error::Error>> {
    let jobs: usize = arg("--jobs").and_then(|n| n.parse().ok()).unwrap_or(50_000);
    let rounds: usize = arg("--rounds").and_then(|n| n.parse().ok()).unwrap_or(3);
    let (redis, client, mut conn) = private_redis().await?;

    println!(
        "cogworker {} hosts against the engine (release builds, private redis, 1 worker process per host, concurrency {}, reliable fetch, prefetch {}, {jobs} no-op jobs per drain, {rounds} rounds)",
        env!("CARGO_PKG_VERSION"),
        super::CONCURRENCY,
        if prefetch() { "on" } else { "off" }
    );
    println!("| round | host | drain jobs/s | of Rust's | worker CPU per job | pickup p50 / p99 |");
    println!("|---|---|---|---|---|---|");
    let mut results: Vec<Vec<Round>> = HOSTS.iter().map(|_| Vec::new()).collect();
    for round in 1..=rounds {
        let mut rust_drain = 0.0;
        for (index, host) in HOSTS.into_iter().enumerate() {
            let result = drain_with(host, &redis.url(), &client, &mut conn, jobs).await?;
            if host == Host::Rust {
                rust_drain = result.drain;
            }
            println!(
                "| {round} | {} | {:.0} | {:.0}% | {:.1} µs | {:.2} / {:.2} ms |",
                host.name(),
                result.drain,
                100.0 * result.drain / rust_drain,
                result.cpu_usec_per_job,
                result.p50_ms,
                result.p99_ms
            );
            results[index].push(result);
        }
    }
    let median = |values: Vec<f64>| {
        let mut v = values;
        v.sort_by(f64::total_cmp);
        v[v.len() / 2]
    };
    let rust_median = median(results[0].iter().map(|r| r.drain).collect());
    for (index, host) in HOSTS.into_iter().enumerate() {
        let r = &results[index];
        let drain = median(r.iter().map(|r| r.drain).collect());
        println!(
            "| median | {} | {:.0} | {:.0}% | {:.1} µs | {:.2} / {:.2} ms |",
            host.name(),
            drain,
            100.0 * drain / rust_median,
            median(r.iter().map(|r| r.cpu_usec_per_job).collect()),
            median(r.iter().map(|r| r.p50_ms).collect()),
            median(r.iter().map(|r| r.p99_ms).collect())
        );
    }
    Ok(())
}

/// One drain by `host`'s worker: `jobs` no-op jobs queued first, then the
/// worker started; then 200 probes on the idle worker.
async fn drain_with(
    host: Host,
    url: &str,
    client: &Client,
    conn: &mut redis::aio::MultiplexedConnection,
    jobs: usize,
) -> Result<Round, Box<dyn std::error::Error>> {
    let _: () = redis::cmd("FLUSHALL").query_async(conn).await?;
    for chunk in 0..jobs.div_ceil(1000) {
        let n = (jobs - chunk * 1000).min(1000);
        client
            .push_bulk((0..n).map(|i| Job::new("Noop").args([json!(i)])).collect())
            .await?;
    }
    let mut child = host.spawn(url)?;
    let processed = client.keys().stat("processed", None);
    let started = Instant::now();
    while redis::AsyncCommands::scard::<_, u64>(conn, client.keys().processes()).await? == 0 {
        if started.elapsed() > Duration::from_secs(60) || child.try_wait()?.is_some() {
            return Err(format!("the {} worker did not start", host.name()).into());
        }
        tokio::time::sleep(Duration::from_millis(2)).await;
    }
    let cpu_before = process_cpu_secs(child.id());
    let drain_start = Instant::now();
    while redis::AsyncCommands::get::<_, Option<u64>>(conn, &processed)
        .await?
        .unwrap_or(0)
        < jobs as u64
    {
        if drain_start.elapsed() > Duration::from_secs(600) {
            return Err(format!("the {} worker did not drain", host.name()).into());
        }
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    let drain_secs = drain_start.elapsed().as_secs_f64();
    let cpu = process_cpu_secs(child.id()) - cpu_before;

    probe_pickup(client, conn, jobs).await?;
    let latencies = stop_and_read_latencies(&mut child)?;
    if latencies.len() != 200 {
        return Err(format!("the {} worker printed {} latencies", host.name(), latencies.len()).into());
    }
    Ok(Round {
        drain: jobs as f64 / drain_secs,
        cpu_usec_per_job: 1e6 * cpu / jobs as f64,
        p50_ms: percentile_ms(&latencies, 0.5),
        p99_ms: percentile_ms(&latencies, 0.99),
    })
}
