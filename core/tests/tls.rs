//! `rediss://` with a server certificate from a private CA (trusted through
//! SSL_CERT_FILE), and an ACL user: push and run a job. Its own binary: it
//! sets an environment variable.

mod common;

use cogworker::{Client, Job};
use common::*;
use std::sync::atomic::Ordering;
use std::time::Duration;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tls_and_acl_user() {
    let ca = tls::PrivateCa::create("tls");
    let tls_port = tls::free_port();
    let args = ca.server_args(tls_port);
    let redis = TestRedis::start_with(&args.iter().map(String::as_str).collect::<Vec<_>>());
    let mut conn = redis.conn().await;
    let _: () = redis::cmd("ACL")
        .arg(&["SETUSER", "worker", "on", ">s3cret", "~*", "&*", "+@all"][..])
        .query_async(&mut conn)
        .await
        .unwrap();
    // SAFETY: this binary has one test; nothing else reads the environment concurrently.
    std::env::set_var("SSL_CERT_FILE", ca.path("ca.crt"));

    let mut config = redis.config();
    config
        .set_redis_url(&format!("rediss://worker:s3cret@127.0.0.1:{tls_port}/0"))
        .unwrap();
    let client = Client::new(&config).unwrap();
    let (worker, ran) = counting_worker(config, "Tls");
    let handle = worker.handle();
    let running = tokio::spawn(worker.run());
    client.push(Job::new("Tls")).await.unwrap();
    wait_until("job ran over TLS as an ACL user", Duration::from_secs(20), || {
        let r = ran.clone();
        async move { r.load(Ordering::SeqCst) == 1 }
    })
    .await;
    handle.stop();
    running.await.unwrap().unwrap();
}
