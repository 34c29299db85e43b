//! `molecule-harness`: the control plane's helper processes (started by
//! `molecule-like-tests/control-plane up`).

use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

use clap::{Parser, Subcommand};
use molecule_like_tests::{client_from, crds, gc, install_crypto_provider, kubelet, proxy};

#[derive(Parser)]
#[command(about = "Test control plane helpers: CRDs, API proxy, test kubelet, garbage collector")]
struct Cli {
    #[command(subcommand)]
    cmd: Cmd,
}

#[derive(Subcommand)]
enum Cmd {
    /// Print the harness CRDs as YAML.
    PrintCrds,
    /// Apply the harness CRDs (pods.core.testing.local, leases, events) and wait for them.
    InstallCrds {
        /// Admin kubeconfig of the API server itself.
        #[arg(long)]
        kubeconfig: PathBuf,
    },
    /// Serve `/api/v1` pods (and pass everything else through) on plain HTTP.
    Proxy {
        /// Admin kubeconfig of the API server (the upstream).
        #[arg(long)]
        kubeconfig: PathBuf,
        #[arg(long, default_value = "127.0.0.1:18080")]
        listen: SocketAddr,
    },
    /// Mark pods Running/Ready and terminate deleted pods gracefully.
    Kubelet {
        #[arg(long)]
        kubeconfig: PathBuf,
        /// terminationGracePeriodSeconds is multiplied by this.
        #[arg(long, env = "CP_KUBELET_GRACE_SCALE", default_value_t = 0.1)]
        grace_scale: f64,
    },
    /// Delete pods whose owners are gone.
    Gc {
        #[arg(long)]
        kubeconfig: PathBuf,
        /// Seconds between two passes.
        #[arg(long, default_value_t = 1.0)]
        interval: f64,
    },
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    install_crypto_provider();
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env()
                .unwrap_or_else(|_| "info,kube=warn,hyper=warn".into()),
        )
        .with_ansi(false)
        .init();
    match Cli::parse().cmd {
        Cmd::PrintCrds => {
            for crd in crds::all()? {
                println!("---\n{}", serde_saphyr::to_string(&crd)?);
            }
            Ok(())
        }
        Cmd::InstallCrds { kubeconfig } => crds::install(&client_from(&kubeconfig).await?).await,
        Cmd::Proxy { kubeconfig, listen } => {
            proxy::run(client_from(&kubeconfig).await?, listen).await
        }
        Cmd::Kubelet {
            kubeconfig,
            grace_scale,
        } => {
            kubelet::run(
                client_from(&kubeconfig).await?,
                kubelet::Settings { grace_scale },
            )
            .await
        }
        Cmd::Gc {
            kubeconfig,
            interval,
        } => {
            let settings = gc::Settings {
                interval: Duration::from_secs_f64(interval.max(0.05)),
            };
            gc::run(client_from(&kubeconfig).await?, settings).await
        }
    }
}
