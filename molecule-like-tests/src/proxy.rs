//! The API proxy: plain HTTP on loopback in front of the apiextensions-apiserver.
//!
//! `/api` and `/api/v1` are served statically (discovery); `/api/v1/...pods...` maps to the
//! `core.testing.local/v1` custom resource with `apiVersion` rewritten both ways (bodies, lists,
//! watch streams event by event); everything else passes through unchanged. Upstream requests
//! go through a `kube::Client` built from the admin kubeconfig (client-certificate TLS).

use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Instant;

use bytes::Bytes;
use http::header::{self, HeaderMap, HeaderValue};
use http::{Method, Request, Response, StatusCode};
use http_body_util::combinators::UnsyncBoxBody;
use http_body_util::{BodyExt, Full, StreamBody};
use hyper::body::{Frame, Incoming};
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper_util::rt::TokioIo;
use kube::client::Body as KubeBody;
use kube::Client;
use serde_json::{json, Value};
use tokio::net::TcpListener;

use crate::rewrite::{self, PodsPath, Route, KUBELET_FINALIZER};

type BoxError = Box<dyn std::error::Error + Send + Sync>;
type RespBody = UnsyncBoxBody<Bytes, BoxError>;

/// Proxy state shared by all connections.
pub struct Proxy {
    upstream: Client,
    server_address: String,
}

fn full(bytes: impl Into<Bytes>) -> RespBody {
    Full::new(bytes.into())
        .map_err(|never: Infallible| match never {})
        .boxed_unsync()
}

fn json_response(code: StatusCode, v: &Value) -> Response<RespBody> {
    let mut resp = Response::new(full(serde_json::to_vec(v).unwrap_or_default()));
    *resp.status_mut() = code;
    resp.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    resp
}

fn failure(code: StatusCode, reason: &str, message: &str) -> Response<RespBody> {
    json_response(
        code,
        &rewrite::status_failure(code.as_u16(), reason, message),
    )
}

/// Request headers that are not forwarded (hop-by-hop, our own auth, compression we would
/// have to undo before rewriting).
fn forwardable_request_header(name: &header::HeaderName) -> bool {
    !matches!(
        name.as_str(),
        "host"
            | "content-length"
            | "connection"
            | "keep-alive"
            | "transfer-encoding"
            | "te"
            | "trailer"
            | "upgrade"
            | "proxy-authorization"
            | "proxy-connection"
            | "authorization"
            | "accept-encoding"
    )
}

fn copy_response_headers(from: &HeaderMap, to: &mut HeaderMap, drop_length: bool) {
    for (k, v) in from {
        let hop = matches!(
            k.as_str(),
            "connection" | "keep-alive" | "transfer-encoding" | "te" | "trailer" | "upgrade"
        );
        if hop || (drop_length && k == header::CONTENT_LENGTH) {
            continue;
        }
        to.append(k.clone(), v.clone());
    }
}

fn content_type(headers: &HeaderMap) -> String {
    headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("")
        .split(';')
        .next()
        .unwrap_or("")
        .trim()
        .to_ascii_lowercase()
}

impl Proxy {
    /// A proxy whose upstream is `upstream` (a client of the real API server).
    pub fn new(upstream: Client, server_address: String) -> Self {
        Self {
            upstream,
            server_address,
        }
    }

    /// Serves until the process ends.
    pub async fn serve(self: Arc<Self>, listener: TcpListener) -> anyhow::Result<()> {
        loop {
            let (stream, peer) = listener.accept().await?;
            let this = self.clone();
            tokio::spawn(async move {
                let svc = service_fn(move |req| {
                    let this = this.clone();
                    async move { Ok::<_, Infallible>(this.handle(req).await) }
                });
                if let Err(e) = http1::Builder::new()
                    .serve_connection(TokioIo::new(stream), svc)
                    .await
                {
                    tracing::debug!(%peer, error = %e, "connection ended");
                }
            });
        }
    }

    async fn handle(&self, req: Request<Incoming>) -> Response<RespBody> {
        let start = Instant::now();
        let method = req.method().clone();
        let path = req.uri().path().to_string();
        let query = req.uri().query().map(str::to_string);
        let resp = match self.handle_inner(req).await {
            Ok(r) => r,
            Err(e) => {
                tracing::warn!(%method, %path, error = %e, "proxy error");
                failure(StatusCode::BAD_GATEWAY, "InternalError", &e.to_string())
            }
        };
        let line = format!(
            "{method} {path}{}{} -> {} ({} ms)",
            if query.as_deref().is_some_and(|q| !q.is_empty()) {
                "?"
            } else {
                ""
            },
            query.as_deref().unwrap_or(""),
            resp.status().as_u16(),
            start.elapsed().as_millis()
        );
        // Reads are frequent (the GC polls): only writes, watches and errors at info.
        if method == Method::GET
            && !rewrite::query_is_watch(query.as_deref())
            && resp.status().is_success()
        {
            tracing::debug!("{line}");
        } else {
            tracing::info!("{line}");
        }
        resp
    }

    async fn handle_inner(&self, req: Request<Incoming>) -> anyhow::Result<Response<RespBody>> {
        let (parts, body) = req.into_parts();
        let body = body.collect().await?.to_bytes();
        let path = parts.uri.path();
        let query = parts.uri.query();
        match rewrite::route(path) {
            Route::ApiVersions => Ok(json_response(
                StatusCode::OK,
                &rewrite::api_versions(&self.server_address),
            )),
            Route::CoreResources => Ok(json_response(StatusCode::OK, &rewrite::core_resources())),
            Route::ApiGroups => {
                let req = Request::builder()
                    .method(Method::GET)
                    .uri("/apis/apiextensions.k8s.io/v1/customresourcedefinitions")
                    .body(Vec::new())?;
                let crds: Value = self.upstream.request(req).await?;
                Ok(json_response(
                    StatusCode::OK,
                    &rewrite::api_group_list(&crds),
                ))
            }
            Route::OpenApiV3Index | Route::OpenApiV3Core => {
                let (uri, core) = match rewrite::route(path) {
                    Route::OpenApiV3Index => ("/openapi/v3".to_string(), false),
                    _ => (rewrite::POD_OPENAPI_V3.to_string(), true),
                };
                let upstream = self
                    .forward(&parts.method, &uri, &parts.headers, body)
                    .await?;
                let (up_parts, up_body) = upstream.into_parts();
                let bytes = up_body.collect_bytes().await?;
                if !up_parts.status.is_success() {
                    let mut resp = Response::new(full(bytes));
                    *resp.status_mut() = up_parts.status;
                    copy_response_headers(&up_parts.headers, resp.headers_mut(), true);
                    return Ok(resp);
                }
                let out = rewrite::rewrite_json(&bytes, |v| {
                    if core {
                        rewrite::openapi_core(v);
                    } else {
                        rewrite::openapi_index_add_core(v);
                    }
                })
                .map_or(bytes, Bytes::from);
                let mut resp = Response::new(full(out));
                copy_response_headers(&up_parts.headers, resp.headers_mut(), true);
                // The body changed: a cached ETag of the upstream document no longer fits.
                resp.headers_mut().remove(header::ETAG);
                Ok(resp)
            }
            Route::CoreNotFound => Ok(failure(
                StatusCode::NOT_FOUND,
                "NotFound",
                &format!("the test control plane serves only pods in the core API, not {path}"),
            )),
            Route::PassThrough => {
                let uri = parts
                    .uri
                    .path_and_query()
                    .map(|pq| pq.as_str().to_string())
                    .unwrap_or_else(|| path.to_string());
                let upstream = self
                    .forward(&parts.method, &uri, &parts.headers, body)
                    .await?;
                let (up_parts, up_body) = upstream.into_parts();
                let mut resp =
                    Response::new(up_body.map_err(|e| Box::new(e) as BoxError).boxed_unsync());
                *resp.status_mut() = up_parts.status;
                copy_response_headers(&up_parts.headers, resp.headers_mut(), false);
                Ok(resp)
            }
            Route::Pods(pp) => self.pods(&parts, query, &pp, body).await,
        }
    }

    async fn forward(
        &self,
        method: &Method,
        uri: &str,
        headers: &HeaderMap,
        body: Bytes,
    ) -> anyhow::Result<Response<KubeBody>> {
        let mut builder = Request::builder().method(method.clone()).uri(uri);
        for (k, v) in headers {
            if forwardable_request_header(k) {
                builder = builder.header(k, v);
            }
        }
        let req = builder.body(KubeBody::from(body))?;
        Ok(self.upstream.send(req).await?)
    }

    async fn pods(
        &self,
        parts: &http::request::Parts,
        query: Option<&str>,
        pp: &PodsPath,
        body: Bytes,
    ) -> anyhow::Result<Response<RespBody>> {
        let ct = content_type(&parts.headers);
        let mut headers = parts.headers.clone();
        let body = if body.is_empty() || ct == "application/json-patch+json" {
            body
        } else {
            // JSON, merge patch, strategic merge patch (the server answers 415 for it, as
            // for any custom resource), apply patch (JSON or YAML).
            let mut value: Option<Value> = serde_json::from_slice(&body).ok();
            if value.is_none() && ct == "application/apply-patch+yaml" {
                value = std::str::from_utf8(&body)
                    .ok()
                    .and_then(|s| serde_saphyr::from_str::<Value>(s).ok());
            }
            match value {
                None => body,
                Some(mut v) => {
                    rewrite::request_value(&mut v);
                    if self.is_create(parts, pp, &ct).await {
                        rewrite::add_kubelet_finalizer(&mut v);
                    }
                    if ct == "application/apply-patch+yaml" {
                        // JSON is YAML; sent as JSON so nothing else needs the YAML parser.
                        headers.insert(
                            header::CONTENT_TYPE,
                            HeaderValue::from_static("application/apply-patch+yaml"),
                        );
                    }
                    Bytes::from(serde_json::to_vec(&v)?)
                }
            }
        };
        if parts.method == Method::DELETE && pp.name.is_some() && pp.subresource.is_none() {
            let grace_zero = rewrite::query_param(query, "gracePeriodSeconds") == Some("0")
                || serde_json::from_slice::<Value>(&body)
                    .ok()
                    .and_then(|v| v.get("gracePeriodSeconds").and_then(Value::as_i64))
                    == Some(0);
            if grace_zero {
                // Force deletion: no graceful termination, as with a real kubelet.
                self.remove_kubelet_finalizer(pp).await;
            }
        }
        let uri = match query {
            Some(q) => format!("{}?{q}", pp.upstream),
            None => pp.upstream.clone(),
        };
        let upstream = self.forward(&parts.method, &uri, &headers, body).await?;
        let (up_parts, up_body) = upstream.into_parts();
        let up_ct = content_type(&up_parts.headers);
        let json = up_ct == "application/json" || up_ct.is_empty();
        let watch = rewrite::query_is_watch(query) || pp.watch_prefix;
        let mut resp;
        if json && watch && up_parts.status.is_success() {
            resp = Response::new(watch_stream(up_body));
            copy_response_headers(&up_parts.headers, resp.headers_mut(), true);
        } else if json {
            let bytes = up_body.collect_bytes().await?;
            let out = rewrite::rewrite_json(&bytes, rewrite::response_value)
                .map(Bytes::from)
                .unwrap_or(bytes);
            resp = Response::new(full(out));
            copy_response_headers(&up_parts.headers, resp.headers_mut(), true);
        } else {
            resp = Response::new(up_body.map_err(|e| Box::new(e) as BoxError).boxed_unsync());
            copy_response_headers(&up_parts.headers, resp.headers_mut(), false);
        }
        *resp.status_mut() = up_parts.status;
        Ok(resp)
    }

    /// POST to a namespace's pods, or a server-side apply that will create the pod.
    async fn is_create(&self, parts: &http::request::Parts, pp: &PodsPath, ct: &str) -> bool {
        if parts.method == Method::POST && pp.is_namespaced_collection() {
            return true;
        }
        if parts.method == Method::PATCH
            && ct == "application/apply-patch+yaml"
            && pp.name.is_some()
            && pp.subresource.is_none()
        {
            let get = Request::builder()
                .method(Method::GET)
                .uri(&pp.upstream)
                .body(KubeBody::empty());
            if let Ok(get) = get {
                if let Ok(resp) = self.upstream.send(get).await {
                    return resp.status() == StatusCode::NOT_FOUND;
                }
            }
        }
        false
    }

    async fn remove_kubelet_finalizer(&self, pp: &PodsPath) {
        let Ok(get) = Request::builder()
            .method(Method::GET)
            .uri(&pp.upstream)
            .body(KubeBody::empty())
        else {
            return;
        };
        let Ok(pod) = self
            .upstream
            .request::<Value>(get.map(|_| Vec::new()))
            .await
        else {
            return;
        };
        let Some(idx) = pod
            .pointer("/metadata/finalizers")
            .and_then(Value::as_array)
            .and_then(|f| f.iter().position(|x| x.as_str() == Some(KUBELET_FINALIZER)))
        else {
            return;
        };
        let patch = json!([
            {"op": "test", "path": format!("/metadata/finalizers/{idx}"), "value": KUBELET_FINALIZER},
            {"op": "remove", "path": format!("/metadata/finalizers/{idx}")},
        ]);
        let req = Request::builder()
            .method(Method::PATCH)
            .uri(&pp.upstream)
            .header(header::CONTENT_TYPE, "application/json-patch+json")
            .body(serde_json::to_vec(&patch).unwrap_or_default());
        if let Ok(req) = req {
            if let Err(e) = self.upstream.request_text(req).await {
                tracing::warn!(error = %e, "removing the kubelet finalizer before a forced delete");
            }
        }
    }
}

/// Rewrites a watch stream event by event: each complete line is rewritten and flushed as
/// its own chunk; nothing waits for more than one line.
fn watch_stream(mut upstream: KubeBody) -> RespBody {
    let (tx, rx) = tokio::sync::mpsc::channel::<Result<Frame<Bytes>, BoxError>>(64);
    tokio::spawn(async move {
        let mut buf: Vec<u8> = Vec::new();
        loop {
            let frame = tokio::select! {
                f = upstream.frame() => f,
                () = tx.closed() => return, // the client went away: drop the upstream watch
            };
            match frame {
                None => break,
                Some(Err(e)) => {
                    let _ = tx.send(Err(Box::new(e))).await;
                    return;
                }
                Some(Ok(frame)) => {
                    let Ok(data) = frame.into_data() else {
                        continue;
                    };
                    buf.extend_from_slice(&data);
                    let lines = rewrite::take_lines(&mut buf);
                    if lines.is_empty() {
                        continue;
                    }
                    let mut out = Vec::new();
                    for line in lines {
                        out.extend(rewrite::watch_line(&line));
                    }
                    if tx.send(Ok(Frame::data(Bytes::from(out)))).await.is_err() {
                        return;
                    }
                }
            }
        }
        if !buf.is_empty() {
            let mut out = rewrite::watch_line(&buf);
            out.pop();
            let _ = tx.send(Ok(Frame::data(Bytes::from(out)))).await;
        }
    });
    let stream = futures::stream::unfold(rx, |mut rx| async move {
        rx.recv().await.map(|item| (item, rx))
    });
    StreamBody::new(stream).boxed_unsync()
}

/// Runs the proxy on `listen` with `upstream` as the real API server.
pub async fn run(upstream: Client, listen: SocketAddr) -> anyhow::Result<()> {
    let listener = TcpListener::bind(listen).await?;
    tracing::info!(%listen, "api proxy listening");
    let proxy = Arc::new(Proxy::new(upstream, listen.to_string()));
    proxy.serve(listener).await
}
