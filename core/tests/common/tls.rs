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

/// A free loopback port (bound and released; fine for tests).
pub fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}
