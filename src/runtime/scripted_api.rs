//! A scripted API server for glue tests: a tower service in place of the cluster that records
//! every request and answers it as the test's script says (a script may also never answer).

use http_body_util::{BodyExt, Full};
use hyper::body::Bytes;
use hyper::{Method, Request, Response, StatusCode};
use serde_json::Value;
use std::future::Future;
use std::sync::{Arc, Mutex};

/// One request received: method, path and JSON body (`Null` when there is none).
#[derive(Clone, Debug)]
pub(crate) struct Sent {
    pub(crate) method: Method,
    pub(crate) path: String,
    pub(crate) body: Value,
}

/// Every request received so far, in order.
#[derive(Clone, Default)]
pub(crate) struct Received(Arc<Mutex<Vec<Sent>>>);

impl Received {
    pub(crate) fn all(&self) -> Vec<Sent> {
        self.0.lock().expect("lock").clone()
    }
}

/// A client whose every request `answer` replies to with a status code and a JSON body.
pub(crate) fn scripted_client<F, R>(default_namespace: &str, answer: F) -> (Received, kube::Client)
where
    F: Fn(Sent) -> R + Clone + Send + 'static,
    R: Future<Output = (StatusCode, Value)> + Send,
{
    let received = Received::default();
    let record = received.clone();
    let service = tower::service_fn(move |request: Request<kube::client::Body>| {
        let (record, answer) = (record.clone(), answer.clone());
        async move {
            let (parts, body) = request.into_parts();
            let bytes = body
                .collect()
                .await
                .map_err(tower::BoxError::from)?
                .to_bytes();
            let sent = Sent {
                method: parts.method,
                path: parts.uri.path().to_owned(),
                body: serde_json::from_slice(&bytes).unwrap_or(Value::Null),
            };
            record.0.lock().expect("lock").push(sent.clone());
            let (code, reply) = answer(sent).await;
            let mut response = Response::new(Full::new(Bytes::from(reply.to_string())));
            *response.status_mut() = code;
            Ok::<_, tower::BoxError>(response)
        }
    });
    (received, kube::Client::new(service, default_namespace))
}
