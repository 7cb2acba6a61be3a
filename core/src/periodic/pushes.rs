//! What a worker's periodic pushes need besides Redis and the settings,
//! held by the worker's shared state and used by its ticker
//! (`periodic_ticker.rs`).

use super::Periodic;
use crate::client::ClientChain;
use crate::events::MiddlewareAnswer;
use std::sync::Mutex;

/// The periodic entries a worker ticks for, and what a periodic job's push
/// goes through: the worker's client middleware and, where the host
/// language has its own, the host's (the one job waiting for its answer is
/// kept here). The ticker's alone, but for the handle that brings the
/// host's answer and the listings that show the entries.
pub(crate) struct PeriodicPushes {
    pub entries: Vec<Periodic>,
    /// Client middleware for the pushes the engine makes.
    pub client_middleware: ClientChain,
    /// The host language has client middleware: periodic jobs are handed
    /// to it (a `ClientMiddleware` event) before they are pushed.
    pub host_client_middleware: bool,
    /// The one periodic job waiting for the host's answer: its jid and
    /// where the answer goes.
    pub host_answer: Mutex<Option<(String, tokio::sync::oneshot::Sender<MiddlewareAnswer>)>>,
}
