//! A worker process for the fault tests: they start it, kill it with
//! `kill -9`, signal it. Handlers:
//! - `Record`: appends its jid to `<ns>:test:ran` (one entry per execution);
//! - `Sleep [seconds]`: sleeps (times TEST_SLEEP_SCALE), then records like `Record`;
//! - `Fail`: always fails;
//! - `Account token [millis] [fail_once]`: sleeps `millis`, then appends
//!   `token` to the file `TEST_RESULTS_FILE` (the fault suite's record of
//!   executions); with `fail_once`, the first attempt anywhere (the one that
//!   creates `<token>` in `TEST_FAIL_DIR`) fails instead; retried in 0.2 s;
//! - `Overlap [seconds]`: appends `start <jid> <pid>` to `<ns>:test:events`,
//!   sleeps, then appends `end <jid> <pid>` (for the periodic overlap test);
//! - `BatchCallback status ...`: appends `callback <event> <bid>` (from the
//!   batch status it gets first) to `TEST_RESULTS_FILE`;
//! - `Sum n`: sleeps 50 ms, then returns n + 1 (a workflow step whose
//!   result the next one takes);
//! - `Span token millis [fail_once]`: appends `start <token> <epoch> <pid>`
//!   to `TEST_RESULTS_FILE`, sleeps, then appends `end ...` (the rate
//!   limiter fault test measures how many run at once from these); with
//!   `fail_once`, the first attempt anywhere fails after its sleep, with no
//!   `end` line, retried in 0.2 s.
//! - `Import total [micros]`: a long job (docs/long-jobs.md) over items
//!   `0..total` from its cursor: per item, appends `item <i> <pid>` to
//!   `TEST_RESULTS_FILE`, spins `micros`, and checkpoints `i + 1`; once
//!   `stopping`, appends `stopped <cursor> <pid>`, interrupts and returns.
//!
//! `TEST_LIMITER=name:kind:limit:seconds` defines a rate limiter at boot
//! (`seconds`: a concurrent limiter's lease TTL, the others' interval; the
//! Python and Ruby workers of the fault suite have no way yet).
//!
//! `TEST_SHARD_BY_QUEUE=1` sets `shard_by_queue`; `TEST_LAYOUT=sidekiq` the
//! sidekiq layout, for Sidekiq 6 (tests/sidekiq). `TEST_PERIODIC` holds a JSON array of periodic entries to tick for, and
//! `TEST_CATCH_UP` (`latest` | `all`) the catch-up mode.
//!
//! Settings come from the environment (TEST_* variables below).

use cogworker::{CatchUp, Client, Config, Failure, FetchMode, Job, Limit, Periodic, Worker};
use redis::AsyncCommands;
use std::time::Duration;

fn env_f64(name: &str, default: f64) -> f64 {
    std::env::var(name).ok().and_then(|v| v.parse().ok()).unwrap_or(default)
}

async fn record(conn: &mut redis::aio::MultiplexedConnection, ns: &str, job: &Job) -> Result<(), Failure> {
    conn.rpush::<_, _, i64>(format!("{ns}:test:ran"), job.jid_str())
        .await
        .map_err(|e| Failure::new("RedisError", e.to_string()))?;
    Ok(())
}

/// One line per execution, appended in one write (O_APPEND keeps lines
/// from several processes whole).
fn account(token: &str) -> std::io::Result<()> {
    use std::io::Write as _;
    let path = std::env::var("TEST_RESULTS_FILE").map_err(std::io::Error::other)?;
    let mut file = std::fs::OpenOptions::new().append(true).create(true).open(path)?;
    file.write_all(format!("{token}\n").as_bytes())
}

/// With TEST_RUNS_FILE: which delivery ran (`token jid language pid
/// time`), to tell a job delivered twice from one pushed twice.
fn run_line(token: &str, jid: &str) -> std::io::Result<()> {
    use std::io::Write as _;
    let Ok(path) = std::env::var("TEST_RUNS_FILE") else {
        return Ok(());
    };
    let mut file = std::fs::OpenOptions::new().append(true).create(true).open(path)?;
    let line = format!("{token} {jid} rust {} {:.6}\n", std::process::id(), cogworker::now());
    file.write_all(line.as_bytes())
}

/// `start`/`end` lines of a `Span` job: what ran when, and where.
fn span_line(what: &str, token: &str) -> std::io::Result<()> {
    account(&format!(
        "{what} {token} {:.6} {}",
        cogworker::now(),
        std::process::id()
    ))
}

/// `fail_once` jobs: does this attempt fail? Only the first, in any process:
/// the one that creates the token's file (`O_EXCL`).
fn first_attempt(token: &str) -> bool {
    let Ok(dir) = std::env::var("TEST_FAIL_DIR") else {
        return false;
    };
    let path = std::path::Path::new(&dir).join(token);
    std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(path)
        .is_ok()
}

#[tokio::main]
async fn main() -> cogworker::Result<()> {
    cogworker::logging::init(false);
    let ns = std::env::var("TEST_NAMESPACE").unwrap_or_else(|_| "cogworker".into());
    let mut config = Config::from_env()?;
    config.set_namespace(&ns)?;
    config.set_concurrency(env_f64("TEST_CONCURRENCY", 5.0) as i64)?;
    config.set_heartbeat_interval(env_f64("TEST_HEARTBEAT", 0.5))?;
    config.set_orphan_threshold(env_f64("TEST_ORPHAN_THRESHOLD", 300.0))?;
    config.set_orphan_check_interval(env_f64("TEST_ORPHAN_CHECK", 0.5))?;
    config.set_scheduler_poll_interval(0.2)?;
    config.set_shutdown_timeout(env_f64("TEST_SHUTDOWN_TIMEOUT", 5.0))?;
    config.set_fetch_idle_max_interval(0.5)?;
    config.set_shard_by_queue(std::env::var("TEST_SHARD_BY_QUEUE").as_deref() == Ok("1"));
    if let Ok(layout) = std::env::var("TEST_LAYOUT") {
        config.set_layout(layout.parse()?);
        config.set_sidekiq_version(6)?;
    }
    if std::env::var("TEST_FETCH").as_deref() == Ok("basic") {
        config.set_fetch(FetchMode::Basic);
    }
    if let Ok(mode) = std::env::var("TEST_CATCH_UP") {
        config.set_periodic_catch_up(mode.parse::<CatchUp>()?);
    }
    if let Ok(spec) = std::env::var("TEST_LIMITER") {
        let parts: Vec<&str> = spec.split(':').collect();
        let [name, kind, limit, seconds] = parts[..] else {
            panic!("TEST_LIMITER is name:kind:limit:seconds, not {spec}");
        };
        let limit: u32 = limit.parse().expect("a whole limit");
        let seconds = Duration::from_secs_f64(seconds.parse().expect("seconds"));
        let limit = match kind {
            "concurrent" => Limit::concurrent(name, limit)?.with_lease_ttl(seconds)?,
            "window" => Limit::window(name, limit, seconds)?,
            "bucket" => Limit::bucket(name, limit, seconds)?,
            _ => Limit::leaky(name, limit, seconds)?,
        };
        Client::new(&config)?.limiter(limit).await?;
    }
    // The events of `Span`/`Record` jobs go through a plain connection: on
    // a cluster or behind sentinels, to the first address given (the fault
    // tests there run `Account` jobs only, which record to a file).
    let first_address = ["redis+cluster://", "redis+sentinel://"]
        .iter()
        .find_map(|scheme| config.redis_url().strip_prefix(scheme))
        .map(|hosts| hosts.split([',', '/']).next().unwrap_or_default().to_string());
    let url = match first_address {
        Some(address) => format!("redis://{address}"),
        None => config.redis_url().to_string(),
    };
    let results = redis::Client::open(url.as_str()).expect("url");
    let results = results.get_multiplexed_async_connection().await?;

    let (r1, r2, ns1, ns2) = (results.clone(), results.clone(), ns.clone(), ns.clone());
    let (r3, ns3) = (results.clone(), ns.clone());
    let mut builder = Worker::builder(config);
    if let Ok(entries) = std::env::var("TEST_PERIODIC") {
        let entries: Vec<serde_json::Value> = serde_json::from_str(&entries).expect("TEST_PERIODIC is a JSON array");
        for entry in entries {
            builder = builder.periodic(Periodic::from_json(&entry.to_string())?);
        }
    }
    let worker = builder
        .register("Record", move |job| {
            let (mut conn, ns) = (r1.clone(), ns1.clone());
            async move { record(&mut conn, &ns, &job).await }
        })
        .register("Sleep", move |job| {
            let (mut conn, ns) = (r2.clone(), ns2.clone());
            async move {
                let seconds =
                    job.args_slice().first().and_then(|v| v.as_f64()).unwrap_or(1.0) * env_f64("TEST_SLEEP_SCALE", 1.0);
                tokio::time::sleep(Duration::from_secs_f64(seconds)).await;
                record(&mut conn, &ns, &job).await
            }
        })
        .register("Fail", |_job| async { Err(Failure::new("TestError", "always fails")) })
        .register("Account", |job| async move {
            let args = job.args_slice();
            let millis = args.get(1).and_then(|v| v.as_u64()).unwrap_or(0);
            tokio::time::sleep(Duration::from_millis(millis)).await;
            let token = args.first().and_then(|v| v.as_str()).unwrap_or("").to_string();
            if args.get(2).and_then(|v| v.as_bool()) == Some(true) && first_attempt(&token) {
                return Err(Failure::new("FailOnce", "the first attempt fails"));
            }
            account(&token).map_err(|e| Failure::new("IoError", e.to_string()))?;
            run_line(&token, job.jid_str()).map_err(|e| Failure::new("IoError", e.to_string()))
        })
        .retry_in("Account", |_count, _job| Some(0.2))
        .register("BatchCallback", |job| async move {
            // A batch callback's first argument is the batch's status.
            let status = job.args_slice().first().cloned().unwrap_or_default();
            let line = format!(
                "callback {} {}",
                status["event"].as_str().unwrap_or("?"),
                status["bid"].as_str().unwrap_or("?")
            );
            account(&line).map_err(|e| Failure::new("IoError", e.to_string()))
        })
        .register_returning("Sum", |job| async move {
            tokio::time::sleep(Duration::from_millis(50)).await;
            let n = job.args_slice().first().and_then(|v| v.as_i64()).unwrap_or(0);
            Ok(serde_json::json!(n + 1))
        })
        .register("Span", |job| async move {
            let args = job.args_slice();
            let token = args.first().and_then(|v| v.as_str()).unwrap_or("").to_string();
            let millis = args.get(1).and_then(|v| v.as_u64()).unwrap_or(0);
            let io = |e: std::io::Error| Failure::new("IoError", e.to_string());
            span_line("start", &token).map_err(io)?;
            tokio::time::sleep(Duration::from_millis(millis)).await;
            if args.get(2).and_then(|v| v.as_bool()) == Some(true) && first_attempt(&token) {
                return Err(Failure::new("FailOnce", "the first attempt fails"));
            }
            span_line("end", &token).map_err(io)
        })
        .retry_in("Span", |_count, _job| Some(0.2))
        .register_blocking("Import", |job| {
            let args = job.args_slice();
            let total = args.first().and_then(|v| v.as_u64()).unwrap_or(0);
            let micros = args.get(1).and_then(|v| v.as_u64()).unwrap_or(0);
            let running = cogworker::Running::current().expect("run by a worker");
            let io = |e: std::io::Error| Failure::new("IoError", e.to_string());
            let pid = std::process::id();
            let mut next = running.cursor().and_then(|c| c.as_u64()).unwrap_or(0);
            while next < total {
                if running.stopping() {
                    account(&format!("stopped {next} {pid}")).map_err(io)?;
                    running.interrupt();
                    return Ok(());
                }
                account(&format!("item {next} {pid}")).map_err(io)?;
                let spin = std::time::Instant::now();
                while spin.elapsed() < Duration::from_micros(micros) {
                    std::hint::spin_loop();
                }
                next += 1;
                running
                    .checkpoint(serde_json::json!(next))
                    .map_err(|e| Failure::new("Checkpoint", e.to_string()))?;
            }
            Ok(())
        })
        .register("Overlap", move |job| {
            let (mut conn, ns) = (r3.clone(), ns3.clone());
            async move {
                let seconds = job.args_slice().first().and_then(|v| v.as_f64()).unwrap_or(1.0);
                let events = format!("{ns}:test:events");
                let pid = std::process::id();
                let fail = |e: redis::RedisError| Failure::new("RedisError", e.to_string());
                conn.rpush::<_, _, i64>(&events, format!("start {} {pid}", job.jid_str()))
                    .await
                    .map_err(fail)?;
                tokio::time::sleep(Duration::from_secs_f64(seconds)).await;
                conn.rpush::<_, _, i64>(&events, format!("end {} {pid}", job.jid_str()))
                    .await
                    .map_err(fail)?;
                Ok(())
            }
        })
        .build()?;
    let handle = worker.handle();
    handle.install_signal_handlers()?;
    worker.run().await
}
