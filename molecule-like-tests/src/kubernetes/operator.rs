//! The operator under test as a child process: its options, its log, signals, and what it
//! serves on its HTTP port.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use anyhow::{anyhow, bail, Context as _};
use kube::api::Api;
use kube::Client;

use crate::paths::{operator_binary, tail};

/// Options of the operator process.
#[derive(Clone, Debug)]
pub struct OperatorOptions {
    pub resync_seconds: u64,
}

impl Default for OperatorOptions {
    fn default() -> Self {
        Self { resync_seconds: 5 }
    }
}

/// The operator's `RUST_LOG`: `MLT_OPERATOR_LOG`, else info and DEBUG of the controller
/// (scenarios count every reconcile, no-op ones included).
pub fn operator_log_filter() -> String {
    std::env::var("MLT_OPERATOR_LOG")
        .unwrap_or_else(|_| "info,ceph_osd_operator::runtime::controller=debug".into())
}

/// Runs `ceph-osd-operator run` for `namespace`, stdout and stderr appended to `log_path`.
pub(crate) fn spawn_operator_process(
    namespace: Option<&str>,
    log_path: &Path,
    options: &OperatorOptions,
    extra_args: &[&str],
    env: &[(&str, &str)],
) -> anyhow::Result<Child> {
    let bin = operator_binary()?;
    let log = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(log_path)
        .with_context(|| format!("opening {}", log_path.display()))?;
    let mut command = Command::new(&bin);
    command.arg("run");
    // The operator's identity of deploy/ unless the test gives another (`--kubeconfig F`).
    if !extra_args.contains(&"--kubeconfig") {
        command
            .arg("--kubeconfig")
            .arg(crate::paths::operator_kubeconfig_path());
    }
    command
        .args(
            namespace
                .map(|ns| ["--namespace", ns])
                .into_iter()
                .flatten(),
        )
        .arg("--resync-seconds")
        .arg(options.resync_seconds.to_string())
        // One process per test unless the test elects a leader itself.
        .args(
            (!extra_args.iter().any(|a| a.starts_with("--leader-elect")))
                .then_some("--leader-elect=false"),
        )
        .args(extra_args)
        .env("NO_COLOR", "1")
        .env_remove("POD_NAME")
        .env_remove("POD_NAMESPACE")
        .env("RUST_LOG", operator_log_filter());
    for (k, v) in env {
        command.env(k, v);
    }
    command
        .stdin(Stdio::null())
        .stdout(log.try_clone()?)
        .stderr(log)
        .spawn()
        .with_context(|| format!("starting {}", bin.display()))
}

/// Who holds the operator's leader Lease in `namespace`, if anyone.
pub async fn lease_holder(client: &Client, namespace: &str) -> anyhow::Result<Option<String>> {
    let leases: Api<k8s_openapi::api::coordination::v1::Lease> =
        Api::namespaced(client.clone(), namespace);
    Ok(leases
        .get_opt("ceph-osd-operator")
        .await?
        .and_then(|l| l.spec)
        .and_then(|spec| spec.holder_identity))
}

/// An extra operator process (`Scenario::spawn_operator` in `journeys::scenario`); killed
/// when dropped.
pub struct OperatorProcess {
    pub label: String,
    pub log_path: PathBuf,
    pub(crate) child: Mutex<Option<Child>>,
}

impl OperatorProcess {
    fn child(&self) -> std::sync::MutexGuard<'_, Option<Child>> {
        self.child
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Its log so far.
    pub fn log(&self) -> String {
        std::fs::read_to_string(&self.log_path).unwrap_or_default()
    }

    /// Its process id (None once reaped).
    pub fn pid(&self) -> Option<u32> {
        self.child().as_ref().map(Child::id)
    }

    /// Fails when the process has exited.
    pub fn check_alive(&self) -> anyhow::Result<()> {
        if let Some(child) = self.child().as_mut() {
            if let Some(status) = child.try_wait()? {
                bail!(
                    "operator {} exited ({status}); log tail:\n{}",
                    self.label,
                    tail(&self.log_path, 40)
                );
            }
        }
        Ok(())
    }

    /// SIGKILL: no graceful shutdown, no lease release.
    pub fn kill(&self) {
        if let Some(mut child) = self.child().take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }

    /// Sends SIGTERM (graceful shutdown) and waits up to `timeout` for the exit.
    pub async fn terminate(&self, timeout: Duration) -> anyhow::Result<std::process::ExitStatus> {
        let Some(pid) = self.pid() else {
            bail!("operator {} is not running", self.label);
        };
        let status = Command::new("kill")
            .arg("-TERM")
            .arg(pid.to_string())
            .status()
            .context("running kill -TERM")?;
        anyhow::ensure!(status.success(), "kill -TERM {pid} failed");
        let deadline = Instant::now() + timeout;
        loop {
            let exited = {
                let mut guard = self.child();
                match guard.as_mut().map(Child::try_wait).transpose()? {
                    Some(Some(status)) => {
                        *guard = None;
                        Some(status)
                    }
                    _ => None,
                }
            };
            if let Some(status) = exited {
                return Ok(status);
            }
            if Instant::now() > deadline {
                bail!(
                    "operator {} still running {timeout:?} after SIGTERM; log tail:\n{}",
                    self.label,
                    tail(&self.log_path, 40)
                );
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }
}

impl Drop for OperatorProcess {
    fn drop(&mut self) {
        self.kill();
    }
}

/// A free loopback port (bound and released at once; good enough for a test).
pub fn free_port() -> anyhow::Result<u16> {
    let listener = std::net::TcpListener::bind("127.0.0.1:0")?;
    Ok(listener.local_addr()?.port())
}

/// A plain HTTP/1.1 GET against `127.0.0.1:<port><path>`: (status code, body).
pub async fn http_get(port: u16, path: &str) -> anyhow::Result<(u16, String)> {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let mut stream = tokio::net::TcpStream::connect(("127.0.0.1", port)).await?;
    stream
        .write_all(
            format!("GET {path} HTTP/1.1\r\nhost: 127.0.0.1\r\nconnection: close\r\n\r\n")
                .as_bytes(),
        )
        .await?;
    let mut out = String::new();
    stream.read_to_string(&mut out).await?;
    let (head, body) = out
        .split_once("\r\n\r\n")
        .ok_or_else(|| anyhow!("no HTTP header in {out:?}"))?;
    let code = head
        .split_whitespace()
        .nth(1)
        .and_then(|c| c.parse().ok())
        .ok_or_else(|| anyhow!("no status code in {head:?}"))?;
    Ok((code, body.to_owned()))
}
