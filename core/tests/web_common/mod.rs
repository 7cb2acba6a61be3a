//! The dashboard over HTTP without a socket: requests sent straight into
//! the router, as a browser on this machine would send them.
#![allow(dead_code)]

use axum::body::Body;
use axum::http::{header, Request, StatusCode};
use axum::Router;
use http_body_util::BodyExt;
use tower::ServiceExt;

/// How a browser on this machine names the dashboard (the default bind).
pub const HOST: &str = "127.0.0.1:7890";
pub const ORIGIN: &str = "http://127.0.0.1:7890";

pub struct Page {
    pub status: StatusCode,
    pub headers: axum::http::HeaderMap,
    pub body: String,
}

pub async fn send(app: &Router, request: Request<Body>) -> Page {
    let response = app.clone().oneshot(request).await.unwrap();
    let status = response.status();
    let headers = response.headers().clone();
    let bytes = response.into_body().collect().await.unwrap().to_bytes();
    Page {
        status,
        headers,
        body: String::from_utf8_lossy(&bytes).into_owned(),
    }
}

pub async fn get(app: &Router, path: &str) -> Page {
    send(
        app,
        Request::get(path)
            .header(header::HOST, HOST)
            .body(Body::empty())
            .unwrap(),
    )
    .await
}

/// A browser session: the CSRF cookie from a first GET, repeated in forms.
pub struct Session {
    pub app: Router,
    pub token: String,
}

impl Session {
    pub async fn open(app: &Router) -> Session {
        let page = get(app, "/").await;
        assert_eq!(page.status, StatusCode::OK, "{}", page.body);
        let cookie = page.headers.get(header::SET_COOKIE).unwrap().to_str().unwrap();
        let token = cookie.split(';').next().unwrap().split_once('=').unwrap().1.to_string();
        assert!(
            cookie.contains("HttpOnly") && cookie.contains("SameSite=Strict"),
            "{cookie}"
        );
        Session {
            app: app.clone(),
            token,
        }
    }

    pub async fn post(&self, path: &str, fields: &[(&str, &str)]) -> Page {
        let mut form = form_body(fields);
        form.push_str(&format!("&csrf={}", self.token));
        self.post_raw(path, form, Some(ORIGIN)).await
    }

    pub async fn post_raw(&self, path: &str, form: String, origin: Option<&str>) -> Page {
        let mut request = Request::post(path)
            .header(header::HOST, HOST)
            .header(header::CONTENT_TYPE, "application/x-www-form-urlencoded")
            .header(header::COOKIE, format!("cogworker_csrf={}", self.token));
        if let Some(origin) = origin {
            request = request.header(header::ORIGIN, origin);
        }
        send(&self.app, request.body(Body::from(form)).unwrap()).await
    }
}

pub fn form_body(fields: &[(&str, &str)]) -> String {
    let mut form = String::from("x=1");
    for (k, v) in fields {
        let v: String = url_encode(v);
        form.push_str(&format!("&{k}={v}"));
    }
    form
}

pub fn url_encode(text: &str) -> String {
    text.bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' => (b as char).to_string(),
            _ => format!("%{b:02X}"),
        })
        .collect()
}
