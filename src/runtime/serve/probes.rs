//! The probe and metrics endpoint: `/healthz`, `/readyz`, `/metrics` over HTTP/1.1 (hyper);
//! any other path is a 404, any other method a 405. The probes are open (the kubelet calls
//! them without credentials); `/metrics`, given a [`MetricsAuth`], only to those it allows.

use crate::runtime::serve::metrics::Metrics;
use crate::runtime::serve::metrics_auth::{MetricsAuth, METRICS_PATH};
use http_body_util::Full;
use hyper::body::{Bytes, Incoming};
use hyper::header::{HeaderValue, ALLOW, AUTHORIZATION, CONTENT_TYPE, WWW_AUTHENTICATE};
use hyper::service::service_fn;
use hyper::{Method, Request, Response, StatusCode};
use hyper_util::rt::TokioIo;
use std::convert::Infallible;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use tokio::net::TcpListener;
use tracing::{debug, info, warn};

/// What the probes report.
#[derive(Default)]
pub struct Health {
    /// Set once the process is up and (if elected) its controller runs or it waits as standby.
    pub ready: AtomicBool,
}

/// Serves until the process ends; `/metrics` checked by `auth` (None: served to anyone).
pub async fn serve(
    listener: TcpListener,
    health: Arc<Health>,
    metrics: Arc<Metrics>,
    auth: Option<Arc<MetricsAuth>>,
) {
    if let Ok(addr) = listener.local_addr() {
        info!(%addr, "serving /healthz /readyz /metrics");
    }
    loop {
        let stream = match listener.accept().await {
            Ok((stream, _)) => stream,
            Err(error) => {
                warn!(%error, "accept failed");
                continue;
            }
        };
        let (health, metrics, auth) = (health.clone(), metrics.clone(), auth.clone());
        tokio::spawn(async move {
            let service = service_fn(move |request: Request<Incoming>| {
                let (health, metrics, auth) = (health.clone(), metrics.clone(), auth.clone());
                async move {
                    if let Some(refused) = refused(&request, auth.as_deref()).await {
                        return Ok::<_, Infallible>(refused);
                    }
                    Ok(respond(&request, &health, &metrics))
                }
            });
            if let Err(error) = hyper::server::conn::http1::Builder::new()
                .serve_connection(TokioIo::new(stream), service)
                .await
            {
                debug!(%error, "HTTP connection ended with an error");
            }
        });
    }
}

/// The refusal of a `/metrics` read that `auth` does not allow.
async fn refused<B>(
    request: &Request<B>,
    auth: Option<&MetricsAuth>,
) -> Option<Response<Full<Bytes>>> {
    let auth = auth?;
    if request.uri().path() != METRICS_PATH
        || !matches!(*request.method(), Method::GET | Method::HEAD)
    {
        return None;
    }
    let verdict = auth.check(request.headers().get(AUTHORIZATION)).await;
    let (status, text) = verdict.refusal()?;
    let mut response = reply(status, "text/plain; charset=utf-8", text.into());
    if status == StatusCode::UNAUTHORIZED {
        response.headers_mut().insert(
            WWW_AUTHENTICATE,
            HeaderValue::from_static("Bearer realm=\"ceph-osd-operator\""),
        );
    }
    Some(response)
}

fn respond<B>(request: &Request<B>, health: &Health, metrics: &Metrics) -> Response<Full<Bytes>> {
    const TEXT: &str = "text/plain; charset=utf-8";
    const OPENMETRICS: &str = "application/openmetrics-text; version=1.0.0; charset=utf-8";
    if !matches!(*request.method(), Method::GET | Method::HEAD) {
        let mut response = reply(StatusCode::METHOD_NOT_ALLOWED, TEXT, "GET only\n".into());
        response
            .headers_mut()
            .insert(ALLOW, HeaderValue::from_static("GET, HEAD"));
        return response;
    }
    match request.uri().path() {
        "/healthz" => reply(StatusCode::OK, TEXT, "ok\n".into()),
        "/readyz" if health.ready.load(Ordering::Relaxed) => {
            reply(StatusCode::OK, TEXT, "ok\n".into())
        }
        "/readyz" => reply(StatusCode::SERVICE_UNAVAILABLE, TEXT, "starting\n".into()),
        "/metrics" => reply(StatusCode::OK, OPENMETRICS, metrics.encode()),
        _ => reply(StatusCode::NOT_FOUND, TEXT, "not found\n".into()),
    }
}

fn reply(status: StatusCode, content_type: &'static str, body: String) -> Response<Full<Bytes>> {
    let mut response = Response::new(Full::new(Bytes::from(body)));
    *response.status_mut() = status;
    response
        .headers_mut()
        .insert(CONTENT_TYPE, HeaderValue::from_static(content_type));
    response
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    use tokio::net::TcpStream;

    async fn send(addr: std::net::SocketAddr, method: &str, path: &str) -> String {
        let mut stream = TcpStream::connect(addr).await.expect("connects");
        stream
            .write_all(
                format!("{method} {path} HTTP/1.1\r\nhost: x\r\nconnection: close\r\n\r\n")
                    .as_bytes(),
            )
            .await
            .expect("writes");
        let mut out = String::new();
        stream.read_to_string(&mut out).await.expect("reads");
        out
    }

    #[tokio::test]
    async fn probes_and_metrics() {
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("binds");
        let addr = listener.local_addr().expect("addr");
        let health = Arc::new(Health::default());
        tokio::spawn(serve(
            listener,
            health.clone(),
            Arc::new(Metrics::default()),
            None,
        ));
        assert!(send(addr, "GET", "/healthz")
            .await
            .starts_with("HTTP/1.1 200"));
        assert!(send(addr, "GET", "/readyz")
            .await
            .starts_with("HTTP/1.1 503"));
        health.ready.store(true, Ordering::Relaxed);
        assert!(send(addr, "GET", "/readyz")
            .await
            .starts_with("HTTP/1.1 200"));
        let metrics = send(addr, "GET", "/metrics?x=1").await;
        assert!(
            metrics.contains("ceph_osd_operator_reconciles_total 0"),
            "{metrics}"
        );
        assert!(metrics.contains("content-type: application/openmetrics-text"));
        assert!(send(addr, "GET", "/nope").await.starts_with("HTTP/1.1 404"));
        let post = send(addr, "POST", "/metrics").await;
        assert!(
            post.starts_with("HTTP/1.1 405") && post.contains("allow: GET, HEAD"),
            "{post}"
        );
    }

    #[tokio::test]
    async fn a_request_larger_than_one_read_and_kept_alive_is_served() {
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("binds");
        let addr = listener.local_addr().expect("addr");
        tokio::spawn(serve(
            listener,
            Arc::new(Health::default()),
            Arc::new(Metrics::default()),
            None,
        ));
        let mut stream = TcpStream::connect(addr).await.expect("connects");
        let padding = "x".repeat(8 * 1024);
        let request = format!("GET /healthz HTTP/1.1\r\nhost: x\r\nx-padding: {padding}\r\n\r\n");
        // Two requests on one connection, the second closing it.
        stream
            .write_all(
                format!("{request}GET /healthz HTTP/1.1\r\nhost: x\r\nconnection: close\r\n\r\n")
                    .as_bytes(),
            )
            .await
            .expect("writes");
        let mut out = String::new();
        stream.read_to_string(&mut out).await.expect("reads");
        assert_eq!(out.matches("HTTP/1.1 200").count(), 2, "{out}");
    }
}
