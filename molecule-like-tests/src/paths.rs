//! Where things are: the workspace, the build output, the operator binary under test,
//! kubectl and Helm, the control plane's state dir and kubeconfigs, and the end of a log file.

use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::bail;

/// The workspace root (the operator crate).
pub fn workspace_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .map_or_else(|| PathBuf::from(".."), Path::to_path_buf)
}

/// The control plane's state dir: `$CEPH_OSD_OPERATOR_STATE` or `<repo>/target/control-plane`.
pub fn state_dir() -> PathBuf {
    std::env::var_os("CEPH_OSD_OPERATOR_STATE").map_or_else(
        || {
            Path::new(env!("CARGO_MANIFEST_DIR"))
                .join("..")
                .join("target")
                .join("control-plane")
        },
        PathBuf::from,
    )
}

/// The cluster admin's kubeconfig (what the tests and kubectl use).
pub fn kubeconfig_path() -> PathBuf {
    state_dir().join("kubeconfig")
}

/// The operator's kubeconfig: a token of the ServiceAccount `deploy/` binds to its ClusterRole,
/// so a permission the code needs and `deploy/` lacks fails the scenario.
pub fn operator_kubeconfig_path() -> PathBuf {
    state_dir().join("operator.kubeconfig")
}

/// Where the tests write their state and logs: the work tree's `target/`, wherever
/// `CARGO_TARGET_DIR` puts cargo's builds (a cache dir is far from the repo, and Ceph's admin
/// sockets must stay within 107 bytes of path).
pub fn output_dir() -> PathBuf {
    workspace_root().join("target")
}

/// The cargo target directory: `$CARGO_TARGET_DIR` (relative to the workspace root when
/// relative) or `<workspace>/target`.
pub fn target_dir() -> PathBuf {
    match std::env::var_os("CARGO_TARGET_DIR") {
        Some(dir) if Path::new(&dir).is_absolute() => PathBuf::from(dir),
        Some(dir) => workspace_root().join(dir),
        None => workspace_root().join("target"),
    }
}

/// The operator binary: `$CEPH_OSD_OPERATOR_BIN`, else `ceph-osd-operator` next to the running
/// test's profile directory (`<target>/debug/deps/<test>` → `<target>/debug/`), else
/// `<target>/debug/ceph-osd-operator`.
pub fn operator_binary() -> anyhow::Result<PathBuf> {
    if let Some(bin) = std::env::var_os("CEPH_OSD_OPERATOR_BIN") {
        return Ok(PathBuf::from(bin));
    }
    let name = format!("ceph-osd-operator{}", std::env::consts::EXE_SUFFIX);
    let mut candidates = Vec::new();
    if let Ok(exe) = std::env::current_exe() {
        if let Some(profile) = exe.parent().and_then(Path::parent) {
            candidates.push(profile.join(&name));
        }
    }
    candidates.push(target_dir().join("debug").join(&name));
    for candidate in &candidates {
        if candidate.is_file() {
            warn_if_stale(candidate);
            return Ok(candidate.clone());
        }
    }
    bail!(
        "the operator binary is not built (looked at {candidates:?}): run \
         `cargo build -p ceph-osd-operator` first (molecule-like-tests/run does)"
    )
}

/// A binary older than the operator's sources tests old code: say so (but go on).
fn warn_if_stale(bin: &Path) {
    let Ok(built) = bin.metadata().and_then(|m| m.modified()) else {
        return;
    };
    let src = workspace_root().join("src");
    let mut newer = Vec::new();
    let mut folders = vec![src.clone()];
    while let Some(folder) = folders.pop() {
        for entry in std::fs::read_dir(&folder).into_iter().flatten().flatten() {
            let path = entry.path();
            if path.is_dir() {
                folders.push(path);
            } else if entry
                .metadata()
                .and_then(|m| m.modified())
                .is_ok_and(|t| t > built)
            {
                let relative = path.strip_prefix(&src).unwrap_or(&path);
                newer.push(relative.to_string_lossy().into_owned());
            }
        }
    }
    if !newer.is_empty() {
        eprintln!(
            "WARNING: {} is older than src/{{{}}}: run `cargo build -p ceph-osd-operator`",
            bin.display(),
            newer.join(",")
        );
    }
}

/// The kubectl to use: `$KUBECTL`, else the one `control-plane up` links into its state dir,
/// else `kubectl` on the PATH; None when there is none.
pub fn kubectl() -> Option<String> {
    if let Ok(k) = std::env::var("KUBECTL") {
        return Some(k);
    }
    let linked = state_dir().join("kubectl");
    if linked.exists() {
        return Some(linked.to_string_lossy().into_owned());
    }
    Command::new("kubectl")
        .args(["version", "--client"])
        .output()
        .ok()
        .filter(|o| o.status.success())
        .map(|_| "kubectl".to_string())
}

/// The Helm that `control-plane up` links into its state dir (built by `control-plane
/// install`), else `helm` on the PATH; None when there is none.
pub fn helm() -> Option<String> {
    let linked = state_dir().join("helm");
    if linked.exists() {
        return Some(linked.to_string_lossy().into_owned());
    }
    Command::new("helm")
        .arg("version")
        .output()
        .ok()
        .filter(|o| o.status.success())
        .map(|_| "helm".to_string())
}

/// The last `n` lines of a file (empty when unreadable).
pub fn tail(path: &Path, n: usize) -> String {
    let text = std::fs::read_to_string(path).unwrap_or_default();
    let lines: Vec<&str> = text.lines().collect();
    lines[lines.len().saturating_sub(n)..].join("\n")
}

/// Replaces the section of `BENCHMARKS.md` that starts with `header` (a `## ` line) up to the
/// next `## ` heading, or appends it: each benchmark writes its own section, keeps the others.
pub fn write_benchmarks_section(header: &str, section: &str) -> anyhow::Result<()> {
    let path = workspace_root().join("BENCHMARKS.md");
    let doc = std::fs::read_to_string(&path).unwrap_or_default();
    std::fs::write(&path, with_section(&doc, header, section))?;
    Ok(())
}

fn with_section(doc: &str, header: &str, section: &str) -> String {
    let section = section.trim();
    match doc.find(header) {
        Some(start) => {
            let after = start + header.len();
            let end = doc[after..]
                .find("\n## ")
                .map_or(doc.len(), |n| after + n + 1);
            let rest = &doc[end..];
            let gap = if rest.is_empty() { "\n" } else { "\n\n" };
            format!("{}{section}{gap}{rest}", &doc[..start])
        }
        None => format!("{}\n\n{section}\n", doc.trim_end()),
    }
}

#[cfg(test)]
mod tests;
