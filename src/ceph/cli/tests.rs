//! The process handling, with shell scripts standing in for `ceph`.
use super::*;
use crate::ceph::test_data::fixture_path as fixture;
use std::io::Write;
use std::os::unix::fs::PermissionsExt;

/// A `ceph` that runs `body` (sh), in a temp dir removed on drop.
struct FakeCli {
    dir: PathBuf,
}

impl FakeCli {
    fn new(body: &str) -> Self {
        let dir = std::env::temp_dir().join(format!(
            "ceph-cli-test-{}-{}",
            std::process::id(),
            rand::random::<u64>()
        ));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("ceph");
        let mut f = std::fs::File::create(&path).unwrap();
        writeln!(f, "#!/bin/sh\n{body}").unwrap();
        drop(f);
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
        Self { dir }
    }

    fn client(&self, timeout: Duration) -> CliClient {
        CliClient::new(CliSettings {
            program: self.dir.join("ceph"),
            conf: Some("/etc/x/ceph.conf".into()),
            keyring: Some("/etc/x/op.keyring".into()),
            user: Some(CephUser::Name("client.op".into())),
            timeout,
            keep_connected: true,
        })
    }
}

impl Drop for FakeCli {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

#[tokio::test]
async fn passes_connection_flags_the_command_and_json_format() {
    let cli = FakeCli::new(r#"echo "$@" >&2; exit 3"#);
    let err = cli
        .client(Duration::from_secs(5))
        .ok_to_stop(&[OsdId(0), OsdId(3)])
        .await
        .unwrap_err();
    let CephError::Failed {
        command,
        exit_code,
        stderr,
    } = err
    else {
        panic!("{err:?}")
    };
    assert_eq!(command, "osd ok-to-stop 0 3");
    assert_eq!(exit_code, Some(3));
    assert_eq!(
            stderr,
            "--conf /etc/x/ceph.conf --keyring /etc/x/op.keyring --name client.op osd ok-to-stop 0 3 --format json"
        );

    let err = cli
        .client(Duration::from_secs(5))
        .add_noout(&[OsdId(1), OsdId(2)])
        .await
        .unwrap_err();
    assert!(
        err.to_string()
            .contains("--name client.op osd add-noout osd.1 osd.2 --format json"),
        "{err}"
    );
    let mut client = cli.client(Duration::from_secs(5));
    client.settings.user = Some(CephUser::Id("op".into()));
    client.settings.conf = None;
    client.settings.keyring = None;
    let err = client.rm_noout(&[OsdId(4)]).await.unwrap_err();
    assert!(
        err.to_string()
            .ends_with("(exit code 3): --id op osd rm-noout osd.4 --format json"),
        "{err}"
    );
}

#[tokio::test]
async fn parses_answers_on_exit_0() {
    let cli = FakeCli::new(&format!(
        r#"case "$*" in
                *"pg stat"*) cat {} ;;
                *"osd dump"*) cat {} ;;
                *"osd metadata"*) cat {} ;;
                *status*) cat {} ;;
                *add-noout*) echo "osd.7 does not exist. " >&2 ;;
            esac"#,
        fixture("pg_stat_clean"),
        fixture("osd_dump_all_up"),
        fixture("osd_metadata_with_pod"),
        fixture("status_healthy"),
    ));
    let c = cli.client(Duration::from_secs(5));
    let (status, pgs, dump, metadata) =
        tokio::join!(c.status(), c.pg_states(), c.osd_dump(), c.osd_metadata());
    assert!(status.unwrap().mgr_available);
    assert!(pgs.unwrap().all_clean());
    assert_eq!(dump.unwrap().osds.len(), 3);
    assert_eq!(
        metadata.unwrap()[&OsdId(1)].pod_name.as_deref(),
        Some("osd-host-1-data-x7k2q")
    );
    // rc 0 with a complaint on stderr is success: the caller reads `osd dump` back.
    c.add_noout(&[OsdId(7)]).await.unwrap();
}

#[tokio::test]
async fn ok_to_stop_no_and_not_yet_come_with_their_numbers() {
    let cli = FakeCli::new(&format!(
        r#"case "$*" in
                *"ok-to-stop 0 1 2"*) cat {}; echo "Error EBUSY: unsafe to stop osd(s) at this time (33 PGs are or would become offline)" >&2; exit 16 ;;
                *"ok-to-stop 0"*) cat {}; echo "Error EAGAIN: 33 pgs have unknown state; cannot draw any conclusions" >&2; exit 11 ;;
                *"ok-to-stop 5"*) echo '{{"ok_to_stop":true,"osds":[5],"num_ok_pgs":1,"num_not_ok_pgs":0}}'; exit 16 ;;
                *"ok-to-stop 6"*) echo "Error EBUSY: no JSON today" >&2; exit 16 ;;
                *"ok-to-stop x"*) echo "Error EINVAL: invalid osd id 'x'" >&2; exit 22 ;;
            esac"#,
        fixture("ok_to_stop_all_osds"),
        fixture("ok_to_stop_after_mgr_start"),
    ));
    let c = cli.client(Duration::from_secs(5));
    let a = c.ok_to_stop(&[OsdId(0), OsdId(1), OsdId(2)]).await.unwrap();
    assert!(!a.ok_to_stop);
    assert_eq!(a.bad_become_inactive.len(), 33);
    let a = c.ok_to_stop(&[OsdId(0)]).await.unwrap();
    assert!(!a.ok_to_stop);
    assert_eq!(a.unknown_pgs.len(), 33);
    // A non-zero exit is never "ok", whatever the JSON says.
    let a = c.ok_to_stop(&[OsdId(5)]).await.unwrap();
    assert!(!a.ok_to_stop);
    let e = c.ok_to_stop(&[OsdId(6)]).await.unwrap_err();
    assert_eq!(
        e.to_string(),
        "`ceph osd ok-to-stop 6` failed (exit code 16): Error EBUSY: no JSON today"
    );
}

#[tokio::test]
async fn a_drain_marks_out_and_in_and_asks_safe_to_destroy() {
    let cli = FakeCli::new(&format!(
        r#"case "$*" in
                *"safe-to-destroy 3 --format"*) cat {} ;;
                *"safe-to-destroy 1"*) echo "Error EAGAIN: 33 pgs have unknown state; cannot draw any conclusions" >&2; exit 11 ;;
                *"osd out osd.3 --format"*) echo "marked out osd.3. " >&2 ;;
                *"osd in osd.3 --format"*) echo "marked in osd.3. " >&2 ;;
                *) echo "unexpected $*" >&2; exit 22 ;;
            esac"#,
        fixture("safe_to_destroy_safe"),
    ));
    let c = cli.client(Duration::from_secs(5));
    c.osd_out(&[OsdId(3)]).await.unwrap();
    c.osd_in(&[OsdId(3)]).await.unwrap();
    let a = c.safe_to_destroy(&[OsdId(3)]).await.unwrap();
    assert_eq!(a.safe_to_destroy.len(), 1);
    let e = c.safe_to_destroy(&[OsdId(1)]).await.unwrap_err();
    assert_eq!(
            e.to_string(),
            "`ceph osd safe-to-destroy 1` failed (exit code 11): Error EAGAIN: 33 pgs have unknown state; cannot draw any conclusions"
        );
}

#[tokio::test]
async fn answers_not_understood_name_the_command_and_field() {
    let cli = FakeCli::new(r#"echo '{"epoch": 1, "osds": [{"osd": 0}]}'"#);
    let e = cli
        .client(Duration::from_secs(5))
        .osd_dump()
        .await
        .unwrap_err();
    assert!(matches!(e, CephError::NotUnderstood { .. }), "{e:?}");
    assert!(
        e.to_string().starts_with(
            "`ceph osd dump` answered JSON that is not understood at `osds[0]`: missing field"
        ),
        "{e}"
    );
    let cli = FakeCli::new("printf 'not json'");
    let e = cli
        .client(Duration::from_secs(5))
        .status()
        .await
        .unwrap_err();
    assert!(matches!(e, CephError::NotUnderstood { .. }), "{e:?}");
}

#[tokio::test]
async fn a_hanging_call_is_killed_at_the_bound_and_reaped() {
    let dir = std::env::temp_dir().join(format!("ceph-cli-pid-{}", rand::random::<u64>()));
    let pid_file = dir.with_extension("pid");
    // exec: the shell becomes the sleeping process, so its pid is the child's.
    let cli = FakeCli::new(&format!("echo $$ > {}; exec sleep 30", pid_file.display()));
    let started = Instant::now();
    let e = cli
        .client(Duration::from_millis(500))
        .pg_states()
        .await
        .unwrap_err();
    let took = started.elapsed();
    assert!(
        matches!(&e, CephError::Timeout { command, timeout } if command == "pg stat" && *timeout == Duration::from_millis(500)),
        "{e:?}"
    );
    assert!(took < Duration::from_secs(3), "{took:?}");
    let pid = std::fs::read_to_string(&pid_file).unwrap();
    let _ = std::fs::remove_file(&pid_file);
    // Killed and waited for: not even a zombie remains.
    assert!(
        !std::path::Path::new(&format!("/proc/{}", pid.trim())).exists(),
        "pid {pid} still exists"
    );
}

#[tokio::test]
async fn a_missing_program_is_a_spawn_error() {
    let c = CliClient::new(CliSettings {
        program: "/nonexistent/ceph".into(),
        ..CliSettings::default()
    });
    let e = c.status().await.unwrap_err();
    assert_eq!(e.category(), "CephCliMissing");
    assert!(e.to_string().contains("No such file"), "{e}");
}

#[test]
fn stderr_is_quoted_on_one_line_from_its_end() {
    assert_eq!(quote_stderr(b""), "");
    assert_eq!(
            quote_stderr(b"2026 auth: unable to find a keyring\n\n[errno 2] RADOS object not found (error connecting to the cluster)\n"),
            "2026 auth: unable to find a keyring / [errno 2] RADOS object not found (error connecting to the cluster)"
        );
    let long = format!("{}\nError EACCES: access denied", "x".repeat(5000));
    let q = quote_stderr(long.as_bytes());
    assert!(q.starts_with('…') && q.ends_with("Error EACCES: access denied"));
    assert_eq!(q.chars().count(), STDERR_QUOTE_CHARS + 1);
    assert_eq!(quote_stderr(&[0xff, b'a']), "\u{fffd}a");
}
