use cogworker::{Api, Client, Config, Failure, Job, JobOutcome, Periodic, Worker};
use serde_json::json;

#[tokio::main]
async fn main() -> Result<(), cogworker::Error> {
    cogworker::logging::init(false); // or init(true): one JSON object per line
    let config = Config::from_env()?; // COGWORKER_REDIS_URL / REDIS_URL
    let client = Client::new(&config)?;
    client
        .push(Job::new("SendEmail").args([serde_json::json!("a@example.com")]))
        .await?; // Some(jid)
    client.push(Job::new("Reindex").unique_for(3600.0)).await?; // None while a duplicate is pending
    let sum = client
        .push(Job::new("Add").args([json!(2), json!(3)]).result_ttl(600.0))
        .await?;

    let worker = Worker::builder(config)
        .register("SendEmail", |job| async move {
            tracing::info!("sending to {}", job.args_slice()[0]); // the line names the jid and class
            Ok(())
        })
        .register_returning("Add", |job| async move {
            let total: i64 = job.args_slice().iter().filter_map(|n| n.as_i64()).sum();
            Ok(json!(total)) // kept as the job's result (result_ttl)
        })
        .register("Fails", |_job| async { Err(Failure::new("Trouble", "no luck")) })
        .register_blocking("Resize", |_job| Ok(()))
        .periodic(Periodic::new("*/5 * * * *", "SendEmail")?.until_executed())
        .build()?;
    worker.handle().install_signal_handlers()?; // TERM/INT stop, TSTP quiet, TTIN dump
    let api = Api::new(client.clone());
    tokio::spawn(async move {
        if let Some(jid) = sum {
            // Succeeded(5), Failed(record) or Pending(status), as in every language.
            let outcome: JobOutcome = api.outcome(&jid, Some(30.0)).await?;
            println!("Add: {outcome:?}");
        }
        Ok::<(), cogworker::Error>(())
    });
    worker.run().await
}
