//! Clients of the local control plane: from a kubeconfig file, or the cluster admin's with an
//! error that says how to start the control plane when it is not up.

use std::path::Path;

use kube::config::{KubeConfigOptions, Kubeconfig};
use kube::{Client, Config};

use crate::paths::kubeconfig_path;

/// How to bring the control plane up, for error messages.
pub const HOW_TO_START: &str =
    "run molecule-like-tests/control-plane install && molecule-like-tests/control-plane up";

/// Installs ring as rustls' process-wide crypto provider (needed before any TLS client).
pub fn install_crypto_provider() {
    let _ = rustls::crypto::ring::default_provider().install_default();
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
