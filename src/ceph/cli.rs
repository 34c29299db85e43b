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
use super::crashes::{parse_new_crashes, CrashReport};
use super::crush::{
    parse_crush_rules, parse_crush_tree, parse_pool_rules, CrushRule, CrushTree, PoolRule,
};
use super::finished::Finished;
use super::osd_df::{parse_osd_df, parse_recovery_rate, OsdUsage};
use super::osd_id::OsdId;
use super::release::Release;
use super::session::{python_of, Launch, Session, SessionError};
use super::versions::{parse_versions, DaemonReleases};
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
/// `config-key get` of a key not stored.
const ENOENT: i32 = 2;
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

    /// `osd require-osd-release <name>`: a write that must exit 0.
    async fn raise_release(&self, release: Release) -> Result<(), CephError> {
        let name = release.name().ok_or_else(|| CephError::Failed {
            command: "osd require-osd-release".to_owned(),
            exit_code: None,
            stderr: format!("{release} has no name Ceph knows"),
        })?;
        self.write(&command(&["osd", "require-osd-release"], [name.to_owned()]))
            .await
    }

    /// `osd add-noout`, `rm-noout`, `out`, `in` on `ids` (`osd.N`): a write that must exit 0.
    async fn mark(&self, verb: &str, ids: &[OsdId]) -> Result<(), CephError> {
        self.write(&command(
            &["osd", verb],
            ids.iter().map(ToString::to_string),
        ))
        .await
    }

    /// Runs a write `command`: anything but exit 0 is its failure.
    async fn write(&self, command: &[String]) -> Result<(), CephError> {
        let finished = self.run(command).await?;
        if finished.exit_code == Some(0) {
            Ok(())
        } else {
            Err(failed(command, &finished))
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

    fn versions(&self) -> BoxFuture<'_, Result<DaemonReleases, CephError>> {
        async move { self.ask(&command(&["versions"], []), parse_versions).await }.boxed()
    }

    fn require_osd_release(&self, release: Release) -> BoxFuture<'_, Result<(), CephError>> {
        self.raise_release(release).boxed()
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

    fn osd_df(&self) -> BoxFuture<'_, Result<BTreeMap<OsdId, OsdUsage>, CephError>> {
        async move { self.ask(&command(&["osd", "df"], []), parse_osd_df).await }.boxed()
    }

    fn recovery_rate(&self) -> BoxFuture<'_, Result<u64, CephError>> {
        async move {
            self.ask(&command(&["status"], []), parse_recovery_rate)
                .await
        }
        .boxed()
    }

    fn osd_destroy(&self, id: OsdId) -> BoxFuture<'_, Result<(), CephError>> {
        async move {
            let command = command(
                &["osd", "destroy"],
                [id.0.to_string(), "--yes-i-really-mean-it".to_owned()],
            );
            self.write(&command).await
        }
        .boxed()
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

    fn new_crashes(&self) -> BoxFuture<'_, Result<Vec<CrashReport>, CephError>> {
        async move {
            self.ask(&command(&["crash", "ls-new"], []), parse_new_crashes)
                .await
        }
        .boxed()
    }

    fn crush_tree(&self) -> BoxFuture<'_, Result<CrushTree, CephError>> {
        async move {
            self.ask(&command(&["osd", "crush", "tree"], []), parse_crush_tree)
                .await
        }
        .boxed()
    }

    fn crush_rules(&self) -> BoxFuture<'_, Result<BTreeMap<i64, CrushRule>, CephError>> {
        async move {
            let command = command(&["osd", "crush", "rule", "dump"], []);
            self.ask(&command, parse_crush_rules).await
        }
        .boxed()
    }

    fn pool_rules(&self) -> BoxFuture<'_, Result<Vec<PoolRule>, CephError>> {
        async move {
            let command = command(&["osd", "pool", "ls", "detail"], []);
            self.ask(&command, parse_pool_rules).await
        }
        .boxed()
    }

    fn config_key_get<'a>(
        &'a self,
        key: &'a str,
    ) -> BoxFuture<'a, Result<Option<String>, CephError>> {
        async move {
            let command = command(&["config-key", "get"], [key.to_owned()]);
            let finished = self.run(&command).await?;
            match finished.exit_code {
                // The value as stored (not JSON-wrapped, whatever the format), without the
                // line breaks the CLI prints around it (a process per call starts it with one).
                Some(0) => Ok(Some(
                    String::from_utf8_lossy(&finished.stdout)
                        .trim_matches('\n')
                        .to_owned(),
                )),
                Some(ENOENT) => Ok(None),
                _ => Err(failed(&command, &finished)),
            }
        }
        .boxed()
    }

    fn config_key_set<'a>(
        &'a self,
        key: &'a str,
        value: &'a str,
    ) -> BoxFuture<'a, Result<(), CephError>> {
        async move {
            self.write(&command(
                &["config-key", "set"],
                [key.to_owned(), value.to_owned()],
            ))
            .await
        }
        .boxed()
    }

    /// Through the long-lived session, as long as it stays usable.
    fn keeps_connected(&self) -> bool {
        self.session.is_some() && !self.per_call.load(Ordering::SeqCst)
    }
}

#[cfg(test)]
mod tests;
