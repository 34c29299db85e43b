use super::*;

#[test]
fn the_lock_namespace_is_the_given_one_else_the_operators_else_the_watched_one() {
    let ns = |g, l, w| ceph_lock_namespace(g, l, w).ok();
    assert_eq!(
        ns(Some("locks"), Some("op"), Some("ceph")),
        Some("locks".into())
    );
    assert_eq!(ns(None, Some("op"), Some("ceph")), Some("op".into()));
    assert_eq!(ns(Some(""), None, Some("ceph")), Some("ceph".into()));
    let error = ceph_lock_namespace(None, None, None).expect_err("no namespace");
    assert!(
        error.to_string().contains("--ceph-lock-namespace"),
        "{error}"
    );
    assert!(ceph_lock_namespace(Some(""), Some(""), Some("")).is_err());
}
