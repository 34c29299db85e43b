use super::*;
use kube::core::Status;

fn api(code: u16, reason: &str, message: &str) -> kube::Error {
    kube::Error::Api(Status::failure(message, reason).with_code(code).boxed())
}

#[test]
fn a_missing_crd_is_said_as_such_in_one_line() {
    let missing = watcher::Error::InitialListFailed(api(
        404,
        "NotFound",
        "the server could not find the requested resource",
    ));
    let words = watch_error("CephOSD", &missing);
    assert!(
        words.starts_with("the CephOSD CRD is not installed (404 the server could not find"),
        "{words}"
    );
    assert!(
        !words.contains('\n') && !words.contains("ErrorResponse"),
        "{words}"
    );
    // Another watch's 404, or another failure: the server's own words.
    let forbidden = watcher::Error::InitialListFailed(api(403, "Forbidden", "pods is forbidden"));
    assert_eq!(
        watch_error("Pod", &forbidden),
        "403 Forbidden: pods is forbidden"
    );
    assert!(watch_error("Pod", &missing).starts_with("404 NotFound"));
}
