//! One long-lived connection to Ceph for all questions: the `ceph` CLI's own Python machinery
//! (librados, `ceph_argparse`), started once under the CLI's interpreter and kept connected
//! (`session.py`). A question then costs a round trip (~1 ms) instead of a Python start and a
//! new connection (0.2 s quiet, 0.7 s on a busy machine). Answers keep the CLI's shape: exit
//! code, stdout, stderr.
//!
//! Every call is bounded; past the bound the whole session is killed (its hung thread with it)
//! and the next call starts a new one. A session that cannot run here (the program is not a
//! Python script, or its interpreter lacks librados) is `Unusable`: the caller runs a process
//! per call instead.

use super::client::CephError;
use super::finished::Finished;
use serde::Deserialize;
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::process::{Child, ChildStdin};
use tokio::sync::oneshot;
use tokio::time::{timeout_at, Instant};

const HELPER: &str = include_str!("session.py");

/// Why a call got no answer from the session.
#[derive(Debug)]
pub(super) enum SessionError {
    /// The session cannot run here; the text says why.
    Unusable(String),
    /// Ceph's side: a timeout, a refused connection, a session that ended mid-call.
    Ceph(CephError),
}

/// How to start the helper.
#[derive(Clone, Debug)]
pub(super) struct Launch {
    /// The interpreter named on the `ceph` program's first line.
    pub interpreter: PathBuf,
    /// `conf`, `keyring`, `name`, `connect_timeout` as the helper's JSON argument.
    pub settings: serde_json::Value,
    /// The bound of one call, the start included.
    pub timeout: Duration,
}

/// The interpreter of a Python script: `#!/usr/bin/python3` (a space after `#!` allowed).
/// `None` for anything else (a shell script, a binary, a missing file).
pub(super) fn python_of(program: &Path) -> Option<PathBuf> {
    let path = if program.components().count() > 1 {
        program.to_path_buf()
    } else {
        let paths = std::env::var_os("PATH")?;
        std::env::split_paths(&paths)
            .map(|dir| dir.join(program))
            .find(|candidate| candidate.is_file())?
    };
    let text = std::fs::read(path).ok()?;
    let first = text.split(|b| *b == b'\n').next()?;
    let line = std::str::from_utf8(first).ok()?.strip_prefix("#!")?.trim();
    let interpreter = line.split_whitespace().next()?;
    let name = Path::new(interpreter).file_name()?.to_str()?;
    name.starts_with("python")
        .then(|| PathBuf::from(interpreter))
}

/// One reply line of the helper.
#[derive(Debug, Default, Deserialize)]
struct Reply {
    #[serde(default)]
    id: Option<u64>,
    #[serde(default)]
    rc: i32,
    #[serde(default)]
    out: String,
    #[serde(default)]
    outs: String,
    #[serde(default)]
    ready: bool,
    #[serde(default)]
    failed: Option<String>,
    #[serde(default)]
    unusable: Option<String>,
}

impl Reply {
    /// The CLI's shape: exit code `|rc|`, stdout the answer, stderr what the helper wrote
    /// as the CLI would (`Error EBUSY: …` on failure).
    fn finished(self) -> Finished {
        Finished {
            exit_code: Some(self.rc.abs()),
            stdout: self.out.into_bytes(),
            stderr: self.outs.into_bytes(),
        }
    }
}

/// A running helper: requests by id waiting for their reply.
struct Live {
    stdin: tokio::sync::Mutex<ChildStdin>,
    waiting: Mutex<HashMap<u64, oneshot::Sender<Reply>>>,
    next_id: Mutex<u64>,
    ended: AtomicBool,
    child: Mutex<Child>,
}

impl Live {
    /// The process died: every waiting call learns it now.
    fn died(&self) {
        self.ended.store(true, Ordering::SeqCst);
        if let Ok(mut waiting) = self.waiting.lock() {
            waiting.clear();
        }
    }

    /// Takes no new calls; killed once no call waits for it (each keeps its own answer or
    /// bound).
    fn retire(&self) {
        self.ended.store(true, Ordering::SeqCst);
        self.kill_when_idle();
    }

    fn kill_when_idle(&self) {
        let idle = self.waiting.lock().map_or(true, |w| w.is_empty());
        if idle && self.ended.load(Ordering::SeqCst) {
            if let Ok(mut child) = self.child.lock() {
                let _ = child.start_kill();
            }
        }
    }
}

/// The long-lived connection; started at the first call, again after one ended.
pub(super) struct Session {
    launch: Launch,
    live: tokio::sync::Mutex<Option<Arc<Live>>>,
}

impl Session {
    pub(super) fn new(launch: Launch) -> Self {
        Self {
            launch,
            live: tokio::sync::Mutex::new(None),
        }
    }

    /// Asks `ceph <command> --format json` within the bound.
    pub(super) async fn run(&self, command: &[String]) -> Result<Finished, SessionError> {
        let shown = command.join(" ");
        let deadline = Instant::now() + self.launch.timeout;
        let timed_out = || {
            SessionError::Ceph(CephError::Timeout {
                command: shown.clone(),
                timeout: self.launch.timeout,
            })
        };
        let live = match timeout_at(deadline, self.live(&shown)).await {
            Ok(live) => live?,
            Err(_) => return Err(timed_out()),
        };
        let (id, reply) = {
            let (sender, receiver) = oneshot::channel();
            let mut next = live.next_id.lock().map_err(|_| ended(&shown))?;
            *next += 1;
            live.waiting
                .lock()
                .map_err(|_| ended(&shown))?
                .insert(*next, sender);
            (*next, receiver)
        };
        let line = serde_json::json!({ "id": id, "args": command }).to_string() + "\n";
        let written = async {
            let mut stdin = live.stdin.lock().await;
            stdin.write_all(line.as_bytes()).await?;
            stdin.flush().await
        };
        match timeout_at(deadline, written).await {
            Ok(Ok(())) => {}
            Ok(Err(_)) => {
                self.forget(&live).await;
                return Err(ended(&shown));
            }
            Err(_) => {
                self.forget(&live).await;
                return Err(timed_out());
            }
        }
        match timeout_at(deadline, reply).await {
            Ok(Ok(reply)) => Ok(reply.finished()),
            Ok(Err(_)) => Err(ended(&shown)),
            Err(_) => {
                // A hung call (a mgr command without a mgr) keeps a thread: the session is
                // replaced, and ended once its other calls are answered or past their bound.
                tracing::debug!(command = %shown, "ceph call timed out; the session is retired");
                if let Ok(mut waiting) = live.waiting.lock() {
                    waiting.remove(&id);
                }
                self.forget(&live).await;
                Err(timed_out())
            }
        }
    }

    /// Retires `live` and, when it is still the current session, drops it.
    async fn forget(&self, live: &Arc<Live>) {
        live.retire();
        let mut current = self.live.lock().await;
        if current.as_ref().is_some_and(|c| Arc::ptr_eq(c, live)) {
            *current = None;
        }
    }

    /// The running session, started when there is none (callers meanwhile wait for it).
    async fn live(&self, shown: &str) -> Result<Arc<Live>, SessionError> {
        let mut current = self.live.lock().await;
        if let Some(live) = current.as_ref() {
            if !live.ended.load(Ordering::SeqCst) {
                return Ok(live.clone());
            }
        }
        *current = None;
        let live = self.start(shown).await?;
        *current = Some(live.clone());
        Ok(live)
    }

    async fn start(&self, shown: &str) -> Result<Arc<Live>, SessionError> {
        let interpreter = &self.launch.interpreter;
        let mut child = tokio::process::Command::new(interpreter)
            .arg("-c")
            .arg(HELPER)
            .arg(self.launch.settings.to_string())
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .kill_on_drop(true)
            .spawn()
            .map_err(|e| {
                SessionError::Unusable(format!("cannot run {}: {e}", interpreter.display()))
            })?;
        let (Some(stdin), Some(stdout), Some(stderr)) =
            (child.stdin.take(), child.stdout.take(), child.stderr.take())
        else {
            return Err(SessionError::Unusable(
                "the helper's pipes are missing".into(),
            ));
        };
        tokio::spawn(log_lines(BufReader::new(stderr)));
        let mut lines = BufReader::new(stdout).lines();
        let Ok(Some(line)) = lines.next_line().await else {
            let status = child.wait().await.ok();
            return Err(SessionError::Unusable(format!(
                "{} ended before it connected ({})",
                interpreter.display(),
                status.map_or_else(|| "no exit status".into(), |s| s.to_string())
            )));
        };
        let first = serde_json::from_str::<Reply>(&line).unwrap_or_default();
        if let Some(why) = first.unusable {
            return Err(SessionError::Unusable(format!(
                "{} cannot load Ceph's Python modules: {why}",
                interpreter.display()
            )));
        }
        if let Some(why) = first.failed {
            return Err(SessionError::Ceph(CephError::Failed {
                command: shown.to_owned(),
                exit_code: Some(first.rc.abs()),
                stderr: why,
            }));
        }
        if !first.ready {
            return Err(SessionError::Unusable(
                "the helper answered something else than ready".into(),
            ));
        }
        tracing::debug!(interpreter = %interpreter.display(), "connected to Ceph");
        let live = Arc::new(Live {
            stdin: tokio::sync::Mutex::new(stdin),
            waiting: Mutex::new(HashMap::new()),
            next_id: Mutex::new(0),
            ended: AtomicBool::new(false),
            child: Mutex::new(child),
        });
        tokio::spawn(route_replies(lines, Arc::downgrade(&live)));
        Ok(live)
    }
}

fn ended(shown: &str) -> SessionError {
    SessionError::Ceph(CephError::Failed {
        command: shown.to_owned(),
        exit_code: None,
        stderr: "the connection to Ceph ended before the answer".into(),
    })
}

/// Hands each reply to its waiting call; at the end of the output the session has ended.
async fn route_replies(
    mut lines: tokio::io::Lines<BufReader<tokio::process::ChildStdout>>,
    live: std::sync::Weak<Live>,
) {
    while let Ok(Some(line)) = lines.next_line().await {
        let Some(live) = live.upgrade() else { return };
        let Ok(reply) = serde_json::from_str::<Reply>(&line) else {
            tracing::debug!(%line, "a line from the Ceph session that is not a reply");
            continue;
        };
        let Some(id) = reply.id else { continue };
        let sender = live.waiting.lock().ok().and_then(|mut w| w.remove(&id));
        if let Some(sender) = sender {
            let _ = sender.send(reply);
        }
        live.kill_when_idle();
    }
    if let Some(live) = live.upgrade() {
        live.died();
    }
}

async fn log_lines(stderr: BufReader<tokio::process::ChildStderr>) {
    let mut lines = stderr.lines();
    while let Ok(Some(line)) = lines.next_line().await {
        tracing::debug!(%line, "Ceph session stderr");
    }
}

#[cfg(test)]
mod tests;
