//! Pushes one job from the command line:
//! `push CLASS 'JSON ARGS ARRAY' [QUEUE] ['JSON OPTIONS OBJECT']`
//! (Redis from COGWORKER_REDIS_URL / REDIS_URL; the options are job fields,
//! as a raw payload carries them: `{"key": "report:1", "unique_for": 60}`).
//! With PUSH_TIMES=n, pushes it n times at once and prints each answer.
//! Used by the cross-language tests as the Rust producer; handy by hand too.

use cogworker::{Client, Config, Job};

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut argv = std::env::args().skip(1);
    let (Some(class), Some(args)) = (argv.next(), argv.next()) else {
        eprintln!("usage: push CLASS 'JSON ARGS ARRAY' [QUEUE] ['JSON OPTIONS OBJECT']");
        std::process::exit(2);
    };
    let args: Vec<serde_json::Value> = serde_json::from_str(&args)?;
    let mut job = Job::new(class).args(args);
    if let Some(queue) = argv.next().filter(|queue| !queue.is_empty()) {
        job = job.queue(queue);
    }
    if let Some(options) = argv.next() {
        let options: serde_json::Map<String, serde_json::Value> = serde_json::from_str(&options)?;
        for (name, value) in options {
            job = job.field(&name, value);
        }
    }
    let times: usize = std::env::var("PUSH_TIMES").map_or(Ok(1), |n| n.parse())?;
    let client = Client::new(&Config::from_env()?)?;
    let pushes: Vec<_> = (0..times)
        .map(|_| {
            let (client, job) = (client.clone(), job.clone());
            tokio::spawn(async move { client.push(job).await })
        })
        .collect();
    for push in pushes {
        println!("{}", push.await??.unwrap_or_default());
    }
    Ok(())
}
