//! What every request passes through: basic auth when configured, the
//! CSRF check on every POST (a double-submit token: a random cookie that
//! each form repeats, plus a same-origin check), and headers that forbid
//! inline script, framing and MIME sniffing.

use super::State;
use axum::extract::Request;
use axum::http::{header, HeaderMap, HeaderValue, Method, StatusCode};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};

pub(crate) const CSRF_COOKIE: &str = "cogworker_csrf";
pub(crate) const CSRF_FIELD: &str = "csrf";

/// The CSRF token of this request, for forms to repeat.
#[derive(Clone, Debug)]
pub(crate) struct CsrfToken(pub String);

const CSP: &str = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; \
                   connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'";

pub(crate) async fn guard(
    axum::extract::State(state): axum::extract::State<State>,
    mut request: Request,
    next: Next,
) -> Response {
    if let Some((user, password)) = &state.credentials {
        if !authorized(request.headers(), user, password) {
            let mut response = (StatusCode::UNAUTHORIZED, "authentication required").into_response();
            response.headers_mut().insert(
                header::WWW_AUTHENTICATE,
                HeaderValue::from_static("Basic realm=\"cogworker\", charset=\"UTF-8\""),
            );
            return with_headers(response);
        }
    }
    let existing = cookie(request.headers(), CSRF_COOKIE).filter(|t| t.len() == 32);
    if request.method() == Method::POST {
        if !same_origin(request.headers()) {
            return with_headers((StatusCode::FORBIDDEN, "cross-origin request refused").into_response());
        }
        // The form field is checked by the action (it reads the body).
        let Some(token) = existing.clone() else {
            return with_headers((StatusCode::FORBIDDEN, "missing CSRF cookie: reload the page").into_response());
        };
        request.extensions_mut().insert(CsrfToken(token));
    } else {
        let token = existing
            .clone()
            .unwrap_or_else(|| hex::encode(rand::random::<[u8; 16]>()));
        request.extensions_mut().insert(CsrfToken(token));
    }
    let issued = request.extensions().get::<CsrfToken>().cloned();
    let mut response = next.run(request).await;
    if let (None, Some(CsrfToken(token))) = (existing, issued) {
        let cookie = format!("{CSRF_COOKIE}={token}; Path=/; HttpOnly; SameSite=Strict");
        if let Ok(value) = HeaderValue::from_str(&cookie) {
            response.headers_mut().append(header::SET_COOKIE, value);
        }
    }
    with_headers(response)
}

/// True if the form's token matches the cookie's (constant time).
pub(crate) fn csrf_ok(expected: &CsrfToken, submitted: Option<&str>) -> bool {
    submitted.is_some_and(|s| constant_time_eq(s.as_bytes(), expected.0.as_bytes()))
}

fn with_headers(mut response: Response) -> Response {
    let headers = response.headers_mut();
    headers.insert(header::CONTENT_SECURITY_POLICY, HeaderValue::from_static(CSP));
    headers.insert(header::X_CONTENT_TYPE_OPTIONS, HeaderValue::from_static("nosniff"));
    headers.insert(header::X_FRAME_OPTIONS, HeaderValue::from_static("DENY"));
    headers.insert(header::REFERRER_POLICY, HeaderValue::from_static("same-origin"));
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    response
}

fn authorized(headers: &HeaderMap, user: &str, password: &str) -> bool {
    use base64::Engine as _;
    let Some(value) = headers.get(header::AUTHORIZATION).and_then(|v| v.to_str().ok()) else {
        return false;
    };
    let Some(encoded) = value.strip_prefix("Basic ") else {
        return false;
    };
    let Ok(decoded) = base64::engine::general_purpose::STANDARD.decode(encoded.trim()) else {
        return false;
    };
    let expected = format!("{user}:{password}");
    constant_time_eq(&decoded, expected.as_bytes())
}

/// A POST's `Origin` (or, without one, `Referer`) must name this host.
fn same_origin(headers: &HeaderMap) -> bool {
    let Some(host) = headers.get(header::HOST).and_then(|v| v.to_str().ok()) else {
        return false;
    };
    let source = headers
        .get(header::ORIGIN)
        .or_else(|| headers.get(header::REFERER))
        .and_then(|v| v.to_str().ok());
    match source {
        // Non-browser clients send neither; the CSRF token still applies.
        None => true,
        Some(url) => url
            .split_once("://")
            .map(|(_, rest)| rest.split('/').next().unwrap_or(""))
            .is_some_and(|origin_host| origin_host == host),
    }
}

fn cookie(headers: &HeaderMap, name: &str) -> Option<String> {
    headers
        .get_all(header::COOKIE)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(';'))
        .filter_map(|pair| pair.trim().split_once('='))
        .find(|(key, _)| *key == name)
        .map(|(_, value)| value.to_string())
}

fn constant_time_eq(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}
