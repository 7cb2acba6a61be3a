//! The Rust iteration helper: a handler hands over its items, each with
//! the cursor to resume from after it, and a closure for one item; the
//! helper saves the cursor after each item and stops between items when
//! [`Running::iterated`] says so.

use super::Running;
use futures_util::{Stream, StreamExt};
use serde_json::Value;
use std::future::Future;
use std::time::Duration;

/// How an iteration ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Iteration {
    /// Every item was done.
    Completed,
    /// It stopped between items: the job goes back on its queue with its
    /// cursor (shutdown, its time limit near, `max_runtime` passed), or it
    /// was cancelled. Return from the handler.
    Stopped,
}

impl Running {
    /// Runs `each` on every item of `items` (pairs of an item and the
    /// cursor to resume from after it, as the handler builds them from
    /// [`Running::cursor`]), saving the cursor after each and stopping
    /// between items when the job should (see [`Running::iterated`]).
    /// `each`'s error ends the iteration with it (the job fails; its retry
    /// resumes from the last cursor saved).
    pub async fn iterate<T, E, S, F, Fut>(
        &self,
        items: S,
        max_runtime: Option<Duration>,
        mut each: F,
    ) -> Result<Iteration, E>
    where
        S: Stream<Item = (T, Value)>,
        F: FnMut(T) -> Fut,
        Fut: Future<Output = Result<(), E>>,
        E: From<crate::error::Error>,
    {
        let mut items = std::pin::pin!(items);
        while let Some((item, cursor)) = items.next().await {
            each(item).await?;
            if !self.iterated(cursor, max_runtime)? {
                return Ok(Iteration::Stopped);
            }
        }
        Ok(Iteration::Completed)
    }

    /// [`Running::iterate`] for a blocking handler, over an iterator.
    pub fn iterate_blocking<T, E, I, F>(
        &self,
        items: I,
        max_runtime: Option<Duration>,
        mut each: F,
    ) -> Result<Iteration, E>
    where
        I: IntoIterator<Item = (T, Value)>,
        F: FnMut(T) -> Result<(), E>,
        E: From<crate::error::Error>,
    {
        for (item, cursor) in items {
            each(item)?;
            if !self.iterated(cursor, max_runtime)? {
                return Ok(Iteration::Stopped);
            }
        }
        Ok(Iteration::Completed)
    }
}
