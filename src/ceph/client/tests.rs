use super::*;

#[test]
fn messages_quote_the_command_and_what_ceph_said() {
    let e = CephError::Timeout {
        command: "osd ok-to-stop 0".into(),
        timeout: Duration::from_millis(2500),
    };
    assert_eq!(
        e.to_string(),
        "`ceph osd ok-to-stop 0` gave no answer within 2.5s; it was killed"
    );
    assert_eq!(e.category(), "CephTimeout");

    let e = CephError::Failed {
        command: "pg stat".into(),
        exit_code: Some(13),
        stderr: "Error EACCES: access denied: does your client key have mgr caps?".into(),
    };
    assert_eq!(
            e.to_string(),
            "`ceph pg stat` failed (exit code 13): Error EACCES: access denied: does your client key have mgr caps?"
        );
    assert!(e.is_access_denied());
    assert_eq!(e.category(), "CephAccessDenied");

    let e = CephError::Failed {
        command: "status".into(),
        exit_code: None,
        stderr: String::new(),
    };
    assert!(e.to_string().contains("killed by a signal"));
    assert!(!e.is_access_denied());

    let e = CephError::NotUnderstood {
        command: "osd dump".into(),
        source: ParseError {
            path: "osds[0].up_from".into(),
            message: "invalid type".into(),
        },
    };
    assert_eq!(
        e.to_string(),
        "`ceph osd dump` answered JSON that is not understood at `osds[0].up_from`: invalid type"
    );

    let e = CephError::Spawn {
        program: "/nonexistent/ceph".into(),
        command: "status".into(),
        source: std::io::Error::from(std::io::ErrorKind::NotFound),
    };
    assert!(e
        .to_string()
        .starts_with("cannot run `/nonexistent/ceph` for `ceph status`"));
    assert_eq!(e.category(), "CephCliMissing");
}
