//! `bench --durable`: what a durable push costs (issue #47). A private
//! master and one replica on loopback; `--singles` (5,000) jobs pushed one
//! by one, each awaited, without `min_replicas_acked`, with the client's
//! setting at 1 and with each push's own option at 1 (`Job::min_replicas_acked`,
//! the client asking none), in alternating rounds (`--rounds`, 3): pushes
//! per second and the push's p50 / p99.

use cogworker::{Client, Config, Job};
use std::time::{Duration, Instant};

use super::{arg, percentile_ms};

pub async fn run() -> Result<(), Box<dyn std::error::Error>> {
    let singles: usize = arg("--singles").and_then(|n| n.parse().ok()).unwrap_or(5_000);
    let rounds: usize = arg("--rounds").and_then(|n| n.parse().ok()).unwrap_or(3);
    let master = cogworker::redis_server::RedisServer::start(&[])?;
    let port = master.port().to_string();
    let replica = cogworker::redis_server::RedisServer::start(&["--replicaof", "127.0.0.1", &port])?;
    let mut master_conn = redis::Client::open(master.url())?
        .get_multiplexed_async_connection()
        .await?;
    // Online on the master (its first acknowledgement came), which is when
    // a WAIT counts it: the warm-up push below would fail before.
    let online = format!("port={},state=online", replica.port());
    let synced = Instant::now();
    loop {
        let info: String = redis::cmd("INFO")
            .arg("replication")
            .query_async(&mut master_conn)
            .await?;
        if info.contains(&online) {
            break;
        }
        if synced.elapsed() > Duration::from_secs(20) {
            return Err("the replica did not sync within 20 s".into());
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    println!(
        "cogworker {} durable push (release build, private master + 1 replica on loopback, {singles} pushes one by one, each awaited)",
        env!("CARGO_PKG_VERSION")
    );
    println!("| round | min_replicas_acked | pushes/s | push p50 / p99 |");
    println!("|---|---|---|---|");
    for round in 1..=rounds {
        for (mode, setting, per_push) in [
            ("0", 0, None),
            ("1, the client's", 1, None),
            ("1, per push", 0, Some(1)),
        ] {
            let mut config = Config::default();
            config.set_redis_url(&master.url())?.set_min_replicas_acked(setting)?;
            let client = Client::new(&config)?;
            let job = |class: &str| match per_push {
                Some(replicas) => Job::new(class).min_replicas_acked(replicas),
                None => Job::new(class),
            };
            client.push(job("Warm")).await?;
            let mut took = Vec::with_capacity(singles);
            let started = Instant::now();
            for _ in 0..singles {
                let one = Instant::now();
                client.push(job("Noop")).await?;
                took.push(one.elapsed().as_secs_f64());
            }
            let rate = singles as f64 / started.elapsed().as_secs_f64();
            took.sort_by(f64::total_cmp);
            println!(
                "| {round} | {mode} | {rate:.0} | {:.3} / {:.3} ms |",
                percentile_ms(&took, 0.5),
                percentile_ms(&took, 0.99)
            );
        }
    }
    drop(replica);
    drop(master);
    Ok(())
}
