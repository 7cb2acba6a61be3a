//! `rusty-sidekiq-bench REDIS_URL JOBS`: JOBS pushes one by one, each
//! awaited, then a drain of them by one processor of 10 workers (no-op
//! jobs), the way `cogworker bench` measures cogworker. Prints one line.

use async_trait::async_trait;
use sidekiq::{Processor, ProcessorConfig, RedisConnectionManager, Worker};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

#[derive(Clone)]
struct Noop(Arc<AtomicUsize>);

#[async_trait]
impl Worker<i64> for Noop {
    async fn perform(&self, _arg: i64) -> sidekiq::Result<()> {
        self.0.fetch_add(1, Ordering::Relaxed);
        Ok(())
    }
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let url = args.next().ok_or("usage: rusty-sidekiq-bench REDIS_URL JOBS")?;
    let jobs: usize = args.next().ok_or("JOBS missing")?.parse()?;
    let redis = bb8::Pool::builder().build(RedisConnectionManager::new(url)?).await?;

    let started = Instant::now();
    for i in 0..jobs {
        Noop::perform_async(&redis, i as i64).await?;
    }
    let enqueue = jobs as f64 / started.elapsed().as_secs_f64();

    let done = Arc::new(AtomicUsize::new(0));
    let mut processor = Processor::new(redis.clone(), vec!["default".to_string()])
        .with_config(ProcessorConfig::default().num_workers(10));
    processor.register(Noop(done.clone()));
    let started = Instant::now();
    let running = tokio::spawn(async move { processor.run().await });
    let deadline = started + Duration::from_secs(600);
    while done.load(Ordering::Relaxed) < jobs && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(1)).await;
    }
    let drain = done.load(Ordering::Relaxed) as f64 / started.elapsed().as_secs_f64();
    running.abort();
    println!("rusty-sidekiq enqueue 1-by-1 {enqueue:.0} jobs/s, drain {drain:.0} jobs/s");
    Ok(())
}
