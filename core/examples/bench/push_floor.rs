//! `bench --push-floor`: where a one-by-one push's time goes (issue #33).
//! On a private Redis, alternating, 3 rounds of 20,000 calls each, every
//! call awaited before the next:
//! - `Client::push` on a current-thread tokio runtime and on a
//!   multi-thread one (a host's push runs on its calling thread; a Rust
//!   application's usually on the multi-thread runtime of `#[tokio::main]`);
//! - the redis crate's multiplexed connection sending a bare `LPUSH` of a
//!   job-sized payload (what any push over that connection costs at least);
//! - its blocking connection sending the same `LPUSH` (no runtime, no
//!   driver task: the floor this client could reach), which is what
//!   `redis-benchmark -c 1` measures too.

use cogworker::{Client, Config, Job};
use serde_json::json;
use std::time::Instant;

/// Calls per measurement (`BENCH_CALLS`, default 20,000).
fn calls() -> usize {
    std::env::var("BENCH_CALLS")
        .ok()
        .and_then(|n| n.parse().ok())
        .unwrap_or(20_000)
}
const PAYLOAD: &str = r#"{"class":"Noop","args":[1],"queue":"default","jid":"0123456789abcdef01234567","created_at":1764740000.123,"enqueued_at":1764740000.123,"retry":true}"#;

/// Runs on a thread of its own: it builds runtimes, which an async caller
/// cannot.
pub(crate) fn run() -> BenchResult<()> {
    let redis = cogworker::redis_server::RedisServer::start(&[])?;
    let url = redis.url();
    println!(
        "| round | Client::push, current-thread | Client::push, multi-thread | managed LPUSH | multiplexed LPUSH | blocking LPUSH |"
    );
    println!("|---|---|---|---|---|---|");
    for round in 1..=3 {
        let current = pushes(&url, tokio::runtime::Builder::new_current_thread())?;
        let multi = pushes(&url, tokio::runtime::Builder::new_multi_thread())?;
        let client = redis::Client::open(url.as_str())?;
        let multiplexed =
            on_current_thread(async { lpush_rate(client.get_multiplexed_async_connection().await?).await })?;
        // As the client's shared connection is made (connection/mod.rs).
        let config = redis::aio::ConnectionManagerConfig::new()
            .set_response_timeout(Some(std::time::Duration::from_secs(10)))
            .set_connection_timeout(Some(std::time::Duration::from_secs(3)))
            .set_number_of_retries(2)
            .set_max_delay(std::time::Duration::from_millis(500));
        let managed = on_current_thread(async {
            lpush_rate(redis::aio::ConnectionManager::new_lazy_with_config(
                client.clone(),
                config,
            )?)
            .await
        })?;
        let mut conn = redis::Client::open(url.as_str())?.get_connection()?;
        let started = Instant::now();
        for _ in 0..calls() {
            let _: i64 = redis::cmd("LPUSH").arg("floor").arg(PAYLOAD).query(&mut conn)?;
        }
        let blocking = calls() as f64 / started.elapsed().as_secs_f64();
        let _: () = redis::cmd("FLUSHALL").query(&mut conn)?;
        println!("| {round} | {current:.0}/s | {multi:.0}/s | {managed:.0}/s | {multiplexed:.0}/s | {blocking:.0}/s |");
    }
    Ok(())
}

type BenchResult<T> = Result<T, Box<dyn std::error::Error + Send + Sync>>;

fn on_current_thread<T>(work: impl std::future::Future<Output = BenchResult<T>>) -> BenchResult<T> {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?
        .block_on(work)
}

/// Bare `LPUSH`es of a job-sized payload per second through `conn`.
async fn lpush_rate(mut conn: impl redis::aio::ConnectionLike) -> BenchResult<f64> {
    rate(async || {
        let _: i64 = redis::cmd("LPUSH")
            .arg("floor")
            .arg(PAYLOAD)
            .query_async(&mut conn)
            .await?;
        Ok(())
    })
    .await
}

/// `Client::push` calls per second on a runtime from `builder`.
fn pushes(url: &str, mut builder: tokio::runtime::Builder) -> BenchResult<f64> {
    builder.enable_all().build()?.block_on(async {
        let mut config = Config::default();
        config.set_redis_url(url)?;
        let client = Client::new(&config)?;
        client.push(Job::new("Noop")).await?; // connects
        let mut i = 0;
        rate(async || {
            i += 1;
            client.push(Job::new("Noop").args([json!(i)])).await?;
            Ok(())
        })
        .await
    })
}

async fn rate(mut call: impl AsyncFnMut() -> BenchResult<()>) -> BenchResult<f64> {
    let started = Instant::now();
    for _ in 0..calls() {
        call().await?;
    }
    Ok(calls() as f64 / started.elapsed().as_secs_f64())
}
