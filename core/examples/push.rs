//! Pushes one job from the command line: `push CLASS 'JSON ARGS ARRAY' [QUEUE]`
//! (Redis from COGWORKER_REDIS_URL / REDIS_URL). Used by the cross-language
//! tests as the Rust producer; handy by hand too.

use cogworker::{Client, Config, Job};

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut argv = std::env::args().skip(1);
    let (Some(class), Some(args)) = (argv.next(), argv.next()) else {
        eprintln!("usage: push CLASS 'JSON ARGS ARRAY' [QUEUE]");
        std::process::exit(2);
    };
    let args: Vec<serde_json::Value> = serde_json::from_str(&args)?;
    let mut job = Job::new(class).args(args);
    if let Some(queue) = argv.next() {
        job = job.queue(queue);
    }
    let client = Client::new(&Config::from_env()?)?;
    println!("{}", client.push(job).await?.unwrap_or_default());
    Ok(())
}
