// Cargo.toml (until the crate is on crates.io, from a checkout of this repository):
// cogworker = { path = "cogworker/core" }, tokio = { version = "1", features = ["full"] }, serde_json = "1"
use cogworker::{Client, Config, Job, Worker};
use serde_json::json;

#[tokio::main]
async fn main() -> Result<(), cogworker::Error> {
    cogworker::logging::init(false); // the engine's log lines, on stderr
    let config = Config::from_env()?; // COGWORKER_REDIS_URL / REDIS_URL
    let job = Job::new("Greet").args([json!("world")]);
    Client::new(&config)?.push(job).await?; // Some(jid)
    let worker = Worker::builder(config)
        .register("Greet", |job| async move {
            println!("hello {}", job.args_slice()[0].as_str().unwrap_or("?"));
            Ok(())
        })
        .build()?;
    worker.handle().install_signal_handlers()?; // TERM/INT stop gracefully
    worker.run().await
}
