//! A watch (see [`crate::Api::watch`]) as a host language holds it: one
//! object a Python iterator or a Ruby block takes events from, each
//! `(kind, value)`: `("progress", report)` or `("finished", end)`.

use crate::api::{Api, Watch, WatchEvent};
use crate::error::Result;
use serde_json::Value;
use std::sync::Arc;
use std::time::Duration;

/// A watch shared with the host's object (its calls may come from any
/// thread; one at a time is served).
#[derive(Clone)]
pub struct HostWatch(Arc<tokio::sync::Mutex<Watch>>);

impl HostWatch {
    /// Starts following `jid` (subscribed when this returns).
    pub async fn start(api: Arc<Api>, jid: String) -> Result<HostWatch> {
        let watch = api.watch(&jid).await?;
        Ok(HostWatch(Arc::new(tokio::sync::Mutex::new(watch))))
    }

    /// The next event as `(kind, value)`, waiting at most `timeout`
    /// (`None`: until it comes): `Ok(None)` once the end was given, or
    /// when `timeout` passed first.
    pub async fn next(self, timeout: Option<Duration>) -> Result<Option<(&'static str, Value)>> {
        let mut watch = self.0.lock().await;
        let event = match timeout {
            Some(timeout) => match tokio::time::timeout(timeout, watch.next()).await {
                Ok(event) => event?,
                Err(_) => None,
            },
            None => watch.next().await?,
        };
        Ok(event.map(|event| match event {
            WatchEvent::Progress(report) => ("progress", report),
            WatchEvent::Finished(end) => ("finished", end),
        }))
    }
}
