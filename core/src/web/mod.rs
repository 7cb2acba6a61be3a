//! The Web UI (feature `web`): a dashboard over the ops API ([`Api`]),
//! served by axum. Server-rendered HTML (maud escapes everything it
//! renders: job args and error messages are attacker-controlled), one
//! script file and one style sheet (no inline script or style, so a strict
//! Content-Security-Policy holds), every change a POST with a CSRF token,
//! optional basic auth, bound to 127.0.0.1 unless told otherwise.
//!
//! Start it with [`serve`], or mount [`router`] in an axum app of your own.

mod actions;
mod batch_pages;
mod charts;
mod metrics_pages;
mod pages;
mod prometheus;
mod security;
mod set_pages;

use crate::api::Api;
use crate::client::Client;
use crate::config::Config;
use crate::error::{Error, Result};
use axum::routing::{get, post};
use axum::Router;
use std::future::Future;
use std::net::SocketAddr;
use std::sync::Arc;

/// `cogworker web`'s port when none is given.
pub const WEB_PORT: u16 = 7890;
/// `cogworker metrics`'s port when none is given.
pub const METRICS_PORT: u16 = 9191;
/// The address `web` and `metrics` bind when none is given.
pub const WEB_HOST: &str = "127.0.0.1";

/// Where and how the dashboard is served.
#[derive(Clone)]
pub struct WebOptions {
    /// Default `127.0.0.1:7890`.
    pub bind: SocketAddr,
    /// `user:password` required (HTTP basic auth) when set.
    pub credentials: Option<(String, String)>,
    /// `Host` values served besides `127.0.0.1:<port>`, `localhost:<port>`,
    /// `[::1]:<port>` and the bound address itself: the names a proxy or
    /// a browser uses (`jobs.example.com`, `10.0.0.5:7890`). Any other
    /// `Host` is refused, which is what stops DNS rebinding.
    pub allowed_hosts: Vec<String>,
    /// Serve on a non-loopback address without credentials (refused
    /// otherwise), with a warning at start.
    pub insecure_no_auth: bool,
    /// Serve only `GET /metrics` (Prometheus), with basic auth if
    /// credentials are set and no `Host` check (a scraper names the target
    /// by its address): `cogworker metrics`.
    pub metrics_only: bool,
}

impl std::fmt::Debug for WebOptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WebOptions")
            .field("bind", &self.bind)
            .field(
                "credentials",
                &self.credentials.as_ref().map(|(user, _)| format!("{user}:***")),
            )
            .field("allowed_hosts", &self.allowed_hosts)
            .field("insecure_no_auth", &self.insecure_no_auth)
            .field("metrics_only", &self.metrics_only)
            .finish()
    }
}

impl Default for WebOptions {
    fn default() -> Self {
        WebOptions {
            bind: SocketAddr::from(([127, 0, 0, 1], 7890)),
            credentials: None,
            allowed_hosts: Vec::new(),
            insecure_no_auth: false,
            metrics_only: false,
        }
    }
}

/// `cogworker web`'s command line, as each CLI parses it; what is not
/// given comes from the environment (the file `COGWORKER_WEB_AUTH_FILE`
/// names, else `COGWORKER_WEB_AUTH`; `COGWORKER_WEB_ALLOWED_HOSTS`,
/// comma-separated).
#[derive(Clone, Debug, Default)]
pub struct WebArgs {
    /// `--host` (default `127.0.0.1`).
    pub host: Option<String>,
    /// `--port` (default 7890).
    pub port: Option<u16>,
    /// `--auth user:password`.
    pub auth: Option<String>,
    /// `--allowed-host`, repeated.
    pub allowed_hosts: Vec<String>,
    /// `--insecure-no-auth`.
    pub insecure_no_auth: bool,
    /// `cogworker metrics`: serve only `/metrics` (default port 9191).
    pub metrics_only: bool,
}

pub(crate) const AUTH_ENV: &str = "COGWORKER_WEB_AUTH";
pub(crate) const AUTH_FILE_ENV: &str = "COGWORKER_WEB_AUTH_FILE";
pub(crate) const ALLOWED_HOSTS_ENV: &str = "COGWORKER_WEB_ALLOWED_HOSTS";

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

    /// The options of `cogworker web` (`--host`, `--port`, `--auth`,
    /// `--allowed-host`, `--insecure-no-auth`), the environment filling in
    /// what the command line leaves out.
    pub fn from_cli(args: &WebArgs) -> Result<Self> {
        let mut options = WebOptions::default();
        let default_port = if args.metrics_only { METRICS_PORT } else { WEB_PORT };
        options.set_bind(
            args.host.as_deref().unwrap_or(WEB_HOST),
            args.port.unwrap_or(default_port),
        )?;
        options.metrics_only = args.metrics_only;
        let env_auth = std::env::var(AUTH_ENV).ok().filter(|a| !a.is_empty());
        let file_auth = crate::config::secret_file("web.auth", AUTH_FILE_ENV)?;
        if let Some(auth) = args.auth.clone().or(file_auth).or(env_auth) {
            options.set_credentials(&auth)?;
        }
        let env_hosts = std::env::var(ALLOWED_HOSTS_ENV).unwrap_or_default();
        let hosts: Vec<&str> = args
            .allowed_hosts
            .iter()
            .map(String::as_str)
            .chain(env_hosts.split(','))
            .map(str::trim)
            .filter(|h| !h.is_empty())
            .collect();
        options.set_allowed_hosts(&hosts)?;
        options.insecure_no_auth = args.insecure_no_auth;
        Ok(options)
    }

    /// The address to listen on; the error names the setting.
    pub fn set_bind(&mut self, host: &str, port: u16) -> Result<&mut Self> {
        let address = format!("{host}:{port}");
        let ipv6 = format!("[{host}]:{port}");
        self.bind = address
            .parse()
            .or_else(|_| ipv6.parse())
            .map_err(|_| Error::config("web.bind", &address, "must be an IP address and a port"))?;
        Ok(self)
    }

    /// Extra `Host` values to serve (`name` or `name:port`); the error
    /// names the setting and the value.
    pub fn set_allowed_hosts(&mut self, hosts: &[&str]) -> Result<&mut Self> {
        let mut allowed = Vec::with_capacity(hosts.len());
        for host in hosts {
            allowed.push(security::check_allowed_host(host)?);
        }
        self.allowed_hosts = allowed;
        Ok(self)
    }

    /// Refuses an address other machines can reach without credentials,
    /// unless `insecure_no_auth` says so.
    fn check_exposure(&self) -> Result<()> {
        // Metrics too: they name every class and queue.
        if self.bind.ip().is_loopback() || self.credentials.is_some() || self.insecure_no_auth {
            return Ok(());
        }
        Err(Error::config(
            "web.bind",
            self.bind,
            "is reachable from other machines and no credentials are set: give --auth USER:PASSWORD \
             (or COGWORKER_WEB_AUTH), or --insecure-no-auth to serve it open anyway",
        ))
    }
}

pub(crate) struct WebState {
    pub api: Api,
    pub namespace: String,
    /// Where Redis is, as the footer shows it: host, port and db only.
    pub redis_target: String,
    pub credentials: Option<(String, String)>,
    pub hosts: security::HostAllowList,
    pub csrf: security::CsrfKey,
}

pub(crate) type State = Arc<WebState>;

/// The dashboard as an axum router (needs a tokio runtime; connects
/// lazily), serving the `Host` names of `options.bind`'s port and
/// `options.allowed_hosts`.
pub fn router(config: &Config, options: &WebOptions) -> Result<Router> {
    build_router(config, options, options.bind)
}

fn build_router(config: &Config, options: &WebOptions, bound: SocketAddr) -> Result<Router> {
    let client = Client::new(config)?;
    let state = Arc::new(WebState {
        api: Api::new(client),
        namespace: config.namespace().to_string(),
        redis_target: crate::redis_url::display_target(config.redis_url()),
        credentials: options.credentials.clone(),
        hosts: security::HostAllowList::new(bound, &options.allowed_hosts),
        csrf: security::CsrfKey::random(),
    });
    if options.metrics_only {
        return Ok(Router::new()
            .route("/", get(metrics_index))
            .route("/metrics", get(prometheus::metrics))
            .layer(axum::middleware::from_fn_with_state(
                state.clone(),
                security::metrics_guard,
            ))
            .with_state(state));
    }
    let app = Router::new()
        .route("/", get(pages::dashboard))
        .route("/metrics", get(prometheus::metrics))
        .route("/queues", get(pages::queues))
        .route("/queues/{name}", get(pages::queue))
        .route("/queues/{name}/{action}", post(actions::queue))
        .route("/busy", get(pages::busy))
        .route("/jobs/{jid}", get(pages::job))
        .route("/jobs/{jid}/cancel", post(actions::cancel))
        .route("/processes", get(pages::processes))
        .route("/processes/{identity}/{action}", post(actions::process))
        .route("/sets/{set}", get(set_pages::set))
        .route("/sets/{set}/actions", post(actions::set))
        .route("/sets/{set}/job/{jid}", get(set_pages::job))
        .route("/history", get(pages::history))
        .route("/classes", get(metrics_pages::classes))
        .route("/class", get(metrics_pages::class))
        .route("/periodic", get(pages::periodic))
        .route("/limiters", get(pages::limiters))
        .route("/flow", get(pages::flow))
        .route("/batches", get(batch_pages::batches))
        .route("/batches/{bid}", get(batch_pages::batch))
        .route("/unique/{digest}/clear", post(actions::clear_unique))
        .route("/api/stats", get(pages::stats_json))
        .route("/static/app.js", get(pages::script))
        .route("/static/app.css", get(pages::style))
        .layer(axum::middleware::from_fn_with_state(state.clone(), security::guard))
        .with_state(state);
    Ok(app)
}

/// `cogworker metrics`' `/`: where the metrics are.
async fn metrics_index() -> &'static str {
    "cogworker metrics: Prometheus metrics at /metrics\n"
}

/// A dashboard bound to its address, not serving yet.
pub struct WebServer {
    listener: tokio::net::TcpListener,
    app: Router,
    credentials: bool,
    insecure: bool,
    metrics_only: bool,
}

/// Binds the dashboard's address (an error names it: in use, not local,
/// or reachable from other machines without credentials).
pub async fn bind(config: &Config, options: &WebOptions) -> Result<WebServer> {
    options.check_exposure()?;
    let listener = tokio::net::TcpListener::bind(options.bind)
        .await
        .map_err(|e| Error::config("web.bind", options.bind, e))?;
    let bound = listener
        .local_addr()
        .map_err(|e| Error::config("web.bind", options.bind, e))?;
    let app = build_router(config, options, bound)?;
    Ok(WebServer {
        listener,
        app,
        credentials: options.credentials.is_some(),
        insecure: !bound.ip().is_loopback() && options.credentials.is_none() && !options.metrics_only,
        metrics_only: options.metrics_only,
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
        if self.insecure {
            tracing::warn!(
                "cogworker web on http://{address}/ is open to other machines WITHOUT credentials \
                 (--insecure-no-auth): anyone who reaches it can delete and run jobs"
            );
        } else {
            let (what, path) = if self.metrics_only {
                ("metrics", "metrics")
            } else {
                ("web", "")
            };
            tracing::info!(
                "cogworker {what} on http://{address}/{path}{}",
                if self.credentials { " (basic auth required)" } else { "" }
            );
        }
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
    metrics_only: bool,
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
            metrics_only: options.metrics_only,
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

    /// The line both CLIs print once it listens (whoever reads it may stop
    /// the server at once): `cogworker web: <url>`, or `cogworker metrics:
    /// <url>metrics`.
    pub fn address_line(&self) -> String {
        match self.metrics_only {
            true => format!("cogworker metrics: {}metrics", self.url()),
            false => format!("cogworker web: {}", self.url()),
        }
    }

    /// What both CLIs do on TERM or INT (`signal`, by name): say so, and
    /// stop. Python logged it and Ruby said nothing.
    pub fn stop_on_signal(&self, signal: &str) {
        tracing::info!("{signal} received: stopping");
        self.stop();
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
