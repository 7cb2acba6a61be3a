//! Rate limiters (issue #30, part 1): each kind holds its limit across
//! many concurrent holders, says when capacity comes back, frees the
//! leases of a holder that died, and survives a flushed Redis.

mod common;

use cogworker::{Attempt, Client, Error, Limit};
use common::*;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

fn client(redis: &TestRedis) -> Client {
    Client::new(&redis.config()).unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_concurrent_limit_never_has_more_holders_than_it_allows() {
    let redis = TestRedis::start();
    let limiter = client(&redis)
        .limiter(Limit::concurrent("erp", 5).unwrap())
        .await
        .unwrap();
    let (running, most, ran) = (
        Arc::new(AtomicUsize::new(0)),
        Arc::new(AtomicUsize::new(0)),
        Arc::new(AtomicUsize::new(0)),
    );
    let mut tasks = Vec::new();
    for _ in 0..30 {
        let (limiter, running, most, ran) = (limiter.clone(), running.clone(), most.clone(), ran.clone());
        tasks.push(tokio::spawn(async move {
            limiter
                .within_limit(Duration::from_secs(20), || async {
                    let now = running.fetch_add(1, Ordering::SeqCst) + 1;
                    most.fetch_max(now, Ordering::SeqCst);
                    tokio::time::sleep(Duration::from_millis(40)).await;
                    running.fetch_sub(1, Ordering::SeqCst);
                    ran.fetch_add(1, Ordering::SeqCst);
                })
                .await
        }));
    }
    for task in tasks {
        task.await.unwrap().unwrap();
    }
    assert_eq!(ran.load(Ordering::SeqCst), 30, "every body ran");
    assert_eq!(
        most.load(Ordering::SeqCst),
        5,
        "never more than 5 at once, and 5 were reached"
    );
    let mut conn = redis.conn().await;
    let leases: i64 = redis::cmd("ZCARD")
        .arg("cogworker:limiter_state:concurrent:erp")
        .query_async(&mut conn)
        .await
        .unwrap();
    assert_eq!(leases, 0, "every lease was released");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn over_the_limit_a_wait_ends_in_over_limit_naming_the_limiter_and_counts() {
    let redis = TestRedis::start();
    let limiter = client(&redis)
        .limiter(Limit::concurrent("one", 1).unwrap())
        .await
        .unwrap();
    let held = limiter.acquire(Duration::ZERO).await.unwrap();
    let started = Instant::now();
    let error = limiter.acquire(Duration::from_millis(150)).await.unwrap_err();
    assert!(
        started.elapsed() >= Duration::from_millis(150),
        "it waited the time it was given"
    );
    assert!(
        matches!(&error, Error::OverLimit { limiter, .. } if limiter == "one"),
        "{error}"
    );
    assert!(error.to_string().contains("concurrent 1 at once"), "{error}");
    let mut ran = false;
    let refused = limiter
        .within_limit(Duration::ZERO, || async {
            ran = true;
        })
        .await;
    assert!(
        matches!(refused, Err(Error::OverLimit { .. })) && !ran,
        "the body never ran"
    );
    held.release().await;
    assert!(
        matches!(limiter.try_acquire().await.unwrap(), Attempt::Taken(_)),
        "released, the place is free"
    );
    let over = limiter_refusals(&redis, "one").await;
    assert!(over >= 2, "each refusal is counted: {over}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_lease_whose_holder_died_is_freed_after_its_ttl_and_a_live_one_is_renewed() {
    let redis = TestRedis::start();
    let limit = Limit::concurrent("ttl", 1)
        .unwrap()
        .with_lease_ttl(Duration::from_secs(1))
        .unwrap();
    let config = redis.config();
    // A holder on a runtime of its own that then vanishes: its renewals
    // stop and nothing releases the lease (as a process killed with -9).
    let dead_holder_limit = limit.clone();
    std::thread::spawn(move || {
        let runtime = tokio::runtime::Runtime::new().unwrap();
        runtime.block_on(async {
            let limiter = Client::new(&config).unwrap().limiter(dead_holder_limit).await.unwrap();
            std::mem::forget(limiter.acquire(Duration::ZERO).await.unwrap());
        });
        runtime.shutdown_background();
    })
    .join()
    .unwrap();
    let limiter = client(&redis).limiter(limit).await.unwrap();
    assert!(matches!(
        limiter.try_acquire().await.unwrap(),
        Attempt::Over { retry_in: None }
    ));
    let started = Instant::now();
    let lease = limiter.acquire(Duration::from_secs(5)).await.unwrap();
    let waited = started.elapsed();
    assert!(
        waited <= Duration::from_millis(1_500),
        "freed within its TTL: {waited:?}"
    );
    // This live holder keeps its place across several TTLs.
    tokio::time::sleep(Duration::from_millis(2_500)).await;
    assert!(
        matches!(limiter.try_acquire().await.unwrap(), Attempt::Over { .. }),
        "a renewed lease is still held"
    );
    lease.release().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_window_never_grants_more_than_its_limit_in_any_interval() {
    let redis = TestRedis::start();
    let limiter = client(&redis)
        .limiter(Limit::window("api", 10, Duration::from_millis(500)).unwrap())
        .await
        .unwrap();
    let grants = Arc::new(std::sync::Mutex::new(Vec::new()));
    let mut tasks = Vec::new();
    for _ in 0..4 {
        let (limiter, grants) = (limiter.clone(), grants.clone());
        tasks.push(tokio::spawn(async move {
            for _ in 0..8 {
                let lease = limiter.acquire(Duration::from_secs(10)).await.unwrap();
                grants.lock().unwrap().push(Instant::now());
                lease.release().await;
            }
        }));
    }
    for task in tasks {
        task.await.unwrap();
    }
    let mut grants = grants.lock().unwrap().clone();
    grants.sort();
    assert_eq!(grants.len(), 32);
    // No 500 ms span (less a margin for the time a grant takes to come
    // back from Redis) holds more than 10 grants.
    let span = Duration::from_millis(480);
    for (i, first) in grants.iter().enumerate() {
        let within = grants[i..]
            .iter()
            .take_while(|t| t.duration_since(*first) < span)
            .count();
        assert!(within <= 10, "{within} grants within {span:?}");
    }
    let total = grants.last().unwrap().duration_since(grants[0]);
    assert!(
        total >= Duration::from_millis(1_000),
        "32 grants at 10 per 500 ms take over 1 s: {total:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bucket_and_leaky_say_when_capacity_comes_back() {
    let redis = TestRedis::start();
    let client = client(&redis);
    let bucket = client
        .limiter(Limit::bucket("per-second", 3, Duration::from_secs(1)).unwrap())
        .await
        .unwrap();
    // Started just after a second begins, so all four tries fall in one bucket.
    let wait_for_second = 1.0 - cogworker::now().fract();
    tokio::time::sleep(Duration::from_secs_f64(wait_for_second + 0.02)).await;
    for _ in 0..3 {
        assert!(matches!(bucket.try_acquire().await.unwrap(), Attempt::Taken(_)));
    }
    match bucket.try_acquire().await.unwrap() {
        Attempt::Over { retry_in: Some(back) } => assert!(back <= Duration::from_secs(1), "{back:?}"),
        other => panic!("the fourth in a second is over: {other:?}"),
    }

    let leaky = client
        .limiter(Limit::leaky("smooth", 5, Duration::from_secs(1)).unwrap())
        .await
        .unwrap();
    for _ in 0..5 {
        assert!(
            matches!(leaky.try_acquire().await.unwrap(), Attempt::Taken(_)),
            "a burst of 5"
        );
    }
    match leaky.try_acquire().await.unwrap() {
        Attempt::Over { retry_in: Some(back) } => {
            assert!(
                back <= Duration::from_millis(210),
                "one drips out every 200 ms: {back:?}"
            )
        }
        other => panic!("the sixth is over: {other:?}"),
    }
    let started = Instant::now();
    leaky.acquire(Duration::from_secs(2)).await.unwrap();
    assert!(
        started.elapsed() <= Duration::from_millis(400),
        "{:?}",
        started.elapsed()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_flushed_definition_is_written_again_and_a_new_kind_starts_afresh() {
    let redis = TestRedis::start();
    let client = client(&redis);
    let limiter = client.limiter(Limit::concurrent("again", 1).unwrap()).await.unwrap();
    let mut conn = redis.conn().await;
    let _: () = redis::cmd("FLUSHALL").query_async(&mut conn).await.unwrap();
    let lease = limiter
        .acquire(Duration::ZERO)
        .await
        .expect("defined again on first use");
    std::mem::drop(lease);
    // Redefined under the same name as another kind: the old state goes.
    let window = client
        .limiter(Limit::window("again", 2, Duration::from_secs(60)).unwrap())
        .await
        .unwrap();
    let kind: String = redis::cmd("HGET")
        .arg("cogworker:limiter:again")
        .arg("kind")
        .query_async(&mut conn)
        .await
        .unwrap();
    assert_eq!(kind, "window");
    assert!(matches!(window.try_acquire().await.unwrap(), Attempt::Taken(_)));
    assert!(matches!(window.try_acquire().await.unwrap(), Attempt::Taken(_)));
    assert!(matches!(window.try_acquire().await.unwrap(), Attempt::Over { .. }));
    let names: Vec<String> = redis::cmd("SMEMBERS")
        .arg("cogworker:limiters")
        .query_async(&mut conn)
        .await
        .unwrap();
    assert_eq!(names, vec!["again".to_string()]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_api_lists_every_limiter_with_what_it_gave_out_and_refused() {
    let redis = TestRedis::start();
    let client = client(&redis);
    let api = cogworker::Api::new(client.clone());
    assert!(api.limiters().await.unwrap().is_empty());
    let erp = client.limiter(Limit::concurrent("erp", 2).unwrap()).await.unwrap();
    let minute = Duration::from_secs(60);
    let window = client
        .limiter(Limit::window("window", 3, minute).unwrap())
        .await
        .unwrap();
    let bucket = client
        .limiter(Limit::bucket("bucket", 3, Duration::from_secs(3600)).unwrap())
        .await
        .unwrap();
    let leaky = client.limiter(Limit::leaky("leaky", 4, minute).unwrap()).await.unwrap();
    let _held = [
        erp.acquire(Duration::ZERO).await.unwrap(),
        erp.acquire(Duration::ZERO).await.unwrap(),
    ];
    assert!(matches!(erp.try_acquire().await.unwrap(), Attempt::Over { .. }));
    for _ in 0..2 {
        window.acquire(Duration::ZERO).await.unwrap();
        leaky.acquire(Duration::ZERO).await.unwrap();
    }
    bucket.acquire(Duration::ZERO).await.unwrap();
    let listed: Vec<(String, String, u64, Option<f64>, u64, u64)> = api
        .limiters()
        .await
        .unwrap()
        .into_iter()
        .map(|l| (l.name, l.kind, l.limit, l.interval, l.in_use, l.refused))
        .collect();
    assert_eq!(
        listed,
        vec![
            ("bucket".into(), "bucket".into(), 3, Some(3600.0), 1, 0),
            ("erp".into(), "concurrent".into(), 2, None, 2, 1),
            ("leaky".into(), "leaky".into(), 4, Some(60.0), 2, 0),
            ("window".into(), "window".into(), 3, Some(60.0), 2, 0),
        ]
    );
}

/// Issue #44 items 8 and 9: a name with `:` never meets another limiter's
/// keys (the definition of `erp:state` was `erp`'s state, and acquiring
/// `erp` raised WRONGTYPE), and redefining a name as another kind, as two
/// releases of an app do during a rolling deploy, never releases the
/// leases held under it (4 holders once ran under a limit of 2).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn names_with_colons_keep_apart_and_a_redefinition_keeps_held_leases() {
    let redis = TestRedis::start();
    let client = client(&redis);
    let erp = client.limiter(Limit::concurrent("erp", 1).unwrap()).await.unwrap();
    let other = client
        .limiter(Limit::bucket("erp:state", 5, Duration::from_secs(3600)).unwrap())
        .await
        .unwrap();
    let held = erp
        .acquire(Duration::ZERO)
        .await
        .expect("its own state, not erp:state's definition");
    assert!(matches!(other.try_acquire().await.unwrap(), Attempt::Taken(_)));

    let window = client
        .limiter(Limit::window("erp", 10, Duration::from_secs(60)).unwrap())
        .await
        .unwrap();
    assert!(matches!(window.try_acquire().await.unwrap(), Attempt::Taken(_)));
    let again = client.limiter(Limit::concurrent("erp", 1).unwrap()).await.unwrap();
    assert!(
        matches!(again.try_acquire().await.unwrap(), Attempt::Over { .. }),
        "the lease held before the redefinitions still counts"
    );
    held.release().await;
    assert!(matches!(again.try_acquire().await.unwrap(), Attempt::Taken(_)));
}
