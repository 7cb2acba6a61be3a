//! The Web UI at the HTTP level, against a real Redis: every page renders,
//! every action does what it says (and nothing without a CSRF token from the
//! same origin), attacker-controlled text is escaped, basic auth when set,
//! and a 100,000-entry dead set pages by range query.

mod common;
mod web_common;

use axum::body::Body;
use axum::http::{header, Request, StatusCode};
use axum::Router;
use cogworker::web::{router, WebOptions};
use cogworker::{Api, Client, Failure, Job, JobSet, Lifecycle, Retry, Worker};
use common::*;
use serde_json::json;
use std::time::{Duration, Instant};
use web_common::*;

const NS: &str = "cogworker";
const XSS: &str = "<img src=x onerror=alert(1)><script>alert(2)</script>";

/// Seeds: three dead jobs (one with an XSS payload in its args and error),
/// one retrying, one scheduled, jobs on two queues.
async fn seed(redis: &TestRedis) -> (Client, Api) {
    let config = redis.config();
    let client = Client::new(&config).unwrap();
    let api = Api::new(client.clone());
    let worker = Worker::builder(config)
        .register("Boom", |job| async move {
            let arg = job
                .args_slice()
                .first()
                .and_then(|v| v.as_str())
                .unwrap_or("")
                .to_string();
            Err(Failure::new("XssError", format!("bad input {arg}"))
                .with_backtrace(vec![format!("handler.rs:1 {arg}"), "main.rs:2".into()]))
        })
        .retry_in("Boom", |_count, _job| Some(3600.0))
        .build()
        .unwrap();
    let handle = worker.handle();
    let running = tokio::spawn(worker.run());
    client
        .push_bulk(vec![
            Job::new("Boom").args([json!(XSS)]).retry(Retry::Max(0)),
            Job::new("Boom").args([json!("two")]).retry(Retry::Max(0)),
            Job::new("Boom").args([json!("three")]).retry(Retry::Max(0)),
            Job::new("Boom").args([json!("again")]).retry(Retry::Max(3)),
        ])
        .await
        .unwrap();
    let a = api.clone();
    wait_until("four failures filed", Duration::from_secs(10), move || {
        let a = a.clone();
        async move { a.stats().await.unwrap().failed == 4 }
    })
    .await;
    handle.stop();
    running.await.unwrap().unwrap();
    client.push(Job::new("Later").delay(3600.0)).await.unwrap();
    client
        .push(Job::new("Waiting").queue("mail").args([json!(XSS)]))
        .await
        .unwrap();
    client.push(Job::new("Waiting").queue("mail")).await.unwrap();
    client.push(Job::new("Urgent").queue("mail").priority(8)).await.unwrap();
    (client, api)
}

fn app(redis: &TestRedis, options: &WebOptions) -> Router {
    router(&redis.config(), options).unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_page_renders_with_strict_headers_and_escapes_job_data() {
    let redis = TestRedis::start();
    let (client, api) = seed(&redis).await;
    let app = app(&redis, &WebOptions::default());
    let dead = api.set_page(JobSet::Dead, 0, 10).await.unwrap();
    let xss_job = dead
        .iter()
        .find_map(|e| e.job().filter(|j| j.args_slice()[0] == json!(XSS)))
        .unwrap();
    let detail = format!("/sets/dead/job/{}", xss_job.jid_str());
    // A limiter whose name is markup, one place of its five taken.
    let limiter = client
        .limiter(cogworker::Limit::concurrent("<b>erp", 5).unwrap())
        .await
        .unwrap();
    let _lease = limiter.acquire(Duration::ZERO).await.unwrap();
    // A batch described in markup, with a job and a callback.
    let batch = client
        .open_batch(cogworker::Batch::new(XSS).on(cogworker::BatchEvent::Success, Job::new("Done")))
        .await
        .unwrap();
    batch.push(Job::new("Step")).await.unwrap();
    batch.close().await.unwrap();
    let batch_page = format!("/batches/{}", batch.bid());
    // A debounced key in markup.
    client
        .push(Job::new("Later").key(XSS).debounce(60.0, None))
        .await
        .unwrap();
    for path in [
        "/batches",
        batch_page.as_str(),
        "/",
        "/queues",
        "/queues/mail",
        "/busy",
        "/processes",
        "/sets/scheduled",
        "/sets/retry",
        "/sets/dead",
        detail.as_str(),
        "/history",
        "/periodic",
        "/limiters",
        "/flow",
    ] {
        let page = get(&app, path).await;
        assert_eq!(page.status, StatusCode::OK, "{path}: {}", page.body);
        let csp = page
            .headers
            .get(header::CONTENT_SECURITY_POLICY)
            .unwrap()
            .to_str()
            .unwrap();
        assert!(
            csp.contains("script-src 'self'") && !csp.contains("unsafe-inline"),
            "{csp}"
        );
        assert_eq!(page.headers.get(header::X_FRAME_OPTIONS).unwrap(), "DENY");
        // No inline script or style anywhere: only the two files.
        assert!(!page.body.contains("<script>"), "{path}");
        assert!(!page.body.contains("onerror=alert(1)>"), "{path}: unescaped payload");
        assert!(!page.body.contains("style="), "{path}");
    }
    // The payload is shown, as text.
    let page = get(&app, "/sets/dead").await;
    assert!(
        page.body.contains("&lt;img src=x onerror=alert(1)&gt;&lt;script&gt;"),
        "{}",
        page.body
    );
    let page = get(&app, &detail).await;
    assert!(page.body.contains("XssError"));
    assert!(page.body.contains("handler.rs:1 &lt;img"), "backtrace escaped");
    let page = get(&app, "/queues/mail").await;
    assert!(page.body.contains("&lt;img src=x"));
    // Every priority level's jobs, the highest first.
    assert!(page.body.contains("3 jobs"), "{}", page.body);
    let urgent = page.body.find("Urgent").unwrap();
    assert!(urgent < page.body.find("Waiting").unwrap(), "{}", page.body);
    let page = get(&app, "/limiters").await.body;
    assert!(page.contains("&lt;b&gt;erp") && page.contains("concurrent"), "{page}");
    let page = get(&app, "/flow").await.body;
    assert!(page.contains("&lt;img src=x") && page.contains("burst since"), "{page}");
    let page = get(&app, "/batches").await.body;
    assert!(page.contains("&lt;img src=x") && page.contains("0 / 1 (0%)"), "{page}");
    assert!(page.contains(&batch_page), "linked: {page}");
    let page = get(&app, &batch_page).await.body;
    assert!(page.contains("not yet") && page.contains("pending"), "{page}");
    assert!(page.contains("<td>Done</td>"), "the callback's class is shown: {page}");
    assert_eq!(get(&app, "/batches/nosuchbatch").await.status, StatusCode::NOT_FOUND);
    let json = get(&app, "/api/stats").await;
    assert!(json.body.contains("\"failed\":4"), "{}", json.body);
    assert!(json.body.contains("\"expired\":0"), "{}", json.body);
    assert!(
        get(&app, "/").await.body.contains("Expired"),
        "the front page counts expired jobs"
    );
    assert_eq!(get(&app, "/static/app.js").await.status, StatusCode::OK);
    assert_eq!(get(&app, "/sets/nothing").await.status, StatusCode::NOT_FOUND);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn set_actions_change_redis_and_need_a_csrf_token() {
    let redis = TestRedis::start();
    let (_client, api) = seed(&redis).await;
    let app = app(&redis, &WebOptions::default());
    let session = Session::open(&app).await;
    let mut conn = redis.conn().await;
    let key = |e: &cogworker::SetEntry| format!("{}|{}", e.score, e.job().unwrap().jid_str());
    let dead = api.set_page(JobSet::Dead, 0, 10).await.unwrap();
    assert_eq!(dead.len(), 3);

    // Refused: no token, a wrong token, another origin.
    let without = session
        .post_raw(
            "/sets/dead/actions",
            format!("action=retry&entry={}", url_encode(&key(&dead[0]))),
            None,
        )
        .await;
    assert_eq!(without.status, StatusCode::FORBIDDEN);
    let wrong = session
        .post_raw(
            "/sets/dead/actions",
            "action=delete_all&csrf=00000000000000000000000000000000".into(),
            None,
        )
        .await;
    assert_eq!(wrong.status, StatusCode::FORBIDDEN);
    let forged = session
        .post_raw(
            "/sets/dead/actions",
            format!("action=delete_all&csrf={}", session.token),
            Some("http://evil.example"),
        )
        .await;
    assert_eq!(forged.status, StatusCode::FORBIDDEN);
    assert_eq!(api.set_size(JobSet::Dead).await.unwrap(), 3, "nothing changed");

    // Retry one dead job: it moves to its queue.
    let page = session
        .post("/sets/dead/actions", &[("action", "retry"), ("entry", &key(&dead[0]))])
        .await;
    assert_eq!(page.status, StatusCode::SEE_OTHER);
    assert_eq!(page.headers.get(header::LOCATION).unwrap(), "/sets/dead");
    assert_eq!(api.set_size(JobSet::Dead).await.unwrap(), 2);
    assert_eq!(llen(&mut conn, &format!("{NS}:queue:default")).await, 1);

    // Delete two selected at once.
    let rest = api.set_page(JobSet::Dead, 0, 10).await.unwrap();
    let (k1, k2) = (key(&rest[0]), key(&rest[1]));
    session
        .post(
            "/sets/dead/actions",
            &[("action", "delete"), ("entry", &k1), ("entry", &k2)],
        )
        .await;
    assert_eq!(api.set_size(JobSet::Dead).await.unwrap(), 0);

    // Kill the retrying job: retry → dead. Then retry all dead, delete all scheduled.
    let retrying = api.set_page(JobSet::Retry, 0, 10).await.unwrap();
    session
        .post(
            "/sets/retry/actions",
            &[("action", "kill"), ("entry", &key(&retrying[0]))],
        )
        .await;
    assert_eq!(
        (
            api.set_size(JobSet::Retry).await.unwrap(),
            api.set_size(JobSet::Dead).await.unwrap()
        ),
        (0, 1)
    );
    session.post("/sets/dead/actions", &[("action", "retry_all")]).await;
    assert_eq!(api.set_size(JobSet::Dead).await.unwrap(), 0);
    assert_eq!(llen(&mut conn, &format!("{NS}:queue:default")).await, 2);
    session
        .post("/sets/scheduled/actions", &[("action", "delete_all")])
        .await;
    assert_eq!(api.set_size(JobSet::Scheduled).await.unwrap(), 0);
    let bad = session.post("/sets/dead/actions", &[("action", "explode")]).await;
    assert_eq!(bad.status, StatusCode::BAD_REQUEST);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn queue_process_and_lock_actions() {
    let redis = TestRedis::start();
    let config = redis.config();
    let (client, api) = seed(&redis).await;
    let app = app(&redis, &WebOptions::default());
    let session = Session::open(&app).await;

    // Cancel, from a job's row: off the schedule, back where it was asked;
    // a redirect never leaves the dashboard.
    let later = api.set_page(JobSet::Scheduled, 0, 1).await.unwrap()[0].job().unwrap();
    let cancelled = session
        .post(
            &format!("/jobs/{}/cancel", later.jid_str()),
            &[("back", "/sets/scheduled")],
        )
        .await;
    assert_eq!(cancelled.status, StatusCode::SEE_OTHER);
    assert_eq!(cancelled.headers[header::LOCATION], "/sets/scheduled");
    assert_eq!(api.set_size(JobSet::Scheduled).await.unwrap(), 0);
    let elsewhere = session.post("/jobs/nojob/cancel", &[("back", "//evil.example")]).await;
    assert_eq!(elsewhere.headers[header::LOCATION], "/busy");

    session.post("/queues/mail/pause", &[]).await;
    assert!(api.queue("mail").await.unwrap().paused);
    assert!(get(&app, "/queues").await.body.contains("paused"));
    session.post("/queues/mail/unpause", &[]).await;
    assert!(!api.queue("mail").await.unwrap().paused);
    // A grouped queue's groups, paused and resumed from their rows.
    client
        .push(cogworker::Job::new("Nothing").queue("mail").group("acct:<7>"))
        .await
        .unwrap();
    let page = get(&app, "/queues/mail").await.body;
    assert!(page.contains("Groups") && page.contains("acct:&lt;7&gt;"), "{page}");
    let paused = session.post("/queues/mail/pause_group", &[("group", "acct:<7>")]).await;
    assert_eq!(paused.headers[header::LOCATION], "/queues/mail");
    assert!(api.groups("mail", 0, 10).await.unwrap()[0].paused);
    assert!(get(&app, "/queues/mail").await.body.contains("Resume"));
    session
        .post("/queues/mail/resume_group", &[("group", "acct:<7>")])
        .await;
    assert!(!api.groups("mail", 0, 10).await.unwrap()[0].paused);
    session.post("/queues/mail/clear", &[]).await;
    assert_eq!(api.queue("mail").await.unwrap().size, 0);

    // A live worker: Quiet, then Stop, from its row.
    let (worker, _ran) = counting_worker(config, "Nothing");
    let handle = worker.handle();
    let running = tokio::spawn(worker.run());
    let a = api.clone();
    wait_until("the worker registered", Duration::from_secs(10), move || {
        let a = a.clone();
        async move { a.processes().await.unwrap().len() == 1 }
    })
    .await;
    let identity = handle.identity().to_string();
    let home = get(&app, "/").await.body;
    assert!(
        home.contains("1 process<") && !home.contains("1 processes"),
        "it said \"1 processes\""
    );
    let page = get(&app, "/processes").await;
    assert!(page.body.contains(&identity), "{}", page.body);
    let encoded = url_encode(&identity);
    session.post(&format!("/processes/{encoded}/quiet"), &[]).await;
    let h = handle.clone();
    wait_until("quiet", Duration::from_secs(10), move || {
        let h = h.clone();
        async move { h.lifecycle() == Lifecycle::Quiet }
    })
    .await;
    session.post(&format!("/processes/{encoded}/stop"), &[]).await;
    tokio::time::timeout(Duration::from_secs(10), running)
        .await
        .unwrap()
        .unwrap()
        .unwrap();

    // Unique locks are listed and cleared from the Periodic page.
    client.push(Job::new("Once").unique_for(600.0)).await.unwrap().unwrap();
    let lock = api.unique_locks(10).await.unwrap().remove(0);
    assert!(get(&app, "/periodic").await.body.contains(&lock.name));
    session.post(&format!("/unique/{}/clear", lock.name), &[]).await;
    assert!(api.unique_locks(10).await.unwrap().is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn basic_auth_when_configured() {
    let redis = TestRedis::start();
    let mut options = WebOptions::default();
    options.set_credentials("admin:s3cret").unwrap();
    assert!(WebOptions::default().set_credentials("nopassword").is_err());
    let app = app(&redis, &options);
    let page = get(&app, "/").await;
    assert_eq!(page.status, StatusCode::UNAUTHORIZED);
    assert!(page.headers.get(header::WWW_AUTHENTICATE).is_some());
    let request = |auth: &str| {
        Request::get("/")
            .header(header::HOST, HOST)
            .header(header::AUTHORIZATION, auth)
            .body(Body::empty())
            .unwrap()
    };
    // "admin:s3cret" and "admin:wrong", base64.
    assert_eq!(
        send(&app, request("Basic YWRtaW46czNjcmV0")).await.status,
        StatusCode::OK
    );
    assert_eq!(
        send(&app, request("Basic YWRtaW46d3Jvbmc=")).await.status,
        StatusCode::UNAUTHORIZED
    );
}

/// The dead set's search page for `q` from `from` that found something,
/// following "search further" while a step (bounded by entries or by
/// time: a slow machine's steps are shorter) found nothing.
async fn search_on(app: &Router, q: &str, from: u64) -> String {
    let mut page = get(app, &format!("/sets/dead?q={q}&from={from}")).await.body;
    for _ in 0..100 {
        let Some(at) = page.find("&amp;from=").filter(|_| page.contains("0 matching")) else {
            break;
        };
        let digits: String = page[at + 10..].chars().take_while(char::is_ascii_digit).collect();
        page = get(app, &format!("/sets/dead?q={q}&from={digits}")).await.body;
    }
    page
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_hundred_thousand_dead_jobs_page_and_search_quickly() {
    let redis = TestRedis::start();
    let mut conn = redis.conn().await;
    for chunk in 0..10 {
        let mut pipe = redis::pipe();
        for i in 0..10_000u32 {
            let n = chunk * 10_000 + i;
            let job = Job::new(if n == 77_777 { "Needle" } else { "Hay" })
                .jid(format!("{n:024x}"))
                .args([json!(n)]);
            pipe.zadd(format!("{NS}:dead"), job.to_json(), n as f64).ignore();
        }
        let _: () = pipe.query_async(&mut conn).await.unwrap();
    }
    let app = app(&redis, &WebOptions::default());
    let started = Instant::now();
    let page = get(&app, "/sets/dead?page=2000").await;
    let paged = started.elapsed();
    assert_eq!(page.status, StatusCode::OK);
    // Newest first: page 2000 of 25 holds entries 50,024 down to 50,000.
    assert!(page.body.contains(&format!("{:024x}", 50_024)) && page.body.contains(&format!("{:024x}", 50_000)));
    assert!(page.body.contains("page 2000 of 4000"), "pager");
    let started = Instant::now();
    let found = search_on(&app, "Needle", 0).await;
    let searched = started.elapsed();
    assert!(found.contains(&format!("{:024x}", 77_777)) && found.contains("1 matching"));
    // A search that finds nothing stops after a bounded step (entries or
    // time) and offers to go on from there, until the set's end.
    let mut path = "/sets/dead?q=NoSuchClass".to_string();
    let mut steps = Vec::new();
    loop {
        let page = get(&app, &path).await;
        assert!(page.body.contains("0 matching"), "{}", page.body);
        let Some(at) = page.body.find("&amp;from=") else { break };
        let digits: String = page.body[at + 10..].chars().take_while(char::is_ascii_digit).collect();
        let from: u64 = digits.parse().unwrap();
        assert!(
            from <= cogworker::SEARCH_SCAN_MAX * (steps.len() as u64 + 1),
            "bounded step"
        );
        assert!(steps.last().is_none_or(|last| from > *last), "progress");
        steps.push(from);
        path = format!("/sets/dead?q=NoSuchClass&from={from}");
    }
    assert!(!steps.is_empty() && *steps.last().unwrap() < 100_000, "{steps:?}");
    // A jid is searched the same way: an old one is found a step further.
    let jid = format!("{:024x}", 12_345);
    let first = get(&app, &format!("/sets/dead?q={jid}")).await;
    assert!(
        first.body.contains("0 matching") && first.body.contains("search further"),
        "{}",
        first.body
    );
    let further = search_on(&app, &jid, cogworker::SEARCH_SCAN_MAX).await;
    assert!(further.contains("[12345]"), "found by jid a step further");
    eprintln!("100,000 dead: page 2000 in {paged:?}, class search in {searched:?}");
    assert!(paged < Duration::from_secs(1), "paging took {paged:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_wrapped_job_is_shown_and_found_by_the_class_it_wraps() {
    let redis = TestRedis::start();
    let client = Client::new(&redis.config()).unwrap();
    let api = Api::new(client.clone());
    let wrapped = |queue: &str| {
        Job::new("ActiveJob::QueueAdapters::CogworkerAdapter::JobWrapper")
            .queue(queue)
            .field("wrapped", json!("SignupMailerJob"))
            .args([json!({"job_class": "SignupMailerJob", "arguments": ["ann@example.com", 7]})])
    };
    client.push(wrapped("mail")).await.unwrap();
    let jid = client
        .push(wrapped("mail").delay(3600.0).timeout(90.0))
        .await
        .unwrap()
        .unwrap();
    let app = app(&redis, &WebOptions::default());
    let queue = get(&app, "/queues/mail").await.body;
    assert!(queue.contains("SignupMailerJob"), "{queue}");
    assert!(
        queue.contains("ann@example.com") && !queue.contains("job_class"),
        "{queue}"
    );
    let found = api
        .search_set_from(JobSet::Scheduled, "signupmailer", 0, 10)
        .await
        .unwrap();
    assert_eq!(found.found.len(), 1, "found by the wrapped class");
    let scheduled = get(&app, "/sets/scheduled").await.body;
    assert!(scheduled.contains("SignupMailerJob"), "{scheduled}");
    let detail = get(&app, &format!("/sets/scheduled/job/{jid}")).await.body;
    assert!(
        detail.contains("Wrapper") && detail.contains("JobWrapper") && detail.contains(&jid),
        "{detail}"
    );
    assert!(detail.contains("<dt>Time limit</dt><dd>90 s</dd>"), "{detail}");
    // retry_count counts failures: never "Retries 1" for a job never retried.
    assert!(
        detail.contains("Failed attempts") && !detail.contains("<dt>Retries</dt>"),
        "{detail}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_metrics_pages_and_the_prometheus_exposition() {
    let redis = TestRedis::start();
    let (_client, api) = seed(&redis).await; // four Boom failures, with XSS in args
    let config = redis.config();
    let client = Client::new(&config).unwrap();
    let worker = Worker::builder(config)
        .register(XSS, |_job| async { Ok(()) })
        .build()
        .unwrap();
    let handle = worker.handle();
    let running = tokio::spawn(worker.run());
    client.push(Job::new(XSS)).await.unwrap();
    let a = api.clone();
    wait_until("the metrics written", Duration::from_secs(10), move || {
        let a = a.clone();
        async move { a.class_metrics(5).await.unwrap().len() == 2 }
    })
    .await;
    let dashboard = app(&redis, &WebOptions::default());
    let list = get(&dashboard, "/classes").await;
    assert_eq!(list.status, StatusCode::OK);
    assert!(
        list.body.contains("Boom") && !list.body.contains("<script>alert"),
        "{}",
        list.body
    );
    let detail = get(&dashboard, "/class?name=Boom&minutes=60").await.body;
    for expected in [
        "executions / minute",
        "minute (UTC)",
        "run time (at most)",
        "succeeded",
        "failed",
        "<svg",
    ] {
        assert!(detail.contains(expected), "{expected} missing: {detail}");
    }
    let escaped = get(&dashboard, &format!("/class?name={}", url_encode(XSS))).await.body;
    assert!(!escaped.contains("<script>alert"), "{escaped}");

    let metrics = get(&dashboard, "/metrics").await;
    assert_eq!(metrics.status, StatusCode::OK);
    let text = metrics.body;
    assert!(
        text.contains("cogworker_jobs_failed_total{queue=\"default\",class=\"Boom\"} 4"),
        "{text}"
    );
    assert!(
        text.contains("# TYPE cogworker_job_duration_seconds histogram"),
        "{text}"
    );
    assert!(
        text.contains("cogworker_queue_size{queue=\"mail\"} 3"),
        "every level: {text}"
    );
    assert!(text.contains("cogworker_dead_jobs 3"), "{text}");
    assert!(
        !text.contains("cogworker_limiter"),
        "no limiter, no limiter families: {text}"
    );
    let limiter = client
        .limiter(cogworker::Limit::window("partner-api", 10, Duration::from_secs(60)).unwrap())
        .await
        .unwrap();
    for _ in 0..11 {
        let _ = limiter.try_acquire().await.unwrap();
    }
    let text = get(&dashboard, "/metrics").await.body;
    for line in [
        "cogworker_limiter_in_use{limiter=\"partner-api\"} 10",
        "cogworker_limiter_limit{limiter=\"partner-api\"} 10",
        "cogworker_limiter_refused_total{limiter=\"partner-api\"} 1",
    ] {
        assert!(text.contains(line), "{line} in {text}");
    }

    // A grouped queue: its 20 biggest groups by name, the rest summed, so
    // the label set stays bounded however many groups it has.
    let mut jobs: Vec<Job> = (1..=25)
        .flat_map(|n| {
            let group = if n == 25 {
                "say \"hi\"".to_string()
            } else {
                format!("g{n:02}")
            };
            (0..n).map(move |_| Job::new("T").queue("tenants").group(group.clone()).group_cap(3))
        })
        .collect();
    jobs.push(Job::new("T").queue("tenants"));
    client.push_bulk(jobs).await.unwrap();
    let text = get(&dashboard, "/metrics").await.body;
    for line in [
        "cogworker_groups{queue=\"tenants\"} 25",
        "cogworker_group_size{queue=\"tenants\",group=\"say \\\"hi\\\"\",other=\"0\"} 25",
        "cogworker_group_size{queue=\"tenants\",group=\"g06\",other=\"0\"} 6",
        "cogworker_group_size{queue=\"tenants\",group=\"(other)\",other=\"1\"} 15",
        "cogworker_group_running{queue=\"tenants\",group=\"g24\"} 0",
    ] {
        assert!(text.contains(line), "{line} in {text}");
    }
    let named = text
        .lines()
        .filter(|l| l.starts_with("cogworker_group_size{queue=\"tenants\""))
        .count();
    assert_eq!(named, 21, "20 groups and the rest: {text}");

    // `cogworker metrics`: /metrics alone, to the Host names it serves (a
    // DNS-rebinding page would read class and queue names), with the
    // dashboard's headers.
    let request = |path: &str, host: &str| {
        Request::get(path)
            .header(header::HOST, host)
            .body(Body::empty())
            .unwrap()
    };
    let only = WebOptions {
        metrics_only: true,
        ..Default::default()
    };
    let local = app(&redis, &only);
    let scraped = send(&local, request("/metrics", "127.0.0.1:7890")).await;
    assert_eq!(scraped.status, StatusCode::OK);
    assert_eq!(scraped.headers[header::X_CONTENT_TYPE_OPTIONS], "nosniff");
    assert!(scraped.headers.contains_key(header::CONTENT_SECURITY_POLICY));
    let foreign = send(&local, request("/metrics", "evil.example:7890")).await;
    assert_eq!(foreign.status, StatusCode::FORBIDDEN);
    assert!(!foreign.body.contains("mail"), "{}", foreign.body);
    let mut named = only.clone();
    named.set_allowed_hosts(&["10.1.2.3:9191"]).unwrap();
    let scraper = app(&redis, &named);
    assert_eq!(
        send(&scraper, request("/metrics", "10.1.2.3:9191")).await.status,
        StatusCode::OK
    );
    // `/` says where the metrics are (it answered 404), and nothing else.
    let index = send(&scraper, request("/", "10.1.2.3:9191")).await;
    assert_eq!(index.status, StatusCode::OK);
    assert!(
        index.body.contains("/metrics") && !index.body.contains("mail"),
        "{}",
        index.body
    );
    assert_eq!(
        send(&scraper, request("/queues", "10.1.2.3:9191")).await.status,
        StatusCode::NOT_FOUND
    );
    // Open to other machines only with credentials, or when told.
    let mut open = only.clone();
    open.set_bind("0.0.0.0", 0).unwrap();
    let refused = cogworker::web::bind(&redis.config(), &open)
        .await
        .err()
        .expect("refused");
    assert!(refused.to_string().contains("--auth"), "{refused}");
    open.insecure_no_auth = true;
    assert!(cogworker::web::bind(&redis.config(), &open).await.is_ok());
    handle.stop();
    running.await.unwrap().unwrap();
}

/// A workflow is one row of the Batches page, marked as a workflow; its
/// step batches are not listed there beside real batches but on the
/// workflow's own page, in order, each linked (issue #44, item 22).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_workflow_lists_its_steps_on_its_page_not_among_the_batches() {
    let redis = TestRedis::start();
    let client = Client::new(&redis.config()).unwrap();
    let app = app(&redis, &WebOptions::default());
    let flow = cogworker::Workflow::new("nightly import")
        .then(cogworker::Step::job(Job::new("Fetch")))
        .then(cogworker::Step::job(Job::new("Store")));
    let pushed = client.push_workflow(flow).await.unwrap();
    let plain = client.open_batch(cogworker::Batch::new("plain batch")).await.unwrap();

    let page = get(&app, "/batches").await.body;
    assert!(
        page.contains("nightly import") && page.contains("plain batch"),
        "{page}"
    );
    assert!(page.contains("workflow"), "marked as a workflow: {page}");
    assert!(!page.contains("step 1 of 2"), "no step among the batches: {page}");
    assert!(page.contains(plain.bid()), "{page}");

    let page = get(&app, &format!("/batches/{}", pushed.id)).await.body;
    let first = page.find(&format!("/batches/{}", pushed.steps[0].bid));
    let second = page.find(&format!("/batches/{}", pushed.steps[1].bid));
    assert!(first.is_some() && second.is_some(), "each step linked: {page}");
    assert!(first < second, "in order: {page}");
    assert!(page.contains("<h2>Steps</h2>"), "{page}");
    let page = get(&app, &format!("/batches/{}", pushed.steps[1].bid)).await.body;
    assert!(page.contains("step 2 of 2"), "{page}");
}

/// Issue #48: the Busy page shows a running job's progress (a bar, its
/// message) and links its jid to the job's page, which shows its last
/// report while it runs and after it finished, as long as its result is
/// kept; a report's text is escaped.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn busy_and_job_pages_show_a_long_jobs_progress() {
    let redis = TestRedis::start();
    let config = redis.config();
    let client = Client::new(&config).unwrap();
    let api = Api::new(client.clone());
    let (worker, release) = reporting_worker(config, "Import", |running| {
        let message = format!("rows 4,200 {XSS}");
        running.progress(Some(42.0), Some(&message), None).unwrap();
    });
    let handle = worker.handle();
    let task = tokio::spawn(worker.run());
    let jid = client
        .push(Job::new("Import").result_ttl(600.0))
        .await
        .unwrap()
        .unwrap();
    let (a, j) = (api.clone(), jid.clone());
    wait_until("it shows as busy with its report", Duration::from_secs(10), move || {
        let (a, j) = (a.clone(), j.clone());
        async move {
            let busy = a.busy().await.unwrap();
            busy.iter().any(|b| b.job["jid"] == j.as_str() && b.progress.is_some())
        }
    })
    .await;
    let app = app(&redis, &WebOptions::default());
    let page = get(&app, "/busy").await;
    assert_eq!(page.status, StatusCode::OK);
    assert!(page.body.contains(r#"<progress max="100" value="42""#), "{}", page.body);
    assert!(page.body.contains(&format!(r#"href="/jobs/{jid}""#)), "{}", page.body);
    assert!(!page.body.contains(XSS), "escaped");
    let page = get(&app, &format!("/jobs/{jid}")).await;
    assert_eq!(page.status, StatusCode::OK);
    assert!(
        page.body.contains("running") && page.body.contains("rows 4,200"),
        "{}",
        page.body
    );
    release.notify_waiters();
    api.wait_result(&jid, 5.0).await.unwrap();
    let (a, j) = (api.clone(), jid.clone());
    wait_until(
        "its last report says how the run ended",
        Duration::from_secs(5),
        move || {
            let (a, j) = (a.clone(), j.clone());
            async move { a.progress(&j).await.unwrap().is_some_and(|r| r["state"] == "succeeded") }
        },
    )
    .await;
    let page = get(&app, &format!("/jobs/{jid}")).await;
    assert!(
        page.body.contains("succeeded") && page.body.contains(r#"value="42""#),
        "{}",
        page.body
    );
    assert_eq!(
        get(&app, "/jobs/f00f00f00f00f00f00f00f00").await.status,
        StatusCode::NOT_FOUND
    );
    handle.stop();
    task.await.unwrap().unwrap();
}
