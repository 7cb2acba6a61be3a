//! `bench --cluster`: three queues on a three-master Redis Cluster, drained
//! with every key on one master (the namespace's slot) and then with
//! `shard_by_queue` (each queue on its own master). Per layout: the drain
//! rate of `--jobs` no-op jobs (spread evenly over the three queues) by
//! `--workers` worker processes (concurrency 10, reliable fetch), and each
//! master's CPU per drained job and commands executed, from `INFO`.

use cogworker::{Api, Client, Config, Job, Worker};
use serde_json::json;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use super::{arg, process_cpu_secs, redis_cpu_secs, CONCURRENCY};

const NAMESPACE: &str = "{cogworker}";

pub async fn run() -> Result<(), Box<dyn std::error::Error>> {
    let jobs: usize = arg("--jobs").and_then(|n| n.parse().ok()).unwrap_or(60_000);
    let workers: usize = arg("--workers").and_then(|n| n.parse().ok()).unwrap_or(2);
    let nodes: Vec<cogworker::redis_server::RedisServer> = (0..3)
        .map(|_| cogworker::redis_server::RedisServer::cluster_node())
        .collect::<Result<_, _>>()?;
    let ports: Vec<u16> = nodes.iter().map(|n| n.port()).collect();
    cogworker::redis_server::join_cluster(&ports)?;
    let url = format!(
        "redis+cluster://{}",
        nodes
            .iter()
            .map(|n| format!("127.0.0.1:{}", n.port()))
            .collect::<Vec<_>>()
            .join(",")
    );
    let mut conns = Vec::new();
    for node in &nodes {
        conns.push(
            redis::Client::open(node.url())?
                .get_multiplexed_async_connection()
                .await?,
        );
    }
    let queues = cogworker::redis_server::queue_per_node(&ports, NAMESPACE)?;
    println!(
        "cogworker {} on a 3-master Redis Cluster (release build, loopback, {} worker process(es) x concurrency {CONCURRENCY}, reliable fetch, {jobs} no-op jobs over queues {})",
        env!("CARGO_PKG_VERSION"),
        workers,
        queues.join(", ")
    );
    println!("| keys | drain jobs/s | Redis CPU per job, master 1 / 2 / 3 | commands per job, master 1 / 2 / 3 | workers' CPU per job |");
    println!("|---|---|---|---|---|");
    for sharded in [false, true] {
        for conn in &mut conns {
            let _: () = redis::cmd("FLUSHALL").query_async(conn).await?;
        }
        let mut config = Config::default();
        config.set_redis_url(&url)?.set_namespace(NAMESPACE)?;
        config.set_shard_by_queue(sharded).set_queues(&queues)?;
        let client = Client::new(&config)?;
        for chunk in 0..jobs.div_ceil(999) {
            let n = (jobs - chunk * 999).min(999);
            client
                .push_bulk(
                    (0..n)
                        .map(|i| Job::new("Noop").args([json!(i)]).queue(&queues[i % 3]))
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
                    .args(["--cluster-worker", &url, &queues.join(",")])
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
            cpu_per_job.push(format!(
                "{:.1}",
                (redis_cpu_secs(conn).await? - before) / jobs as f64 * 1e6
            ));
            commands_per_job.push(format!("{:.2}", executed(conn).await? as f64 / jobs as f64));
        }
        for child in &mut children {
            super::unsafe_kill(child.id(), 15);
            child.wait()?;
        }
        println!(
            "| {} | {:.0} | {} µs | {} | {:.1} µs |",
            if sharded {
                "shard_by_queue: one master per queue"
            } else {
                "one slot: all on one master"
            },
            jobs as f64 / secs,
            cpu_per_job.join(" / "),
            commands_per_job.join(" / "),
            worker_cpu / jobs as f64 * 1e6
        );
    }
    Ok(())
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
