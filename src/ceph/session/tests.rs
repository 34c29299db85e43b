use super::*;
use std::io::Write;
use std::os::unix::fs::PermissionsExt;

fn script(dir: &Path, name: &str, first_line: &str) -> PathBuf {
    let path = dir.join(name);
    let mut f = std::fs::File::create(&path).unwrap();
    writeln!(f, "{first_line}\nprint('hi')").unwrap();
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
    path
}

#[test]
fn the_interpreter_is_read_from_a_python_scripts_first_line() {
    let dir = std::env::temp_dir().join(format!("session-python-of-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    assert_eq!(
        python_of(&script(&dir, "a", "#! /usr/bin/python3")),
        Some(PathBuf::from("/usr/bin/python3"))
    );
    assert_eq!(
        python_of(&script(&dir, "b", "#!/usr/bin/python3.11 -s")),
        Some(PathBuf::from("/usr/bin/python3.11"))
    );
    assert_eq!(python_of(&script(&dir, "c", "#!/bin/sh")), None);
    assert_eq!(python_of(&script(&dir, "d", "echo no shebang")), None);
    assert_eq!(python_of(&dir.join("missing")), None);
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn replies_take_the_clis_shape() {
    // The helper writes `outs` as the CLI's stderr (`Error EBUSY: …`, named by Python's
    // errno table as the CLI does; checked against real Ceph by `ceph_client`).
    let no = Reply {
        rc: -16,
        out: "{\"ok_to_stop\":false}".into(),
        outs: "Error EBUSY: unsafe to stop osd(s)".into(),
        ..Reply::default()
    }
    .finished();
    assert_eq!(no.exit_code, Some(16));
    assert_eq!(no.stdout, b"{\"ok_to_stop\":false}");
    assert_eq!(no.stderr, b"Error EBUSY: unsafe to stop osd(s)");
    let yes = Reply {
        rc: 0,
        out: "{}".into(),
        outs: "osd.0 is set noout".into(),
        ..Reply::default()
    }
    .finished();
    assert_eq!(yes.exit_code, Some(0));
    assert_eq!(yes.stderr, b"osd.0 is set noout");
}

fn launch(interpreter: &str, timeout: Duration) -> Launch {
    Launch {
        interpreter: PathBuf::from(interpreter),
        settings: serde_json::json!({
            "conf": "/nonexistent/ceph.conf",
            "keyring": null,
            "name": null,
            "connect_timeout": 1,
        }),
        timeout,
    }
}

#[tokio::test]
async fn a_missing_interpreter_is_unusable() {
    let session = Session::new(launch("/nonexistent/python3", Duration::from_secs(5)));
    let err = session.run(&["status".into()]).await.unwrap_err();
    assert!(
        matches!(&err, SessionError::Unusable(why) if why.contains("/nonexistent/python3")),
        "{err:?}"
    );
}

#[tokio::test]
async fn an_interpreter_that_is_not_python_is_unusable() {
    // `/bin/true -c … …` exits at once without a word.
    let session = Session::new(launch("/bin/true", Duration::from_secs(5)));
    let err = session.run(&["status".into()]).await.unwrap_err();
    assert!(
        matches!(&err, SessionError::Unusable(why) if why.contains("ended before it connected")),
        "{err:?}"
    );
}
