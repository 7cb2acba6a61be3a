//! `rediss://` with a server certificate from a private CA (trusted through
//! SSL_CERT_FILE), and an ACL user: push and run a job. Its own binary: it
//! sets an environment variable.

mod common;

use cogworker::{Client, Job};
use common::*;
use std::process::Command;
use std::sync::atomic::Ordering;
use std::time::Duration;

fn openssl(dir: &std::path::Path, args: &[&str]) {
    let status = Command::new("openssl")
        .args(args)
        .current_dir(dir)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .status()
        .expect("openssl must be installed");
    assert!(status.success(), "openssl {args:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tls_and_acl_user() {
    let dir = std::env::temp_dir().join(format!("cogworker-tls-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    openssl(
        &dir,
        &[
            "req",
            "-x509",
            "-newkey",
            "rsa:2048",
            "-nodes",
            "-keyout",
            "ca.key",
            "-out",
            "ca.crt",
            "-days",
            "1",
            "-subj",
            "/CN=cogworker-test-ca",
        ],
    );
    openssl(
        &dir,
        &[
            "req",
            "-newkey",
            "rsa:2048",
            "-nodes",
            "-keyout",
            "server.key",
            "-out",
            "server.csr",
            "-subj",
            "/CN=127.0.0.1",
        ],
    );
    std::fs::write(dir.join("san.ext"), "subjectAltName=IP:127.0.0.1\n").unwrap();
    openssl(
        &dir,
        &[
            "x509",
            "-req",
            "-in",
            "server.csr",
            "-CA",
            "ca.crt",
            "-CAkey",
            "ca.key",
            "-CAcreateserial",
            "-out",
            "server.crt",
            "-days",
            "1",
            "-extfile",
            "san.ext",
        ],
    );
    let tls_port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
        .to_string();
    let path = |f: &str| dir.join(f).to_string_lossy().into_owned();
    let redis = TestRedis::start_with(&[
        "--tls-port",
        &tls_port,
        "--tls-cert-file",
        &path("server.crt"),
        "--tls-key-file",
        &path("server.key"),
        "--tls-ca-cert-file",
        &path("ca.crt"),
        "--tls-auth-clients",
        "no",
    ]);
    let mut conn = redis.conn().await;
    let _: () = redis::cmd("ACL")
        .arg(&["SETUSER", "worker", "on", ">s3cret", "~*", "&*", "+@all"][..])
        .query_async(&mut conn)
        .await
        .unwrap();
    // SAFETY: this binary has one test; nothing else reads the environment concurrently.
    std::env::set_var("SSL_CERT_FILE", path("ca.crt"));

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
    let _ = std::fs::remove_dir_all(&dir);
}
