//! Periodic jobs across a fleet of real worker processes: each slot fires
//! exactly once, `until_executed` never overlaps itself (also across a
//! `kill -9` and recovery), catch-up after the fleet was down, a failed push
//! loses no slot, and run locks change only for their owner.

mod common;

use cogworker::{Job, Periodic, Worker};
use common::*;
use redis::AsyncCommands;
use serde_json::{json, Value};
use std::collections::{BTreeSet, HashSet};
use std::process::Child;
use std::time::Duration;

const NS: &str = "cogworker";

/// Worker processes stopped (TERM, then awaited) when the test ends.
struct Fleet(Vec<Child>);

impl Fleet {
    fn stop_all(&mut self) {
        for child in &self.0 {
            send_signal(child, 15);
        }
        for child in &mut self.0 {
            assert!(wait_exit(child, Duration::from_secs(20)).success());
        }
        self.0.clear();
    }
}

impl Drop for Fleet {
    fn drop(&mut self) {
        for child in &mut self.0 {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

fn entries_env(entries: &[Value]) -> String {
    Value::Array(entries.to_vec()).to_string()
}

fn pjid(entry: &Value) -> String {
    Periodic::from_json(&entry.to_string()).unwrap().pjid()
}

/// The `periodic_slot` of every job on `queue`, in push order, per pjid.
async fn slots_on(conn: &mut redis::aio::MultiplexedConnection, queue: &str, pjid: &str) -> Vec<i64> {
    let raw: Vec<Vec<u8>> = conn.lrange(format!("{NS}:queue:{queue}"), 0, -1).await.unwrap();
    let mut slots: Vec<i64> = raw
        .iter()
        .map(|r| Job::parse(r).unwrap())
        .filter(|job| job.str_field("periodic_pjid") == Some(pjid))
        .map(|job| job.get("periodic_slot").and_then(Value::as_i64).unwrap())
        .collect();
    slots.reverse();
    slots
}

async fn wait_slots(conn: &redis::aio::MultiplexedConnection, queue: &str, pjid: &str, count: usize) {
    let (c, queue, pjid) = (conn.clone(), queue.to_string(), pjid.to_string());
    wait_until(&format!("{count} slots fired"), Duration::from_secs(40), move || {
        let (mut c, queue, pjid) = (c.clone(), queue.clone(), pjid.clone());
        async move { slots_on(&mut c, &queue, &pjid).await.len() >= count }
    })
    .await;
}

/// No slot twice, and none missing between the first and the last.
fn assert_each_slot_once(slots: &[i64]) {
    let distinct: BTreeSet<i64> = slots.iter().copied().collect();
    assert_eq!(distinct.len(), slots.len(), "a slot fired twice: {slots:?}");
    let (first, last) = (*distinct.first().unwrap(), *distinct.last().unwrap());
    assert_eq!((last - first + 1) as usize, slots.len(), "a slot was missed: {slots:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn three_processes_fire_each_slot_exactly_once() {
    let redis = TestRedis::start();
    let mut conn = redis.conn().await;
    // Jobs land on `ticks`, which no worker takes: the queue is the record.
    let entry = json!({"cron": "* * * * * *", "class": "Tick", "queue": "ticks", "args": [1]});
    let env = entries_env(std::slice::from_ref(&entry));
    let mut fleet = Fleet(
        (0..3)
            .map(|_| spawn_worker(&redis.url(), NS, &[("TEST_PERIODIC", env.as_str())]))
            .collect(),
    );
    let pjid = pjid(&entry);
    wait_slots(&conn, "ticks", &pjid, 10).await;
    fleet.stop_all();
    let slots = slots_on(&mut conn, "ticks", &pjid).await;
    assert!(slots.len() >= 10);
    assert_each_slot_once(&slots);
    let last: i64 = conn.get(format!("{NS}:periodic:last_slot:{pjid}")).await.unwrap();
    assert_eq!(last, *slots.last().unwrap());
}

/// Replays `start`/`end` events: a start while another jid's run is open is
/// an overlap. A run whose process was killed stays open until its
/// recovered copy (same jid) ends.
fn assert_no_overlap(events: &[String]) -> usize {
    let mut open: HashSet<String> = HashSet::new();
    let mut finished = 0;
    for event in events {
        let mut parts = event.split(' ');
        let (kind, jid) = (parts.next().unwrap(), parts.next().unwrap().to_string());
        match kind {
            "start" => {
                let others: Vec<&String> = open.iter().filter(|j| **j != jid).collect();
                assert!(others.is_empty(), "{jid} started while {others:?} ran: {events:#?}");
                open.insert(jid);
            }
            _ => {
                open.remove(&jid);
                finished += 1;
            }
        }
    }
    finished
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn until_executed_never_overlaps_even_across_kill_9_and_recovery() {
    let redis = TestRedis::start();
    let mut conn = redis.conn().await;
    // Each run takes 2.5 s on a 1 s schedule.
    let entry = json!({"cron": "* * * * * *", "class": "Overlap", "args": [2.5], "unique": "until_executed"});
    let env = entries_env(&[entry]);
    let settings = [
        ("TEST_PERIODIC", env.as_str()),
        ("TEST_ORPHAN_THRESHOLD", "2"),
        ("TEST_ORPHAN_CHECK", "0.5"),
    ];
    let mut fleet = Fleet(vec![
        spawn_worker(&redis.url(), NS, &settings),
        spawn_worker(&redis.url(), NS, &settings),
    ]);
    let events_key = format!("{NS}:test:events");
    let c = conn.clone();
    let key = events_key.clone();
    wait_until("a run started", Duration::from_secs(20), move || {
        let (mut c, key) = (c.clone(), key.clone());
        async move { c.llen::<_, usize>(&key).await.unwrap() >= 1 }
    })
    .await;
    // Kill -9 the process running it, mid-run; start a replacement.
    let first: String = conn.lindex(&events_key, 0).await.unwrap();
    let killed_jid = first.split(' ').nth(1).unwrap().to_string();
    let pid: u32 = first.split(' ').nth(2).unwrap().parse().unwrap();
    let index = fleet.0.iter().position(|c| c.id() == pid).unwrap();
    kill9(&mut fleet.0[index]);
    fleet.0[index] = spawn_worker(&redis.url(), NS, &settings);

    // The killed run is recovered and finishes, then two more runs do.
    let c = conn.clone();
    let (key, jid) = (events_key.clone(), killed_jid.clone());
    wait_until(
        "the recovered run and two more finished",
        Duration::from_secs(40),
        move || {
            let (mut c, key, jid) = (c.clone(), key.clone(), jid.clone());
            async move {
                let events: Vec<String> = c.lrange(&key, 0, -1).await.unwrap();
                let recovered_end = events.iter().position(|e| e.starts_with(&format!("end {jid} ")));
                recovered_end.is_some_and(|i| events[i + 1..].iter().filter(|e| e.starts_with("end ")).count() >= 2)
            }
        },
    )
    .await;
    fleet.stop_all();
    let events: Vec<String> = conn.lrange(&events_key, 0, -1).await.unwrap();
    let finished = assert_no_overlap(&events);
    assert!(finished >= 3, "{events:#?}");
    let starts = events
        .iter()
        .filter(|e| e.starts_with(&format!("start {killed_jid} ")))
        .count();
    assert_eq!(starts, 2, "the killed run ran again once, after recovery: {events:#?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn catch_up_after_the_whole_fleet_was_down() {
    let redis = TestRedis::start();
    let mut conn = redis.conn().await;
    let every = json!({"cron": "* * * * * *", "class": "Tick", "queue": "ticks", "args": ["all"]});
    let latest = json!({"cron": "* * * * * *", "class": "Tick", "queue": "ticks", "args": ["latest"]});
    let (every_id, latest_id) = (pjid(&every), pjid(&latest));

    // Two fleets tick the same two entries in the two modes: `every` is
    // registered only where catch-up is `all`, `latest` only where it is
    // `latest` (the mode is a process setting).
    let all_env = entries_env(std::slice::from_ref(&every));
    let latest_env = entries_env(std::slice::from_ref(&latest));
    let start =
        |env: &str, mode: &str| spawn_worker(&redis.url(), NS, &[("TEST_PERIODIC", env), ("TEST_CATCH_UP", mode)]);
    let mut fleet = Fleet(vec![start(&all_env, "all"), start(&latest_env, "latest")]);
    wait_slots(&conn, "ticks", &every_id, 3).await;
    wait_slots(&conn, "ticks", &latest_id, 3).await;
    fleet.stop_all();

    // Down for 4 s: at least 3 slots pass with nobody ticking.
    let down_from: i64 = *slots_on(&mut conn, "ticks", &every_id).await.last().unwrap();
    tokio::time::sleep(Duration::from_secs(4)).await;
    let mut fleet = Fleet(vec![
        start(&all_env, "all"),
        start(&all_env, "all"),
        start(&latest_env, "latest"),
    ]);
    let before = slots_on(&mut conn, "ticks", &every_id).await.len();
    wait_slots(&conn, "ticks", &every_id, before + 6).await;
    let latest_before = slots_on(&mut conn, "ticks", &latest_id).await.len();
    wait_slots(&conn, "ticks", &latest_id, latest_before + 2).await;
    fleet.stop_all();

    let every_slots = slots_on(&mut conn, "ticks", &every_id).await;
    assert_each_slot_once(&every_slots);
    assert!(every_slots.last().unwrap() - down_from >= 5, "{every_slots:?}");
    // `latest` fired no missed slot but the newest: a gap of 3+ seconds.
    let latest_slots = slots_on(&mut conn, "ticks", &latest_id).await;
    let distinct: BTreeSet<i64> = latest_slots.iter().copied().collect();
    assert_eq!(distinct.len(), latest_slots.len(), "{latest_slots:?}");
    let gap = latest_slots.windows(2).map(|w| w[1] - w[0]).max().unwrap();
    assert!(gap >= 3, "no gap over the downtime: {latest_slots:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_push_that_fails_loses_no_slot() {
    let redis = TestRedis::start();
    let mut conn = redis.conn().await;
    let entry = json!({"cron": "* * * * * *", "class": "Tick", "queue": "ticks"});
    let id = pjid(&entry);
    let env = entries_env(std::slice::from_ref(&entry));
    let mut fleet = Fleet(vec![spawn_worker(
        &redis.url(),
        NS,
        &[("TEST_PERIODIC", env.as_str()), ("TEST_CATCH_UP", "all")],
    )]);
    wait_slots(&conn, "ticks", &id, 2).await;
    let fired = slots_on(&mut conn, "ticks", &id).await;

    // Make every push fail: the queue key becomes a string.
    let _: () = redis::pipe()
        .atomic()
        .del(format!("{NS}:queue:ticks"))
        .set(format!("{NS}:queue:ticks"), "not a list")
        .query_async(&mut conn)
        .await
        .unwrap();
    let claimed_before: i64 = conn.get(format!("{NS}:periodic:last_slot:{id}")).await.unwrap();
    let c = conn.clone();
    wait_until("three claims failed", Duration::from_secs(20), move || {
        let mut c = c.clone();
        async move { wrongtype_errors(&mut c).await >= 3 }
    })
    .await;
    let claimed: i64 = conn.get(format!("{NS}:periodic:last_slot:{id}")).await.unwrap();
    assert_eq!(claimed, claimed_before, "a failed push left its slot claimed");

    // Writable again: the slots missed meanwhile fire.
    let _: () = conn.del(format!("{NS}:queue:ticks")).await.unwrap();
    wait_slots(&conn, "ticks", &id, 4).await;
    fleet.stop_all();
    let mut slots = fired.clone();
    slots.extend(slots_on(&mut conn, "ticks", &id).await);
    assert_each_slot_once(&slots);
}

async fn wrongtype_errors(conn: &mut redis::aio::MultiplexedConnection) -> u64 {
    let info: String = redis::cmd("INFO").arg("errorstats").query_async(conn).await.unwrap();
    info.lines()
        .find_map(|l| l.strip_prefix("errorstat_WRONGTYPE:count="))
        .map_or(0, |n| n.trim().parse().unwrap_or(0))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn run_locks_change_only_for_their_owner() {
    let redis = TestRedis::start();
    let mut conn = redis.conn().await;
    let mut config = redis.config();
    config.set_unique_lock_ttl(100.5).unwrap();
    let client = cogworker::Client::new(&config).unwrap();
    let lock = |pjid: &str| format!("{NS}:periodic:running:{pjid}");
    let periodic_job = |pjid: &str, jid: &str, class: &str| {
        Job::new(class)
            .jid(jid)
            .retry(cogworker::Retry::Max(1))
            .field("periodic_pjid", json!(pjid))
            .field("periodic_until_executed", json!(true))
    };
    // p-old: a newer run owns the lock; p-own: the job owns it;
    // p-retry: the job owns it and fails once.
    let _: () = conn.set(lock("p-old"), "newer-jid").await.unwrap();
    let _: () = conn.set(lock("p-own"), "own-jid").await.unwrap();
    let _: () = conn.set(lock("p-retry"), "retry-jid").await.unwrap();
    let _: () = conn.set(lock("p-dead-old"), "newer-jid").await.unwrap();

    let worker = Worker::builder(config)
        .register("Ok", |_job| async { Ok(()) })
        .register("Boom", |_job| async { Err(cogworker::Failure::new("E", "boom")) })
        .retry_in("Boom", |_count, _job| Some(30.0))
        .build()
        .unwrap();
    let handle = worker.handle();
    let running = tokio::spawn(worker.run());
    client
        .push_bulk(vec![
            periodic_job("p-old", "older-jid", "Ok"),
            periodic_job("p-own", "own-jid", "Ok"),
            periodic_job("p-retry", "retry-jid", "Boom"),
            periodic_job("p-dead-old", "older-jid-2", "Boom").retry(cogworker::Retry::Max(0)),
        ])
        .await
        .unwrap();
    let c = conn.clone();
    wait_until("all four settled", Duration::from_secs(10), move || {
        let mut c = c.clone();
        async move {
            let processed: Option<i64> = c.get(format!("{NS}:stat:processed")).await.unwrap();
            let failed: Option<i64> = c.get(format!("{NS}:stat:failed")).await.unwrap();
            processed == Some(2) && failed == Some(2)
        }
    })
    .await;
    handle.stop();
    running.await.unwrap().unwrap();

    let owner = |c: &mut redis::aio::MultiplexedConnection, key: String| {
        let mut c = c.clone();
        async move { c.get::<_, Option<String>>(key).await.unwrap() }
    };
    assert_eq!(owner(&mut conn, lock("p-old")).await.as_deref(), Some("newer-jid"));
    assert_eq!(owner(&mut conn, lock("p-own")).await, None, "released on success");
    assert_eq!(owner(&mut conn, lock("p-dead-old")).await.as_deref(), Some("newer-jid"));
    // Retried: kept, extended over the 30 s delay plus the queued TTL (101 s).
    assert_eq!(owner(&mut conn, lock("p-retry")).await.as_deref(), Some("retry-jid"));
    let ttl: i64 = conn.ttl(lock("p-retry")).await.unwrap();
    assert!((125..=131).contains(&ttl), "ttl {ttl}");
}

/// The decision documented in docs/internals.md ("Periodic jobs"): a slot
/// that comes while the previous `until_executed` run still holds its lock
/// is consumed (`last_slot` moves past it) and skipped, never fired late
/// once the run ends. The next run is the next slot after the lock is gone.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_slot_skipped_for_a_held_run_lock_is_consumed_not_fired_late() {
    let redis = TestRedis::start();
    let config = redis.config();
    let entry = Periodic::new("* * * * * *", "Slow").unwrap().until_executed();
    let pjid = entry.pjid();
    let runs = std::sync::Arc::new(std::sync::Mutex::new(Vec::<(i64, f64, f64)>::new()));
    let log = runs.clone();
    let worker = Worker::builder(config)
        .register("Slow", move |job| {
            let log = log.clone();
            async move {
                let slot = job.get("periodic_slot").and_then(Value::as_i64).unwrap();
                let started = cogworker::now();
                tokio::time::sleep(Duration::from_millis(2500)).await;
                log.lock().unwrap().push((slot, started, cogworker::now()));
                Ok(())
            }
        })
        .periodic(entry)
        .build()
        .unwrap();
    let handle = worker.handle();
    let running = tokio::spawn(worker.run());
    let mut conn = redis.conn().await;
    // While the first run holds the lock, later slots are claimed (consumed).
    let runs2 = runs.clone();
    wait_until("two runs finished", Duration::from_secs(20), move || {
        let n = runs2.lock().unwrap().len();
        async move { n >= 2 }
    })
    .await;
    let last_slot: i64 = conn.get(format!("{NS}:periodic:last_slot:{pjid}")).await.unwrap();
    handle.stop();
    running.await.unwrap().unwrap();
    let runs = runs.lock().unwrap().clone();
    let (first_slot, _, first_end) = runs[0];
    let (second_slot, second_start, _) = runs[1];
    assert!(
        second_slot >= first_slot + 3,
        "the slots during the first run were skipped: {runs:?}"
    );
    assert!(second_start >= first_end, "never overlapping: {runs:?}");
    assert!(
        (second_slot as f64) >= first_end.floor(),
        "the second run is a slot after the first ended, not a skipped one fired late: {runs:?}"
    );
    assert!(last_slot >= second_slot, "last_slot moved on through the skipped slots");
}
