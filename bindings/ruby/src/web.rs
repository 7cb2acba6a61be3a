//! `Cogworker::Native::WebServer`: the core's dashboard served on the
//! global runtime, for `cogworker web`. Waits run without the GVL.

use crate::config::from_hash;
use crate::errors::to_ruby;
use crate::nogvl::without_gvl;
use cogworker::web::{BackgroundWeb, WebOptions};
use magnus::{Error, RHash, Ruby};
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

const SLICE: Duration = Duration::from_millis(50);

#[magnus::wrap(class = "Cogworker::Native::WebServer", free_immediately, size)]
pub struct RbWebServer {
    inner: BackgroundWeb,
}

impl RbWebServer {
    /// Binds `host:port` and starts serving; `auth` is `user:password`.
    pub fn new(ruby: &Ruby, settings: RHash, host: String, port: u16, auth: Option<String>) -> Result<Self, Error> {
        let config = from_hash(ruby, settings)?;
        let mut options = WebOptions::default();
        options.set_bind(&host, port).map_err(|e| to_ruby(ruby, e))?;
        if let Some(auth) = auth {
            options.set_credentials(&auth).map_err(|e| to_ruby(ruby, e))?;
        }
        let started = without_gvl(move |_| BackgroundWeb::start(&config, &options));
        let inner = started
            .ok_or_else(|| crate::errors::raise(ruby, "Error", "interrupted while starting the web server"))?
            .map_err(|e| to_ruby(ruby, e))?;
        Ok(RbWebServer { inner })
    }

    pub fn url(&self) -> String {
        format!("http://{}/", self.inner.address())
    }

    pub fn stop(&self) {
        self.inner.stop();
    }

    /// Waits up to `timeout` seconds for the server to end; true once it has.
    pub fn wait(ruby: &Ruby, rb_self: &Self, timeout: f64) -> Result<bool, Error> {
        let deadline = Instant::now() + Duration::from_secs_f64(timeout.max(0.0));
        let inner = &rb_self.inner;
        let result = without_gvl(|interrupted| loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match inner.wait(left.min(SLICE)) {
                Some(result) => return Some(result),
                None if !left.is_zero() && !interrupted.load(Ordering::SeqCst) => {}
                None => return None,
            }
        })
        .flatten();
        match result {
            Some(result) => result.map(|()| true).map_err(|e| to_ruby(ruby, e)),
            None => Ok(false),
        }
    }
}
