//! A tiny HTTP endpoint for probes and Prometheus: `/healthz`, `/readyz`, `/metrics`.
//! Three fixed GET routes do not need a web framework; anything else is a 404.

use crate::metrics::Metrics;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tracing::{info, warn};

/// What the probes report.
#[derive(Default)]
pub struct Health {
    /// Set once the process is up and (if elected) its controller runs or it waits as standby.
    pub ready: AtomicBool,
}

/// Serves until the process ends.
pub async fn serve(listener: TcpListener, health: Arc<Health>, metrics: Arc<Metrics>) {
    if let Ok(addr) = listener.local_addr() {
        info!(%addr, "serving /healthz /readyz /metrics");
    }
    loop {
        match listener.accept().await {
            Ok((stream, _)) => {
                let (health, metrics) = (health.clone(), metrics.clone());
                tokio::spawn(async move { respond(stream, &health, &metrics).await });
            }
            Err(error) => warn!(%error, "accept failed"),
        }
    }
}

async fn respond(mut stream: TcpStream, health: &Health, metrics: &Metrics) {
    let mut buffer = [0u8; 2048];
    let Ok(read) = stream.read(&mut buffer).await else {
        return;
    };
    let request = String::from_utf8_lossy(&buffer[..read]);
    let path = request
        .lines()
        .next()
        .and_then(|line| line.strip_prefix("GET "))
        .and_then(|rest| rest.split_whitespace().next())
        .unwrap_or("");
    let (status, content_type, body) = route(path, health, metrics);
    let response = format!(
        "HTTP/1.1 {status}\r\ncontent-type: {content_type}\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
        body.len()
    );
    let _ = stream.write_all(response.as_bytes()).await;
    let _ = stream.shutdown().await;
}

fn route(path: &str, health: &Health, metrics: &Metrics) -> (&'static str, &'static str, String) {
    const TEXT: &str = "text/plain; charset=utf-8";
    match path {
        "/healthz" => ("200 OK", TEXT, "ok\n".into()),
        "/readyz" if health.ready.load(Ordering::Relaxed) => ("200 OK", TEXT, "ok\n".into()),
        "/readyz" => ("503 Service Unavailable", TEXT, "starting\n".into()),
        "/metrics" => (
            "200 OK",
            "application/openmetrics-text; version=1.0.0; charset=utf-8",
            metrics.encode(),
        ),
        _ => ("404 Not Found", TEXT, "not found\n".into()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    async fn get(addr: std::net::SocketAddr, path: &str) -> String {
        let mut stream = TcpStream::connect(addr).await.expect("connects");
        stream
            .write_all(format!("GET {path} HTTP/1.1\r\nhost: x\r\n\r\n").as_bytes())
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
        ));
        assert!(get(addr, "/healthz").await.starts_with("HTTP/1.1 200"));
        assert!(get(addr, "/readyz").await.starts_with("HTTP/1.1 503"));
        health.ready.store(true, Ordering::Relaxed);
        assert!(get(addr, "/readyz").await.starts_with("HTTP/1.1 200"));
        assert!(get(addr, "/metrics")
            .await
            .contains("ceph_osd_operator_reconciles_total 0"));
        assert!(get(addr, "/nope").await.starts_with("HTTP/1.1 404"));
    }
}
