//! The molecule-like test harness: fixtures and checks for the end-to-end tests, which run
//! against the local Kubernetes started by `molecule-like-tests/control-plane` (kube-apiserver,
//! kube-controller-manager, kube-scheduler, KWOK; see `molecule-like-tests/README.md`).
//!
//! - [`kubernetes`]: the Kubernetes side: a scenario's lifecycle ([`scenario`]), CephOSD
//!   manifests ([`manifests`]), pods, Nodes, RBAC, the operator under test, `kubectl ceph-osd`
//!   (re-exported here by their own names);
//! - [`ceph`]: the Ceph side: a real Ceph cluster, the bridge that runs a real `ceph-osd` for
//!   each OSD pod, the gated scenario;
//! - [`recording`]: recorders of the pod watch and of Ceph's view, the invariants checked on
//!   what they recorded, and a journey's milestones;
//! - [`paths`]: the workspace, the build output, the binaries.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::needless_pass_by_value
)]

pub mod ceph;
pub mod kubernetes;
pub mod paths;
pub mod recording;

pub use kubernetes::{manifests, nodes, operator, plugin, pods, rbac, scenario};

use std::path::{Path, PathBuf};

use kube::config::{KubeConfigOptions, Kubeconfig};
use kube::{Client, Config};

/// How to bring the control plane up, for error messages.
pub const HOW_TO_START: &str =
    "run molecule-like-tests/control-plane install && molecule-like-tests/control-plane up";

/// Installs ring as rustls' process-wide crypto provider (needed before any TLS client).
pub fn install_crypto_provider() {
    let _ = rustls::crypto::ring::default_provider().install_default();
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

/// A client from a kubeconfig file, without a read timeout (watches may be quiet for long).
pub async fn client_from(path: &Path) -> anyhow::Result<Client> {
    install_crypto_provider();
    let kc = Kubeconfig::read_from(path)
        .map_err(|e| anyhow::anyhow!("reading kubeconfig {}: {e}", path.display()))?;
    let mut cfg = Config::from_custom_kubeconfig(kc, &KubeConfigOptions::default()).await?;
    cfg.read_timeout = None;
    Ok(Client::try_from(cfg)?)
}

/// A client of the running test control plane (as cluster admin), or an error that says how
/// to start it.
pub async fn test_client() -> anyhow::Result<Client> {
    let path = kubeconfig_path();
    if !path.exists() {
        anyhow::bail!(
            "no control plane: {} does not exist; {HOW_TO_START}",
            path.display()
        );
    }
    let client = client_from(&path).await?;
    if let Err(e) = client.apiserver_version().await {
        anyhow::bail!(
            "the control plane at {} does not answer ({e}); {HOW_TO_START}",
            path.display()
        );
    }
    Ok(client)
}
