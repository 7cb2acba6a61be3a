//! A private certificate authority and a server certificate for
//! 127.0.0.1 (made with `openssl`), for TLS tests: clients trust the CA
//! through SSL_CERT_FILE.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

pub struct PrivateCa {
    pub dir: PathBuf,
}

fn openssl(dir: &Path, args: &[&str]) {
    let status = Command::new("openssl")
        .args(args)
        .current_dir(dir)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .expect("openssl must be installed");
    assert!(status.success(), "openssl {args:?}");
}

impl PrivateCa {
    /// `ca.crt`, and `server.crt`/`server.key` it signed for IP 127.0.0.1,
    /// in a directory of their own.
    pub fn create(name: &str) -> PrivateCa {
        let dir = std::env::temp_dir().join(format!("cogworker-{name}-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let ca = "req -x509 -newkey rsa:2048 -nodes -keyout ca.key -out ca.crt -days 1 -subj /CN=cogworker-test-ca";
        openssl(&dir, &ca.split(' ').collect::<Vec<_>>());
        let csr = "req -newkey rsa:2048 -nodes -keyout server.key -out server.csr -subj /CN=127.0.0.1";
        openssl(&dir, &csr.split(' ').collect::<Vec<_>>());
        std::fs::write(dir.join("san.ext"), "subjectAltName=IP:127.0.0.1\n").unwrap();
        let sign = "x509 -req -in server.csr -CA ca.crt -CAkey ca.key -CAcreateserial -out server.crt -days 1 \
                    -extfile san.ext";
        openssl(&dir, &sign.split_whitespace().collect::<Vec<_>>());
        PrivateCa { dir }
    }

    pub fn path(&self, file: &str) -> String {
        self.dir.join(file).to_string_lossy().into_owned()
    }

    /// `redis-server` arguments for TLS on `tls_port` with this CA's
    /// certificate (clients need no certificate of their own).
    pub fn server_args(&self, tls_port: u16) -> Vec<String> {
        [
            "--tls-port".to_string(),
            tls_port.to_string(),
            "--tls-cert-file".into(),
            self.path("server.crt"),
            "--tls-key-file".into(),
            self.path("server.key"),
            "--tls-ca-cert-file".into(),
            self.path("ca.crt"),
            "--tls-auth-clients".into(),
            "no".into(),
        ]
        .into()
    }
}

impl Drop for PrivateCa {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// A free loopback port for a server a test starts itself, below Linux's
/// ephemeral range (20000..32000) and never handed out twice in this
/// process. A port from `bind(0)` is released before the server binds it,
/// so an outgoing connection, or the plain port of another server started
/// in between, could take it first: a CI run failed that way.
pub fn free_port() -> u16 {
    use std::hash::{BuildHasher, Hasher};
    static GIVEN: std::sync::Mutex<Vec<u16>> = std::sync::Mutex::new(Vec::new());
    let mut given = GIVEN.lock().unwrap_or_else(|p| p.into_inner());
    let random = std::collections::hash_map::RandomState::new();
    for attempt in 0usize.. {
        let mut hasher = random.build_hasher();
        hasher.write_usize(attempt);
        let port = 20_000 + (hasher.finish() % 12_000) as u16;
        if !given.contains(&port) && std::net::TcpListener::bind(("127.0.0.1", port)).is_ok() {
            given.push(port);
            return port;
        }
    }
    unreachable!("the attempts never end")
}
