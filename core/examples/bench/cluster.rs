//! `bench --cluster`: three queues on a three-master Redis Cluster, drained
//! with every key on one master (the namespace's slot) and then with
//! `shard_by_queue` (each queue on its own master). Per layout: the drain
//! rate of `--jobs` no-op jobs (spread evenly over the three queues) by
//! `--workers` worker processes (concurrency 10, reliable fetch), and each
//! master's CPU per drained job and commands executed, from `INFO`.
//! `--cluster --sweep`: six queues over 1, 2 and 3 masters with
//! `shard_by_queue` (and the one-slot layout on 3 for reference), each
//! master's CPU per job and the busiest one's limit (docs/scaling.md).

use cogworker::{Api, Client, Config, Job, Worker};
use serde_json::json;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use super::{arg, process_cpu_secs, redis_cpu_secs, CONCURRENCY};

const NAMESPACE: &str = "{cogworker}";

pub async fn run() -> Result<(), Box<dyn std::error::Error>> {
    let jobs: usize = arg("--jobs").and_then(|n| n.parse().ok()).unwrap_or(60_000);
    let workers: usize = arg("--workers").and_then(|n| n.parse().ok()).unwrap_or(2);
    if std::env::args().any(|a| a == "--sweep") {
        return sweep(jobs, workers).await;
    }
    let cluster = Cluster::start(3, 1).await?;
    println!(
        "cogworker {} on a 3-master Redis Cluster (release build, loopback, {} worker process(es) x concurrency {CONCURRENCY}, reliable fetch, {jobs} no-op jobs over queues {})",
        env!("CARGO_PKG_VERSION"),
        workers,
        cluster.queues.join(", ")
    );
    println!("| keys | drain jobs/s | Redis CPU per job, master 1 / 2 / 3 | commands per job, master 1 / 2 / 3 | workers' CPU per job |");
    println!("|---|---|---|---|---|");
    for sharded in [false, true] {
        let drained = cluster.drain(sharded, jobs, workers).await?;
        println!(
            "| {} | {:.0} | {} µs | {} | {:.1} µs |",
            if sharded {
                "shard_by_queue: one master per queue"
            } else {
                "one slot: all on one master"
            },
            drained.rate,
            joined(&drained.cpu_per_job, 1),
            joined(&drained.commands_per_job, 2),
            drained.worker_cpu_per_job
        );
    }
    Ok(())
}

/// `--sweep`: six queues spread evenly over 1, 2 and 3 masters with
/// `shard_by_queue`, and the one-slot layout on 3 masters for reference:
/// per row, the drain rate, each master's Redis CPU per job, and what the
/// busiest master could drain with a core of its own at that cost.
async fn sweep(jobs: usize, workers: usize) -> Result<(), Box<dyn std::error::Error>> {
    println!(
        "cogworker {} on Redis Clusters of 1, 2 and 3 masters (release build, loopback, {workers} worker process(es) x concurrency {CONCURRENCY}, reliable fetch, {jobs} no-op jobs over 6 queues spread evenly)",
        env!("CARGO_PKG_VERSION"),
    );
    println!("| layout | masters | drain jobs/s | Redis CPU per job, each master | all masters | busiest master's limit, one core each | workers' CPU per job |");
    println!("|---|---|---|---|---|---|---|");
    for (masters, sharded) in [(3, false), (1, true), (2, true), (3, true)] {
        let cluster = Cluster::start(masters, 6 / masters).await?;
        let drained = cluster.drain(sharded, jobs, workers).await?;
        let busiest = drained.cpu_per_job.iter().copied().fold(0.0, f64::max);
        println!(
            "| {} | {masters} | {:.0} | {} µs | {:.1} µs | {:.0} jobs/s | {:.1} µs |",
            if sharded { "shard_by_queue" } else { "one slot" },
            drained.rate,
            joined(&drained.cpu_per_job, 1),
            drained.cpu_per_job.iter().sum::<f64>(),
            1e6 / busiest,
            drained.worker_cpu_per_job
        );
    }
    Ok(())
}

fn joined(values: &[f64], decimals: usize) -> String {
    values
        .iter()
        .map(|v| format!("{v:.decimals$}"))
        .collect::<Vec<_>>()
        .join(" / ")
}

/// A cluster of started masters, and queues whose slots are spread evenly
/// over them.
struct Cluster {
    _nodes: Vec<cogworker::redis_server::RedisServer>,
    url: String,
    conns: Vec<redis::aio::MultiplexedConnection>,
    queues: Vec<String>,
}

/// One drain: its rate, and per master its Redis CPU and commands per job.
struct Drained {
    rate: f64,
    cpu_per_job: Vec<f64>,
    commands_per_job: Vec<f64>,
    worker_cpu_per_job: f64,
}

impl Cluster {
    /// `masters` nodes joined in a cluster, `per_master` queues on each.
    async fn start(masters: usize, per_master: usize) -> Result<Cluster, Box<dyn std::error::Error>> {
        let nodes: Vec<cogworker::redis_server::RedisServer> = (0..masters)
            .map(|_| cogworker::redis_server::RedisServer::cluster_node())
            .collect::<Result<_, _>>()?;
        let ports: Vec<u16> = nodes.iter().map(|n| n.port()).collect();
        cogworker::redis_server::join_cluster(&ports)?;
        let url = format!(
            "redis+cluster://{}",
            ports
                .iter()
                .map(|port| format!("127.0.0.1:{port}"))
                .collect::<Vec<_>>()
                .join(",")
        );
        let mut conns = Vec::new();
        for node in &nodes {
            let client = redis::Client::open(node.url())?;
            conns.push(client.get_multiplexed_async_connection().await?);
        }
        let queues = cogworker::redis_server::queues_per_node(&ports, NAMESPACE, per_master)?;
        Ok(Cluster {
            _nodes: nodes,
            url,
            conns,
            queues,
        })
    }

    /// `jobs` no-op jobs spread over the queues, drained by `workers`
    /// worker processes, with `shard_by_queue` or in the namespace's slot.
    async fn drain(&self, sharded: bool, jobs: usize, workers: usize) -> Result<Drained, Box<dyn std::error::Error>> {
        let mut conns = self.conns.clone();
        let queues = &self.queues;
        for conn in &mut conns {
            let _: () = redis::cmd("FLUSHALL").query_async(conn).await?;
        }
        let mut config = Config::default();
        config.set_redis_url(&self.url)?.set_namespace(NAMESPACE)?;
        config.set_shard_by_queue(sharded).set_queues(queues)?;
        let client = Client::new(&config)?;
        for chunk in 0..jobs.div_ceil(999) {
            let n = (jobs - chunk * 999).min(999);
            client
                .push_bulk(
                    (0..n)
                        .map(|i| Job::new("Noop").args([json!(i)]).queue(&queues[i % queues.len()]))
                        .collect(),
                )
                .await?;
        }
        let mut cpu_before = Vec::new();
        for conn in &mut conns {
            let _: () = redis::cmd("CONFIG").arg("RESETSTAT").query_async(conn).await?;
            cpu_before.push(redis_cpu_secs(conn).await?);
        }
        let mut children = Vec::new();
        for _ in 0..workers {
            children.push(
                Command::new(std::env::current_exe()?)
                    .args(["--cluster-worker", &self.url, &queues.join(",")])
                    .args(sharded.then_some("--sharded"))
                    .stdout(Stdio::null())
                    .stderr(Stdio::null())
                    .spawn()?,
            );
        }
        let api = Api::new(client.clone());
        let started = Instant::now();
        while api.stats().await?.processed < jobs as u64 {
            assert!(started.elapsed() < Duration::from_secs(300), "drain did not finish");
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        let secs = started.elapsed().as_secs_f64();
        let worker_cpu: f64 = children.iter().map(|c| process_cpu_secs(c.id())).sum();
        let mut cpu_per_job = Vec::new();
        let mut commands_per_job = Vec::new();
        for (conn, before) in conns.iter_mut().zip(&cpu_before) {
            cpu_per_job.push((redis_cpu_secs(conn).await? - before) / jobs as f64 * 1e6);
            commands_per_job.push(executed(conn).await? as f64 / jobs as f64);
        }
        for child in &mut children {
            super::unsafe_kill(child.id(), 15);
            child.wait()?;
        }
        Ok(Drained {
            rate: jobs as f64 / secs,
            cpu_per_job,
            commands_per_job,
            worker_cpu_per_job: worker_cpu / jobs as f64 * 1e6,
        })
    }
}

/// A worker process of the cluster benchmark.
pub async fn worker(url: &str, queues: &str, sharded: bool) -> Result<(), Box<dyn std::error::Error>> {
    let mut config = Config::default();
    config.set_redis_url(url)?.set_namespace(NAMESPACE)?;
    config.set_concurrency(CONCURRENCY)?;
    config
        .set_shard_by_queue(sharded)
        .set_queues(&queues.split(',').collect::<Vec<_>>())?;
    let worker = Worker::builder(config)
        .register("Noop", |_job| async { Ok(()) })
        .build()?;
    worker.handle().install_signal_handlers()?;
    worker.run().await?;
    Ok(())
}

/// Commands a node executed since the last reset (inside scripts too),
/// `INFO` and `CONFIG` left out.
async fn executed(conn: &mut redis::aio::MultiplexedConnection) -> redis::RedisResult<u64> {
    Ok(super::command_counts(conn).await?.iter().map(|(_, n)| n).sum())
}
