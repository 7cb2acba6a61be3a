//! `cogworker bench [JOBS]`: the engine measured against the user's own
//! Redis, so that the speed this project claims can be checked where it
//! runs. In a namespace of its own (`{cogworker-bench-<random>}`, deleted
//! afterwards, and its keys given a 60 s TTL every 250 ms while it runs,
//! so a run cut short leaves nothing for good; nothing of the
//! application's is read or touched): JOBS
//! pushes one by one, JOBS in bulk (1,000 per call), a worker at
//! concurrency 10 with no-op handlers draining the 2 × JOBS, and the pickup
//! latency of 200 pushes 20 ms apart to the idle worker. What it prints
//! is the table `scripts/bench` prints here.

use crate::client::Client;
use crate::config::Config;
use crate::error::{Error, Result};
use crate::job::{now, Job};
use crate::worker::{Worker, WorkerHandle};
use serde_json::json;
use std::fmt::Write as _;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// Jobs per phase when the command names none.
pub const DEFAULT_JOBS: usize = 10_000;
const MAX_JOBS: usize = 1_000_000;
const PROBES: usize = 200;
const PROBE_GAP: Duration = Duration::from_millis(20);
const CONCURRENCY: i64 = 10;
/// How long the drain may take before the run gives up.
const DRAIN_LIMIT: Duration = Duration::from_secs(300);

/// `arg`: the jobs per phase, as typed (`None`: [`DEFAULT_JOBS`]).
pub fn jobs_from(arg: Option<&str>) -> Result<usize> {
    let Some(text) = arg.filter(|t| !t.is_empty()) else {
        return Ok(DEFAULT_JOBS);
    };
    match text.parse::<usize>() {
        Ok(n) if (1..=MAX_JOBS).contains(&n) => Ok(n),
        _ => Err(Error::invalid_argument(
            "bench",
            format!("{text:?}"),
            format!("takes a number of jobs from 1 to {MAX_JOBS}"),
        )),
    }
}

/// The bench's worker while it runs, with its task.
type Running = Option<(WorkerHandle, tokio::task::JoinHandle<Result<()>>)>;

/// Runs the benchmark against the Redis of `config` and returns the table;
/// `progress` is told of each phase as it begins (the CLIs print it on
/// stderr, so a run of a million jobs is not minutes of silence).
///
/// The run is a task of its own: a caller that drops this call (a host's
/// Ctrl-C, a timeout) ends the measuring, and the task still stops its
/// worker and deletes its namespace. Dropped with the call, the worker
/// once kept running, writing keys the sweep no longer gave a TTL.
pub async fn run(config: &Config, jobs: usize, progress: impl Fn(&str) + Send + Sync + 'static) -> Result<String> {
    let (cancel, cancelled) = tokio::sync::oneshot::channel::<()>();
    let task = tokio::spawn(run_to_the_end(config.clone(), jobs, progress, cancelled));
    let table = task.await.map_err(|e| gave_up(&format!("the bench task: {e}")))?;
    drop(cancel);
    table
}

/// [`run`]'s task: measures until done or `cancelled` (its sender dropped
/// with the call), then stops the worker and deletes the namespace.
async fn run_to_the_end(
    mut config: Config,
    jobs: usize,
    progress: impl Fn(&str) + Send + Sync,
    cancelled: tokio::sync::oneshot::Receiver<()>,
) -> Result<String> {
    let namespace = format!("{{cogworker-bench-{:016x}}}", rand::random::<u64>());
    config.set_namespace(&namespace)?.set_shard_by_queue(false);
    // Whatever queues the environment names, the bench pushes to and
    // works `default` alone.
    config.set_concurrency(CONCURRENCY)?.set_queues(&["default"])?;
    let client = Client::new(&config)?;
    // Every key of the namespace lives at most KEPT_FOR past the sweep
    // before last: a run cut short (Ctrl-C drops this call, kill -9 ends
    // the process) leaves nothing in the user's Redis for good.
    let sweeper = Sweeper(
        tokio::spawn({
            let (client, namespace) = (client.clone(), namespace.clone());
            async move {
                loop {
                    if let Err(e) = each_key_batch(&client, &namespace, Batch::Expire).await {
                        tracing::debug!("cogworker bench: setting the TTLs of its keys failed: {e}");
                    }
                    tokio::time::sleep(SWEEP_EVERY).await;
                }
            }
        })
        .abort_handle(),
    );
    let mut running: Running = None;
    let measured = tokio::select! {
        measured = measure(&config, &client, jobs, &progress, &mut running) => measured,
        _ = cancelled => Err(gave_up("the call was dropped")),
    };
    // However the measuring ended, its worker stops before the namespace
    // goes (the sweep goes on meanwhile).
    if let Some((handle, task)) = running.take() {
        handle.stop();
        let _ = task.await;
    }
    drop(sweeper);
    let cleaned = each_key_batch(&client, &namespace, Batch::Delete).await;
    let table = measured?;
    cleaned?;
    Ok(table)
}

/// How often the bench's keys get their TTL again, and how long it is.
const SWEEP_EVERY: Duration = Duration::from_millis(250);
const KEPT_FOR: Duration = Duration::from_secs(60);

/// Ends the TTL sweep when the run ends, however it ends.
struct Sweeper(tokio::task::AbortHandle);

impl Drop for Sweeper {
    fn drop(&mut self) {
        self.0.abort();
    }
}

/// Pushes `jobs` no-op jobs (class `Noop`) one at a time, each awaited;
/// pushes per second.
pub async fn enqueue_one_by_one(client: &Client, jobs: usize) -> Result<f64> {
    let started = Instant::now();
    for i in 0..jobs {
        client.push(Job::new("Noop").args([json!(i)])).await?;
    }
    Ok(jobs as f64 / started.elapsed().as_secs_f64())
}

/// Pushes `jobs` no-op jobs (class `Noop`) 1,000 per call; jobs per second.
pub async fn enqueue_in_bulk(client: &Client, jobs: usize) -> Result<f64> {
    let started = Instant::now();
    for chunk in 0..jobs.div_ceil(1000) {
        let n = (jobs - chunk * 1000).min(1000);
        client
            .push_bulk((0..n).map(|i| Job::new("Noop").args([json!(i)])).collect())
            .await?;
    }
    Ok(jobs as f64 / started.elapsed().as_secs_f64())
}

async fn measure(
    config: &Config,
    client: &Client,
    jobs: usize,
    progress: &(dyn Fn(&str) + Send + Sync),
    running: &mut Running,
) -> Result<String> {
    progress(&format!("bench: pushing {jobs} jobs one by one"));
    let one_by_one = enqueue_one_by_one(client, jobs).await?;
    progress(&format!("bench: pushing {jobs} jobs in bulk"));
    let bulk = enqueue_in_bulk(client, jobs).await?;

    let pickups: Arc<Mutex<Vec<f64>>> = Arc::default();
    let noted = pickups.clone();
    let worker = Worker::builder(config.clone())
        .register("Noop", |_job| async { Ok(()) })
        .register("Probe", move |job| {
            let picked_up = now();
            let pushed = job.args_slice().first().and_then(|v| v.as_f64()).unwrap_or(picked_up);
            noted.lock().unwrap().push(picked_up - pushed);
            async { Ok(()) }
        })
        .quiet()
        .build()?;
    let handle = worker.handle();
    let started = Instant::now();
    let (_, task) = running.insert((handle.clone(), tokio::spawn(worker.run())));
    let api = crate::api::Api::new(client.clone());
    let drained = 2 * jobs as u64;
    progress(&format!(
        "bench: draining {drained} jobs (one worker, concurrency {CONCURRENCY})"
    ));
    while api.stats().await?.processed < drained {
        if started.elapsed() > DRAIN_LIMIT || task.is_finished() {
            return Err(gave_up("the drain did not finish within 300 s"));
        }
        tokio::time::sleep(Duration::from_millis(2)).await;
    }
    let drain = drained as f64 / started.elapsed().as_secs_f64();
    progress(&format!("bench: {PROBES} pickups, 20 ms apart"));

    for _ in 0..PROBES {
        client.push(Job::new("Probe").args([json!(now())])).await?;
        tokio::time::sleep(PROBE_GAP).await;
    }
    while api.stats().await?.processed < drained + PROBES as u64 && started.elapsed() < DRAIN_LIMIT {
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    handle.stop();
    let (_, task) = running.take().expect("started above");
    task.await.map_err(|e| gave_up(&format!("the worker task: {e}")))??;
    let mut pickups = pickups.lock().unwrap().clone();
    pickups.sort_by(f64::total_cmp);
    let ms = |q: f64| pickups.get(((pickups.len() as f64 * q) as usize).min(pickups.len().saturating_sub(1)));

    let mut out = String::new();
    let _ = writeln!(
        out,
        "cogworker {} bench against {}",
        env!("CARGO_PKG_VERSION"),
        config.redis_url_redacted()
    );
    let _ = writeln!(out, "| measure | result |");
    let _ = writeln!(out, "|---|---|");
    let _ = writeln!(
        out,
        "| enqueue one by one ({jobs} jobs, each awaited) | {one_by_one:.0} jobs/s |"
    );
    let _ = writeln!(
        out,
        "| enqueue in bulk ({jobs} jobs, 1,000 per call) | {bulk:.0} jobs/s |"
    );
    let _ = writeln!(
        out,
        "| drain ({drained} no-op jobs, one worker, concurrency {CONCURRENCY}) | {drain:.0} jobs/s |"
    );
    if let (Some(p50), Some(p99)) = (ms(0.50), ms(0.99)) {
        let _ = writeln!(
            out,
            "| pickup p50 / p99 ({} pushes 20 ms apart, idle worker) | {:.2} / {:.2} ms |",
            pickups.len(),
            p50 * 1000.0,
            p99 * 1000.0
        );
    }
    Ok(out)
}

/// The run could not finish: reported as a Redis that did not keep up.
fn gave_up(why: &str) -> Error {
    Error::Redis(std::io::Error::new(std::io::ErrorKind::TimedOut, format!("cogworker bench: {why}")).into())
}

/// What is done to each batch of the namespace's keys.
#[derive(Clone, Copy)]
enum Batch {
    /// Given [`KEPT_FOR`] to live.
    Expire,
    /// Deleted.
    Delete,
}

/// Expires or deletes every key of the benchmark's namespace (all on one
/// node: the namespace is hash-tagged and nothing is sharded by queue).
async fn each_key_batch(client: &Client, namespace: &str, what: Batch) -> Result<()> {
    let mut cursor = 0u64;
    loop {
        let scan = redis::cmd("SCAN")
            .arg(cursor)
            .arg("MATCH")
            .arg(format!("{namespace}:*"))
            .arg("COUNT")
            .arg(1000)
            .clone();
        let (next, keys): (u64, Vec<String>) = client.redis().on_namespace_node(&scan).await?;
        if !keys.is_empty() {
            // One slot (the hash tag): one round trip for the whole batch.
            match what {
                Batch::Delete => {
                    let _: i64 = redis::AsyncCommands::del(&mut client.redis().conn(), keys).await?;
                }
                Batch::Expire => {
                    let mut pipe = redis::pipe();
                    for key in &keys {
                        pipe.expire(key, KEPT_FOR.as_secs() as i64).ignore();
                    }
                    let _: () = pipe.query_async(&mut client.redis().conn()).await?;
                }
            }
        }
        if next == 0 {
            return Ok(());
        }
        cursor = next;
    }
}
