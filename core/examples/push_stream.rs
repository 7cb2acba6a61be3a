//! Pushes numbered jobs one by one until SIGTERM (or the deadline), and
//! appends each token whose push returned to a file: the Rust producer of
//! the failover soak (`tests/faults/test_failover.py`).
//! `push_stream PREFIX FILE` with Redis from COGWORKER_REDIS_URL and
//! STREAM_MIN_REPLICAS_ACKED (default 0; with STREAM_DURABLE_BY=push
//! each push asks it with its own option instead of the client's
//! setting), STREAM_NAMESPACE (default
//! cogworker's), STREAM_PAUSE_MS between pushes (default 2) and
//! STREAM_SECONDS (default 600). A failed push (Redis
//! unreachable, `NotReplicated`) is not retried: its token is not written.

use std::io::Write;
use std::time::{Duration, Instant};

use cogworker::{Client, Config, Job};

fn env_number(name: &str, default: u64) -> u64 {
    std::env::var(name).ok().and_then(|v| v.parse().ok()).unwrap_or(default)
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut argv = std::env::args().skip(1);
    let (Some(prefix), Some(path)) = (argv.next(), argv.next()) else {
        eprintln!("usage: push_stream PREFIX FILE");
        std::process::exit(2);
    };
    let mut config = Config::from_env()?;
    let replicas = env_number("STREAM_MIN_REPLICAS_ACKED", 0);
    let per_push = std::env::var("STREAM_DURABLE_BY").as_deref() == Ok("push");
    if !per_push {
        config.set_min_replicas_acked(replicas as i64)?;
    }
    if let Ok(namespace) = std::env::var("STREAM_NAMESPACE") {
        config.set_namespace(&namespace)?;
    }
    let client = Client::new(&config)?;
    let pause = Duration::from_millis(env_number("STREAM_PAUSE_MS", 2));
    let deadline = Instant::now() + Duration::from_secs(env_number("STREAM_SECONDS", 600));
    let mut out = std::fs::OpenOptions::new().create(true).append(true).open(path)?;
    let mut term = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())?;
    let (mut pushed, mut failed) = (0u64, 0u64);
    for n in 0u64.. {
        if Instant::now() > deadline {
            break;
        }
        let token = format!("{prefix}{n:08}");
        let mut job = Job::new("Account").args(vec![token.clone().into(), 0.into()]);
        if per_push {
            job = job.min_replicas_acked(replicas as u32);
        }
        let push = client.push(job);
        tokio::select! {
            _ = term.recv() => break,
            outcome = push => match outcome {
                Ok(_) => {
                    writeln!(out, "{token}")?;
                    pushed += 1;
                }
                Err(_) => failed += 1,
            },
        }
        tokio::select! {
            _ = term.recv() => break,
            _ = tokio::time::sleep(pause) => {}
        }
    }
    out.flush()?;
    println!("pushed {pushed}, failed {failed}");
    Ok(())
}
