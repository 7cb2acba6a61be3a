//! The dashboard's defences at the HTTP level, against a real Redis: a
//! foreign `Host` (DNS rebinding) is refused before anything is read or
//! changed, `Origin` is checked against the allow-list, an address other
//! machines reach needs credentials, CSRF tokens are signed, a search
//! cannot stall Redis, and no password reaches a page, a log or `Debug`.
//! (The rebinding attack in a real browser: tests/web/rebinding.test.mjs.)

mod common;
mod web_common;

use axum::body::Body;
use axum::http::{header, Request, StatusCode};
use cogworker::web::{bind, router, WebOptions};
use cogworker::{Api, Client, Config, Job, JobSet, Worker};
use common::*;
use serde_json::json;
use std::time::{Duration, Instant};
use web_common::*;

const NS: &str = "cogworker";

fn request(method: &str, path: &str, headers: &[(&str, &str)], body: String) -> Request<Body> {
    let mut builder = Request::builder().method(method).uri(path);
    for (name, value) in headers {
        builder = builder.header(*name, *value);
    }
    builder.body(Body::from(body)).unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_foreign_host_is_refused_before_anything_is_read_or_changed() {
    let redis = TestRedis::start();
    let config = redis.config();
    let client = Client::new(&config).unwrap();
    let api = Api::new(client.clone());
    client
        .push(Job::new("Mail").queue("mail").args([json!("secret-arg")]))
        .await
        .unwrap();
    let app = router(&config, &WebOptions::default()).unwrap();
    let session = Session::open(&app).await;
    let form = format!("csrf={}", session.token);
    let cookie = format!("cogworker_csrf={}", session.token);

    // The attacker's name, re-pointed at 127.0.0.1: nothing is served.
    let evil = "evil.example:7890";
    let page = send(&app, request("GET", "/queues/mail", &[("host", evil)], String::new())).await;
    assert_eq!(page.status, StatusCode::FORBIDDEN);
    assert!(!page.body.contains("secret-arg"), "{}", page.body);
    assert!(
        page.body.contains("--allowed-host") && page.body.contains("COGWORKER_WEB_ALLOWED_HOSTS"),
        "says which setting to change: {}",
        page.body
    );
    let no_host = send(&app, request("GET", "/", &[], String::new())).await;
    assert_eq!(no_host.status, StatusCode::FORBIDDEN);
    // Same origin as far as the browser knows, with the page's own token.
    let post = |host: &str, origin: Option<(&str, &str)>| {
        let mut headers = vec![
            ("host", host.to_string()),
            ("cookie", cookie.clone()),
            ("content-type", "application/x-www-form-urlencoded".to_string()),
        ];
        if let Some((name, value)) = origin {
            headers.push((name, value.to_string()));
        }
        let headers: Vec<(&str, &str)> = headers.iter().map(|(n, v)| (*n, v.as_str())).collect();
        request("POST", "/queues/mail/clear", &headers, form.clone())
    };
    let rebound = send(&app, post(evil, Some(("origin", "http://evil.example:7890")))).await;
    assert_eq!(rebound.status, StatusCode::FORBIDDEN);
    // Our host, but a page elsewhere posting (or an unreadable Origin).
    for origin in [
        ("origin", "http://evil.example:7890"),
        ("origin", "null"),
        ("origin", "garbage"),
        ("origin", "file:///home/me/page.html"),
        ("referer", "http://evil.example:7890/attack.html"),
    ] {
        let page = send(&app, post(HOST, Some(origin))).await;
        assert_eq!(page.status, StatusCode::FORBIDDEN, "{origin:?}");
    }
    assert_eq!(api.queue("mail").await.unwrap().size, 1, "nothing changed");

    // The loopback names of the port are served, in any case.
    for host in ["localhost:7890", "[::1]:7890", "LOCALHOST:7890"] {
        let page = send(&app, request("GET", "/", &[("host", host)], String::new())).await;
        assert_eq!(page.status, StatusCode::OK, "{host}");
    }
    let other_port = send(&app, request("GET", "/", &[("host", "127.0.0.1:7891")], String::new())).await;
    assert_eq!(other_port.status, StatusCode::FORBIDDEN);

    // A name behind a proxy, once allowed, works for pages and forms.
    let mut options = WebOptions::default();
    options.set_allowed_hosts(&["Jobs.Example.com"]).unwrap();
    let proxied = router(&config, &options).unwrap();
    let page = send(
        &proxied,
        request("GET", "/", &[("host", "jobs.example.com")], String::new()),
    )
    .await;
    assert_eq!(page.status, StatusCode::OK);
    let set_cookie = page.headers.get(header::SET_COOKIE).unwrap().to_str().unwrap();
    let token = set_cookie.split(';').next().unwrap().split_once('=').unwrap().1;
    let cleared = send(
        &proxied,
        request(
            "POST",
            "/queues/mail/clear",
            &[
                ("host", "jobs.example.com"),
                ("origin", "https://jobs.example.com"),
                ("cookie", &format!("cogworker_csrf={token}")),
                ("content-type", "application/x-www-form-urlencoded"),
            ],
            format!("csrf={token}"),
        ),
    )
    .await;
    assert_eq!(cleared.status, StatusCode::SEE_OTHER, "{}", cleared.body);
    assert_eq!(api.queue("mail").await.unwrap().size, 0);

    for bad in ["http://jobs.example.com", "jobs.example.com/x", "a b", "*", ""] {
        let err = WebOptions::default().set_allowed_hosts(&[bad]).unwrap_err().to_string();
        assert!(err.contains("web.allowed_hosts"), "{bad}: {err}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_address_other_machines_reach_needs_credentials() {
    let redis = TestRedis::start();
    let config = redis.config();
    let mut open = WebOptions::default();
    open.set_bind("0.0.0.0", 0).unwrap();
    let err = bind(&config, &open).await.err().expect("refused").to_string();
    assert!(
        err.contains("web.bind") && err.contains("--auth") && err.contains("--insecure-no-auth"),
        "{err}"
    );
    let mut with_auth = open.clone();
    with_auth.set_credentials("ops:pa55").unwrap();
    assert!(bind(&config, &with_auth).await.is_ok());
    let mut insecure = open.clone();
    insecure.insecure_no_auth = true;
    assert!(bind(&config, &insecure).await.is_ok());
    let mut loopback = WebOptions::default();
    loopback.set_bind("127.0.0.1", 0).unwrap();
    let server = bind(&config, &loopback).await.unwrap();
    assert!(server.local_addr().ip().is_loopback());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn csrf_tokens_are_signed_and_stricter_over_https() {
    let redis = TestRedis::start();
    let config = redis.config();
    let app = router(&config, &WebOptions::default()).unwrap();
    let api = Api::new(Client::new(&config).unwrap());
    Client::new(&config)
        .unwrap()
        .push(Job::new("Mail").queue("mail"))
        .await
        .unwrap();

    // A 32-character cookie planted by a sibling subdomain, repeated in the form.
    let planted = "0123456789abcdef0123456789abcdef";
    let session = Session {
        app: app.clone(),
        token: planted.to_string(),
    };
    let refused = session.post("/queues/mail/clear", &[]).await;
    assert_eq!(refused.status, StatusCode::FORBIDDEN);
    // A token another dashboard process signed is as good as none.
    let other = Session::open(&router(&config, &WebOptions::default()).unwrap()).await;
    let foreign = Session {
        app: app.clone(),
        token: other.token.clone(),
    };
    assert_eq!(
        foreign.post("/queues/mail/clear", &[]).await.status,
        StatusCode::FORBIDDEN
    );
    assert_eq!(api.queue("mail").await.unwrap().size, 1);
    // A GET with the planted cookie gets a real one in its place.
    let page = send(
        &app,
        request(
            "GET",
            "/",
            &[("host", HOST), ("cookie", &format!("cogworker_csrf={planted}"))],
            String::new(),
        ),
    )
    .await;
    let fresh = page.headers.get(header::SET_COOKIE).unwrap().to_str().unwrap();
    assert!(!fresh.contains(planted), "{fresh}");

    // Behind a TLS-terminating proxy: the __Host- cookie, Secure.
    let page = send(
        &app,
        request(
            "GET",
            "/",
            &[("host", HOST), ("x-forwarded-proto", "https")],
            String::new(),
        ),
    )
    .await;
    let cookie = page.headers.get(header::SET_COOKIE).unwrap().to_str().unwrap();
    assert!(
        cookie.starts_with("__Host-cogworker_csrf=") && cookie.contains("; Secure") && cookie.contains("Path=/"),
        "{cookie}"
    );
    let token = cookie.split(';').next().unwrap().split_once('=').unwrap().1;
    let https_post = send(
        &app,
        request(
            "POST",
            "/queues/mail/clear",
            &[
                ("host", HOST),
                ("x-forwarded-proto", "https"),
                ("origin", "https://127.0.0.1:7890"),
                ("cookie", &format!("__Host-cogworker_csrf={token}")),
                ("content-type", "application/x-www-form-urlencoded"),
            ],
            format!("csrf={token}"),
        ),
    )
    .await;
    assert_eq!(https_post.status, StatusCode::SEE_OTHER, "{}", https_post.body);
    assert_eq!(api.queue("mail").await.unwrap().size, 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_search_over_huge_entries_never_stalls_redis() {
    let redis = TestRedis::start();
    let config = redis.config();
    let mut conn = redis.conn().await;
    // Entries of 1 MB made of what a `*"class":"*q*` pattern backtracks on.
    let filler = "\"class\":\"".repeat(100_000);
    for i in 0..4 {
        let job = Job::new("Hay").jid(format!("{i:024x}")).args([json!(filler)]);
        let _: () = redis::AsyncCommands::zadd(&mut conn, format!("{NS}:dead"), job.to_json(), i)
            .await
            .unwrap();
    }
    let app = router(&config, &WebOptions::default()).unwrap();
    let longest = "x".repeat(cogworker::SEARCH_TEXT_MAX);
    // PINGs from another connection while the search runs.
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let pinger = {
        let stop = stop.clone();
        let mut conn = redis.conn().await;
        tokio::spawn(async move {
            let mut slowest = Duration::ZERO;
            while !stop.load(std::sync::atomic::Ordering::SeqCst) {
                let started = Instant::now();
                let _: String = redis::cmd("PING").query_async(&mut conn).await.unwrap();
                slowest = slowest.max(started.elapsed());
                tokio::time::sleep(Duration::from_millis(5)).await;
            }
            slowest
        })
    };
    let page = get(&app, &format!("/sets/dead?q={longest}")).await;
    stop.store(true, std::sync::atomic::Ordering::SeqCst);
    let slowest_ping = pinger.await.unwrap();
    assert_eq!(page.status, StatusCode::OK);
    assert!(
        page.body.contains("0 matching"),
        "{}",
        &page.body[..500.min(page.body.len())]
    );
    // Before: one 400 KB entry and a long query held PING for 6 s.
    assert!(
        slowest_ping < Duration::from_millis(500),
        "PING waited {slowest_ping:?}"
    );

    let too_long = get(&app, &format!("/sets/dead?q={longest}x")).await;
    assert_eq!(too_long.status, StatusCode::BAD_REQUEST);
    assert!(too_long.body.contains("longer than 200"), "{}", too_long.body);
    let found = get(&app, "/sets/dead?q=hay").await;
    assert!(found.body.contains("4 matching"), "class match ignores case");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn page_numbers_past_any_end_are_clamped() {
    let redis = TestRedis::start();
    let app = router(&redis.config(), &WebOptions::default()).unwrap();
    for path in [
        "/sets/dead?page=9223372036854775807",
        "/sets/dead?page=99999999999999999999999",
        "/queues/default?page=9223372036854775807",
        "/sets/retry?page=-3",
    ] {
        assert_eq!(get(&app, path).await.status, StatusCode::OK, "{path}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn no_password_reaches_a_page_an_error_or_debug_output() {
    let dir = std::env::temp_dir().join(format!("cogworker-sock-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let socket = dir.join("redis.sock");
    let socket_text = socket.display().to_string();
    let redis = TestRedis::start_with(&["--unixsocket", &socket_text, "--requirepass", "s3cret"]);
    let mut config = Config::default();
    config
        .set_redis_url(&format!("unix://{socket_text}?pass=s3cret"))
        .unwrap();
    assert!(!format!("{config:?}").contains("s3cret"), "{config:?}");
    assert!(!config.redis_url_redacted().contains("s3cret"));
    let app = router(&config, &WebOptions::default()).unwrap();
    let page = get(&app, "/").await;
    assert_eq!(page.status, StatusCode::OK, "{}", page.body);
    assert!(page.body.contains(&socket_text), "the footer names the socket");
    assert!(!page.body.contains("s3cret"));
    drop(redis);

    let mut options = WebOptions::default();
    options.set_credentials("ops:s3cret").unwrap();
    assert!(!format!("{options:?}").contains("s3cret"), "{options:?}");

    for bad in [
        "redis+cluster://u:s3cret@a:1,b",
        "redis+cluster://u:s3cret@a b:1",
        "redis+cluster://u:s3cret@a/b:1",
        "redis+sentinel://u:s3cret@a b:1/m",
        "redis+cluster://u:s3cret@",
        "redis+cluster://u:s3cret@a:1/0",
        "redis+cluster://:s3cret@[::1:1",
        "redis+sentinel://u:s3cret@a:1",
        "redis+sentinel://u:s3cret@a:1/m/x",
        "redis://u:s3cret@h:notaport",
        "rediss://u:s3cret@h:1/x",
        "unix:///r.sock?pass=s3cret&db=x",
        "redis+cluster://u:s3cret@a:1?sentinel_password=s3cret",
    ] {
        let mut config = Config::default();
        config.set_namespace("{cogworker}").unwrap(); // a cluster URL is built, not refused for it
        match config.set_redis_url(bad) {
            Err(e) => assert!(!e.to_string().contains("s3cret"), "{bad}: {e}"),
            // Accepted as a URL: building the connection may still refuse it.
            Ok(_) => {
                if let Err(e) = Client::new(&config) {
                    assert!(!e.to_string().contains("s3cret"), "{bad}: {e}");
                }
            }
        }
    }
    let _ = std::fs::remove_dir_all(dir);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_jid_lookup_is_bounded_too() {
    let redis = TestRedis::start();
    let api = Api::new(Client::new(&redis.config()).unwrap());
    let err = api
        .find_in_set(JobSet::Dead, &"j".repeat(cogworker::SEARCH_TEXT_MAX + 1))
        .await
        .unwrap_err()
        .to_string();
    assert!(err.contains("jid") && err.contains("longer than"), "{err}");
}

/// A jid in the search box or a job link without its score cannot make
/// Redis scan a whole set: a foreign page with `<img>` tags pointing at
/// them once kept Redis scanning 1 M entries for minutes (GETs need no
/// token). Both read at most the newest `SEARCH_SCAN_MAX` entries, by rank.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_jid_lookup_reads_a_bounded_part_of_a_large_set() {
    let redis = TestRedis::start();
    let config = redis.config();
    let mut conn = redis.conn().await;
    let size = cogworker::SEARCH_SCAN_MAX * 3;
    // In pipelines of 10,000: one of 150,000 once outlasted the
    // connection's response timeout on a busy machine.
    for start in (0..size).step_by(10_000) {
        let mut pipe = redis::pipe();
        for i in start..(start + 10_000).min(size) {
            let job = Job::new("Hay").jid(format!("{i:024x}"));
            pipe.zadd(format!("{NS}:dead"), job.to_json(), i).ignore();
        }
        let _: () = pipe.query_async(&mut conn).await.unwrap();
    }
    let app = router(&config, &WebOptions::default()).unwrap();
    let absent = "ffffffffffffffffffffffff";
    let oldest = format!("{:024x}", 0);
    let newest = format!("{:024x}", size - 1);
    let _: () = redis::cmd("CONFIG")
        .arg("RESETSTAT")
        .query_async(&mut conn)
        .await
        .unwrap();

    let search = get(&app, &format!("/sets/dead?q={absent}")).await;
    assert_eq!(search.status, StatusCode::OK);
    assert!(
        search.body.contains("search further"),
        "a bounded step: {}",
        search.body
    );
    let found = get(&app, &format!("/sets/dead?q={newest}")).await;
    assert!(found.body.contains(&newest), "{}", found.body);
    let unscored = get(&app, &format!("/sets/dead/job/{oldest}")).await;
    assert_eq!(
        unscored.status,
        StatusCode::NOT_FOUND,
        "past the bound: {}",
        unscored.body
    );
    assert!(
        unscored.body.contains("newest"),
        "says where it looked: {}",
        unscored.body
    );
    let recent = get(&app, &format!("/sets/dead/job/{newest}")).await;
    assert_eq!(recent.status, StatusCode::OK);
    assert_eq!(
        command_calls(&mut conn, &["zscan", "sscan", "scan"]).await,
        0,
        "no scan of the set"
    );
}

/// The smaller holes: a set cleared with `DEL` blocked Redis for half a
/// second at 1 M entries; a cookie planted by a server on another local
/// port (cookies ignore ports) made every form fail; bidi overrides in a
/// class name reordered the Metrics pages; a 100 kB class name made a link
/// that answered 414.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn clears_unlink_a_planted_cookie_does_not_block_forms_and_class_names_are_shown_safely() {
    let redis = TestRedis::start();
    let config = redis.config();
    let client = Client::new(&config).unwrap();
    let api = Api::new(client.clone());
    let mut conn = redis.conn().await;
    let app = router(&config, &WebOptions::default()).unwrap();

    // A planted cookie beside the dashboard's own: the valid one is used.
    client.push(Job::new("Mail").queue("mail")).await.unwrap();
    let session = Session::open(&app).await;
    let both = format!(
        "cogworker_csrf=0123456789abcdef0123456789abcdef; cogworker_csrf={}",
        session.token
    );
    let form = format!("csrf={}", session.token);
    let headers = [
        ("host", HOST),
        ("origin", "http://127.0.0.1:7890"),
        ("cookie", both.as_str()),
        ("content-type", "application/x-www-form-urlencoded"),
    ];
    let _: () = redis::cmd("CONFIG")
        .arg("RESETSTAT")
        .query_async(&mut conn)
        .await
        .unwrap();
    let cleared = send(&app, request("POST", "/queues/mail/clear", &headers, form)).await;
    assert!(cleared.status.is_redirection(), "{} {}", cleared.status, cleared.body);
    assert_eq!(api.queue("mail").await.unwrap().size, 0);
    for i in 0..3 {
        let job = Job::new("Gone").jid(format!("{i:024x}"));
        let _: () = redis::AsyncCommands::zadd(&mut conn, format!("{NS}:dead"), job.to_json(), i)
            .await
            .unwrap();
    }
    assert_eq!(api.clear_set(JobSet::Dead).await.unwrap(), 3);
    assert_eq!(
        command_calls(&mut conn, &["del"]).await,
        0,
        "never DEL of a whole queue or set"
    );
    assert_eq!(command_calls(&mut conn, &["unlink"]).await, 2);

    // Class names as a pusher wrote them, on the Metrics pages.
    let worker = Worker::builder(config.clone())
        .register("Safe\u{202e}Job", |_job| async { Ok(()) })
        .build()
        .unwrap();
    let handle = worker.handle();
    let running = tokio::spawn(worker.run());
    client.push(Job::new("Safe\u{202e}Job")).await.unwrap();
    let long = "L".repeat(cogworker::CLASS_MAX_LEN + 1);
    let refused = client.push(Job::new(long.as_str())).await.unwrap_err();
    assert_eq!(refused.field(), Some("class"), "{refused}");
    let a = api.clone();
    wait_until("the job is counted", Duration::from_secs(10), move || {
        let a = a.clone();
        async move { !a.class_metrics(5).await.unwrap().is_empty() }
    })
    .await;
    let classes = get(&app, "/classes").await;
    assert!(!classes.body.contains('\u{202e}'), "{}", classes.body);
    assert!(classes.body.contains("Safe\\u{202e}Job"), "{}", classes.body);
    handle.stop();
    running.await.unwrap().unwrap();
}
