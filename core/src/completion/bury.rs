//! A payload no job can be made of, filed in `dead` with its bytes kept.

use super::file::file;
use crate::job::{now, Job};
use crate::retry::{history_entry, Disposition, FailurePlan};
use crate::shared::Shared;

/// Buries a payload that is not a runnable job, wrapped with its bytes kept
/// (see [`Job::unparseable`]), taking its `entry` off `owner`'s in-progress
/// key.
pub(crate) async fn bury_unparseable(
    shared: &Shared,
    owner: &str,
    entry: &str,
    queue: &str,
    raw: &[u8],
    reason: &str,
) -> redis::RedisResult<()> {
    let wrapper = Job::unparseable(raw, queue, reason);
    let at = now();
    let plan = FailurePlan {
        disposition: Disposition::Dead,
        score: at,
        payload: wrapper.to_json(),
        attempt: String::new(),
        started_at: at,
    };
    let failure = crate::handler::Failure::new("cogworker::UnparseablePayload", reason);
    let history = history_entry(&wrapper, at, at, Some(&failure));
    file(shared, owner, entry, queue, raw, &wrapper, &plan, &history).await
}
