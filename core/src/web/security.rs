//! What every request passes through, in order: the `Host` allow-list
//! (DNS rebinding), basic auth when configured, the CSRF check on every
//! POST (a double-submit token: a signed random cookie that each form
//! repeats, plus an `Origin` check against the allow-list), and headers
//! that forbid inline script, framing and MIME sniffing.

use super::State;
use crate::error::{Error, Result};
use axum::extract::Request;
use axum::http::{header, HeaderMap, HeaderValue, Method, StatusCode};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use hmac::{Hmac, Mac};
use std::net::SocketAddr;

/// The token cookie over plain HTTP. Over HTTPS the `__Host-` name is used
/// (with `Secure`): a browser only accepts it from this exact host, so a
/// sibling subdomain cannot plant one.
pub(crate) const CSRF_COOKIE: &str = "cogworker_csrf";
const CSRF_COOKIE_HTTPS: &str = "__Host-cogworker_csrf";
pub(crate) const CSRF_FIELD: &str = "csrf";

/// The CSRF token of this request, for forms to repeat.
#[derive(Clone, Debug)]
pub(crate) struct CsrfToken(pub String);

const CSP: &str = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; \
                   connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'";

/// The `Host` values this dashboard answers to, lower-cased. A browser
/// tricked by DNS rebinding sends the attacker's name, which is not here.
pub(crate) struct HostAllowList(Vec<String>);

impl HostAllowList {
    /// The loopback names of `bound`'s port, `bound` itself when it is a
    /// specific address, and `extra`.
    pub fn new(bound: SocketAddr, extra: &[String]) -> Self {
        let port = bound.port();
        let mut hosts = vec![
            format!("127.0.0.1:{port}"),
            format!("localhost:{port}"),
            format!("[::1]:{port}"),
        ];
        if !bound.ip().is_unspecified() {
            hosts.push(bound.to_string());
        }
        if port == 80 {
            // A browser leaves the default port out of `Host`.
            hosts.extend(["127.0.0.1", "localhost", "[::1]"].map(String::from));
        }
        hosts.extend(extra.iter().map(|h| h.to_ascii_lowercase()));
        HostAllowList(hosts)
    }

    fn allows(&self, host: &str) -> bool {
        let host = host.to_ascii_lowercase();
        self.0.contains(&host)
    }
}

/// An `--allowed-host` value: `name` or `name:port`, nothing else.
pub(crate) fn check_allowed_host(host: &str) -> Result<String> {
    let bad = |reason: &str| Error::config("web.allowed_hosts", host, reason);
    if host.is_empty() {
        return Err(bad("must not be empty"));
    }
    if host.contains("://") || host.contains('/') {
        return Err(bad("must be a host name or host:port, without scheme or path"));
    }
    if host
        .chars()
        .any(|c| c.is_whitespace() || c.is_control() || matches!(c, '@' | ',' | '*'))
    {
        return Err(bad("must be a host name or host:port (no spaces, '@', ',' or '*')"));
    }
    Ok(host.to_ascii_lowercase())
}

/// The per-process key that signs CSRF tokens: a token the server did
/// not issue (planted by a sibling subdomain, or from before a restart) is
/// refused.
pub(crate) struct CsrfKey([u8; 32]);

impl CsrfKey {
    pub fn random() -> Self {
        CsrfKey(rand::random())
    }

    fn mac(&self, nonce: &str) -> String {
        let mut mac = Hmac::<sha1::Sha1>::new_from_slice(&self.0).expect("HMAC takes a key of any size");
        mac.update(nonce.as_bytes());
        hex::encode(mac.finalize().into_bytes())
    }

    fn issue(&self) -> String {
        let nonce = hex::encode(rand::random::<[u8; 16]>());
        let mac = self.mac(&nonce);
        format!("{nonce}.{mac}")
    }

    fn verify(&self, token: &str) -> bool {
        token.split_once('.').is_some_and(|(nonce, mac)| {
            nonce.len() == 32 && constant_time_eq(mac.as_bytes(), self.mac(nonce).as_bytes())
        })
    }
}

/// `cogworker metrics`: the dashboard's `Host` allow-list and basic auth
/// (class and queue names are what a rebinding page would read), its
/// headers; no cookies (no pages, no actions).
pub(crate) async fn metrics_guard(
    axum::extract::State(state): axum::extract::State<State>,
    request: Request,
    next: Next,
) -> Response {
    if let Some(refused) = refuse_foreign_host(&state, &request) {
        return refused;
    }
    if let Some((user, password)) = &state.credentials {
        if !authorized(request.headers(), user, password) {
            return unauthorized();
        }
    }
    with_headers(next.run(request).await)
}

/// Is this us? Checked first, before anything can be read or changed (a
/// 403, not a 421: a browser retries a 421 on a new connection, doubling
/// every refused request).
fn refuse_foreign_host(state: &State, request: &Request) -> Option<Response> {
    let host = request_host(request);
    if host.as_deref().is_some_and(|h| state.hosts.allows(h)) {
        return None;
    }
    let body = format!(
        "this server does not serve the host {:?}: if that is its real name (a proxy, or \
         a name in DNS), add it with --allowed-host {} or COGWORKER_WEB_ALLOWED_HOSTS",
        host.as_deref().unwrap_or("(none)"),
        host.as_deref().unwrap_or("NAME"),
    );
    Some(with_headers((StatusCode::FORBIDDEN, body).into_response()))
}

fn unauthorized() -> Response {
    let mut response = (StatusCode::UNAUTHORIZED, "authentication required").into_response();
    response.headers_mut().insert(
        header::WWW_AUTHENTICATE,
        HeaderValue::from_static("Basic realm=\"cogworker\", charset=\"UTF-8\""),
    );
    with_headers(response)
}

pub(crate) async fn guard(
    axum::extract::State(state): axum::extract::State<State>,
    mut request: Request,
    next: Next,
) -> Response {
    if let Some(refused) = refuse_foreign_host(&state, &request) {
        return refused;
    }
    if let Some((user, password)) = &state.credentials {
        if !authorized(request.headers(), user, password) {
            return unauthorized();
        }
    }
    let https = is_https(&request);
    let cookie_name = if https { CSRF_COOKIE_HTTPS } else { CSRF_COOKIE };
    let existing = valid_cookie(request.headers(), cookie_name, &state.csrf);
    if request.method() == Method::POST {
        if !same_origin(request.headers(), &state.hosts) {
            return with_headers((StatusCode::FORBIDDEN, "cross-origin request refused").into_response());
        }
        // The form field is checked by the action (it reads the body).
        let Some(token) = existing.clone() else {
            return with_headers((StatusCode::FORBIDDEN, "missing CSRF cookie: reload the page").into_response());
        };
        request.extensions_mut().insert(CsrfToken(token));
    } else {
        let token = existing.clone().unwrap_or_else(|| state.csrf.issue());
        request.extensions_mut().insert(CsrfToken(token));
    }
    let issued = request.extensions().get::<CsrfToken>().cloned();
    let mut response = next.run(request).await;
    if let (None, Some(CsrfToken(token))) = (existing, issued) {
        let secure = if https { "; Secure" } else { "" };
        let cookie = format!("{cookie_name}={token}; Path=/; HttpOnly; SameSite=Strict{secure}");
        if let Ok(value) = HeaderValue::from_str(&cookie) {
            response.headers_mut().append(header::SET_COOKIE, value);
        }
    }
    with_headers(response)
}

/// The host the client asked for: the URI's authority (HTTP/2, or an
/// absolute-form request line), else the `Host` header.
fn request_host(request: &Request) -> Option<String> {
    if let Some(authority) = request.uri().authority() {
        return Some(authority.as_str().to_string());
    }
    request
        .headers()
        .get(header::HOST)
        .and_then(|v| v.to_str().ok())
        .map(str::to_string)
}

/// Served over HTTPS: by a TLS-terminating server this router is mounted
/// in, or behind a proxy that says so. Only ever makes the cookie stricter,
/// so a forged header harms no one but its sender.
fn is_https(request: &Request) -> bool {
    let forwarded_proto = |name: &str| {
        request
            .headers()
            .get(name)
            .and_then(|v| v.to_str().ok())
            .is_some_and(|v| v.to_ascii_lowercase().contains("https"))
    };
    request.uri().scheme_str() == Some("https") || forwarded_proto("x-forwarded-proto") || forwarded_proto("forwarded")
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

/// A POST's `Origin` (or, without one, `Referer`) must name one of the
/// allowed hosts; one present but unreadable (`null`, garbage) is
/// cross-origin. Never compared with the request's own `Host`, which an
/// attacker's page chooses under DNS rebinding.
fn same_origin(headers: &HeaderMap, hosts: &HostAllowList) -> bool {
    let source = headers
        .get(header::ORIGIN)
        .or_else(|| headers.get(header::REFERER))
        .map(|v| v.to_str().ok());
    match source {
        // Non-browser clients send neither; the CSRF token still applies.
        None => true,
        Some(None) => false,
        Some(Some(url)) => url
            .split_once("://")
            .filter(|(scheme, _)| matches!(scheme.to_ascii_lowercase().as_str(), "http" | "https"))
            .map(|(_, rest)| rest.split(['/', '?', '#']).next().unwrap_or(""))
            .is_some_and(|origin_host| !origin_host.is_empty() && hosts.allows(origin_host)),
    }
}

/// The first cookie `name` that `key` signed: a browser sends every cookie
/// of that name (cookies ignore ports: a server on another local port may
/// have set one), and a planted one must not hide ours.
fn valid_cookie(headers: &HeaderMap, name: &str, key: &CsrfKey) -> Option<String> {
    headers
        .get_all(header::COOKIE)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(';'))
        .filter_map(|pair| pair.trim().split_once('='))
        .find(|(cookie, value)| *cookie == name && key.verify(value))
        .map(|(_, value)| value.to_string())
}

fn constant_time_eq(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}
