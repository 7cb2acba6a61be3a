//! The Web UI (feature `web`): a dashboard over the ops API ([`Api`]),
//! served by axum. Server-rendered HTML (maud escapes everything it
//! renders: job args and error messages are attacker-controlled), one
//! script file and one style sheet (no inline script or style, so a strict
//! Content-Security-Policy holds), every change a POST with a CSRF token,
//! optional basic auth, bound to 127.0.0.1 unless told otherwise.
//!
//! Start it with [`serve`], or mount [`router`] in an axum app of your own.

mod actions;
mod pages;
mod security;

use crate::api::Api;
use crate::client::Client;
use crate::config::Config;
use crate::error::{Error, Result};
use axum::routing::{get, post};
use axum::Router;
use std::future::Future;
use std::net::SocketAddr;
use std::sync::Arc;

/// Where and how the dashboard is served.
#[derive(Clone, Debug)]
pub struct WebOptions {
    /// Default `127.0.0.1:7890`.
    pub bind: SocketAddr,
    /// `user:password` required (HTTP basic auth) when set.
    pub credentials: Option<(String, String)>,
}

impl Default for WebOptions {
    fn default() -> Self {
        WebOptions {
            bind: SocketAddr::from(([127, 0, 0, 1], 7890)),
            credentials: None,
        }
    }
}

impl WebOptions {
    /// `credentials` as `user:password`; the error names the setting.
    pub fn set_credentials(&mut self, text: &str) -> Result<&mut Self> {
        match text.split_once(':') {
            Some((user, password)) if !user.is_empty() && !password.is_empty() => {
                self.credentials = Some((user.to_string(), password.to_string()));
                Ok(self)
            }
            _ => Err(Error::config(
                "web.auth",
                "(hidden)",
                "must be user:password, both non-empty",
            )),
        }
    }

    /// The options of `cogworker web`: `--host`, `--port`, `--auth`.
    pub fn from_cli(host: &str, port: u16, auth: Option<&str>) -> Result<Self> {
        let mut options = WebOptions::default();
        options.set_bind(host, port)?;
        if let Some(auth) = auth {
            options.set_credentials(auth)?;
        }
        Ok(options)
    }

    /// The address to listen on; the error names the setting.
    pub fn set_bind(&mut self, host: &str, port: u16) -> Result<&mut Self> {
        let address = format!("{host}:{port}");
        self.bind = address
            .parse()
            .map_err(|_| Error::config("web.bind", &address, "must be an IP address and a port"))?;
        Ok(self)
    }
}

pub(crate) struct WebState {
    pub api: Api,
    pub namespace: String,
    pub redis_url: String,
    pub credentials: Option<(String, String)>,
}

pub(crate) type State = Arc<WebState>;

/// The dashboard as an axum router (needs a tokio runtime; connects lazily).
pub fn router(config: &Config, options: &WebOptions) -> Result<Router> {
    let client = Client::new(config)?;
    let state = Arc::new(WebState {
        api: Api::new(client),
        namespace: config.namespace().to_string(),
        redis_url: config.redis_url_redacted(),
        credentials: options.credentials.clone(),
    });
    let app = Router::new()
        .route("/", get(pages::dashboard))
        .route("/queues", get(pages::queues))
        .route("/queues/{name}", get(pages::queue))
        .route("/queues/{name}/{action}", post(actions::queue))
        .route("/busy", get(pages::busy))
        .route("/processes", get(pages::processes))
        .route("/processes/{identity}/{action}", post(actions::process))
        .route("/sets/{set}", get(pages::set))
        .route("/sets/{set}/actions", post(actions::set))
        .route("/sets/{set}/job/{jid}", get(pages::job))
        .route("/history", get(pages::history))
        .route("/periodic", get(pages::periodic))
        .route("/unique/{digest}/clear", post(actions::clear_unique))
        .route("/api/stats", get(pages::stats_json))
        .route("/static/app.js", get(pages::script))
        .route("/static/app.css", get(pages::style))
        .layer(axum::middleware::from_fn_with_state(state.clone(), security::guard))
        .with_state(state);
    Ok(app)
}

/// A dashboard bound to its address, not serving yet.
pub struct WebServer {
    listener: tokio::net::TcpListener,
    app: Router,
    credentials: bool,
}

/// Binds the dashboard's address (an error names it: in use, not local...).
pub async fn bind(config: &Config, options: &WebOptions) -> Result<WebServer> {
    let app = router(config, options)?;
    let listener = tokio::net::TcpListener::bind(options.bind)
        .await
        .map_err(|e| Error::config("web.bind", options.bind, e))?;
    Ok(WebServer {
        listener,
        app,
        credentials: options.credentials.is_some(),
    })
}

impl WebServer {
    /// The address bound (the real port when 0 was asked for).
    pub fn local_addr(&self) -> std::net::SocketAddr {
        self.listener.local_addr().expect("a bound listener has an address")
    }

    /// Serves until `shutdown` resolves.
    pub async fn run(self, shutdown: impl Future<Output = ()> + Send + 'static) -> Result<()> {
        let address = self.local_addr();
        tracing::info!(
            "cogworker web on http://{address}/{}",
            if self.credentials { " (basic auth required)" } else { "" }
        );
        axum::serve(self.listener, self.app)
            .with_graceful_shutdown(shutdown)
            .await
            .map_err(|e| Error::config("web.bind", address, e))
    }
}

/// Serves the dashboard until `shutdown` resolves.
pub async fn serve(
    config: &Config,
    options: &WebOptions,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> Result<()> {
    bind(config, options).await?.run(shutdown).await
}

/// A dashboard serving on the global runtime, for hosts without an async
/// runtime of their own (the Python and Ruby CLIs). Every call blocks at
/// most briefly and needs no tokio context.
pub struct BackgroundWeb {
    address: SocketAddr,
    stop: std::sync::Mutex<Option<tokio::sync::oneshot::Sender<()>>>,
    finished: flume::Receiver<Result<()>>,
}

impl BackgroundWeb {
    /// Binds (the error is returned here) and starts serving.
    pub fn start(config: &Config, options: &WebOptions) -> Result<Self> {
        let runtime = crate::runtime::global();
        let server = runtime.block_on(bind(config, options))?;
        let address = server.local_addr();
        let (stop_tx, stop_rx) = tokio::sync::oneshot::channel::<()>();
        let (finished_tx, finished) = flume::bounded(1);
        runtime.spawn(async move {
            let result = server
                .run(async move {
                    let _ = stop_rx.await;
                })
                .await;
            let _ = finished_tx.send(result);
        });
        Ok(BackgroundWeb {
            address,
            stop: std::sync::Mutex::new(Some(stop_tx)),
            finished,
        })
    }

    /// Where it listens.
    pub fn address(&self) -> SocketAddr {
        self.address
    }

    /// `http://host:port/`.
    pub fn url(&self) -> String {
        format!("http://{}/", self.address)
    }

    /// Asks the server to finish (open connections are let finish).
    pub fn stop(&self) {
        if let Some(stop) = self.stop.lock().unwrap().take() {
            let _ = stop.send(());
        }
    }

    /// Waits up to `timeout` for the server to end: `None` if it is still
    /// serving, else how it ended.
    pub fn wait(&self, timeout: std::time::Duration) -> Option<Result<()>> {
        match self.finished.recv_timeout(timeout) {
            Ok(result) => Some(result),
            Err(flume::RecvTimeoutError::Timeout) => None,
            Err(flume::RecvTimeoutError::Disconnected) => Some(Ok(())),
        }
    }
}
