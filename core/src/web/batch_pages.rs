//! The Batches pages: the newest batches and workflows with their
//! progress (a workflow's steps are listed on its own page, not among the
//! batches), and one batch's counts, failed jobs, callbacks and times, and
//! a workflow's steps in order.

use super::pages::{layout, time, urlencode, PageResult, WebError};
use super::security::CsrfToken;
use super::State;
use crate::api::BatchStatus;
use crate::batch::BatchKind;
use axum::extract::{Extension, Path};
use axum::http::StatusCode;
use maud::html;

/// Batches listed on the page, and steps on a workflow's.
const LISTED: usize = 100;

/// How far along a batch is: `done / total` with the share done.
fn progress(status: &BatchStatus) -> String {
    let done = status.total.saturating_sub(status.pending);
    let share = if status.total == 0 {
        100.0
    } else {
        done as f64 * 100.0 / status.total as f64
    };
    format!("{done} / {} ({share:.0}%)", status.total)
}

pub(crate) async fn batches(Extension(csrf): Extension<CsrfToken>, state: axum::extract::State<State>) -> PageResult {
    let batches = state.api.batches_and_workflows(LISTED).await?;
    let body = html! {
        @if batches.is_empty() { p.empty { "No batch (batches are kept a day after they succeed)." } } @else {
            table {
                thead { tr { th { "Batch" } th { "Kind" } th { "Description" } th { "State" } th.num { "Done" } th.num { "Failures" } th.num { "Dead" } th { "Created" } } }
                tbody {
                    @for b in &batches {
                        tr {
                            td { a href=(format!("/batches/{}", urlencode(&b.bid))) { code { (b.bid) } } }
                            td { (kind(b.kind)) }
                            td { (crate::job::safe_string(&b.description, 200)) }
                            td { (b.state()) }
                            td.num { (progress(b)) }
                            td.num { (b.failures.len()) }
                            td.num { (b.dead) }
                            td { (time(b.created_at)) }
                        }
                    }
                }
            }
        }
    };
    Ok(layout("Batches", "/batches", &csrf, body))
}

fn kind(kind: BatchKind) -> &'static str {
    match kind {
        BatchKind::Batch => "batch",
        BatchKind::Workflow => "workflow",
        BatchKind::Step => "workflow step",
    }
}

/// A workflow's steps, in order, as they stand (the first [`LISTED`]).
async fn steps_of(state: &State, workflow: &BatchStatus) -> Result<Vec<(String, Option<BatchStatus>)>, WebError> {
    let mut steps = Vec::new();
    for bid in workflow.steps.iter().take(LISTED) {
        steps.push((bid.clone(), state.api.batch(bid).await?));
    }
    Ok(steps)
}

pub(crate) async fn batch(
    Extension(csrf): Extension<CsrfToken>,
    state: axum::extract::State<State>,
    Path(bid): Path<String>,
) -> PageResult {
    let Some(b) = state.api.batch(&bid).await? else {
        return Err(WebError(
            StatusCode::NOT_FOUND,
            format!(
                "no batch {} (never opened, or its keys expired)",
                crate::job::safe_string(&bid, 80)
            ),
        ));
    };
    let when = |at: Option<f64>| at.map_or_else(|| "—".to_string(), time);
    let steps = steps_of(&state, &b).await?;
    let body = html! {
        table.fields {
            tr { th { "Batch" } td { code { (b.bid) } } }
            tr { th { "Kind" } td { (kind(b.kind)) } }
            tr { th { "Description" } td { (crate::job::safe_string(&b.description, 2000)) } }
            tr { th { "State" } td { (b.state()) } }
            tr { th { "Done" } td { (progress(&b)) } }
            tr { th { "Pending" } td { (b.pending) } }
            tr { th { "Dead" } td { (b.dead) } }
            @if let Some(parent) = &b.parent {
                tr { th { "Parent" } td { a href=(format!("/batches/{}", urlencode(parent))) { code { (parent) } } } }
            }
            tr { th { "Created" } td { (time(b.created_at)) } }
            tr { th { "Completed" } td { (when(b.completed_at)) } }
            tr { th { "Succeeded" } td { (when(b.succeeded_at)) } }
            tr { th { "First death" } td { (when(b.died_at)) } }
        }
        @if b.kind == BatchKind::Workflow {
            h2 { "Steps" }
            table {
                thead { tr { th.num { "Step" } th { "Batch" } th { "State" } th.num { "Done" } th.num { "Dead" } } }
                tbody {
                    @for (number, (bid, step)) in steps.iter().enumerate() {
                        tr {
                            td.num { (number + 1) }
                            td { a href=(format!("/batches/{}", urlencode(bid))) { code { (bid) } } }
                            @if let Some(step) = step {
                                td { (step.state()) } td.num { (progress(step)) } td.num { (step.dead) }
                            } @else {
                                td { "expired" } td.num { "—" } td.num { "—" }
                            }
                        }
                    }
                }
            }
        }
        h2 { "Callbacks" }
        @if b.callbacks.is_empty() { p.empty { "None." } } @else {
            table {
                thead { tr { th { "Event" } th { "Class" } th { "Queue" } th { "Jid" } th { "Pushed" } } }
                tbody {
                    @for (event, _, fired) in &b.callbacks {
                        @for job in b.callback_jobs.iter().filter(|job| &job.event == event) {
                            tr {
                                td { (event) } td { (job.class) } td { (job.queue) } td { code { (job.jid) } }
                                td { @if *fired { "yes" } @else { "not yet" } }
                            }
                        }
                    }
                }
            }
        }
        h2 { "Failed jobs" }
        @if b.failures.is_empty() { p.empty { "None." } } @else {
            table {
                thead { tr { th { "Jid (or child batch)" } th { "State" } } }
                tbody {
                    @for (unit, state) in &b.failures {
                        tr {
                            td {
                                @if let Some(child) = unit.strip_prefix("batch:") {
                                    a href=(format!("/batches/{}", urlencode(child))) { code { (unit) } }
                                } @else if state == "dead" {
                                    a href=(format!("/sets/dead/job/{}", urlencode(unit))) { code { (unit) } }
                                } @else {
                                    a href=(format!("/sets/retry/job/{}", urlencode(unit))) { code { (unit) } }
                                }
                            }
                            td { (state) }
                        }
                    }
                }
            }
        }
    };
    Ok(layout("Batch", "/batches", &csrf, body))
}
