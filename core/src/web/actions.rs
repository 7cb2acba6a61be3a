//! The actions (POST): each checks the form's CSRF token, does one thing
//! through the ops API, and redirects back (303) so a reload never repeats it.

use super::pages::WebError;
use super::security::{csrf_ok, CsrfToken, CSRF_FIELD};
use super::set_pages::set_of;
use super::State;
use crate::api::JobSet;
use axum::body::Bytes;
use axum::extract::{Extension, Path};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Redirect, Response};

struct Form(Vec<(String, String)>);

impl Form {
    fn parse(body: &Bytes, csrf: &CsrfToken) -> Result<Self, WebError> {
        let fields: Vec<(String, String)> = form_urlencoded::parse(body).into_owned().collect();
        let form = Form(fields);
        if !csrf_ok(csrf, form.get(CSRF_FIELD)) {
            return Err(WebError(
                StatusCode::FORBIDDEN,
                "invalid CSRF token: reload the page".into(),
            ));
        }
        Ok(form)
    }
    fn get(&self, name: &str) -> Option<&str> {
        self.0.iter().find(|(k, _)| k == name).map(|(_, v)| v.as_str())
    }
    fn all<'a>(&'a self, name: &'a str) -> impl Iterator<Item = &'a str> + 'a {
        self.0.iter().filter(move |(k, _)| k == name).map(|(_, v)| v.as_str())
    }
}

fn back(to: &str) -> Response {
    Redirect::to(to).into_response()
}

pub(crate) async fn queue(
    Extension(csrf): Extension<CsrfToken>,
    state: axum::extract::State<State>,
    Path((name, action)): Path<(String, String)>,
    body: Bytes,
) -> Result<Response, WebError> {
    let form = Form::parse(&body, &csrf)?;
    match action.as_str() {
        "pause" => state.api.pause_queue(&name).await?,
        "unpause" => state.api.unpause_queue(&name).await?,
        "pause_group" | "resume_group" => {
            let group = form.get("group").unwrap_or_default();
            if action == "pause_group" {
                state.api.pause_group(&name, group).await?;
            } else {
                state.api.resume_group(&name, group).await?;
            }
            return Ok(back(&format!("/queues/{}", super::pages::urlencode(&name))));
        }
        "clear" => {
            state.api.clear_queue(&name).await?;
        }
        _ => return Err(WebError(StatusCode::NOT_FOUND, format!("no queue action {action:?}"))),
    }
    Ok(back("/queues"))
}

/// Cancels a job by jid (waiting, scheduled, retrying or running), then
/// back to the page the button was on (`back`, one of ours) or Busy.
pub(crate) async fn cancel(
    Extension(csrf): Extension<CsrfToken>,
    state: axum::extract::State<State>,
    Path(jid): Path<String>,
    body: Bytes,
) -> Result<Response, WebError> {
    let form = Form::parse(&body, &csrf)?;
    state.api.cancel(&jid).await?;
    // Only a path of this dashboard: never a redirect elsewhere.
    let to = form
        .get("back")
        .filter(|to| to.starts_with('/') && !to.starts_with("//"))
        .unwrap_or("/busy");
    Ok(back(to))
}

pub(crate) async fn process(
    Extension(csrf): Extension<CsrfToken>,
    state: axum::extract::State<State>,
    Path((identity, action)): Path<(String, String)>,
    body: Bytes,
) -> Result<Response, WebError> {
    Form::parse(&body, &csrf)?;
    match action.as_str() {
        "quiet" => state.api.quiet_process(&identity).await?,
        "stop" => state.api.stop_process(&identity).await?,
        _ => return Err(WebError(StatusCode::NOT_FOUND, format!("no process action {action:?}"))),
    }
    Ok(back("/processes"))
}

pub(crate) async fn set(
    Extension(csrf): Extension<CsrfToken>,
    state: axum::extract::State<State>,
    Path(name): Path<String>,
    body: Bytes,
) -> Result<Response, WebError> {
    let set = set_of(&name)?;
    let form = Form::parse(&body, &csrf)?;
    let action = form.get("action").unwrap_or("");
    let api = &state.api;
    match action {
        "retry_all" => {
            api.retry_all(set).await?;
        }
        "delete_all" => {
            api.clear_set(set).await?;
        }
        "retry" | "delete" | "kill" => {
            if action == "kill" && set == JobSet::Dead {
                return Err(WebError(StatusCode::BAD_REQUEST, "a dead job cannot be killed".into()));
            }
            for key in form.all("entry") {
                let Some((score, jid)) = key.split_once('|') else {
                    continue;
                };
                let Ok(score) = score.parse::<f64>() else { continue };
                let Some(entry) = api.entry_at(set, score, jid).await? else {
                    continue;
                };
                match action {
                    "retry" => api.retry_now(set, &entry).await?,
                    "delete" => api.delete_from_set(set, &entry).await?,
                    _ => api.kill(set, &entry).await?,
                };
            }
        }
        other => return Err(WebError(StatusCode::BAD_REQUEST, format!("no set action {other:?}"))),
    }
    Ok(back(&format!("/sets/{name}")))
}

pub(crate) async fn clear_unique(
    Extension(csrf): Extension<CsrfToken>,
    state: axum::extract::State<State>,
    Path(digest): Path<String>,
    body: Bytes,
) -> Result<Response, WebError> {
    Form::parse(&body, &csrf)?;
    state.api.clear_unique_lock(&digest).await?;
    Ok(back("/periodic"))
}
