//! What a host-language `Client` or `Api` object holds: a configuration,
//! and the client and ops API built from it lazily (inside the global
//! runtime, where connections live) and built again in a forked child,
//! whose parent's connections must never be touched.

use crate::api::Api;
use crate::client::Client;
use crate::config::Config;
use crate::error::Result;
use crate::runtime::ForkSafe;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

use super::lanes::Lanes;
use super::wait::Started;

/// A configuration with its lazily built, fork-safe client and API.
pub struct Session {
    config: Config,
    client: ForkSafe<Client>,
    api: ForkSafe<Api>,
    lanes: Arc<Lanes>,
}

impl Session {
    /// Nothing is connected until first used.
    pub fn new(config: Config) -> Self {
        Session {
            config,
            client: ForkSafe::new(),
            api: ForkSafe::new(),
            lanes: Arc::default(),
        }
    }

    /// The configuration.
    pub fn config(&self) -> &Config {
        &self.config
    }

    /// `future` (a call of this session's client or API), whose Redis
    /// failure names the server (`redis at redis://host:6379/0: ...`).
    pub fn naming_redis<F, T>(&self, future: F) -> impl Future<Output = Result<T>> + Send + 'static
    where
        F: Future<Output = Result<T>> + Send + 'static,
    {
        let target = crate::redis_url::display_target(self.config.redis_url());
        async move { future.await.map_err(|e| e.at_redis(&target)) }
    }

    /// The client for pushes.
    pub fn client(&self) -> Result<Arc<Client>> {
        self.client.get_or_try_init(|| in_runtime(|| Client::new(&self.config)))
    }

    /// `call` on this session's client, on the calling thread for up to
    /// `first` (see [`super::start`]), through a connection this thread
    /// drives itself where the server is fixed (see `lanes.rs`): a push
    /// then costs its round trip and no hop to another thread. Its Redis
    /// failure names the server.
    pub fn start<T, F, Fut>(&self, call: F, first: std::time::Duration) -> Started<T>
    where
        F: FnOnce(Client) -> Fut,
        Fut: Future<Output = Result<T>> + Send + 'static,
        T: Send + 'static,
    {
        let client = match self.client() {
            Ok(client) => client,
            Err(e) => return Ok(Err(e)),
        };
        let call =
            |on: Client| -> Pin<Box<dyn Future<Output = Result<T>> + Send>> { Box::pin(self.naming_redis(call(on))) };
        match self.lanes.start(&client, call, first) {
            Ok(started) => started,
            Err(call) => super::start(call((*client).clone()), first),
        }
    }

    /// `call` on this session's ops API, run as [`Session::start`] runs a
    /// push: on the calling thread's lane where the server is fixed, so a
    /// `status` or `result` read costs its round trip and no hop either.
    pub fn start_api<T, F, Fut>(&self, call: F, first: std::time::Duration) -> Started<T>
    where
        F: FnOnce(Api) -> Fut,
        Fut: Future<Output = Result<T>> + Send + 'static,
        T: Send + 'static,
    {
        self.start(|client| call(Api::new(client)), first)
    }

    /// The ops API, on the client's connection (for the admin commands,
    /// which run on the engine's runtime: `bench` starts a worker there).
    pub fn api(&self) -> Result<Arc<Api>> {
        self.api
            .get_or_try_init(|| self.client().map(|client| Api::new((*client).clone())))
    }
}

/// Runs `build` inside the global runtime's context (connections are made
/// lazily on it) without blocking.
pub fn in_runtime<T>(build: impl FnOnce() -> T) -> T {
    let runtime = crate::runtime::global();
    let _entered = runtime.enter();
    build()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::job::Job;
    use crate::redis_server::RedisServer;
    use std::time::Duration;

    /// Connections the server holds, besides the one asking.
    fn connections(url: &str) -> i64 {
        let mut conn = redis::Client::open(url).unwrap().get_connection().unwrap();
        let info: redis::InfoDict = redis::cmd("INFO").arg("clients").query(&mut conn).unwrap();
        info.get::<i64>("connected_clients").unwrap() - 1
    }

    #[test]
    fn reads_run_on_the_lane_the_push_ran_on() {
        let redis = RedisServer::start(&[]).unwrap();
        let mut config = Config::default();
        config.set_redis_url(&redis.url()).unwrap();
        let session = Session::new(config);
        let first = Duration::from_secs(5);
        let push = |client: Client| async move { client.push(Job::new("Lane").result_ttl(60.0)).await };
        let jid = session.start(push, first).ok().unwrap().unwrap().expect("pushed");
        let (again, for_result) = (jid.clone(), jid.clone());
        let status = session.start_api(|api| async move { api.status(&again).await }, first);
        assert_eq!(status.ok().unwrap().unwrap(), "queued");
        let outcome = session.start_api(|api| async move { api.outcome(&for_result, None).await }, first);
        assert!(matches!(
            outcome.ok().unwrap().unwrap(),
            crate::results::JobOutcome::Pending(status) if status == "queued"
        ));
        // The lane alone: the reads made no shared connection of their own.
        assert_eq!(connections(&redis.url()), 1);
    }
}
