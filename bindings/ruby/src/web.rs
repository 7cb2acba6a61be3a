//! `Cogworker::Native::WebServer`: the core's dashboard served on the global
//! runtime, for `cogworker web`; `RedisServer`: the core's private test server.

use crate::blocking::{self, nogvl};
use crate::config::RbConfig;
use crate::errors::to_ruby;
use cogworker::host::web_args;
use cogworker::redis_server::RedisServer;
use cogworker::web::{BackgroundWeb, WebOptions};
use magnus::{Error, Ruby};

#[magnus::wrap(class = "Cogworker::Native::WebServer", free_immediately, size)]
pub struct RbWebServer {
    inner: BackgroundWeb,
}

impl RbWebServer {
    /// `cogworker web` or `cogworker metrics` (`command`), with the flags
    /// `given` (each with its texts, as `command_flags` lists them): binds
    /// and starts serving; the core reads the flags and fills in what is
    /// not given from the environment.
    pub fn new(
        ruby: &Ruby,
        config: &RbConfig,
        command: String,
        given: Vec<(String, Vec<String>)>,
    ) -> Result<Self, Error> {
        let args = web_args(&command, &given).map_err(|e| to_ruby(ruby, e))?;
        let options = WebOptions::from_cli(&args).map_err(|e| to_ruby(ruby, e))?;
        let config = config.config();
        let inner = nogvl(ruby, || BackgroundWeb::start(&config, &options))?.map_err(|e| to_ruby(ruby, e))?;
        Ok(RbWebServer { inner })
    }

    pub fn url(&self) -> String {
        self.inner.url()
    }

    pub fn stop(&self) {
        self.inner.stop();
    }

    /// The line the CLI prints once it listens.
    pub fn address_line(&self) -> String {
        self.inner.address_line()
    }

    /// On TERM or INT (`signal`, by name): says so and stops.
    pub fn stop_on_signal(&self, signal: String) {
        self.inner.stop_on_signal(&signal);
    }

    /// Waits up to `timeout` seconds for the server to end; true once it has.
    pub fn wait(ruby: &Ruby, rb_self: &Self, timeout: f64) -> Result<bool, Error> {
        let ended = blocking::wait(ruby, Some(timeout), |slice| rb_self.inner.wait(slice))?;
        Ok(ended.transpose().map_err(|e| to_ruby(ruby, e))?.is_some())
    }
}

#[magnus::wrap(class = "Cogworker::Native::RedisServer", free_immediately, size)]
pub struct RbRedisServer(RedisServer);

impl RbRedisServer {
    /// Starts `redis-server` with `extra` arguments on `port` (nil: a free one).
    pub fn new(ruby: &Ruby, extra: Vec<String>, port: Option<u16>) -> Result<Self, Error> {
        let extra: Vec<&str> = extra.iter().map(String::as_str).collect();
        let server = nogvl(ruby, || RedisServer::start_at(port, &extra))?;
        server.map(RbRedisServer).map_err(|e| to_ruby(ruby, e))
    }
    /// `[url, port, data directory]`.
    pub fn info(&self) -> (String, u16, String) {
        (self.0.url(), self.0.port(), self.0.dir().display().to_string())
    }
    /// Starts it again after `kill` (same port and data directory).
    pub fn spawn(ruby: &Ruby, rb_self: &Self) -> Result<(), Error> {
        nogvl(ruby, || rb_self.0.spawn())?.map_err(|e| to_ruby(ruby, e))
    }
    /// SIGKILL, and waits for the exit.
    pub fn kill(&self) {
        self.0.kill();
    }
}
