//! `kubectl ceph-osd`: the operator binary linked as `kubectl-ceph_osd`, run in a scenario's
//! namespace.

use std::path::PathBuf;

use crate::journeys::scenario::Scenario;
use crate::paths::operator_binary;

/// The operator binary linked as `kubectl-ceph_osd` in a directory of this scenario.
pub fn plugin(s: &Scenario) -> anyhow::Result<PathBuf> {
    let dir = s.log_path.parent().expect("log dir").join("plugin");
    std::fs::create_dir_all(&dir)?;
    let link = dir.join("kubectl-ceph_osd");
    if !link.exists() {
        std::os::unix::fs::symlink(operator_binary()?, &link)?;
    }
    Ok(link)
}

/// Runs `kubectl ceph-osd <args>` in the scenario's namespace: (exit code, stdout, stderr).
pub async fn kubectl_ceph_osd(
    s: &Scenario,
    args: &[&str],
) -> anyhow::Result<(i32, String, String)> {
    let kubeconfig = crate::paths::kubeconfig_path();
    let out = tokio::process::Command::new(plugin(s)?)
        .arg("--kubeconfig")
        .arg(&kubeconfig)
        .args(["-n", &s.namespace])
        .args(args)
        .output()
        .await?;
    Ok((
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    ))
}
