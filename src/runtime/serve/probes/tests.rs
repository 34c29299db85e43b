use super::*;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

async fn send(addr: std::net::SocketAddr, method: &str, path: &str) -> String {
    let mut stream = TcpStream::connect(addr).await.expect("connects");
    stream
        .write_all(
            format!("{method} {path} HTTP/1.1\r\nhost: x\r\nconnection: close\r\n\r\n").as_bytes(),
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
