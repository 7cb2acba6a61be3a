//! `bench --idle`: the cost of an idle worker as its queue count grows.
//! For 1, 10, 50 and 200 queues: the Redis connections the worker holds
//! (and how many of them are pub/sub), the commands it sends per second
//! while idle (`MONITOR` lines not run by a script) and those executed
//! inside its scripts, and the pickup latency p50/p99 of 100 pushes, each
//! to a random queue of its, with pauses between them. Then the cost of a
//! wake-up reaching many idle processes: 10 worker processes on one queue,
//! 100 jobs pushed one at a time 20 ms apart, every command counted.
//! With `--sharded`, the worker and the pushes use `shard_by_queue`.

use cogworker::{Client, Config, Job};
use redis::AsyncCommands;
use serde_json::json;
use std::io::{BufRead, BufReader, Write};
use std::net::TcpStream;
use std::time::{Duration, Instant};

const QUEUE_COUNTS: [usize; 4] = [1, 10, 50, 200];
/// How long idle commands are counted, per queue count.
const WATCH: Duration = Duration::from_secs(10);
const PROBES: usize = 100;

/// The queue names a worker of `count` queues serves.
pub fn queue_names(count: usize) -> Vec<String> {
    if count == 1 {
        return vec!["default".to_string()];
    }
    (0..count).map(|i| format!("q{i}")).collect()
}

struct Row {
    queues: usize,
    connections: usize,
    pubsub: usize,
    sent_per_sec: f64,
    in_scripts_per_sec: f64,
    p50_ms: f64,
    p99_ms: f64,
}

pub async fn run() -> Result<(), Box<dyn std::error::Error>> {
    let redis = cogworker::redis_server::RedisServer::start(&[])?;
    let mut rows = Vec::new();
    for queues in QUEUE_COUNTS {
        rows.push(measure(&redis.url(), redis.port(), queues).await?);
    }
    println!(
        "cogworker {} idle cost (release build, private redis, 1 worker process, concurrency 10, reliable fetch{}, {}s watched per row)",
        env!("CARGO_PKG_VERSION"),
        if super::sharded() { ", shard_by_queue" } else { "" },
        WATCH.as_secs()
    );
    println!("| queues | connections (pub/sub) | commands sent/s idle | executed in scripts/s | pickup p50 / p99 |");
    println!("|---|---|---|---|---|");
    for r in rows {
        println!(
            "| {} | {} ({}) | {:.2} | {:.1} | {:.2} / {:.2} ms |",
            r.queues, r.connections, r.pubsub, r.sent_per_sec, r.in_scripts_per_sec, r.p50_ms, r.p99_ms
        );
    }
    let (sent, in_scripts) = herd(&redis.url(), redis.port()).await?;
    println!(
        "\n{HERD_PROCESSES} idle processes on one queue, {HERD_JOBS} jobs pushed one at a time {}ms apart: \
         {:.1} commands sent and {:.1} run inside scripts per job (its push included)",
        HERD_GAP.as_millis(),
        sent as f64 / HERD_JOBS as f64,
        in_scripts as f64 / HERD_JOBS as f64
    );
    Ok(())
}

const HERD_PROCESSES: usize = 10;
const HERD_JOBS: usize = 100;
const HERD_GAP: Duration = Duration::from_millis(20);

/// Commands (sent, run inside scripts) while `HERD_JOBS` trickle in to
/// `HERD_PROCESSES` idle workers of one queue: every wake-up reaches them
/// all.
async fn herd(url: &str, port: u16) -> Result<(u64, u64), Box<dyn std::error::Error>> {
    let mut conn = redis::Client::open(url)?.get_multiplexed_async_connection().await?;
    let _: () = redis::cmd("FLUSHALL").query_async(&mut conn).await?;
    let mut config = Config::default();
    config.set_redis_url(url)?.set_shard_by_queue(super::sharded());
    let client = Client::new(&config)?;
    let sharding: Vec<&str> = super::sharded().then_some("--sharded").into_iter().collect();
    let children = super::start_workers(url, HERD_PROCESSES, &sharding, &[], &client, &mut conn).await?;
    tokio::time::sleep(Duration::from_secs(3)).await;
    // Watched from another thread while the jobs trickle in.
    let span = HERD_GAP * HERD_JOBS as u32 + Duration::from_millis(500);
    let watcher = std::thread::spawn(move || watch(port, span));
    tokio::time::sleep(Duration::from_millis(100)).await;
    for _ in 0..HERD_JOBS {
        client.push(Job::new("Probe").args([json!(cogworker::now())])).await?;
        tokio::time::sleep(HERD_GAP).await;
    }
    let counted = watcher.join().expect("the watcher thread")?;
    for mut child in children {
        super::stop_and_read_latencies(&mut child)?;
    }
    Ok(counted)
}

async fn measure(url: &str, port: u16, queues: usize) -> Result<Row, Box<dyn std::error::Error>> {
    let mut conn = redis::Client::open(url)?.get_multiplexed_async_connection().await?;
    let _: () = redis::cmd("FLUSHALL").query_async(&mut conn).await?;
    let mut config = Config::default();
    config.set_redis_url(url)?.set_shard_by_queue(super::sharded());
    let client = Client::new(&config)?;
    let count = queues.to_string();
    let mut args = vec!["--queues", count.as_str()];
    args.extend(super::sharded().then_some("--sharded"));
    let mut worker = super::start_workers(url, 1, &args, &[], &client, &mut conn).await?;
    // Past startup (recovery, first beats) before counting.
    tokio::time::sleep(Duration::from_secs(3)).await;
    let own_id: i64 = redis::cmd("CLIENT").arg("ID").query_async(&mut conn).await?;
    let (sent, in_scripts) = watch(port, WATCH)?;
    let clients: String = redis::cmd("CLIENT").arg("LIST").query_async(&mut conn).await?;
    let workers: Vec<&str> = clients
        .lines()
        .filter(|line| !line.starts_with(&format!("id={own_id} ")))
        .collect();
    let pubsub = workers
        .iter()
        .filter(|l| !l.contains(" sub=0 ") || l.contains(" psub=1"))
        .count();

    let names = queue_names(queues);
    let mut pick = 7usize;
    for i in 0..PROBES {
        pick = (pick * 31 + 17) % names.len().max(1);
        client
            .push(
                Job::new("Probe")
                    .queue(names[pick].as_str())
                    .args([json!(cogworker::now())]),
            )
            .await?;
        // Varied pauses, long enough for the worker to be idle again.
        tokio::time::sleep(Duration::from_millis(5 + (i as u64 * 7) % 11)).await;
    }
    let processed = client.keys().stat("processed", None);
    let settle = Instant::now();
    while conn.get::<_, Option<u64>>(&processed).await?.unwrap_or(0) < PROBES as u64 {
        assert!(settle.elapsed() < Duration::from_secs(10), "probes not processed");
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    let latencies = super::stop_and_read_latencies(&mut worker[0])?;
    let secs = WATCH.as_secs_f64();
    Ok(Row {
        queues,
        connections: workers.len(),
        pubsub,
        sent_per_sec: sent as f64 / secs,
        in_scripts_per_sec: in_scripts as f64 / secs,
        p50_ms: super::percentile_ms(&latencies, 0.5),
        p99_ms: super::percentile_ms(&latencies, 0.99),
    })
}

/// Counts the commands the server runs for `how_long` (`MONITOR`): those
/// clients sent, and those scripts ran.
fn watch(port: u16, how_long: Duration) -> std::io::Result<(u64, u64)> {
    let mut stream = TcpStream::connect(("127.0.0.1", port))?;
    stream.write_all(b"MONITOR\r\n")?;
    stream.set_read_timeout(Some(Duration::from_millis(200)))?;
    let mut reader = BufReader::new(stream);
    let (mut sent, mut in_scripts) = (0u64, 0u64);
    let deadline = Instant::now() + how_long;
    let mut line = String::new();
    while Instant::now() < deadline {
        line.clear();
        match reader.read_line(&mut line) {
            Ok(0) => break,
            Ok(_) if line.starts_with("+OK") => {}
            Ok(_) if line.contains(" lua] ") => in_scripts += 1,
            Ok(_) => sent += 1,
            Err(e) if matches!(e.kind(), std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut) => {}
            Err(e) => return Err(e),
        }
    }
    Ok((sent, in_scripts))
}
