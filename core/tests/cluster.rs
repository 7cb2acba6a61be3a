//! Redis Cluster: three masters on loopback, namespace `{cogworker}` so every
//! key shares one slot. The core scenarios run unchanged: push (single,
//! bulk, scheduled, unique), fetch and run, retry, orphan recovery, the
//! periodic claim; and a namespace without a hash tag is refused at start.

mod common;

use cogworker::{Api, Batch, BatchEvent, Client, Failure, Job, JobSet, Periodic, Retry, Step, Worker, Workflow};
use common::cluster::{Cluster, NS};
use common::*;
use redis::AsyncCommands;
use serde_json::json;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn push_run_retry_schedule_unique_groups_and_periodic_on_a_cluster() {
    let cluster = Cluster::start();
    let config = cluster.config();
    let client = Client::new(&config).unwrap();
    let api = Api::new(client.clone());

    let (worker, ran, flaky, _never) = scenario_worker(config.clone());
    let handle = worker.handle();
    let running = tokio::spawn(worker.run());

    client.push(Job::new("Count")).await.unwrap().unwrap();
    let bulk = client
        .push_bulk((0..200).map(|i| Job::new("Count").args([json!(i)])).collect())
        .await
        .unwrap();
    assert_eq!(bulk.len(), 200);
    // Grouped jobs: their lists and the queue's ring share the namespace's
    // slot, built inside the scripts from the hash-tagged namespace.
    let grouped = client
        .push_bulk(
            (0..20)
                .map(|i| Job::new("Count").args([json!(i)]).group(format!("g{}", i % 4)))
                .collect(),
        )
        .await
        .unwrap();
    assert_eq!(grouped.len(), 20);
    client.push(Job::new("Count").delay(1.0)).await.unwrap().unwrap();
    client.push(Job::new("Flaky")).await.unwrap().unwrap();
    client
        .push(Job::new("Dies").retry(Retry::Max(0)))
        .await
        .unwrap()
        .unwrap();
    assert!(client
        .push(Job::new("Count").args([json!("u")]).unique_for(60.0))
        .await
        .unwrap()
        .is_some());
    assert_eq!(
        client
            .push(Job::new("Count").args([json!("u")]).unique_for(60.0))
            .await
            .unwrap(),
        None
    );

    scenario_outcomes(&api, &ran, &flaky, 223).await;

    // A rate limiter's keys live on the namespace's slot.
    let limiter = client
        .limiter(cogworker::Limit::concurrent("on-cluster", 1).unwrap())
        .await
        .unwrap();
    let lease = limiter.acquire(Duration::ZERO).await.unwrap();
    assert!(matches!(
        limiter.acquire(Duration::ZERO).await,
        Err(cogworker::Error::OverLimit { .. })
    ));
    lease.release().await;
    limiter.acquire(Duration::ZERO).await.unwrap().release().await;

    // Orphan recovery: a dead process's in-progress list goes back.
    let mut owner = cluster.owner().await;
    let orphan = Job::new("Count").jid("a".repeat(24)).to_json();
    let _: () = redis::pipe()
        .rpush(format!("{NS}:in_progress:ghost"), &orphan)
        .sadd(format!("{NS}:in_progress_identities"), "ghost")
        .hset(format!("{NS}:last_beat"), "ghost", 1)
        .query_async(&mut owner)
        .await
        .unwrap();
    let r = ran.clone();
    wait_until("the orphan was recovered and ran", Duration::from_secs(20), move || {
        let r = r.clone();
        async move { r.load(Ordering::SeqCst) == 224 }
    })
    .await;

    stop_within_20s(&handle, running).await;
    // 224 Count runs and Flaky's successful retry.
    assert_eq!(api.stats().await.unwrap().processed, 225);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_namespace_without_a_hash_tag_is_refused_at_start() {
    let cluster = Cluster::start();
    let mut config = cluster.config();
    config.set_namespace("cogworker").unwrap();
    let err = Client::new(&config).err().expect("refused").to_string();
    assert!(err.contains("namespace") && err.contains("{cogworker}"), "{err}");
    let err = Worker::builder(config).build().err().expect("refused").to_string();
    assert!(err.contains("hash tag"), "{err}");
}

/// `shard_by_queue`: three queues on the three masters (their keys, seen
/// on each master's own connection), and the core scenarios across them:
/// pushes (single, bulk over all three, scheduled, unique), retry and dead
/// (a failure filed on the namespace's slot from a queue's), a periodic
/// tick, pause, orphan recovery from a queue's slot, and the two crash
/// points of the hand-overs between slots: a job left in the outbox is
/// pushed once, and a failure filed but not yet taken off in progress is
/// taken off, not run again.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sharded_by_queue_three_queues_live_on_three_masters() {
    let (cluster, queues, mut config) = sharded_cluster();
    config.set_over_limit_wait(0.1).unwrap();
    let client = Client::new(&config).unwrap();
    let api = Api::new(client.clone());

    // Paused, pushed to: each queue's jobs wait on its own master.
    for q in &queues {
        api.pause_queue(q).await.unwrap();
    }
    let bulk = client
        .push_bulk(
            (0..30)
                .map(|i| Job::new("Count").args([json!(i)]).queue(&queues[i % 3]))
                .collect(),
        )
        .await
        .unwrap();
    assert_eq!(bulk.len(), 30);
    for (node, q) in cluster.nodes.iter().zip(&queues) {
        let mut conn = node.conn().await;
        assert_eq!(llen(&mut conn, &format!("{{cogworker:{q}}}:queue")).await, 10, "{q}");
    }

    let (worker, ran, flaky, never) = scenario_worker(config.clone());
    let handle = worker.handle();
    let running = tokio::spawn(worker.run());
    for q in &queues {
        api.unpause_queue(q).await.unwrap();
    }

    client.push(Job::new("Count").queue(&queues[0])).await.unwrap().unwrap();
    client
        .push(Job::new("Count").queue(&queues[1]).delay(1.0))
        .await
        .unwrap()
        .unwrap();
    client.push(Job::new("Flaky").queue(&queues[1])).await.unwrap().unwrap();
    client
        .push(Job::new("Dies").queue(&queues[2]).retry(Retry::Max(0)))
        .await
        .unwrap()
        .unwrap();
    let unique = || Job::new("Count").args([json!("u")]).queue(&queues[2]).unique_for(60.0);
    assert!(client.push(unique()).await.unwrap().is_some());
    assert_eq!(client.push(unique()).await.unwrap(), None);

    // The 30 + 3 Count jobs.
    scenario_outcomes(&api, &ran, &flaky, 33).await;
    // A job over its limit goes back to the schedule (on the namespace's
    // slot) from a queue's slot, taken off in progress there; it runs
    // once the place is free.
    let limiter = client
        .limiter(cogworker::Limit::concurrent("sharded-one", 1).unwrap())
        .await
        .unwrap();
    let lease = limiter.acquire(Duration::ZERO).await.unwrap();
    let failed_before = api.stats().await.unwrap().failed;
    client
        .push(Job::new("Count").queue(&queues[2]).limits(["sharded-one"]))
        .await
        .unwrap()
        .unwrap();
    // The reschedule is two steps on two slots (filed on the namespace's,
    // then taken off in progress on the queue's), so both are awaited:
    // the schedule can show the job a moment before its entry is gone.
    let q2_node = cluster.nodes[2].conn().await;
    let in_progress = format!("{{cogworker:{}}}:in_progress:{}", queues[2], handle.identity());
    let a = api.clone();
    wait_until(
        "rescheduled over its limit and taken off in progress",
        Duration::from_secs(20),
        move || {
            let (a, mut node, key) = (a.clone(), q2_node.clone(), in_progress.clone());
            async move { a.set_size(JobSet::Scheduled).await.unwrap() == 1 && held(&mut node, &key).await == 0 }
        },
    )
    .await;
    lease.release().await;
    wait_for_count("the limited job ran", &ran, 34, Duration::from_secs(20)).await;
    assert_eq!(
        api.stats().await.unwrap().failed,
        failed_before,
        "a reschedule is no failure"
    );
    // Dead -> its queue (a hand-over from the namespace's slot), and dead again.
    let failed = api.stats().await.unwrap().failed;
    assert_eq!(api.retry_all(JobSet::Dead).await.unwrap(), 1);
    let a = api.clone();
    wait_until(
        "Dies ran from dead and died again",
        Duration::from_secs(20),
        move || {
            let a = a.clone();
            async move { a.stats().await.unwrap().failed == failed + 1 && a.set_size(JobSet::Dead).await.unwrap() == 1 }
        },
    )
    .await;

    // Orphan recovery: a dead process's job on queue 1's slot goes back.
    let mut owner = cluster.owner().await;
    let mut q1_node = cluster.nodes[1].conn().await;
    let orphan = Job::new("Count").jid("a".repeat(24)).queue(&queues[1]).to_json();
    let _: () = q1_node
        .hset(format!("{{cogworker:{}}}:in_progress:ghost", queues[1]), "7", &orphan)
        .await
        .unwrap();
    // Crash points: a failure filed (its marker set) before its entry was
    // taken off in progress; a hand-over left in the outbox.
    let filed = Job::new("Never").jid("b".repeat(24)).queue(&queues[0]).to_json();
    let mut q0_node = cluster.nodes[0].conn().await;
    let _: () = q0_node
        .hset(format!("{{cogworker:{}}}:in_progress:ghost", queues[0]), "8", &filed)
        .await
        .unwrap();
    let handed = Job::new("Count").jid("c".repeat(24)).queue(&queues[2]).to_json();
    let _: () = redis::pipe()
        .set(format!("{NS}:filed:ghost:8"), 1)
        .hset(format!("{NS}:outbox"), "cccc-1", format!("{}\n{handed}", queues[2]))
        .sadd(format!("{NS}:in_progress_identities"), "ghost")
        .hset(format!("{NS}:last_beat"), "ghost", 1)
        .query_async(&mut owner)
        .await
        .unwrap();
    // A hand-over pushes onto the queue's slot, then clears its outbox
    // entry on the namespace's: a job can run before its entry is gone, so
    // the empty outbox is awaited with the rest (that it ran once is
    // checked after the stop).
    let a = api.clone();
    let r = ran.clone();
    wait_until(
        "the orphan and the handed-over job ran, the ghost is forgotten, its marker and the outbox cleared",
        Duration::from_secs(20),
        move || {
            let (a, r) = (a.clone(), r.clone());
            let mut owner = owner.clone();
            async move {
                let ghosts: Vec<String> = owner.smembers(format!("{NS}:in_progress_identities")).await.unwrap();
                let marker: bool = owner.exists(format!("{NS}:filed:ghost:8")).await.unwrap();
                let outbox: usize = owner.hlen(format!("{NS}:outbox")).await.unwrap();
                r.load(Ordering::SeqCst) == 36
                    && !ghosts.contains(&"ghost".to_string())
                    && !marker
                    && outbox == 0
                    && a.stats().await.is_ok()
            }
        },
    )
    .await;
    assert_eq!(
        held(&mut q0_node, &format!("{{cogworker:{}}}:in_progress:ghost", queues[0])).await,
        0
    );

    stop_within_20s(&handle, running).await;
    assert_eq!(never.load(Ordering::SeqCst), 0, "the filed job did not run again");
    assert_eq!(ran.load(Ordering::SeqCst), 36, "the handed-over job ran once");
    // 36 Count runs and Flaky's successful retry.
    assert_eq!(api.stats().await.unwrap().processed, 37);
}

/// Sharded by queue, a queue's priority levels are lists on its own slot;
/// a plain, a unique (through the outbox) and a scheduled push at a level
/// all reach them, and a worker takes them before the default level.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sharded_by_queue_priority_levels_live_on_the_queues_slot() {
    let cluster = Cluster::start();
    let queues = cluster.queue_per_master();
    let queue = &queues[1];
    let mut config = cluster.config();
    config.set_shard_by_queue(true).set_queues(&queues).unwrap();
    let client = Client::new(&config).unwrap();
    let api = Api::new(client.clone());
    api.pause_queue(queue).await.unwrap();
    let step = |n: i64| Job::new("Step").args([json!(n)]).queue(queue);
    client.push_bulk((0..3).map(step).collect()).await.unwrap();
    client.push(step(10).priority(9)).await.unwrap().unwrap();
    client
        .push(step(11).priority(9).unique_for(60.0))
        .await
        .unwrap()
        .unwrap();
    client.push(step(12).priority(9).delay(0.2)).await.unwrap().unwrap();
    let mut node = cluster.nodes[1].conn().await;
    let level_list = format!("{{cogworker:{queue}}}:queue@9");
    assert_eq!(llen(&mut node, &level_list).await, 2, "the plain and the unique push");
    let (worker, ran) = recording_worker(config, Duration::ZERO);
    let handle = worker.handle();
    let running = tokio::spawn(worker.run());
    wait_until(
        "the scheduled one is due and moved",
        Duration::from_secs(10),
        move || {
            let (mut node, l) = (node.clone(), level_list.clone());
            async move { llen(&mut node, &l).await == 3 }
        },
    )
    .await;
    assert_eq!(api.queue(queue).await.unwrap().size, 6);
    api.unpause_queue(queue).await.unwrap();
    let r = ran.clone();
    wait_until("all six ran", Duration::from_secs(20), move || {
        let r = r.clone();
        async move { r.lock().unwrap().len() == 6 }
    })
    .await;
    assert_eq!(*ran.lock().unwrap(), vec![10, 11, 12, 0, 1, 2]);
    stop_within_20s(&handle, running).await;
}

/// `shard_by_queue`: batches and workflows over three masters. A batch of
/// jobs over the three queues (one failing once, one unique whose
/// duplicate joins nothing) completes once, its callback run once on
/// another master; a workflow's chain and chord pass
/// results between masters; and the three crash points of a batch's job
/// between the slots: handed over but not yet pushed (recovery pushes it,
/// counted once), counted and marked but not yet taken off in progress
/// (recovery takes it off: not run again, not counted again), held but not
/// yet counted (recovery puts it back; counted when it runs).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sharded_by_queue_batches_and_workflows_across_masters() {
    let (cluster, queues, config) = sharded_cluster();
    let client = Client::new(&config).unwrap();
    let api = Api::new(client.clone());
    let (worker, ran) = batch_worker(config);
    let handle = worker.handle();
    let running = tokio::spawn(worker.run());

    // A batch named `name` whose success callback is Done(name) on queue q.
    let done_on = |name: &str, q: usize| {
        Batch::new(name).on(
            BatchEvent::Success,
            Job::new("Done").args([json!(name)]).queue(&queues[q]),
        )
    };
    // A batch over the three masters, its callback on a third.
    let spread = client.open_batch(done_on("spread", 2)).await.unwrap();
    let mut jobs: Vec<Job> = (0..30)
        .map(|i| Job::new("Count").args([json!(i)]).queue(&queues[i % 3]))
        .collect();
    jobs.push(Job::new("Flaky").queue(&queues[1]));
    spread.push_bulk(jobs).await.unwrap();
    // A unique job joins (handed over to its queue's master), its
    // duplicate does not.
    let unique = || Job::new("Count").args([json!("u")]).queue(&queues[2]).unique_for(60.0);
    spread.push(unique()).await.unwrap().unwrap();
    assert_eq!(spread.push(unique()).await.unwrap(), None);
    spread.close().await.unwrap();

    // A chain and a chord whose steps live on different masters.
    let step = |job: Job, q: usize| job.queue(&queues[q]);
    let workflow = Workflow::new("across")
        .then(Step::job(step(Job::new("Add").args([json!(1), json!(2)]), 0)))
        .then(Step::job(step(Job::new("Add").args([json!(10)]), 1)).taking_result())
        .then(
            Step::group([
                step(Job::new("Add").args([json!(0.5)]), 2),
                step(Job::new("Add").args([json!(1)]), 0),
            ])
            .taking_result(),
        )
        .then(Step::job(step(Job::new("Done").args([json!("end")]), 1)).taking_result())
        .batch(done_on("workflow", 2));
    let pushed = client.push_workflow(workflow).await.unwrap();

    // The crash points, planted in a batch of two Count jobs, as a process
    // that died between its two steps leaves them.
    let planted = client.open_batch(done_on("planted", 0)).await.unwrap();
    planted
        .push_bulk(vec![
            Job::new("Count").args([json!("p1")]).queue(&queues[1]),
            Job::new("Count").args([json!("p2")]).queue(&queues[2]),
        ])
        .await
        .unwrap();
    let of_planted = |job: Job, jid: char, q: usize| {
        job.jid(jid.to_string().repeat(24))
            .queue(&queues[q])
            .field("bid", json!(planted.bid()))
            .to_json()
    };
    let batch_key = format!("{NS}:batch:{}", planted.bid());
    let mut owner = cluster.owner().await;
    let _: () = redis::pipe()
        // Handed over (counted, in the outbox), not yet pushed.
        .hincr(&batch_key, "total", 1)
        .hincr(&batch_key, "pending", 1)
        .hset(
            format!("{NS}:outbox"),
            "xxxx-1",
            format!(
                "{}\n{}",
                queues[2],
                of_planted(Job::new("Count").args([json!("x")]), 'x', 2)
            ),
        )
        // Counted and marked, not yet taken off in progress.
        .hincr(&batch_key, "total", 1)
        .set(format!("{NS}:filed:ghost:9"), 1)
        // Held, not yet counted.
        .hincr(&batch_key, "total", 1)
        .hincr(&batch_key, "pending", 1)
        .sadd(format!("{NS}:in_progress_identities"), "ghost")
        .hset(format!("{NS}:last_beat"), "ghost", 1)
        .query_async(&mut owner)
        .await
        .unwrap();
    let ghost_at = |q: usize| format!("{{cogworker:{}}}:in_progress:ghost", queues[q]);
    let mut q0_node = cluster.nodes[0].conn().await;
    let _: () = q0_node
        .hset(ghost_at(0), "9", of_planted(Job::new("Never"), 'y', 0))
        .await
        .unwrap();
    let mut q1_node = cluster.nodes[1].conn().await;
    let _: () = q1_node
        .hset(
            ghost_at(1),
            "10",
            of_planted(Job::new("Count").args([json!("z")]), 'z', 1),
        )
        .await
        .unwrap();
    planted.close().await.unwrap();

    let r = ran.clone();
    wait_until("the three batches' callbacks ran", Duration::from_secs(30), move || {
        let r = r.clone();
        async move { ran_with(&r, "Done").len() == 4 }
    })
    .await;
    // Nothing more comes: each callback once, each step once.
    tokio::time::sleep(Duration::from_millis(500)).await;
    let mut done: Vec<String> = ran_with(&ran, "Done")
        .iter()
        .map(|args| args.last().unwrap().to_string())
        .collect();
    done.sort();
    assert_eq!(done, ["\"end\"", "\"planted\"", "\"spread\"", "\"workflow\""]);
    let end = ran_with(&ran, "Done")
        .into_iter()
        .find(|args| args.last() == Some(&json!("end")))
        .unwrap();
    assert_eq!(
        end[0],
        json!([13.5, 14.0]),
        "the chord's results, in its order, across masters"
    );
    assert_eq!(ran_with(&ran, "Add").len(), 4);
    assert_eq!(ran_with(&ran, "Never").len(), 0, "counted and marked: not run again");
    let counts = ran_with(&ran, "Count");
    assert_eq!(
        counts.len(),
        35,
        "30, u, p1, p2, the handed-over one and the held one, each once"
    );
    for (bid, total) in [(spread.bid(), 32), (pushed.id.as_str(), 4), (planted.bid(), 5)] {
        let status = api.batch(bid).await.unwrap().unwrap();
        assert_eq!(
            (status.total, status.pending, status.state()),
            (total, 0, "success"),
            "{bid}"
        );
    }
    let outbox: usize = owner.hlen(format!("{NS}:outbox")).await.unwrap();
    let marker: bool = owner.exists(format!("{NS}:filed:ghost:9")).await.unwrap();
    assert_eq!((outbox, marker), (0, false), "the outbox and the marker cleared");
    assert_eq!(held(&mut q0_node, &ghost_at(0)).await, 0);
    assert_eq!(held(&mut q1_node, &ghost_at(1)).await, 0);
    // A live worker's own markers go with its entries.
    let markers: Vec<String> = owner.keys(format!("{NS}:filed:*")).await.unwrap();
    assert!(markers.is_empty(), "{markers:?}");

    stop_within_20s(&handle, running).await;
}

/// `shard_by_queue`: fair groups on a queue's own master. Tenant A's 60
/// jobs and tenant B's 3, pushed to a paused queue, wait in their groups'
/// lists on that master, counted in the queue's size; once it is unpaused,
/// B's jobs run among A's first, not behind A's backlog; a group paused
/// through the API waits until resumed; a scheduled grouped job (handed
/// over through the outbox) and a grouped job a dead process held
/// (recovered on the queue's slot) go back into their groups; and once
/// drained, no group key is left on the queue's master. A group's backlog
/// cap is refused by name.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sharded_by_queue_groups_take_turns_on_the_queues_master() {
    let (cluster, queues, config) = sharded_cluster();
    let q = &queues[1];
    let client = Client::new(&config).unwrap();
    let api = Api::new(client.clone());
    api.pause_queue(q).await.unwrap();
    let step = |n: i64, group: &str| Job::new("Step").args([json!(n)]).queue(q).group(group);
    client.push_bulk((0..60).map(|n| step(n, "a")).collect()).await.unwrap();
    client
        .push_bulk((100..103).map(|n| step(n, "b")).collect())
        .await
        .unwrap();
    client
        .push_bulk((200..202).map(|n| step(n, "c")).collect())
        .await
        .unwrap();
    assert!(api.pause_group(q, "c").await.unwrap());
    client.push(step(300, "b").delay(0.3)).await.unwrap().unwrap();
    // A singleton (its lock on the namespace's slot, handed over to the
    // queue's): a second push answers with the first one's jid.
    let single = || Job::new("Step").args([json!(500)]).queue(q).key("s").unique_for(60.0);
    let first = client.push(single()).await.unwrap().unwrap();
    assert_eq!(client.push(single()).await.unwrap(), Some(first));
    let mut node = cluster.nodes[1].conn().await;
    assert_eq!(llen(&mut node, &format!("{{cogworker:{q}}}:group a")).await, 60);
    assert_eq!(api.queue(q).await.unwrap().size, 66, "every group's jobs counted");
    // A grouped job a dead process held, on the queue's slot.
    let orphan = step(400, "d").jid("d".repeat(24)).to_json();
    let _: () = node
        .hset(format!("{{cogworker:{q}}}:in_progress:ghost"), "11", &orphan)
        .await
        .unwrap();
    let _: () = redis::pipe()
        .sadd(format!("{NS}:in_progress_identities"), "ghost")
        .hset(format!("{NS}:last_beat"), "ghost", 1)
        .query_async(&mut cluster.owner().await)
        .await
        .unwrap();

    let (worker, ran) = recording_worker(config, Duration::ZERO);
    let handle = worker.handle();
    let running = tokio::spawn(worker.run());
    let n = node.clone();
    let ring = format!("{{cogworker:{q}}}:groups");
    wait_until("the orphan is back in its group", Duration::from_secs(20), move || {
        let (mut n, ring) = (n.clone(), ring.clone());
        async move {
            let d: Option<f64> = n.zscore(&ring, "d").await.unwrap();
            d.is_some()
        }
    })
    .await;
    api.unpause_queue(q).await.unwrap();
    wait_ran(&ran, 66).await;
    {
        let ran = ran.lock().unwrap();
        assert_eq!(ran.len(), 66, "{ran:?}");
        let first: Vec<i64> = ran[..20].to_vec();
        for b in 100..103 {
            assert!(first.contains(&b), "B's {b} among the first 20 runs: {ran:?}");
        }
        assert!(ran.contains(&300) && ran.contains(&400), "{ran:?}");
        assert_eq!(ran.iter().filter(|n| **n == 500).count(), 1, "the singleton once");
        assert!(!ran.contains(&200), "the paused group waits");
    }
    assert!(api.resume_group(q, "c").await.unwrap());
    wait_ran(&ran, 68).await;
    assert_eq!(ran.lock().unwrap().len(), 68);
    stop_within_20s(&handle, running).await;
    let left: Vec<String> = node.keys(format!("{{cogworker:{q}}}:group*")).await.unwrap();
    assert!(left.is_empty(), "no group key left: {left:?}");
}

/// `shard_by_queue`: a group's backlog cap, kept on the queue's master.
/// A push straight onto the group's list past it is refused where it
/// lands, naming the group, and leaves no result record; a bulk push over
/// two queues tries the capped list first, so the other queue gets
/// nothing; a batch's job and a unique job (handed over from the
/// namespace's slot) are checked before they are accepted; with
/// drop_oldest the oldest make room, counted on the queue's slot and in
/// the stats. The jobs that stayed run once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sharded_by_queue_group_backlog_caps_hold_on_the_queues_master() {
    let (cluster, queues, config) = sharded_cluster();
    let q = &queues[0];
    let client = Client::new(&config).unwrap();
    let api = Api::new(client.clone());
    let capped = |n: i64| {
        Job::new("Step")
            .args([json!(n)])
            .queue(q)
            .group("t1")
            .group_backlog(2, false)
    };
    client.push_bulk(vec![capped(0), capped(1)]).await.unwrap();
    let refused = capped(2).result_ttl(600.0);
    let jid = refused.jid_str().to_string();
    let err = client.push(refused).await.unwrap_err();
    assert!(matches!(err, cogworker::Error::OverLimit { .. }), "{err}");
    assert!(
        err.to_string().contains("group t1") && err.to_string().contains("at most 2"),
        "{err}"
    );
    assert_eq!(
        api.status(&jid).await.unwrap(),
        "unknown",
        "no record of a refused push"
    );
    let elsewhere = Job::new("Step").args([json!(50)]).queue(&queues[1]);
    assert!(client.push_bulk(vec![elsewhere, capped(3)]).await.is_err());
    assert_eq!(api.queue(&queues[1]).await.unwrap().size, 0, "the capped list first");
    let batch = client.open_batch(Batch::new("capped")).await.unwrap();
    let err = batch.push(capped(4)).await.unwrap_err();
    assert!(matches!(err, cogworker::Error::OverLimit { .. }), "{err}");
    let err = client.push(capped(5).unique_for(60.0)).await.unwrap_err();
    assert!(matches!(err, cogworker::Error::OverLimit { .. }), "{err}");
    let dropping = |n: i64| {
        Job::new("Step")
            .args([json!(n)])
            .queue(q)
            .group("t2")
            .group_backlog(2, true)
    };
    for n in 10..15 {
        client.push(dropping(n)).await.unwrap();
    }
    let mut node = cluster.nodes[0].conn().await;
    let args = first_args_on(&mut node, &format!("{{cogworker:{q}}}:group t2")).await;
    assert_eq!(args, [14, 13], "the newest two wait");
    assert_eq!(api.stats().await.unwrap().backlog_dropped, 3);
    assert_eq!(api.stats_today().await.unwrap().backlog_dropped, 3);

    let (worker, ran) = recording_worker(config, Duration::ZERO);
    let handle = worker.handle();
    let running = tokio::spawn(worker.run());
    wait_ran(&ran, 4).await;
    stop_within_20s(&handle, running).await;
    let mut ran = ran.lock().unwrap().clone();
    ran.sort();
    assert_eq!(ran, [0, 1, 13, 14]);
    let batch = api.batch(batch.bid()).await.unwrap().unwrap();
    assert_eq!(batch.total, 0, "the refused job never joined its batch");
}

/// `shard_by_queue`: nested batches. A child batch whose jobs live on two
/// masters and its parent's job on the third: the child's success
/// callback and the parent's (the child counted as one of its units) fire
/// once each; once succeeded, each batch's keys live for its `keep_for`,
/// not its `ttl`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sharded_by_queue_nested_batches_complete_once_across_masters() {
    let (cluster, queues, config) = sharded_cluster();
    let client = Client::new(&config).unwrap();
    let api = Api::new(client.clone());
    let done_on = |name: &str, q: usize| {
        Batch::new(name)
            .on(
                BatchEvent::Success,
                Job::new("Done").args([json!(name)]).queue(&queues[q]),
            )
            .keep_for(120)
            .ttl(3600)
    };
    let parent = client.open_batch(done_on("parent", 0)).await.unwrap();
    parent
        .push(Job::new("Count").args([json!("p")]).queue(&queues[2]))
        .await
        .unwrap();
    let child = parent.open_child(done_on("child", 1)).await.unwrap();
    child
        .push_bulk(vec![
            Job::new("Count").args([json!("c0")]).queue(&queues[0]),
            Job::new("Flaky").queue(&queues[1]),
        ])
        .await
        .unwrap();
    child.close().await.unwrap();
    parent.close().await.unwrap();
    let (worker, ran) = batch_worker(config);
    let handle = worker.handle();
    let running = tokio::spawn(worker.run());
    let r = ran.clone();
    wait_until("both callbacks ran", Duration::from_secs(30), move || {
        let r = r.clone();
        async move { ran_with(&r, "Done").len() == 2 }
    })
    .await;
    let a = api.clone();
    let bid = parent.bid().to_string();
    wait_until("the parent succeeded", Duration::from_secs(10), move || {
        let (a, bid) = (a.clone(), bid.clone());
        async move { a.batch(&bid).await.unwrap().is_some_and(|b| b.pending == 0) }
    })
    .await;
    stop_within_20s(&handle, running).await;
    let mut done: Vec<String> = ran_with(&ran, "Done").iter().map(|args| args[1].to_string()).collect();
    done.sort();
    assert_eq!(done, ["\"child\"", "\"parent\""], "each callback once");
    assert_eq!(ran_with(&ran, "Count").len(), 2);
    let mut owner = cluster.owner().await;
    for bid in [parent.bid(), child.bid()] {
        let ttl: i64 = owner.ttl(format!("{NS}:batch:{bid}")).await.unwrap();
        assert!((1..=120).contains(&ttl), "kept for keep_for once succeeded: {ttl}");
    }
}

/// `shard_by_queue`: a sequence. The jobs of a key run one at a time in
/// push order, a failed job's retry before the next (its lease becomes a
/// hold on the queue's slot before the job is filed on the namespace's,
/// and the retry lands back at the head of its key, ending the hold).
/// Crash points: a hold taken but its job not filed (the job recovered
/// from a dead process, the hold swept once the job is nowhere on its way);
/// a retry handed over but not landed (the outbox delivers it to the head
/// of its key). No hold, lease or count is left.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sharded_by_queue_sequences_keep_their_order_across_masters() {
    let (cluster, queues, mut config) = sharded_cluster();
    let q = &queues[1];
    config.set_concurrency(4).unwrap();
    let client = Client::new(&config).unwrap();
    // Per run: key, n, its retry count, when it started and ended.
    type Runs = Arc<Mutex<Vec<(String, i64, u32, f64, f64)>>>;
    let runs: Runs = Arc::default();
    let seen = runs.clone();
    let worker = Worker::builder(config)
        .register("Hook", move |job| {
            let seen = seen.clone();
            async move {
                let started = cogworker::now();
                let n = job.args_slice()[0].as_i64().unwrap();
                tokio::time::sleep(Duration::from_millis(30)).await;
                let key = job.group_key().unwrap().to_string();
                seen.lock()
                    .unwrap()
                    .push((key, n, job.retry_count(), started, cogworker::now()));
                if n == 1 && job.retry_count() == 0 {
                    return Err(Failure::new("Down", "the endpoint is down").with_retry_in(0.5));
                }
                Ok(())
            }
        })
        .build()
        .unwrap();
    let hook = |key: &str, n: i64| Job::new("Hook").args([json!(n)]).queue(q).key(key).sequence();
    let jobs = (0..6)
        .flat_map(|n| ["acct:1", "acct:2"].map(|key| hook(key, n)))
        .collect();
    client.push_bulk(jobs).await.unwrap();
    // A dead process's job whose hold was taken before it was filed, and
    // a retry claimed into the outbox but not landed: each holds its key.
    let planted = |key: &str, jid: char| {
        Job::new("Hook")
            .args([json!(0)])
            .queue(q)
            .jid(jid.to_string().repeat(24))
            .group(key)
            .sequence()
            .group_cap(1)
            .to_json()
    };
    let (recovered, handed) = (planted("acct:9", '9'), planted("acct:8", '8'));
    let mut node = cluster.nodes[1].conn().await;
    let _: () = redis::pipe()
        .hset(format!("{{cogworker:{q}}}:in_progress:ghost"), "7", &recovered)
        .hset(
            format!("{{cogworker:{q}}}:group_holds"),
            "9".repeat(24),
            "acct:9\n{\"retry\":1}\nghost 7",
        )
        .hset(
            format!("{{cogworker:{q}}}:group_holds"),
            "8".repeat(24),
            "acct:8\n{\"retry\":2}\nghost 3",
        )
        .hincr(format!("{{cogworker:{q}}}:group_running"), "acct:9", 1)
        .hincr(format!("{{cogworker:{q}}}:group_running"), "acct:8", 1)
        .query_async(&mut node)
        .await
        .unwrap();
    let _: () = redis::pipe()
        .hset(
            format!("{NS}:outbox"),
            format!("{}-1", "8".repeat(24)),
            format!("{q}\n{handed}"),
        )
        .sadd(format!("{NS}:in_progress_identities"), "ghost")
        .hset(format!("{NS}:last_beat"), "ghost", 1)
        .query_async(&mut cluster.owner().await)
        .await
        .unwrap();
    client
        .push_bulk(vec![hook("acct:9", 1), hook("acct:8", 1)])
        .await
        .unwrap();

    let handle = worker.handle();
    let running = tokio::spawn(worker.run());
    let r = runs.clone();
    wait_until("20 runs", Duration::from_secs(40), move || {
        let r = r.clone();
        async move { r.lock().unwrap().len() == 20 }
    })
    .await;
    stop_within_20s(&handle, running).await;
    let runs = runs.lock().unwrap().clone();
    for (key, order) in [
        ("acct:1", vec![0, 1, 1, 2, 3, 4, 5]),
        ("acct:2", vec![0, 1, 1, 2, 3, 4, 5]),
        ("acct:9", vec![0, 1, 1]),
        ("acct:8", vec![0, 1, 1]),
    ] {
        let mut of: Vec<_> = runs.iter().filter(|run| run.0 == key).collect();
        of.sort_by(|a, b| a.3.total_cmp(&b.3));
        assert_eq!(of.iter().map(|run| run.1).collect::<Vec<_>>(), order, "{key}: {runs:?}");
        for pair in of.windows(2) {
            assert!(pair[1].3 >= pair[0].4, "{key}: one at a time, in order: {runs:?}");
        }
    }
    for what in ["group_holds", "group_leases", "group_running", "group_parked"] {
        let left: usize = node.exists(format!("{{cogworker:{q}}}:{what}")).await.unwrap();
        assert_eq!(left, 0, "{what} left");
    }
}

/// `shard_by_queue`: a replacing push. The key's state and its job are on
/// the queue's master: a push while the key's job waits replaces it in
/// place (same jid, the last args, its place in line; in a group's list
/// too), counted in the stats; the key is listed with its waiting job, and
/// a job pushed with `result_ttl` has its status record; a crash after
/// the push, before the index entry and record are written, is mended by
/// the key's next push; once its job is taken, the next push is a new job.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sharded_by_queue_replace_keeps_one_waiting_job_per_key() {
    let (cluster, queues, config) = sharded_cluster();
    let q = &queues[2];
    let client = Client::new(&config).unwrap();
    let api = Api::new(client.clone());
    api.pause_queue(q).await.unwrap();
    let replacing = |key: &str, n: i64| Job::new("Step").args([json!(n)]).queue(q).key(key).replace();
    let first = client.push(replacing("user:1", 1)).await.unwrap().unwrap();
    let other = client.push(replacing("user:2", 100)).await.unwrap().unwrap();
    for n in 2..=4 {
        let job = replacing("user:1", n).result_ttl(600.0);
        assert_eq!(client.push(job).await.unwrap().unwrap(), first);
    }
    let grouped = |n: i64| replacing("user:3", n).group("tenant:1");
    let in_group = client.push(grouped(200)).await.unwrap().unwrap();
    assert_eq!(client.push(grouped(201)).await.unwrap().unwrap(), in_group);
    assert_ne!(first, other);
    assert_eq!(api.queue(q).await.unwrap().size, 3);
    assert_eq!(api.stats().await.unwrap().replaced, 4);
    assert_eq!(
        api.status(&first).await.unwrap(),
        "queued",
        "the record of the last push"
    );
    let listed = api.flow_keys(100).await.unwrap();
    let user1 = listed.iter().find(|k| k.key == "user:1").expect("user:1 listed");
    assert_eq!(
        (user1.jid.as_deref(), user1.waiting),
        (Some(first.as_str()), Some(true))
    );
    assert_eq!(listed.len(), 3, "{listed:?}");
    // Crash point: the push replaced its key's job on the queue's master,
    // and its process died before the index entry and the record were
    // written on the namespace's. The key's next push lists it again.
    let mut owner = cluster.owner().await;
    let _: () = redis::pipe()
        .del(format!("{NS}:flow_keys"))
        .del(format!("{NS}:result:{first}"))
        .query_async(&mut owner)
        .await
        .unwrap();
    assert!(api.flow_keys(100).await.unwrap().is_empty());
    let job = replacing("user:1", 4).result_ttl(600.0);
    assert_eq!(client.push(job).await.unwrap().unwrap(), first);
    let listed = api.flow_keys(100).await.unwrap();
    assert_eq!(listed.iter().filter(|k| k.key == "user:1").count(), 1, "{listed:?}");
    assert_eq!(api.status(&first).await.unwrap(), "queued");

    let (worker, ran) = recording_worker(config, Duration::ZERO);
    let handle = worker.handle();
    let running = tokio::spawn(worker.run());
    api.unpause_queue(q).await.unwrap();
    wait_ran(&ran, 3).await;
    let next = client.push(replacing("user:1", 5)).await.unwrap().unwrap();
    assert_ne!(next, first, "its job was taken: a new one");
    wait_ran(&ran, 4).await;
    stop_within_20s(&handle, running).await;
    let mut ran = ran.lock().unwrap().clone();
    ran.sort();
    assert_eq!(ran, [4, 5, 100, 201], "each key's job once, with its last args");
}

/// `shard_by_queue`: cancellation and expiry with the queue on another
/// master than the namespace. A scheduled job is taken off the schedule,
/// a queued one is dropped unrun when taken, a running one is stopped
/// within a second and filed as cancelled (its in-progress entry on the
/// queue's slot, its record on the namespace's), never retried; a job
/// past its expiry is dropped unrun and counted.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sharded_by_queue_cancellation_and_expiry_across_masters() {
    let (_cluster, queues, config) = sharded_cluster();
    let q = &queues[1];
    let client = Client::new(&config).unwrap();
    let api = Api::new(client.clone());
    let job = |class: &str| Job::new(class).queue(q).result_ttl(600.0);
    let later = client.push(job("Long").delay(3600.0)).await.unwrap().unwrap();
    assert_eq!(api.cancel(&later).await.unwrap(), "scheduled");
    assert_eq!(api.set_size(JobSet::Scheduled).await.unwrap(), 0);
    api.pause_queue(q).await.unwrap();
    let queued = client.push(job("Long")).await.unwrap().unwrap();
    assert_eq!(api.cancel(&queued).await.unwrap(), "queued");
    client.push(job("Long").expires_in(0.2)).await.unwrap().unwrap();
    tokio::time::sleep(Duration::from_millis(300)).await;

    let (worker, started, finished) = long_worker(config);
    let handle = worker.handle();
    let running = tokio::spawn(worker.run());
    api.unpause_queue(q).await.unwrap();
    let a = api.clone();
    let q2 = q.clone();
    wait_until(
        "the cancelled and the expired job dropped",
        Duration::from_secs(20),
        move || {
            let (a, q) = (a.clone(), q2.clone());
            async move {
                let stats = a.stats().await.unwrap();
                a.queue(&q).await.unwrap().size == 0 && stats.expired == 1 && stats.cancelled == 2
            }
        },
    )
    .await;
    assert_eq!(started.load(Ordering::SeqCst), 0, "neither ran");
    let long = client.push(job("Long")).await.unwrap().unwrap();
    wait_for_count("it started", &started, 1, Duration::from_secs(10)).await;
    let asked = std::time::Instant::now();
    assert_eq!(api.cancel(&long).await.unwrap(), "running");
    wait_stopped_and_filed(&api, &long, Duration::from_secs(5)).await;
    assert!(asked.elapsed() < Duration::from_secs(2), "{:?}", asked.elapsed());
    for jid in [&later, &queued, &long] {
        assert_eq!(api.status(jid).await.unwrap(), "cancelled", "{jid}");
    }
    stop_within_20s(&handle, running).await;
    assert_eq!(finished.load(Ordering::SeqCst), 0, "the handler ran no further");
    assert_eq!(api.set_size(JobSet::Retry).await.unwrap(), 0, "not retried");
    assert_eq!(api.stats().await.unwrap().cancelled, 3);
    let held: Vec<_> = api.busy().await.unwrap();
    assert!(held.is_empty(), "{held:?}");
}

/// `shard_by_queue`: long jobs with their queue on another master than
/// the namespace. A checkpoint is written to the job's in-progress record
/// on the queue's slot, so the retry of a failed run (filed on the
/// namespace's slot, handed back to the queue's) resumes from it, and
/// shutdown gives a stopping job back to its queue with its cursor, where
/// the next worker resumes it; progress reports (on the namespace's slot)
/// are read, and a watcher (subscribed on one node, published to by the
/// namespace's) sees each and then the end.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sharded_by_queue_long_jobs_checkpoint_resume_and_report_across_masters() {
    let (_cluster, queues, config) = sharded_cluster();
    let q = &queues[1];
    let client = Client::new(&config).unwrap();
    let api = Api::new(client.clone());
    let (worker, starts) = resuming_worker(config.clone());
    let handle = worker.handle();
    let running = tokio::spawn(worker.run());
    let failing = client
        .push(Job::new("Resume").args([json!("fail")]).queue(q).result_ttl(600.0))
        .await
        .unwrap()
        .unwrap();
    let (events, percents) = watched(&api, &failing, Duration::from_secs(20)).await;
    let Some(cogworker::WatchEvent::Finished(end)) = events.last() else {
        panic!("ends with the end: {events:?}")
    };
    assert_eq!(end["status"], "succeeded", "{end}");
    assert_eq!(end["retry_count"], 1, "{end}");
    assert!(percents.contains(&100.0), "{events:?}");
    assert_eq!(
        *starts.lock().unwrap(),
        [None, Some(json!({"at": 5}))],
        "the retry resumed"
    );
    let progress = api.progress(&failing).await.unwrap().expect("kept with the result");
    assert_eq!(progress["percent"], 100.0, "{progress}");

    let stopping = client
        .push(
            Job::new("Resume")
                .args([json!("until_stopping")])
                .queue(q)
                .result_ttl(600.0),
        )
        .await
        .unwrap()
        .unwrap();
    wait_starts(&starts, 3).await;
    stop_within_20s(&handle, running).await;
    let queued = api.queue_jobs(q, 0, 10).await.unwrap();
    assert_eq!(queued.len(), 1, "given back to its queue");
    let given_back = Job::parse(&queued[0]).unwrap();
    assert_eq!(given_back.jid_str(), stopping);
    let cursor = given_back.cursor().cloned().expect("with its cursor");
    let (worker, starts) = resuming_worker(config);
    let handle = worker.handle();
    let running = tokio::spawn(worker.run());
    let record = api.wait_result(&stopping, 20.0).await.unwrap().expect("kept");
    assert_eq!(record["status"], "succeeded", "{record}");
    assert_eq!(record["retry_count"], 0, "a give-back is not a retry");
    assert_eq!(*starts.lock().unwrap(), [Some(cursor)]);
    stop_within_20s(&handle, running).await;
    let held: Vec<_> = api.busy().await.unwrap();
    assert!(held.is_empty(), "{held:?}");
    assert_eq!(api.queue(q).await.unwrap().size, 0);
}

/// `shard_by_queue`: a group's cap and rate, kept on the queue's master.
/// Group "capped" (its jobs declare at most 2 running) never runs more
/// than 2 at once while group "free" beside it runs 4 (the worker's
/// slots); group "rated" (2 starts a second, declared) starts no third job
/// within a second of the first; a lease a dead process left is swept, and
/// no lease, count or group key is left once drained.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sharded_by_queue_group_caps_and_rates_hold_on_the_queues_master() {
    let (cluster, queues, mut config) = sharded_cluster();
    let q = &queues[2];
    config.set_concurrency(4).unwrap();
    let client = Client::new(&config).unwrap();
    let api = Api::new(client.clone());
    let job = |group: &str, n: i64| Job::new("Nap").args([json!(group), json!(n)]).queue(q).group(group);
    api.pause_queue(q).await.unwrap();
    client
        .push_bulk((0..8).map(|n| job("capped", n).group_cap(2)).collect())
        .await
        .unwrap();
    client
        .push_bulk((0..8).map(|n| job("free", n)).collect())
        .await
        .unwrap();
    client
        .push_bulk((0..6).map(|n| job("rated", n).group_rate(2, 1.0)).collect())
        .await
        .unwrap();
    // A lease a dead process left on the capped group.
    let mut node = cluster.nodes[2].conn().await;
    let _: () = redis::pipe()
        .hset(format!("{{cogworker:{q}}}:group_leases"), "ghost 5", "capped")
        .hincr(format!("{{cogworker:{q}}}:group_running"), "capped", 1)
        .query_async(&mut node)
        .await
        .unwrap();

    // Per group: how many run now, the most at once, and each start's time.
    type Seen = Arc<Mutex<std::collections::HashMap<String, (usize, usize, Vec<f64>)>>>;
    let seen: Seen = Arc::default();
    let s = seen.clone();
    let worker = Worker::builder(config)
        .register("Nap", move |job| {
            let s = s.clone();
            async move {
                let group = job.args_slice()[0].as_str().unwrap().to_string();
                {
                    let mut seen = s.lock().unwrap();
                    let (now, most, starts) = seen.entry(group.clone()).or_default();
                    *now += 1;
                    *most = (*most).max(*now);
                    starts.push(cogworker::now());
                }
                tokio::time::sleep(Duration::from_millis(100)).await;
                s.lock().unwrap().get_mut(&group).unwrap().0 -= 1;
                Ok(())
            }
        })
        .build()
        .unwrap();
    let handle = worker.handle();
    let running = tokio::spawn(worker.run());
    let (n, leases) = (node.clone(), format!("{{cogworker:{q}}}:group_leases"));
    wait_until(
        "the dead process's lease is swept",
        Duration::from_secs(20),
        move || {
            let (mut n, leases) = (n.clone(), leases.clone());
            async move { !n.hexists::<_, _, bool>(&leases, "ghost 5").await.unwrap() }
        },
    )
    .await;
    api.unpause_queue(q).await.unwrap();
    let s = seen.clone();
    wait_until("all 22 jobs ran", Duration::from_secs(30), move || {
        let s = s.clone();
        async move {
            let seen = s.lock().unwrap();
            seen.values().map(|(now, _, starts)| starts.len() - now).sum::<usize>() == 22
        }
    })
    .await;
    stop_within_20s(&handle, running).await;
    let seen = seen.lock().unwrap().clone();
    assert_eq!(seen["capped"].1, 2, "the capped group at most 2 at once: {seen:?}");
    assert!(seen["free"].1 > 2, "the free group uses the slots: {seen:?}");
    let mut starts = seen["rated"].2.clone();
    starts.sort_by(f64::total_cmp);
    for pair in starts.windows(3) {
        assert!(pair[2] - pair[0] >= 0.9, "no third start within a second: {starts:?}");
    }
    let left: Vec<String> = node.keys(format!("{{cogworker:{q}}}:group*")).await.unwrap();
    let leases: usize = node.hlen(format!("{{cogworker:{q}}}:group_leases")).await.unwrap();
    assert_eq!(leases, 0, "every lease ended");
    assert!(
        left.iter().all(|key| key.ends_with("group_rate rated")),
        "no group key left but the rate's window: {left:?}"
    );
}

/// `shard_by_queue`: a debounce and a throttle keep their key's state on
/// the namespace's slot and hand their job over to its queue's. 50 pushes
/// of one debounced key in a burst run once, with the last push's args; of
/// 5 pushes of a key throttled to one run a minute with the rest dropped,
/// one runs; 3 pushes of a key throttled with the rest delayed all run.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sharded_by_queue_debounce_and_throttle_hand_their_jobs_over() {
    let (_cluster, queues, config) = sharded_cluster();
    let client = Client::new(&config).unwrap();
    let step = |n: i64, q: usize| Job::new("Step").args([json!(n)]).queue(&queues[q]);
    let mut jids = std::collections::HashSet::new();
    for n in 0..50 {
        jids.insert(
            client
                .push(step(n, 0).key("d").debounce(0.3, None))
                .await
                .unwrap()
                .unwrap(),
        );
    }
    assert_eq!(jids.len(), 1, "one burst, one jid");
    let mut pushed = 0;
    for n in 100..105 {
        let drop = step(n, 1).key("t").throttle(60.0, true);
        pushed += usize::from(client.push(drop).await.unwrap().is_some());
    }
    assert_eq!(pushed, 1, "the rest dropped");
    for n in 200..203 {
        client
            .push(step(n, 2).key("u").throttle(0.3, false))
            .await
            .unwrap()
            .unwrap();
    }
    let (worker, ran) = recording_worker(config, Duration::ZERO);
    let handle = worker.handle();
    let running = tokio::spawn(worker.run());
    wait_ran(&ran, 5).await;
    tokio::time::sleep(Duration::from_millis(500)).await;
    stop_within_20s(&handle, running).await;
    let mut ran = ran.lock().unwrap().clone();
    ran.sort();
    assert_eq!(ran, [49, 100, 200, 201, 202]);
}

/// What each handler of [`batch_worker`] ran with: (class, args).
type Ran = Arc<Mutex<Vec<(String, Vec<serde_json::Value>)>>>;

fn ran_with(ran: &Ran, class: &str) -> Vec<Vec<serde_json::Value>> {
    ran.lock()
        .unwrap()
        .iter()
        .filter(|(c, _)| c == class)
        .map(|(_, args)| args.clone())
        .collect()
}

/// `Count`, `Done` and `Never` record their args; `Add` returns the sum of
/// its numbers; `Flaky` fails its first attempt (retry in 0.2 s).
fn batch_worker(config: cogworker::Config) -> (Worker, Ran) {
    let ran: Ran = Arc::default();
    let recording = |class: &'static str| {
        let ran = ran.clone();
        move |job: Job| {
            ran.lock().unwrap().push((class.to_string(), job.args_slice().to_vec()));
            async { Ok(()) }
        }
    };
    let (adds, flaky) = (ran.clone(), Arc::new(AtomicUsize::new(0)));
    let worker = Worker::builder(config)
        .register("Count", recording("Count"))
        .register("Done", recording("Done"))
        .register("Never", recording("Never"))
        .register_returning("Add", move |job| {
            adds.lock()
                .unwrap()
                .push(("Add".to_string(), job.args_slice().to_vec()));
            async move {
                Ok(json!(job
                    .args_slice()
                    .iter()
                    .filter_map(serde_json::Value::as_f64)
                    .sum::<f64>()))
            }
        })
        .register("Flaky", move |_job| {
            let first = flaky.fetch_add(1, Ordering::SeqCst) == 0;
            async move {
                match first {
                    true => Err(Failure::new("E", "first attempt fails")),
                    false => Ok(()),
                }
            }
        })
        .retry_in("Flaky", |_count, _job| Some(0.2))
        .build()
        .unwrap();
    (worker, ran)
}

/// Stops the worker of `handle`, whose run is `running`: it ends well,
/// within 20 s.
async fn stop_within_20s(handle: &cogworker::WorkerHandle, running: tokio::task::JoinHandle<cogworker::Result<()>>) {
    handle.stop();
    tokio::time::timeout(Duration::from_secs(20), running)
        .await
        .unwrap()
        .unwrap()
        .unwrap();
}

/// A three-master cluster, a queue on each, and a config sharded by
/// queue serving them.
fn sharded_cluster() -> (Cluster, Vec<String>, cogworker::Config) {
    let cluster = Cluster::start();
    let queues = cluster.queue_per_master();
    let mut config = cluster.config();
    config.set_shard_by_queue(true).set_queues(&queues).unwrap();
    (cluster, queues, config)
}

/// The worker of the scenarios: `Count` counts its runs, `Flaky` fails its
/// first attempt (retry in 0.5 s), `Dies` always fails, `Never` counts runs
/// that must not happen; a periodic `Tick` every second onto queue `ticks`,
/// which it does not serve. Returns it with the three counters.
fn scenario_worker(config: cogworker::Config) -> (Worker, Arc<AtomicUsize>, Arc<AtomicUsize>, Arc<AtomicUsize>) {
    let counter = || Arc::new(AtomicUsize::new(0));
    let (ran, flaky, never) = (counter(), counter(), counter());
    let counting = |counter: &Arc<AtomicUsize>| {
        let counter = counter.clone();
        move |_job| {
            let counter = counter.clone();
            async move {
                counter.fetch_add(1, Ordering::SeqCst);
                Ok(())
            }
        }
    };
    let flaky_count = flaky.clone();
    let worker = Worker::builder(config)
        .register("Count", counting(&ran))
        .register("Never", counting(&never))
        .register("Flaky", move |_job| {
            let flaky = flaky_count.clone();
            async move {
                if flaky.fetch_add(1, Ordering::SeqCst) == 0 {
                    Err(Failure::new("E", "first attempt fails"))
                } else {
                    Ok(())
                }
            }
        })
        .retry_in("Flaky", |_count, _job| Some(0.5))
        .register("Dies", |_job| async { Err(Failure::new("E", "always")) })
        .periodic(Periodic::new("* * * * * *", "Tick").unwrap().queue("ticks").unwrap())
        .build()
        .unwrap();
    (worker, ran, flaky, never)
}

/// Waits for the scenarios' outcomes: `count` Count runs, Flaky's success
/// on its retry, Dies in dead, two ticks queued; and no unique lock left.
async fn scenario_outcomes(api: &Api, ran: &Arc<AtomicUsize>, flaky: &Arc<AtomicUsize>, count: usize) {
    let r = ran.clone();
    wait_until("every Count job ran", Duration::from_secs(20), move || {
        let r = r.clone();
        async move { r.load(Ordering::SeqCst) == count }
    })
    .await;
    let f = flaky.clone();
    wait_until("Flaky succeeded on its retry", Duration::from_secs(20), move || {
        let f = f.clone();
        async move { f.load(Ordering::SeqCst) == 2 }
    })
    .await;
    let a = api.clone();
    wait_until("Dies is dead and ticks fired", Duration::from_secs(20), move || {
        let a = a.clone();
        async move { a.set_size(JobSet::Dead).await.unwrap() == 1 && a.queue("ticks").await.unwrap().size >= 2 }
    })
    .await;
    assert!(api.unique_locks(10).await.unwrap().is_empty(), "released after the run");
}
