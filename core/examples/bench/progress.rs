//! `bench --progress`: long jobs' progress (issue #48). A private Redis;
//! `--jobs` (100) jobs run at once, each reporting `--reports` (100)
//! times, 20 ms apart, while `--watchers` (10) watchers follow them (each
//! job watched once, the jobs shared out among the watchers). Prints the
//! Redis commands per `progress()` call and per report written, those a
//! watch costs, and the latency from a `progress()` call to a watcher
//! seeing that report (p50 / p99; the writes are coalesced to at most one
//! per job every 250 ms, so a report is seen up to that late, or not at
//! all when a newer one replaces it).

use super::{arg, command_counts, percentile_ms, reset_stats};
use cogworker::{Api, Client, Config, Job, Running, WatchEvent, Worker};
use serde_json::json;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

pub async fn run() -> Result<(), Box<dyn std::error::Error>> {
    let jobs: usize = arg("--jobs").and_then(|n| n.parse().ok()).unwrap_or(100);
    let reports: usize = arg("--reports").and_then(|n| n.parse().ok()).unwrap_or(100);
    let watchers: usize = arg("--watchers").and_then(|n| n.parse().ok()).unwrap_or(10);
    let redis = cogworker::redis_server::RedisServer::start(&[])?;
    let mut conn = redis::Client::open(redis.url())?
        .get_multiplexed_async_connection()
        .await?;
    let mut config = Config::default();
    config.set_redis_url(&redis.url())?.set_concurrency(jobs as i64)?;
    let client = Client::new(&config)?;
    let api = Api::new(client.clone());
    let calls = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let counted = calls.clone();
    let worker = Worker::builder(config)
        .register("Report", move |_job| {
            let counted = counted.clone();
            async move {
                let running = Running::current().expect("run by a worker");
                for step in 1..=reports {
                    let made = cogworker::now();
                    let percent = 100.0 * step as f64 / reports as f64;
                    running
                        .progress(Some(percent), None, Some(json!({ "made": made })))
                        .map_err(|e| cogworker::Failure::new("Progress", e.to_string()))?;
                    counted.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                    tokio::time::sleep(Duration::from_millis(20)).await;
                }
                Ok(())
            }
        })
        .build()?;
    let handle = worker.handle();
    let task = tokio::spawn(worker.run());
    api.pause_queue("default").await?;
    let mut jids = Vec::with_capacity(jobs);
    for _ in 0..jobs {
        jids.push(client.push(Job::new("Report")).await?.expect("pushed"));
    }
    reset_stats(&mut conn).await?;
    // The watches, before the jobs start: each sees every report written.
    let seen: Arc<Mutex<Vec<f64>>> = Arc::default();
    let mut following = Vec::new();
    for (w, share) in jids.chunks(jobs.div_ceil(watchers)).enumerate() {
        for jid in share {
            let watch = api.watch(jid).await?;
            let seen = seen.clone();
            following.push(tokio::spawn(async move {
                let mut watch = watch;
                let mut ended = false;
                while let Ok(Some(event)) = watch.next().await {
                    match event {
                        WatchEvent::Progress(report) => {
                            if let Some(made) = report["data"]["made"].as_f64() {
                                seen.lock().unwrap().push(cogworker::now() - made);
                            }
                        }
                        WatchEvent::Finished(_) => ended = true,
                    }
                }
                (w, ended)
            }));
        }
    }
    let watch_commands = command_counts(&mut conn).await?;
    reset_stats(&mut conn).await?;
    let started = Instant::now();
    api.unpause_queue("default").await?;
    let mut finished = 0;
    for follower in following {
        if tokio::time::timeout(Duration::from_secs(120), follower).await??.1 {
            finished += 1;
        }
    }
    let took = started.elapsed().as_secs_f64();
    let run_commands = command_counts(&mut conn).await?;
    handle.stop();
    task.await??;
    let count = |counts: &[(String, u64)], name: &str| counts.iter().find(|(n, _)| n == name).map_or(0, |(_, c)| *c);
    let progress_calls = calls.load(std::sync::atomic::Ordering::Relaxed);
    let (sets, publishes) = (
        count(&run_commands, "setex") + count(&run_commands, "set"),
        count(&run_commands, "publish"),
    );
    let mut latencies = seen.lock().unwrap().clone();
    latencies.sort_by(f64::total_cmp);
    println!(
        "cogworker {} progress (release build, private Redis, {jobs} jobs at once, {reports} reports each 20 ms apart, {watchers} watchers)",
        env!("CARGO_PKG_VERSION")
    );
    println!("| measure | value |");
    println!("|---|---|");
    println!("| progress() calls | {progress_calls} in {took:.1} s |");
    println!("| reports written (SET) | {sets} |");
    println!(
        "| SET + PUBLISH per progress() call | {:.4} |",
        (sets + publishes) as f64 / progress_calls as f64
    );
    println!("| watches | {jobs}, {finished} saw their job's end |");
    println!(
        "| commands to start {jobs} watches | {} ({:.1} per watch: {}) |",
        watch_commands.iter().map(|(_, c)| c).sum::<u64>(),
        watch_commands.iter().map(|(_, c)| c).sum::<u64>() as f64 / jobs as f64,
        watch_commands
            .iter()
            .map(|(n, c)| format!("{n} {c}"))
            .collect::<Vec<_>>()
            .join(", ")
    );
    println!("| reports seen by watchers | {} |", latencies.len());
    if !latencies.is_empty() {
        println!(
            "| progress() to watcher, p50 / p99 | {:.1} / {:.1} ms |",
            percentile_ms(&latencies, 0.5),
            percentile_ms(&latencies, 0.99)
        );
    }
    Ok(())
}
