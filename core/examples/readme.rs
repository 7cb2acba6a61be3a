use cogworker::{Client, Config, Failure, Job, Periodic, Worker};

#[tokio::main]
async fn main() -> Result<(), cogworker::Error> {
    let config = Config::from_env()?; // COGWORKER_REDIS_URL / REDIS_URL
    let client = Client::new(&config)?;
    client
        .push(Job::new("SendEmail").args([serde_json::json!("a@example.com")]))
        .await?; // Some(jid)
    client.push(Job::new("Reindex").unique_for(3600.0)).await?; // None while a duplicate is pending

    let worker = Worker::builder(config)
        .register("SendEmail", |_job| async move { Ok::<(), Failure>(()) })
        .register_blocking("Resize", |_job| Ok(()))
        .periodic(Periodic::new("*/5 * * * *", "SendEmail")?.until_executed())
        .build()?;
    worker.handle().install_signal_handlers()?; // TERM/INT stop, TSTP quiet, TTIN dump
    worker.run().await
}
