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
mod tests;
