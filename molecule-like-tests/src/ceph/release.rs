//! The Ceph releases the harness runs: the machine's own (Pacific) and the Reef of
//! `molecule-like-tests/ceph-release-root` (a Debian trixie root, installed once), and what
//! each one's `ceph-osd --version` prints (run once per test process).

use std::path::PathBuf;

use anyhow::{bail, Context as _};
use tokio::sync::OnceCell;

use crate::paths::workspace_root;

/// A Ceph release the harness's daemons run.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Release {
    /// 16.2.15: the machine's packages (`ceph install`); `up`, mkfs and the CLI always use it.
    #[default]
    Pacific,
    /// 18.2.7: `ceph-release-root`'s (its `install` must have run).
    Reef,
}

impl Release {
    /// Its name as the script takes it (`--release pacific|reef`) and Ceph says it.
    pub fn name(self) -> &'static str {
        match self {
            Self::Pacific => "pacific",
            Self::Reef => "reef",
        }
    }

    /// What `ceph-osd --version` of this release prints (with its newline), e.g.
    /// `ceph version 18.2.7 (6b0e…) reef (stable)`: the real binary, run once per process.
    pub async fn osd_version(self) -> anyhow::Result<String> {
        static PACIFIC: OnceCell<String> = OnceCell::const_new();
        static REEF: OnceCell<String> = OnceCell::const_new();
        let cell = match self {
            Self::Pacific => &PACIFIC,
            Self::Reef => &REEF,
        };
        cell.get_or_try_init(|| self.run_osd_version())
            .await
            .cloned()
    }

    async fn run_osd_version(self) -> anyhow::Result<String> {
        let mut command = match self {
            Self::Pacific => tokio::process::Command::new("ceph-osd"),
            Self::Reef => {
                let mut c = tokio::process::Command::new(release_root_script());
                c.args(["run", "ceph-osd"]);
                c
            }
        };
        let out = command
            .arg("--version")
            .stdin(std::process::Stdio::null())
            .kill_on_drop(true)
            .output()
            .await
            .with_context(|| format!("running ceph-osd --version of {}", self.name()))?;
        let text = String::from_utf8_lossy(&out.stdout).into_owned();
        // The release's own name in its answer: never another release's binary taken for it.
        if !out.status.success() || !text.contains(&format!(" {} (", self.name())) {
            bail!(
                "ceph-osd --version of {} ({}): {text:?} {:?}",
                self.name(),
                out.status,
                String::from_utf8_lossy(&out.stderr)
            );
        }
        Ok(text)
    }
}

/// `molecule-like-tests/ceph-release-root`.
pub fn release_root_script() -> PathBuf {
    workspace_root()
        .join("molecule-like-tests")
        .join("ceph-release-root")
}
