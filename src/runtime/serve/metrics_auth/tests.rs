//! `/metrics` behind a TokenReview and a SubjectAccessReview, against a scripted API (a tower
//! service in place of the API server) that knows three tokens: `reader` (a ServiceAccount
//! allowed `get /metrics`), `other` (a user who is not) and anything else (not a valid token).

use super::*;
use crate::runtime::scripted_api::{scripted_client, Received};
use crate::runtime::serve::metrics::Metrics;
use crate::runtime::serve::probes::{serve, Health};
use serde_json::{json, Value};
use std::net::SocketAddr;
use std::sync::Arc;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

const TOKEN_REVIEWS: &str = "/apis/authentication.k8s.io/v1/tokenreviews";
const ACCESS_REVIEWS: &str = "/apis/authorization.k8s.io/v1/subjectaccessreviews";
const READER: &str = "system:serviceaccount:monitoring:prometheus";

/// How the scripted API behaves.
#[derive(Clone, Copy)]
enum Script {
    /// Answers as described above.
    Reviews,
    /// Every request fails with a 500.
    Failing,
    /// No request is ever answered.
    Hanging,
}

/// The requests the scripted API received.
#[derive(Clone)]
struct Sent(Received);

impl Sent {
    fn paths(&self) -> Vec<String> {
        self.0.all().into_iter().map(|s| s.path).collect()
    }

    fn bodies(&self, path: &str) -> Vec<Value> {
        (self.0.all().into_iter())
            .filter(|s| s.path == path)
            .map(|s| s.body)
            .collect()
    }
}

fn answer(path: &str, body: &Value) -> (StatusCode, Value) {
    let mut reply = body.clone();
    match path {
        TOKEN_REVIEWS => {
            let user = match body["spec"]["token"].as_str() {
                Some("reader") => Some(READER),
                Some("other") => Some("alice"),
                _ => None,
            };
            reply["status"] = match user {
                Some(user) => json!({"authenticated": true, "user": {
                    "username": user, "uid": "u-1",
                    "groups": ["system:authenticated"], "extra": {"scope": ["x"]}}}),
                None => json!({"authenticated": false, "error": "invalid bearer token"}),
            };
            (StatusCode::CREATED, reply)
        }
        ACCESS_REVIEWS => {
            let spec = &body["spec"];
            let allowed = spec["user"] == READER
                && spec["nonResourceAttributes"] == json!({"path": "/metrics", "verb": "get"});
            reply["status"] = json!({"allowed": allowed});
            (StatusCode::CREATED, reply)
        }
        _ => (StatusCode::NOT_FOUND, json!({})),
    }
}

fn scripted(script: Script) -> (Sent, kube::Client) {
    let (received, client) = scripted_client("default", move |sent| async move {
        match script {
            Script::Reviews => answer(&sent.path, &sent.body),
            Script::Failing => (
                StatusCode::INTERNAL_SERVER_ERROR,
                json!({"kind": "Status", "apiVersion": "v1", "status": "Failure",
                       "message": "etcdserver: request timed out", "code": 500}),
            ),
            Script::Hanging => std::future::pending().await,
        }
    });
    (Sent(received), client)
}

/// An HTTP endpoint whose `/metrics` is checked against the scripted API.
async fn endpoint(script: Script) -> (SocketAddr, Sent) {
    let (sent, client) = scripted(script);
    let listener = TcpListener::bind("127.0.0.1:0").await.expect("binds");
    let addr = listener.local_addr().expect("addr");
    let auth = Some(Arc::new(MetricsAuth::new(client)));
    tokio::spawn(serve(
        listener,
        Arc::new(Health::default()),
        Arc::new(Metrics::default()),
        auth,
    ));
    (addr, sent)
}

/// The raw response to `GET path`, with `authorization` when given.
async fn get(addr: SocketAddr, path: &str, authorization: Option<&str>) -> String {
    let mut stream = TcpStream::connect(addr).await.expect("connects");
    let header = authorization.map_or(String::new(), |a| format!("authorization: {a}\r\n"));
    let request = format!("GET {path} HTTP/1.1\r\nhost: x\r\n{header}connection: close\r\n\r\n");
    stream.write_all(request.as_bytes()).await.expect("writes");
    let mut out = String::new();
    stream.read_to_string(&mut out).await.expect("reads");
    out
}

#[tokio::test]
async fn no_token_is_401_and_asks_the_api_nothing() {
    let (addr, sent) = endpoint(Script::Reviews).await;
    for authorization in [
        None,
        Some("Basic dXNlcjpwYXNz"),
        Some("Bearer "),
        Some("Bearer"),
    ] {
        let response = get(addr, "/metrics", authorization).await;
        assert!(
            response.starts_with("HTTP/1.1 401"),
            "{authorization:?}: {response}"
        );
        assert!(response.contains("www-authenticate: Bearer"), "{response}");
        assert!(!response.contains("ceph_osd_operator"), "{response}");
    }
    assert!(sent.paths().is_empty(), "{:?}", sent.paths());
}

#[tokio::test]
async fn a_token_the_api_server_does_not_authenticate_is_401() {
    let (addr, sent) = endpoint(Script::Reviews).await;
    let response = get(addr, "/metrics", Some("Bearer forged")).await;
    assert!(response.starts_with("HTTP/1.1 401"), "{response}");
    assert!(!response.contains("ceph_osd_operator"), "{response}");
    assert_eq!(
        sent.paths(),
        [TOKEN_REVIEWS],
        "no access review for an unknown user"
    );
    assert_eq!(sent.bodies(TOKEN_REVIEWS)[0]["spec"]["token"], "forged");
}

#[tokio::test]
async fn a_user_not_allowed_get_on_metrics_is_403() {
    let (addr, sent) = endpoint(Script::Reviews).await;
    let response = get(addr, "/metrics", Some("Bearer other")).await;
    assert!(response.starts_with("HTTP/1.1 403"), "{response}");
    assert!(!response.contains("ceph_osd_operator"), "{response}");
    assert_eq!(sent.paths(), [TOKEN_REVIEWS, ACCESS_REVIEWS]);
}

#[tokio::test]
async fn an_allowed_user_gets_the_metrics_and_the_review_names_who_and_what() {
    let (addr, sent) = endpoint(Script::Reviews).await;
    let response = get(addr, "/metrics?name[]=x", Some("bearer reader")).await;
    assert!(response.starts_with("HTTP/1.1 200"), "{response}");
    assert!(
        response.contains("ceph_osd_operator_reconciles_total 0"),
        "{response}"
    );
    let review = &sent.bodies(ACCESS_REVIEWS)[0]["spec"];
    assert_eq!(review["user"], READER);
    assert_eq!(review["uid"], "u-1");
    assert_eq!(review["groups"], json!(["system:authenticated"]));
    assert_eq!(review["extra"], json!({"scope": ["x"]}));
    assert_eq!(
        review["nonResourceAttributes"],
        json!({"path": "/metrics", "verb": "get"})
    );
    assert!(review["resourceAttributes"].is_null(), "{review}");
}

#[tokio::test]
async fn a_cached_decision_sends_no_second_review() {
    let (addr, sent) = endpoint(Script::Reviews).await;
    for _ in 0..3 {
        let response = get(addr, "/metrics", Some("Bearer reader")).await;
        assert!(response.starts_with("HTTP/1.1 200"), "{response}");
    }
    for _ in 0..2 {
        let response = get(addr, "/metrics", Some("Bearer other")).await;
        assert!(response.starts_with("HTTP/1.1 403"), "{response}");
    }
    assert_eq!(
        sent.paths(),
        [TOKEN_REVIEWS, ACCESS_REVIEWS, TOKEN_REVIEWS, ACCESS_REVIEWS],
        "one review per token"
    );
}

#[tokio::test]
async fn an_api_error_is_503_and_not_cached() {
    let (addr, sent) = endpoint(Script::Failing).await;
    for _ in 0..2 {
        let response = get(addr, "/metrics", Some("Bearer reader")).await;
        assert!(response.starts_with("HTTP/1.1 503"), "{response}");
        assert!(!response.contains("ceph_osd_operator"), "{response}");
    }
    // kube retries nothing: one TokenReview per request, each failed.
    assert_eq!(sent.paths(), [TOKEN_REVIEWS, TOKEN_REVIEWS]);
}

#[tokio::test]
async fn the_probes_need_no_token() {
    let (addr, sent) = endpoint(Script::Failing).await;
    assert!(get(addr, "/healthz", None)
        .await
        .starts_with("HTTP/1.1 200"));
    assert!(get(addr, "/readyz", None).await.starts_with("HTTP/1.1 503"));
    assert!(get(addr, "/nope", None).await.starts_with("HTTP/1.1 404"));
    assert!(sent.paths().is_empty(), "{:?}", sent.paths());
}

#[tokio::test(start_paused = true)]
async fn an_api_server_that_does_not_answer_is_503_after_the_timeout() {
    let (_, client) = scripted(Script::Hanging);
    let auth = MetricsAuth::new(client);
    let started = tokio::time::Instant::now();
    let bearer = HeaderValue::from_static("Bearer reader");
    assert_eq!(auth.check(Some(&bearer)).await, Verdict::Unavailable);
    assert_eq!(started.elapsed(), REVIEW_TIMEOUT);
}

#[tokio::test(start_paused = true)]
async fn a_decision_is_reviewed_again_after_ten_seconds() {
    let (sent, client) = scripted(Script::Reviews);
    let auth = MetricsAuth::new(client);
    let bearer = HeaderValue::from_static("Bearer reader");
    assert_eq!(auth.check(Some(&bearer)).await, Verdict::Allowed);
    tokio::time::advance(Duration::from_millis(9_900)).await;
    assert_eq!(auth.check(Some(&bearer)).await, Verdict::Allowed);
    assert_eq!(sent.paths().len(), 2, "cached within 10 s");
    tokio::time::advance(Duration::from_millis(100)).await;
    assert_eq!(auth.check(Some(&bearer)).await, Verdict::Allowed);
    assert_eq!(sent.paths().len(), 4, "reviewed again after 10 s");
}
