//! `Cogworker::Native::WebServer`: the core's dashboard served on the global
//! runtime, for `cogworker web`; `RedisServer`: the core's private test server.

use crate::blocking::{self, without_gvl};
use crate::config::RbConfig;
use crate::errors::{raise, to_ruby};
use cogworker::testing::RedisServer;
use cogworker::web::{BackgroundWeb, WebOptions};
use magnus::{Error, Ruby};
use std::sync::Mutex;

#[magnus::wrap(class = "Cogworker::Native::WebServer", free_immediately, size)]
pub struct RbWebServer {
    inner: BackgroundWeb,
}

impl RbWebServer {
    /// Binds `host:port` and starts serving; `auth` is `user:password`.
    pub fn new(ruby: &Ruby, config: &RbConfig, host: String, port: u16, auth: Option<String>) -> Result<Self, Error> {
        let options = WebOptions::from_cli(&host, port, auth.as_deref()).map_err(|e| to_ruby(ruby, e))?;
        let config = config.config();
        let started = without_gvl(move |_| BackgroundWeb::start(&config, &options));
        let inner = started.ok_or_else(|| raise(ruby, "Error", "interrupted while starting the web server"))?;
        Ok(RbWebServer {
            inner: inner.map_err(|e| to_ruby(ruby, e))?,
        })
    }

    pub fn url(&self) -> String {
        self.inner.url()
    }

    pub fn stop(&self) {
        self.inner.stop();
    }

    /// Waits up to `timeout` seconds for the server to end; true once it has.
    pub fn wait(ruby: &Ruby, rb_self: &Self, timeout: f64) -> Result<bool, Error> {
        match blocking::wait(ruby, Some(timeout), |slice| rb_self.inner.wait(slice))? {
            Some(result) => result.map(|()| true).map_err(|e| to_ruby(ruby, e)),
            None => Ok(false),
        }
    }
}

#[magnus::wrap(class = "Cogworker::Native::RedisServer", free_immediately, size)]
pub struct RbRedisServer {
    inner: Mutex<RedisServer>,
}

impl RbRedisServer {
    /// Starts `redis-server` with `extra` arguments on `port` (nil: a free one).
    pub fn new(ruby: &Ruby, extra: Vec<String>, port: Option<u16>) -> Result<Self, Error> {
        let extra: Vec<&str> = extra.iter().map(String::as_str).collect();
        let started = without_gvl(|_| match port {
            Some(port) => RedisServer::start_on(port, &extra),
            None => RedisServer::start(&extra),
        });
        let server = started.ok_or_else(|| raise(ruby, "Error", "interrupted while starting redis-server"))?;
        Ok(RbRedisServer {
            inner: Mutex::new(server.map_err(|e| to_ruby(ruby, e))?),
        })
    }
    pub fn url(&self) -> String {
        self.inner.lock().unwrap().url()
    }
    pub fn port(&self) -> u16 {
        self.inner.lock().unwrap().port()
    }
    pub fn dir(&self) -> String {
        self.inner.lock().unwrap().dir().display().to_string()
    }
    /// Starts it again after `kill` (same port and data directory).
    pub fn spawn(ruby: &Ruby, rb_self: &Self) -> Result<(), Error> {
        let spawned = without_gvl(|_| rb_self.inner.lock().unwrap().spawn());
        let spawned = spawned.ok_or_else(|| raise(ruby, "Error", "interrupted while starting redis-server"))?;
        spawned.map_err(|e| to_ruby(ruby, e))
    }
    /// SIGKILL, and waits for the exit.
    pub fn kill(&self) {
        self.inner.lock().unwrap().kill();
    }
}
