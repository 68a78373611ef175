//! What a request must pass before an endpoint sees it: its whole body
//! read, the Host check against DNS rebinding, the browsers' cross-origin
//! protection, and the token. Each refusal is a JSON error, as every answer.

use std::net::SocketAddr;
use std::sync::Arc;

use axum::body::Body;
use axum::extract::{MatchedPath, Request, State};
use axum::http::{header, HeaderMap, HeaderValue, Method, StatusCode};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use subtle::ConstantTimeEq;

use super::wire::{read_body, ApiError};
use super::Server;

/// The host names a loopback server without a token answers to.
#[derive(Debug, Clone)]
pub struct Hosts {
    names: Vec<String>,
}

impl Hosts {
    pub fn loopback(bound: SocketAddr) -> Hosts {
        let mut names: Vec<String> = ["localhost", "127.0.0.1", "::1"].map(String::from).into();
        names.push(bound.ip().to_string());
        Hosts { names }
    }

    /// A Host header names this machine. Its port is not looked at, as
    /// the published server does not: a tunnel's (`ssh -L 8080:…`) is not
    /// the server's, and a DNS name is what a web page cannot change.
    fn allows(&self, host: &str) -> bool {
        let name = host_name(host);
        self.names.iter().any(|n| n.eq_ignore_ascii_case(name))
    }
}

/// `[::1]:7660` → `::1`; `localhost:7660` and `localhost` → `localhost`.
fn host_name(host: &str) -> &str {
    if let Some(rest) = host.strip_prefix('[') {
        return rest.split_once(']').map_or(host, |(name, _)| name);
    }
    match host.rsplit_once(':') {
        Some((name, _)) if !name.contains(':') => name,
        _ => host,
    }
}

/// Reads the whole body (up to the limit) before anything answers. An
/// answer given while part of the body is unread (a refusal from a guard,
/// a 405) makes hyper close the connection after it without a word, and a
/// client that sends its next request on that connection finds it gone. A
/// body over the limit is refused, and that connection closed, saying so.
pub async fn whole_body(State(limit): State<usize>, request: Request, next: Next) -> Response {
    let (parts, body) = request.into_parts();
    match read_body(body, limit).await {
        Ok(bytes) => next.run(Request::from_parts(parts, Body::from(bytes))).await,
        Err(refused) => {
            let mut response = refused.into_response();
            response.headers_mut().insert(header::CONNECTION, HeaderValue::from_static("close"));
            response
        }
    }
}

/// Refuses requests addressed to any host but this machine, so that a web
/// page cannot reach a loopback server through a DNS name that points here.
pub async fn host_check(State(hosts): State<Arc<Hosts>>, request: Request, next: Next) -> Response {
    let host = request.headers().get(header::HOST).and_then(|h| h.to_str().ok()).unwrap_or("");
    if !hosts.allows(host) {
        let msg = "this server only answers requests addressed to localhost, 127.0.0.1 or [::1]";
        return ApiError(StatusCode::FORBIDDEN, msg.into()).into_response();
    }
    next.run(request).await
}

/// Browsers say where a request comes from; a request that changes
/// something from another site is refused (as Go's CrossOriginProtection).
pub async fn cross_origin(request: Request, next: Next) -> Response {
    if !from_same_site(request.method(), request.headers()) {
        return ApiError(StatusCode::FORBIDDEN, "requests from other web pages aren't allowed".into())
            .into_response();
    }
    next.run(request).await
}

fn from_same_site(method: &Method, headers: &HeaderMap) -> bool {
    if matches!(*method, Method::GET | Method::HEAD | Method::OPTIONS) {
        return true;
    }
    let text = |name| headers.get(name).and_then(|v: &HeaderValue| v.to_str().ok());
    match text("sec-fetch-site") {
        Some("same-origin" | "none") => return true,
        Some(_) => return false,
        None => {}
    }
    let Some(origin) = text(header::ORIGIN.as_str()) else {
        // Not a browser, or one too old to say: nothing to go by.
        return true;
    };
    let origin_host = origin.split_once("://").map_or(origin, |(_, rest)| rest);
    text(header::HOST.as_str()).is_some_and(|host| host == origin_host)
}

/// Every endpoint but `/v1/health` needs `Authorization: Bearer TOKEN`
/// when the server has a token; compared in constant time.
pub async fn auth(State(server): State<Arc<Server>>, request: Request, next: Next) -> Response {
    let Some(token) = &server.token else {
        return next.run(request).await;
    };
    let route = request.extensions().get::<MatchedPath>().map(|p| p.as_str()).unwrap_or("");
    if route != "/v1/health" {
        let want = format!("Bearer {token}");
        let given = request.headers().get(header::AUTHORIZATION).map(|v| v.as_bytes()).unwrap_or(b"");
        if !bool::from(given.ct_eq(want.as_bytes())) {
            let mut refused =
                ApiError(StatusCode::UNAUTHORIZED, "missing or wrong token".into()).into_response();
            refused
                .headers_mut()
                .insert(header::WWW_AUTHENTICATE, HeaderValue::from_static(r#"Bearer realm="ukue""#));
            return refused;
        }
    }
    next.run(request).await
}

/// axum answers a known path with a wrong method with an empty 405 (its
/// Allow header is added further out); give it the JSON error every
/// answer has.
pub async fn json_405(request: Request, next: Next) -> Response {
    let method = request.method().clone();
    let response = next.run(request).await;
    if response.status() == StatusCode::METHOD_NOT_ALLOWED
        && response.headers().get(header::CONTENT_TYPE).is_none()
    {
        let mut refused =
            ApiError(StatusCode::METHOD_NOT_ALLOWED, format!("{method} is not allowed here")).into_response();
        for (name, value) in response.headers() {
            refused.headers_mut().entry(name).or_insert(value.clone());
        }
        return refused;
    }
    response
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hosts() {
        let hosts = Hosts::loopback("127.0.0.1:7660".parse().unwrap());
        for ok in
            ["localhost:7660", "127.0.0.1:7660", "[::1]:7660", "LOCALHOST", "127.0.0.1", "localhost:8080"]
        {
            assert!(hosts.allows(ok), "{ok}");
        }
        for refused in ["evil.example:7660", "", "127.0.0.2:7660", "evil.example", "[::2]:7660"] {
            assert!(!hosts.allows(refused), "{refused}");
        }
    }

    #[test]
    fn cross_site() {
        let headers = |pairs: &[(&'static str, &'static str)]| {
            let mut h = HeaderMap::new();
            for (k, v) in pairs {
                h.insert(*k, HeaderValue::from_static(v));
            }
            h
        };
        let post = Method::POST;
        assert!(from_same_site(&post, &headers(&[])));
        assert!(from_same_site(&Method::GET, &headers(&[("sec-fetch-site", "cross-site")])));
        assert!(!from_same_site(&post, &headers(&[("sec-fetch-site", "cross-site")])));
        assert!(!from_same_site(&post, &headers(&[("sec-fetch-site", "same-site")])));
        assert!(from_same_site(&post, &headers(&[("sec-fetch-site", "same-origin")])));
        let same = [("origin", "http://localhost:7660"), ("host", "localhost:7660")];
        assert!(from_same_site(&post, &headers(&same)));
        let other = [("origin", "http://evil.example"), ("host", "localhost:7660")];
        assert!(!from_same_site(&post, &headers(&other)));
    }
}
