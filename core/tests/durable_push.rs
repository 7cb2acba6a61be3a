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
    wait_replica_online(&master.conn().await, replica.port).await;
    let mut config = master.config();
    // Long enough for a loaded machine: a CI run saw the online replica's
    // acknowledgement miss 0.5 s.
    config
        .set_min_replicas_acked(1)
        .unwrap()
        .set_replica_ack_timeout(5.0)
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
    not_replicated(client.push(Job::new("Step")).await, 0, 1);
    // Checked where set.
    let mut bad = master.config();
    assert_eq!(
        bad.set_min_replicas_acked(-1).unwrap_err().field(),
        Some("min_replicas_acked")
    );
    assert_eq!(
        bad.set_replica_ack_timeout(30.0).unwrap_err().field(),
        Some("replica_ack_timeout")
    );
}

/// Durability chosen per push (`Job::min_replicas_acked`, the push option
/// of every language): it stands in for the client's setting for that
/// push, a bulk push waits for the most any job asks, and it is taken off
/// the job before it is written.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_push_may_choose_its_own_durability() {
    let master = TestRedis::start();
    let port = master.port.to_string();
    let replica = TestRedis::start_with(&["--replicaof", "127.0.0.1", &port]);
    let mut replica_conn = replica.conn().await;
    wait_replica_online(&master.conn().await, replica.port).await;
    let mut config = master.config();
    config.set_replica_ack_timeout(5.0).unwrap();
    let plain = Client::new(&config).unwrap();
    // One replica asked by a client that asks none: on the replica when
    // the push returns, and stored without the option.
    let jid = plain
        .push(Job::new("Step").min_replicas_acked(1))
        .await
        .unwrap()
        .unwrap();
    let on_replica: Vec<String> = redis::AsyncCommands::lrange(&mut replica_conn, "cogworker:queue:default", 0, -1)
        .await
        .unwrap();
    assert_eq!(on_replica.len(), 1, "{on_replica:?}");
    assert!(on_replica[0].contains(&jid), "{on_replica:?}");
    assert!(!on_replica[0].contains("min_replicas_acked"), "{}", on_replica[0]);
    // A bulk push waits for the most any of its jobs asks: two, of one.
    config.set_replica_ack_timeout(0.2).unwrap();
    let plain = Client::new(&config).unwrap();
    let bulk = vec![
        Job::new("Step"),
        Job::new("Step").min_replicas_acked(2),
        Job::new("Step"),
    ];
    not_replicated(plain.push_bulk(bulk).await, 1, 2);
    let mut master_conn = master.conn().await;
    assert_eq!(
        llen(&mut master_conn, "cogworker:queue:default").await,
        4,
        "queued all the same"
    );
    // A client that waits for two: a push asking none returns at once.
    config.set_min_replicas_acked(2).unwrap();
    let wanting_two = Client::new(&config).unwrap();
    wanting_two.push(Job::new("Step").min_replicas_acked(0)).await.unwrap();
    not_replicated(wanting_two.push(Job::new("Step")).await, 1, 2);
    // Out of range: refused before anything is written, naming it.
    let err = plain
        .push_bulk(vec![Job::new("Step"), Job::new("Step").min_replicas_acked(17)])
        .await
        .unwrap_err();
    assert_eq!(err.field(), Some("jobs[1].min_replicas_acked"), "{err}");
    let raw = Job::from_value(serde_json::json!({"class": "Step", "min_replicas_acked": "one"}));
    assert_eq!(raw.unwrap_err().field(), Some("min_replicas_acked"));
    assert_eq!(llen(&mut master_conn, "cogworker:queue:default").await, 6);
}

/// Is the job `jid` on `queue` of the replica `node` (READONLY: a
/// cluster's replica serves reads of its master's slots)?
async fn on_replica(node: &TestRedis, queue: &str, jid: &str) -> bool {
    let mut conn = node.conn().await;
    let _: () = redis::cmd("READONLY").query_async(&mut conn).await.unwrap();
    let payloads: Vec<String> = redis::AsyncCommands::lrange(&mut conn, queue, 0, -1).await.unwrap();
    payloads.iter().any(|payload| payload.contains(jid))
}

/// A client whose pushes wait for one replica for up to `timeout`
/// seconds: short where no replica exists (the push waits it all), long
/// where one does (a loaded machine may take more than 300 ms to answer).
fn durable(config: &mut cogworker::Config, timeout: f64) -> Client {
    config
        .set_min_replicas_acked(1)
        .unwrap()
        .set_replica_ack_timeout(timeout)
        .unwrap();
    Client::new(config).unwrap()
}

/// `outcome` is `NotReplicated`: `acked` of the `wanted` replicas
/// confirmed the push.
fn not_replicated<T: std::fmt::Debug>(outcome: cogworker::Result<T>, acked: u32, wanted: u32) {
    match outcome {
        Err(Error::NotReplicated {
            acked: got,
            wanted: asked,
            ..
        }) if (got, asked) == (acked, wanted) => {}
        other => panic!("NotReplicated, {acked} of {wanted}: {other:?}"),
    }
}

/// On a cluster the WAIT goes where the push's writes went, over the
/// connection they went through: the node owning the namespace's slot;
/// sharded by queue, every master (the fewest replicas any confirmed).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn on_a_cluster_a_durable_push_waits_for_the_replicas_of_the_masters_it_wrote_to() {
    let mut cluster = common::cluster::Cluster::start();
    not_replicated(durable(&mut cluster.config(), 0.3).push(Job::new("Step")).await, 0, 1);
    let client = durable(&mut cluster.config(), 5.0);
    // The namespace's node gets a replica: confirmed, and on it.
    let owner = cluster.owner_index().await;
    cluster.add_replica(owner).await;
    let jid = client.push(Job::new("Step")).await.unwrap().unwrap();
    let queue = format!("{}:queue:default", common::cluster::NS);
    assert!(on_replica(&cluster.replicas[0], &queue, &jid).await);

    // Sharded by queue: two masters without a replica answer 0.
    let queues = cluster.queue_per_master();
    let mut config = cluster.config();
    config.set_shard_by_queue(true);
    not_replicated(
        durable(&mut config.clone(), 0.3)
            .push(Job::new("Step").queue(&queues[owner]))
            .await,
        0,
        1,
    );
    let sharded = durable(&mut config, 5.0);
    for master in (0..queues.len()).filter(|&m| m != owner) {
        cluster.add_replica(master).await;
    }
    for (master, queue) in queues.iter().enumerate() {
        let jid = sharded.push(Job::new("Step").queue(queue)).await.unwrap().unwrap();
        let replica = cluster.replica_of(master);
        let key = format!("{{cogworker:{queue}}}:queue");
        assert!(on_replica(replica, &key, &jid).await, "{queue} on master {master}");
    }
}
