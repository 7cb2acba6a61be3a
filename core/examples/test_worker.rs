//! A worker process for the fault tests: they start it, kill it with
//! `kill -9`, signal it. Handlers:
//! - `Record`: appends its jid to `<ns>:test:ran` (one entry per execution);
//! - `Sleep [seconds]`: sleeps (times TEST_SLEEP_SCALE), then records like `Record`;
//! - `Fail`: always fails.
//!
//! Settings come from the environment (TEST_* variables below).

use cogworker::{Config, Failure, FetchMode, Job, Worker};
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
    if std::env::var("TEST_FETCH").as_deref() == Ok("basic") {
        config.set_fetch(FetchMode::Basic);
    }
    let url = config.redis_url().to_string();
    let results = redis::Client::open(url.as_str()).expect("url");
    let results = results.get_multiplexed_async_connection().await?;

    let (r1, r2, ns1, ns2) = (results.clone(), results.clone(), ns.clone(), ns.clone());
    let worker = Worker::builder(config)
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
        .build()?;
    let handle = worker.handle();
    handle.install_signal_handlers()?;
    worker.run().await
}
