//! The recorder of Ceph's view: `ceph watch` read line by line, every sample kept on a clock
//! shared with the pod recorder, the latest one published to whoever waits on it.

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use anyhow::{anyhow, bail, Context as _};
use tokio::io::AsyncBufReadExt;
use tokio::sync::watch;

use super::checks::CephRecording;
use super::liveness::{Heard, SILENT_AT_MOST};
use super::samples::{CephEvent, Observed};
use crate::ceph::{script_command, CephCluster, OsdMap, PgStat};

/// How often `ceph watch` samples.
pub const SAMPLE_INTERVAL: &str = "0.25";

/// The latest osdmap and PG states, with when they were seen.
#[derive(Clone, Debug, Default)]
pub struct CephState {
    pub osdmap: Option<(Duration, OsdMap)>,
    pub pgs: Option<(Duration, PgStat)>,
}

/// One line of `ceph watch`.
pub(super) fn parse_line(line: &str) -> Result<Observed, String> {
    // Through a Value: an internally tagged enum would buffer the map keys and refuse the pool
    // ids as numbers.
    let value: serde_json::Value = serde_json::from_str(line).map_err(|e| e.to_string())?;
    let kind = value["kind"].as_str().unwrap_or_default().to_owned();
    let read = |e: serde_json::Error| e.to_string();
    match kind.as_str() {
        "osdmap" => serde_json::from_value(value)
            .map(Observed::OsdMap)
            .map_err(read),
        "pgs" => serde_json::from_value(value)
            .map(Observed::Pgs)
            .map_err(read),
        "error" => Ok(Observed::Error(
            value["error"].as_str().unwrap_or_default().to_owned(),
        )),
        other => Err(format!("unknown kind {other:?}")),
    }
}

/// Records Ceph's view until dropped (see the module docs).
pub struct CephRecorder {
    events: Arc<Mutex<Vec<CephEvent>>>,
    state: watch::Receiver<CephState>,
    clock: Instant,
    task: tokio::task::JoinHandle<()>,
}

impl Drop for CephRecorder {
    fn drop(&mut self) {
        // The task owns the child (killed on drop; it also exits when its stdin closes).
        self.task.abort();
    }
}

fn locked<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// Reads one `ceph watch` until it exits, fails or is silent too long (hung: the caller drops,
/// and so kills, it); every sample, and why it ended, to `record`.
async fn read_watch(stdout: tokio::process::ChildStdout, record: impl Fn(Observed)) {
    let mut lines = tokio::io::BufReader::new(stdout).lines();
    let mut heard = Heard::new(Instant::now());
    loop {
        let next = tokio::time::timeout(Duration::from_secs(1), lines.next_line());
        let (observed, end) = match next.await {
            // A second without a line.
            Err(_) => (None, false),
            Ok(Ok(Some(line))) => match parse_line(&line) {
                Ok(observed) => (Some(observed), false),
                Err(e) => (
                    Some(Observed::Error(format!("unreadable sample {line:?}: {e}"))),
                    false,
                ),
            },
            Ok(Ok(None)) => (
                Some(Observed::Error(
                    "ceph watch exited: started again".to_owned(),
                )),
                true,
            ),
            Ok(Err(e)) => (
                Some(Observed::Error(format!(
                    "reading ceph watch: {e}: started again"
                ))),
                true,
            ),
        };
        if let Some(observed) = observed {
            heard.note(&observed, Instant::now());
            record(observed);
        }
        if end {
            break;
        }
        if let Some(sampler) = heard.silent(Instant::now()) {
            record(Observed::Error(format!(
                "ceph watch: its {sampler} sampler silent for over {SILENT_AT_MOST:?} (hung): \
                 killed and started again"
            )));
            break;
        }
    }
}

impl CephRecorder {
    /// Starts `ceph watch` for `cluster`; samples are timed from `clock` (e.g. the pod
    /// recorder's start: `Instant::now() - recorder.elapsed()`). Returns once the first
    /// osdmap is in.
    pub async fn start(cluster: &CephCluster, clock: Instant) -> anyhow::Result<Self> {
        let stderr_path = cluster.log_dir().join("watch.stderr");
        Self::start_at(
            cluster.state_dir().to_path_buf(),
            cluster.mon_port(),
            stderr_path,
            clock,
        )
        .await
    }

    /// [`Self::start`] for the cluster of `molecule-like-tests/ceph` in `state` on `mon_port`
    /// (one the harness did not start), `ceph watch`'s stderr appended to `stderr_path`.
    pub async fn start_at(
        state: std::path::PathBuf,
        mon_port: u16,
        stderr_path: std::path::PathBuf,
        clock: Instant,
    ) -> anyhow::Result<Self> {
        // `ceph watch` over librados may die or hang as the mon or mgr goes away and comes
        // back (a scenario's fault): it is started again, the gap recorded as error samples.
        let spawn =
            move || -> anyhow::Result<(tokio::process::Child, tokio::process::ChildStdout)> {
                let stderr = std::fs::OpenOptions::new()
                    .create(true)
                    .append(true)
                    .open(&stderr_path)?;
                let mut child = script_command(&state, mon_port, &["watch", SAMPLE_INTERVAL])
                    .stdin(std::process::Stdio::piped())
                    .stdout(std::process::Stdio::piped())
                    .stderr(stderr)
                    .spawn()
                    .context("starting ceph watch")?;
                let stdout = child
                    .stdout
                    .take()
                    .ok_or_else(|| anyhow!("ceph watch without stdout"))?;
                Ok((child, stdout))
            };
        let mut first = Some(spawn()?);
        let events = Arc::new(Mutex::new(Vec::new()));
        let (tx, state) = watch::channel(CephState::default());
        let sink = Arc::clone(&events);
        let task = tokio::spawn(async move {
            loop {
                let started = match first.take().map_or_else(&spawn, Ok) {
                    Ok(started) => started,
                    Err(e) => {
                        let observed = Observed::Error(format!("starting ceph watch: {e:#}"));
                        let at = clock.elapsed();
                        locked(&sink).push(CephEvent { at, observed });
                        tokio::time::sleep(Duration::from_secs(1)).await;
                        continue;
                    }
                };
                // Holds the child (and its stdin) while its lines are read; dropping it kills
                // a hung one.
                let (_child, stdout) = started;
                let record = |observed: Observed| {
                    let at = clock.elapsed();
                    tx.send_modify(|s| match &observed {
                        Observed::OsdMap(map) => s.osdmap = Some((at, map.clone())),
                        Observed::Pgs(pgs) => s.pgs = Some((at, pgs.clone())),
                        Observed::Error(_) => {}
                    });
                    locked(&sink).push(CephEvent { at, observed });
                };
                read_watch(stdout, record).await;
                tokio::time::sleep(Duration::from_millis(500)).await;
            }
        });
        let recorder = Self {
            events,
            state,
            clock,
            task,
        };
        recorder
            .wait_until("the first osdmap sample", Duration::from_secs(30), |s| {
                s.osdmap.is_some()
            })
            .await?;
        Ok(recorder)
    }

    /// Now on the recorder's clock.
    pub fn elapsed(&self) -> Duration {
        self.clock.elapsed()
    }

    /// The recorder's clock: the instant its samples are timed from.
    pub fn clock(&self) -> Instant {
        self.clock
    }

    /// The latest view.
    pub fn latest(&self) -> CephState {
        self.state.borrow().clone()
    }

    /// A receiver of every new view.
    pub fn subscribe(&self) -> watch::Receiver<CephState> {
        self.state.clone()
    }

    /// Waits until `done` holds for the latest view; fails after `timeout` with `what`.
    pub async fn wait_until(
        &self,
        what: &str,
        timeout: Duration,
        mut done: impl FnMut(&CephState) -> bool,
    ) -> anyhow::Result<CephState> {
        let mut rx = self.state.clone();
        let waited = tokio::time::timeout(timeout, async {
            loop {
                let now = rx.borrow_and_update().clone();
                if done(&now) {
                    return Ok(now);
                }
                if rx.changed().await.is_err() {
                    bail!("the ceph recorder stopped");
                }
            }
        })
        .await;
        if let Ok(result) = waited {
            return result;
        }
        let last = self.recording().events.last().cloned();
        bail!(
            "timed out after {timeout:?} waiting for {what} in Ceph's view (last sample: {last:?})"
        )
    }

    /// Every sample so far.
    pub fn recording(&self) -> CephRecording {
        CephRecording {
            events: locked(&self.events).clone(),
        }
    }
}
