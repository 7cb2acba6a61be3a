//! Prefetch: while jobs are short a worker holds up to 3 × `concurrency`
//! more jobs than it runs (in progress, so recovered like any other); once
//! every slot is stuck on a long job those go back to the queue for other
//! workers, and at shutdown whatever is held goes back; long jobs, a fresh
//! worker and `prefetch = false` never hold more than `concurrency`.

mod common;

use cogworker::{Api, Client, Config, Job, Worker, WorkerHandle};
use common::*;
use serde_json::json;
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::Semaphore;

const CONCURRENCY: usize = 2;
/// Short jobs: three per slot at most.
const READ_AHEAD: usize = 3 * CONCURRENCY;
const GATED: usize = 12;

/// `Quick` returns at once, `Drip` after 100 µs (blocking its thread),
/// `Slow` after 5 ms; `Gate` waits for a permit of the returned semaphore
/// (none are ever added: those jobs run until shutdown).
fn worker(config: Config) -> (Worker, Arc<Semaphore>) {
    let gate = Arc::new(Semaphore::new(0));
    let permits = gate.clone();
    let worker = Worker::builder(config)
        .register("Quick", |_job| async { Ok(()) })
        .register("Drip", |_job| async {
            std::thread::sleep(Duration::from_micros(100));
            Ok(())
        })
        .register("Slow", |_job| async {
            tokio::time::sleep(Duration::from_millis(5)).await;
            Ok(())
        })
        .register("Gate", move |_job| {
            let permits = permits.clone();
            async move {
                let _permit = permits.acquire().await;
                Ok(())
            }
        })
        .build()
        .unwrap();
    (worker, gate)
}

struct Run {
    redis: TestRedis,
    client: Client,
    api: Api,
    handle: WorkerHandle,
    running: Option<tokio::task::JoinHandle<cogworker::Result<()>>>,
}

/// A worker at concurrency 2 that first ran `quick` no-op jobs, then
/// `slow` jobs of 5 ms, then was given `lead` no-op jobs followed by 12
/// jobs that block, in one push; returns once 2 of those run.
async fn start(prefetch: bool, quick: usize, slow: usize, lead: usize) -> Run {
    let redis = TestRedis::start();
    let mut config = redis.config();
    config.set_concurrency(CONCURRENCY as i64).unwrap();
    config.set_prefetch(prefetch);
    config.set_shutdown_timeout(0.3).unwrap();
    let client = Client::new(&config).unwrap();
    let api = Api::new(client.clone());
    let (worker, _gate) = worker(config);
    let handle = worker.handle();
    let running = tokio::spawn(worker.run());
    for (class, count, done) in [("Quick", quick, quick), ("Slow", slow, quick + slow)] {
        if count == 0 {
            continue;
        }
        client
            .push_bulk((0..count).map(|i| Job::new(class).args([json!(i)])).collect())
            .await
            .unwrap();
        wait_processed("the jobs before processed", &api, done as u64, Duration::from_secs(10)).await;
    }
    let leading = (0..lead).map(|i| Job::new("Quick").args([json!(i)]));
    let gated = (0..GATED).map(|i| Job::new("Gate").args([json!(i)]));
    client.push_bulk(leading.chain(gated).collect()).await.unwrap();
    let h = handle.clone();
    wait_until("both slots busy", Duration::from_secs(10), move || {
        let h = h.clone();
        async move { h.busy().len() == CONCURRENCY }
    })
    .await;
    Run {
        redis,
        client,
        api,
        handle,
        running: Some(running),
    }
}

impl Run {
    /// Jobs this worker holds in progress, and jobs left on the queue.
    async fn held_and_queued(&self) -> (usize, usize) {
        let mut conn = self.redis.conn().await;
        let in_progress = self.client.keys().in_progress(self.handle.identity());
        let queue = self.client.keys().queue("default");
        (held(&mut conn, &in_progress).await, llen(&mut conn, &queue).await)
    }

    /// Waits until the worker holds at least `least` jobs, then checks
    /// that a moment later (the fetch waiting for room) it holds between
    /// `least` and `most`, and the rest are still queued.
    async fn holds(&self, least: usize, most: usize) {
        let deadline = std::time::Instant::now() + Duration::from_secs(10);
        while self.held_and_queued().await.0 < least {
            assert!(
                std::time::Instant::now() < deadline,
                "holds {:?}, expected at least {least}",
                self.held_and_queued().await
            );
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        tokio::time::sleep(Duration::from_millis(300)).await;
        let (held, queued) = self.held_and_queued().await;
        assert!(
            (least..=most).contains(&held),
            "holds {held}, expected {least}..={most}"
        );
        assert_eq!(held + queued, GATED, "held {held} + queued {queued}");
    }

    /// Jobs put back on the queue so far: each is one `RPUSH` (inside
    /// `requeue_in_progress.lua`), which nothing else runs here before the
    /// stop (no job fails or keeps a result).
    async fn given_back(&self) -> u64 {
        command_calls(&mut self.redis.conn().await, &["rpush"]).await
    }

    /// Stops the worker (the blocked jobs outlast the shutdown timeout):
    /// every gated job is back on the queue, nothing is in progress.
    async fn stop_and_check_nothing_lost(mut self, quick: usize) {
        self.handle.stop();
        tokio::time::timeout(Duration::from_secs(10), self.running.take().unwrap())
            .await
            .expect("the worker stopped")
            .unwrap()
            .unwrap();
        assert_eq!(self.held_and_queued().await, (0, GATED), "(held, queued) after stop");
        assert_eq!(self.api.stats().await.unwrap().processed, quick as u64);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn short_jobs_are_read_ahead_while_the_slots_keep_finishing_them() {
    let redis = TestRedis::start();
    let mut config = redis.config();
    config.set_concurrency(CONCURRENCY as i64).unwrap();
    let client = Client::new(&config).unwrap();
    let api = Api::new(client.clone());
    let (worker, _gate) = worker(config);
    let handle = worker.handle();
    let running = tokio::spawn(worker.run());
    let jobs = 2000;
    client
        .push_bulk((0..jobs).map(|i| Job::new("Drip").args([json!(i)])).collect())
        .await
        .unwrap();
    // Sampled while they drain: the worker holds more than it runs.
    let (mut most_held, deadline) = (0, std::time::Instant::now() + Duration::from_secs(30));
    while api.stats().await.unwrap().processed < jobs as u64 {
        assert!(std::time::Instant::now() < deadline, "the jobs drained");
        most_held = most_held.max(handle.held());
        tokio::time::sleep(Duration::from_millis(1)).await;
    }
    assert!(
        (CONCURRENCY + 1..=CONCURRENCY + READ_AHEAD).contains(&most_held),
        "held at most {most_held} at a time, expected some read ahead"
    );
    handle.stop();
    running.await.unwrap().unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn jobs_read_ahead_go_back_to_the_queue_when_every_slot_is_stuck() {
    // After 20 no-op jobs the average job time is microseconds. The first
    // fetch after the push (from idle: no job finished since the last one)
    // takes the two leading no-op jobs; once they finish, the next reads
    // ahead among the jobs that never end. With both slots stuck on them,
    // what it took beyond them goes back within the stall time, and
    // nothing more is taken.
    let run = start(true, 20, 0, CONCURRENCY).await;
    run.holds(CONCURRENCY, CONCURRENCY).await;
    let given_back = run.given_back().await;
    assert!(
        (1..=READ_AHEAD as u64).contains(&given_back),
        "{given_back} jobs read ahead given back, expected 1..={READ_AHEAD}"
    );
    run.stop_and_check_nothing_lost(20 + CONCURRENCY).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_fresh_worker_reads_nothing_ahead() {
    // No job has finished: jobs count as long until some have shown
    // themselves short.
    let run = start(true, 0, 0, 0).await;
    run.holds(CONCURRENCY, CONCURRENCY).await;
    assert_eq!(run.given_back().await, 0, "nothing was read ahead to give back");
    run.stop_and_check_nothing_lost(0).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn prefetch_off_holds_no_more_than_concurrency() {
    let run = start(false, 20, 0, 0).await;
    run.holds(CONCURRENCY, CONCURRENCY).await;
    assert_eq!(run.given_back().await, 0, "nothing was read ahead to give back");
    run.stop_and_check_nothing_lost(20).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn long_jobs_stop_the_read_ahead() {
    // Short jobs, then ten of 5 ms: the average climbs past 2 ms, and the
    // worker again holds no more than it runs.
    let run = start(true, 20, 10, 0).await;
    run.holds(CONCURRENCY, CONCURRENCY).await;
    assert_eq!(run.given_back().await, 0, "nothing was read ahead to give back");
    run.stop_and_check_nothing_lost(30).await;
}
