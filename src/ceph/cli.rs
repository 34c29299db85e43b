//! `CephClient` through the `ceph` command line (`-f json`), as Rook does: no C library at
//! build time. Calls go through one long-lived session of the CLI's own machinery (`session`)
//! when the CLI is a Python script whose interpreter has it; otherwise each call runs one child
//! process. Either way every call has a hard time bound; past it the child is killed and
//! reaped (a mgr command waits forever without a mgr, and `--connect-timeout` does not bound
//! it). A call dropped half-way kills its child too.

use super::answers::{
    parse_ok_to_stop, parse_osd_dump, parse_osd_metadata, parse_pg_stat, parse_pgs_on_osd,
    parse_safe_to_destroy, parse_status, ClusterStatus, OkToStop, OsdDump, OsdMetadata, ParseError,
    PgBrief, PgStates, SafeToDestroy,
};
use super::client::{CephClient, CephError};
use super::finished::Finished;
use super::osd_id::OsdId;
use super::session::{python_of, Launch, Session, SessionError};
use futures::future::BoxFuture;
use futures::FutureExt;
use std::collections::BTreeMap;
use std::ffi::OsString;
use std::path::PathBuf;
use std::process::Stdio;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::io::{AsyncRead, AsyncReadExt};

/// The bound of one call unless configured: a mon write takes ~1 s, the first mgr command after
/// a mgr start ~4 s.
pub const DEFAULT_CALL_TIMEOUT: Duration = Duration::from_secs(15);

/// `ok-to-stop`'s exit codes that still come with its JSON answer.
const EAGAIN: i32 = 11;
const EBUSY: i32 = 16;

/// Stderr quoted in errors is cut to its last this many characters.
const STDERR_QUOTE_CHARS: usize = 1000;

/// Who the CLI authenticates as.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum CephUser {
    /// `--id ceph-osd-operator` (the name `client.ceph-osd-operator`).
    Id(String),
    /// `--name client.ceph-osd-operator`.
    Name(String),
}

/// How to run the CLI. Unset paths and user leave Ceph's defaults (`/etc/ceph/ceph.conf`,
/// `client.admin`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CliSettings {
    /// The `ceph` executable (looked up in `PATH` unless a path).
    pub program: PathBuf,
    pub conf: Option<PathBuf>,
    pub keyring: Option<PathBuf>,
    pub user: Option<CephUser>,
    /// The hard bound of one call.
    pub timeout: Duration,
    /// One long-lived connection for all calls when the CLI can host it; `false`: a process
    /// per call.
    pub keep_connected: bool,
}

impl Default for CliSettings {
    fn default() -> Self {
        Self {
            program: PathBuf::from("ceph"),
            conf: None,
            keyring: None,
            user: None,
            timeout: DEFAULT_CALL_TIMEOUT,
            keep_connected: true,
        }
    }
}

/// Asks Ceph through its CLI.
#[derive(Clone)]
pub struct CliClient {
    settings: CliSettings,
    session: Option<Arc<Session>>,
    /// Set once the session turned out unusable here: a process per call from then on.
    per_call: Arc<AtomicBool>,
}

impl CliClient {
    pub fn new(settings: CliSettings) -> Self {
        let session = settings.keep_connected.then(|| {
            python_of(&settings.program).map(|interpreter| {
                Arc::new(Session::new(Launch {
                    interpreter,
                    settings: serde_json::json!({
                        "conf": settings.conf,
                        "keyring": settings.keyring,
                        "name": match &settings.user {
                            Some(CephUser::Id(id)) => Some(format!("client.{id}")),
                            Some(CephUser::Name(name)) => Some(name.clone()),
                            None => None,
                        },
                        "connect_timeout": settings.timeout.as_secs().max(1),
                    }),
                    timeout: settings.timeout,
                }))
            })
        });
        if matches!(session, Some(None)) {
            tracing::info!(
                program = %settings.program.display(),
                "the ceph CLI is not a Python script: each Ceph question starts it"
            );
        }
        Self {
            settings,
            session: session.flatten(),
            per_call: Arc::new(AtomicBool::new(false)),
        }
    }

    /// Runs `ceph <command>` through the session, or as a process when it cannot run here.
    async fn run(&self, command: &[String]) -> Result<Finished, CephError> {
        let started = Instant::now();
        let finished = self.run_either_way(command).await;
        let elapsed = started.elapsed();
        let shown = command.join(" ");
        match &finished {
            Ok(f) => {
                tracing::debug!(command = %shown, ?elapsed, exit_code = ?f.exit_code, "ceph call");
            }
            Err(e) => tracing::debug!(command = %shown, ?elapsed, error = %e, "ceph call failed"),
        }
        finished
    }

    async fn run_either_way(&self, command: &[String]) -> Result<Finished, CephError> {
        if let Some(session) = self.session.as_ref().filter(|_| self.keeps_connected()) {
            match session.run(command).await {
                Ok(finished) => return Ok(finished),
                Err(SessionError::Ceph(e)) => return Err(e),
                Err(SessionError::Unusable(why)) => {
                    if !self.per_call.swap(true, Ordering::SeqCst) {
                        tracing::warn!(
                            %why,
                            "no long-lived Ceph connection: each Ceph question starts the ceph CLI"
                        );
                    }
                }
            }
        }
        self.run_process(command).await
    }

    /// The full argument list: connection flags, the command, `--format json`.
    fn arguments(&self, command: &[String]) -> Vec<OsString> {
        let s = &self.settings;
        let mut args: Vec<OsString> = Vec::new();
        if let Some(conf) = &s.conf {
            args.extend(["--conf".into(), conf.into()]);
        }
        if let Some(keyring) = &s.keyring {
            args.extend(["--keyring".into(), keyring.into()]);
        }
        match &s.user {
            Some(CephUser::Id(id)) => args.extend(["--id".into(), id.into()]),
            Some(CephUser::Name(name)) => args.extend(["--name".into(), name.into()]),
            None => {}
        }
        args.extend(command.iter().map(OsString::from));
        args.extend(["--format".into(), "json".into()]);
        args
    }

    /// Runs `ceph <command>` within the bound; the child is killed and reaped past it.
    async fn run_process(&self, command: &[String]) -> Result<Finished, CephError> {
        let shown = command.join(" ");
        let mut child = tokio::process::Command::new(&self.settings.program)
            .args(self.arguments(command))
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .kill_on_drop(true)
            .spawn()
            .map_err(|source| CephError::Spawn {
                program: self.settings.program.clone(),
                command: shown.clone(),
                source,
            })?;
        let stdout = child.stdout.take();
        let stderr = child.stderr.take();
        let finished = tokio::time::timeout(self.settings.timeout, async {
            tokio::join!(read_all(stdout), read_all(stderr), child.wait())
        })
        .await;
        let Ok((stdout, stderr, status)) = finished else {
            // Past the bound: SIGKILL, then wait, so no zombie is left behind.
            let _ = child.kill().await;
            return Err(CephError::Timeout {
                command: shown,
                timeout: self.settings.timeout,
            });
        };
        let io_error = |source| CephError::Spawn {
            program: self.settings.program.clone(),
            command: shown.clone(),
            source,
        };
        let status = status.map_err(io_error)?;
        let finished = Finished {
            exit_code: status.code(),
            stdout: stdout.map_err(io_error)?,
            stderr: stderr.map_err(io_error)?,
        };
        Ok(finished)
    }

    /// Runs a command that must exit 0 and parses its answer.
    async fn ask<T>(
        &self,
        command: &[String],
        parse: fn(&[u8]) -> Result<T, ParseError>,
    ) -> Result<T, CephError> {
        let finished = self.run(command).await?;
        if finished.exit_code != Some(0) {
            return Err(failed(command, &finished));
        }
        parse(&finished.stdout).map_err(|source| CephError::NotUnderstood {
            command: command.join(" "),
            source,
        })
    }

    async fn ask_ok_to_stop(&self, ids: &[OsdId]) -> Result<OkToStop, CephError> {
        let command = command(
            &["osd", "ok-to-stop"],
            ids.iter().map(|id| id.0.to_string()),
        );
        let finished = self.run(&command).await?;
        match finished.exit_code {
            Some(0) => {
                parse_ok_to_stop(&finished.stdout).map_err(|source| CephError::NotUnderstood {
                    command: command.join(" "),
                    source,
                })
            }
            // "No" and "not known yet" come with the JSON that says why; without it the
            // error quotes Ceph's stderr.
            Some(EBUSY | EAGAIN) => match parse_ok_to_stop(&finished.stdout) {
                Ok(answer) => Ok(OkToStop {
                    ok_to_stop: false,
                    ..answer
                }),
                Err(_) => Err(failed(&command, &finished)),
            },
            _ => Err(failed(&command, &finished)),
        }
    }

    /// `osd add-noout`, `rm-noout`, `out`, `in` on `ids` (`osd.N`): a write that must exit 0.
    async fn mark(&self, verb: &str, ids: &[OsdId]) -> Result<(), CephError> {
        let command = command(&["osd", verb], ids.iter().map(ToString::to_string));
        let finished = self.run(&command).await?;
        if finished.exit_code == Some(0) {
            Ok(())
        } else {
            Err(failed(&command, &finished))
        }
    }
}

/// `ceph`'s arguments: the command's words, then its own (ids).
fn command(words: &[&str], args: impl IntoIterator<Item = String>) -> Vec<String> {
    words.iter().map(|w| (*w).to_owned()).chain(args).collect()
}

async fn read_all(pipe: Option<impl AsyncRead + Unpin>) -> std::io::Result<Vec<u8>> {
    let mut buf = Vec::new();
    if let Some(mut pipe) = pipe {
        pipe.read_to_end(&mut buf).await?;
    }
    Ok(buf)
}

fn failed(command: &[String], finished: &Finished) -> CephError {
    CephError::Failed {
        command: command.join(" "),
        exit_code: finished.exit_code,
        stderr: quote_stderr(&finished.stderr),
    }
}

/// Ceph's stderr on one line: non-empty lines joined by ` / `, cut to its end (the error comes
/// last; librados' log lines come first).
pub(crate) fn quote_stderr(stderr: &[u8]) -> String {
    let text = String::from_utf8_lossy(stderr);
    let joined = text
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .collect::<Vec<_>>()
        .join(" / ");
    let chars = joined.chars().count();
    if chars <= STDERR_QUOTE_CHARS {
        joined
    } else {
        let tail: String = joined.chars().skip(chars - STDERR_QUOTE_CHARS).collect();
        format!("…{tail}")
    }
}

impl CephClient for CliClient {
    fn status(&self) -> BoxFuture<'_, Result<ClusterStatus, CephError>> {
        async move { self.ask(&command(&["status"], []), parse_status).await }.boxed()
    }

    fn pg_states(&self) -> BoxFuture<'_, Result<PgStates, CephError>> {
        async move { self.ask(&command(&["pg", "stat"], []), parse_pg_stat).await }.boxed()
    }

    fn pgs_on_osd(&self, id: OsdId) -> BoxFuture<'_, Result<Vec<PgBrief>, CephError>> {
        async move {
            self.ask(
                &command(&["pg", "ls-by-osd"], [format!("osd.{}", id.0)]),
                parse_pgs_on_osd,
            )
            .await
        }
        .boxed()
    }

    fn osd_dump(&self) -> BoxFuture<'_, Result<OsdDump, CephError>> {
        async move {
            self.ask(&command(&["osd", "dump"], []), parse_osd_dump)
                .await
        }
        .boxed()
    }

    fn osd_metadata(&self) -> BoxFuture<'_, Result<BTreeMap<OsdId, OsdMetadata>, CephError>> {
        async move {
            self.ask(&command(&["osd", "metadata"], []), parse_osd_metadata)
                .await
        }
        .boxed()
    }

    fn ok_to_stop<'a>(&'a self, ids: &'a [OsdId]) -> BoxFuture<'a, Result<OkToStop, CephError>> {
        self.ask_ok_to_stop(ids).boxed()
    }

    fn add_noout<'a>(&'a self, ids: &'a [OsdId]) -> BoxFuture<'a, Result<(), CephError>> {
        self.mark("add-noout", ids).boxed()
    }

    fn rm_noout<'a>(&'a self, ids: &'a [OsdId]) -> BoxFuture<'a, Result<(), CephError>> {
        self.mark("rm-noout", ids).boxed()
    }

    fn osd_out<'a>(&'a self, ids: &'a [OsdId]) -> BoxFuture<'a, Result<(), CephError>> {
        self.mark("out", ids).boxed()
    }

    fn osd_in<'a>(&'a self, ids: &'a [OsdId]) -> BoxFuture<'a, Result<(), CephError>> {
        self.mark("in", ids).boxed()
    }

    fn safe_to_destroy<'a>(
        &'a self,
        ids: &'a [OsdId],
    ) -> BoxFuture<'a, Result<SafeToDestroy, CephError>> {
        async move {
            let command = command(
                &["osd", "safe-to-destroy"],
                ids.iter().map(|id| id.0.to_string()),
            );
            self.ask(&command, parse_safe_to_destroy).await
        }
        .boxed()
    }

    /// Through the long-lived session, as long as it stays usable.
    fn keeps_connected(&self) -> bool {
        self.session.is_some() && !self.per_call.load(Ordering::SeqCst)
    }
}

#[cfg(test)]
mod tests {
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
}
