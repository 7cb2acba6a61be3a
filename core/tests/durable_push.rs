//! Durable push, opt-in (issue #47 part 2): with `min_replicas_acked`, a
//! push returns only once that many replicas have it (`WAIT`), and fails
//! with `NotReplicated` (the job queued on the master) when they did not
//! confirm it within `replica_ack_timeout`.

mod common;

use cogworker::{Client, Error, Job};
use common::*;
use std::time::Duration;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_push_waits_for_its_replicas_and_says_so_when_they_do_not_confirm() {
    let master = TestRedis::start();
    let port = master.port.to_string();
    let mut replica = TestRedis::start_with(&["--replicaof", "127.0.0.1", &port, "--enable-debug-command", "yes"]);
    let mut replica_conn = replica.conn().await;
    wait_until("the replica is in sync", Duration::from_secs(10), || {
        let mut conn = replica_conn.clone();
        async move {
            let info: String = redis::cmd("INFO")
                .arg("replication")
                .query_async(&mut conn)
                .await
                .unwrap();
            info.contains("master_link_status:up")
        }
    })
    .await;
    let mut config = master.config();
    config
        .set_min_replicas_acked(1)
        .unwrap()
        .set_replica_ack_timeout(0.5)
        .unwrap();
    let client = Client::new(&config).unwrap();
    let jid = client.push(Job::new("Step")).await.unwrap().unwrap();
    // Confirmed by the replica: the job is there already.
    let on_replica: Vec<String> = redis::AsyncCommands::lrange(&mut replica_conn, "cogworker:queue:default", 0, -1)
        .await
        .unwrap();
    assert!(
        on_replica.iter().any(|payload| payload.contains(&jid)),
        "{on_replica:?}"
    );
    // The replica stalled (DEBUG SLEEP: it reads nothing meanwhile): the
    // push waits for it, the WAIT being on the push's own connection (on
    // another, with no write of its own, it would answer at once).
    let sleeping = {
        let mut conn = replica.conn().await;
        tokio::spawn(async move {
            // Its reply may come after this connection's response timeout:
            // the sleep is the server's either way.
            let _: redis::RedisResult<()> = redis::cmd("DEBUG").arg("SLEEP").arg(0.6).query_async(&mut conn).await;
        })
    };
    tokio::time::sleep(Duration::from_millis(100)).await;
    let mut patient = master.config();
    patient
        .set_min_replicas_acked(1)
        .unwrap()
        .set_replica_ack_timeout(3.0)
        .unwrap();
    let started = std::time::Instant::now();
    Client::new(&patient).unwrap().push(Job::new("Step")).await.unwrap();
    assert!(
        started.elapsed() >= Duration::from_millis(300),
        "waited for the stalled replica: {:?}",
        started.elapsed()
    );
    sleeping.await.unwrap();
    // Two wanted, one there: queued on the master, and said so.
    config
        .set_min_replicas_acked(2)
        .unwrap()
        .set_replica_ack_timeout(0.2)
        .unwrap();
    let wanting_two = Client::new(&config).unwrap();
    match wanting_two.push(Job::new("Step")).await {
        Err(Error::NotReplicated {
            acked: 1,
            wanted: 2,
            waited_ms: 200,
        }) => {}
        other => panic!("NotReplicated: {other:?}"),
    }
    let mut master_conn = master.conn().await;
    assert_eq!(llen(&mut master_conn, "cogworker:queue:default").await, 3);
    // The replica gone: none confirms.
    replica.kill();
    match client.push(Job::new("Step")).await {
        Err(Error::NotReplicated {
            acked: 0, wanted: 1, ..
        }) => {}
        other => panic!("NotReplicated: {other:?}"),
    }
    // Checked where set; refused on a Cluster.
    let mut bad = master.config();
    assert_eq!(
        bad.set_min_replicas_acked(-1).unwrap_err().field(),
        Some("min_replicas_acked")
    );
    assert_eq!(
        bad.set_replica_ack_timeout(30.0).unwrap_err().field(),
        Some("replica_ack_timeout")
    );
    bad.set_redis_url("redis+cluster://127.0.0.1:7000").unwrap();
    bad.set_namespace("{cogworker}").unwrap();
    bad.set_min_replicas_acked(1).unwrap();
    assert_eq!(
        Client::new(&bad)
            .err()
            .and_then(|e| e.field().map(str::to_string))
            .as_deref(),
        Some("min_replicas_acked")
    );
}
