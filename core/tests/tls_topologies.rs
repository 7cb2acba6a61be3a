//! TLS to Sentinel and Cluster nodes, with a private CA trusted through
//! SSL_CERT_FILE (as tests/tls.rs does for one server):
//! `rediss+sentinel://` (sentinel and master both TLS-only, each with its
//! own password) and `rediss+cluster://` (three nodes, TLS between clients
//! and nodes and on the cluster bus). In each a worker runs a job a client
//! pushed. One test: the environment variable is process-wide.

mod common;

use cogworker::{Client, Config, Job};
use common::cluster::Cluster;
use common::sentinel::{Sentinel, SERVICE};
use common::tls::{free_port, PrivateCa};
use common::*;
use std::time::Duration;

/// Pushes one job through `config` and waits for a worker on it to run it.
async fn push_and_run(config: Config, what: &str) {
    let client = Client::new(&config).unwrap();
    let (worker, ran) = counting_worker(config, "OverTls");
    let handle = worker.handle();
    let running = tokio::spawn(worker.run());
    client.push(Job::new("OverTls")).await.unwrap();
    wait_for_count(what, &ran, 1, Duration::from_secs(30)).await;
    handle.stop();
    running.await.unwrap().unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sentinel_and_cluster_over_tls() {
    let ca = PrivateCa::create("tls-topologies");
    // SAFETY: this binary has one test; nothing else reads the environment concurrently.
    std::env::set_var("SSL_CERT_FILE", ca.path("ca.crt"));
    let tls = |port: u16| ca.server_args(port).join(" ");

    // Sentinel: the master's TLS port is the one the sentinel monitors
    // (so the address it hands out is TLS-only), with a password of its
    // own; the sentinel listens on TLS only, with another password.
    let master_tls = free_port();
    let master_args = ca.server_args(master_tls);
    let master = TestRedis::start_with(&master_args.iter().map(String::as_str).collect::<Vec<_>>());
    let mut plain = master.conn().await;
    let _: () = redis::cmd("CONFIG")
        .arg(&["SET", "requirepass", "data-pw"][..])
        .query_async(&mut plain)
        .await
        .unwrap();
    let sentinel_port = free_port();
    let server_conf = tls(sentinel_port).replace("--", "\n");
    let _sentinel = Sentinel::start_with(
        sentinel_port,
        &format!(
            "port 0{server_conf}\ntls-replication yes\nrequirepass sentinel-pw\n\
             sentinel monitor {SERVICE} 127.0.0.1 {master_tls} 1\nsentinel auth-pass {SERVICE} data-pw\n"
        ),
    );
    let url = format!("rediss+sentinel://:data-pw@127.0.0.1:{sentinel_port}/{SERVICE}/0");
    // Without the sentinel's own password no master is found: nothing is written.
    let mut refused = Config::default();
    refused.set_redis_url(&url).unwrap();
    assert!(Client::new(&refused).unwrap().push(Job::new("OverTls")).await.is_err());
    let mut config = Config::default();
    config
        .set_redis_url(&format!("{url}?sentinel_password=sentinel-pw"))
        .unwrap();
    push_and_run(config, "a job ran through a TLS sentinel").await;

    // Cluster: TLS for clients and on the bus; redis-cli joins the nodes
    // over their plain ports, clients are given only the TLS ones.
    let tls_ports: Vec<u16> = (0..3).map(|_| free_port()).collect();
    let nodes: Vec<TestRedis> = tls_ports
        .iter()
        .map(|&port| {
            let mut args = vec![
                "--cluster-enabled".to_string(),
                "yes".into(),
                "--cluster-node-timeout".into(),
                "2000".into(),
                "--tls-cluster".into(),
                "yes".into(),
                "--cluster-port".into(),
                free_port().to_string(),
            ];
            args.extend(ca.server_args(port));
            TestRedis::start_with(&args.iter().map(String::as_str).collect::<Vec<_>>())
        })
        .collect();
    let mut cluster = Cluster::join(nodes, "rediss+cluster");
    cluster.client_ports = tls_ports;
    assert!(cluster.url().starts_with("rediss+cluster://"));
    push_and_run(cluster.config(), "a job ran on a TLS cluster").await;
}
