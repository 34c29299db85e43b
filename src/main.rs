//! The `ceph-osd-operator` command: argument parsing only; the work is in the library.

use ceph_osd_operator::ceph::{CephUser, CliSettings, DEFAULT_CALL_TIMEOUT};
use ceph_osd_operator::gate::DEFAULT_PG_STATS_LAG;
use ceph_osd_operator::{
    ceph_lock_namespace, counted_client, crd, lease_namespace, parse_cephosd, preview_pods,
    read_manifest, report_missing_permissions, serve, GateSettings, Health, LeaseSettings, Metrics,
    MetricsAuth, NoLockNamespace, RandomSuffix, Settings, SuffixSource,
};
use clap::{ArgAction, Parser, Subcommand, ValueEnum};
use kube::config::{KubeConfigOptions, Kubeconfig};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

/// jemalloc gives freed memory back to the system within seconds of a burst (creating a
/// thousand pods); the C allocator kept that peak resident for good.
#[global_allocator]
static ALLOCATOR: tikv_jemallocator::Jemalloc = tikv_jemallocator::Jemalloc;

#[derive(Parser)]
#[command(
    version,
    about = "Runs Ceph OSDs as one Pod per OSD and rolls changes out safely"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Run the operator against a cluster (kubeconfig or in-cluster service account).
    Run {
        /// Kubeconfig file (default: $KUBECONFIG, ~/.kube/config, then in-cluster).
        #[arg(long, env = "KUBECONFIG")]
        kubeconfig: Option<PathBuf>,
        /// Watch only this namespace (default: all namespaces).
        #[arg(long, short = 'n', env = "WATCH_NAMESPACE")]
        namespace: Option<String>,
        /// Log format.
        #[arg(long, value_enum, default_value_t = LogFormat::Human)]
        log_format: LogFormat,
        /// Seconds between periodic resyncs of every CephOSD.
        #[arg(long, default_value_t = 30)]
        resync_seconds: u64,
        /// Serve /healthz, /readyz and /metrics on this address (e.g. 0.0.0.0:8080).
        #[arg(long)]
        http_address: Option<std::net::SocketAddr>,
        /// Act only while holding the leader Lease, so replicas never act at once (on by
        /// default; `--leader-elect=false` for a single process, e.g. in tests).
        #[arg(long, action = ArgAction::Set, num_args = 0..=1, require_equals = true,
              default_value_t = true, default_missing_value = "true")]
        leader_elect: bool,
        /// Namespace of the leader Lease (default: $POD_NAMESPACE, else the watched namespace;
        /// with neither, `run` refuses to start).
        #[arg(long, env = "POD_NAMESPACE")]
        lease_namespace: Option<String>,
        /// Name of the leader Lease.
        #[arg(long, default_value = "ceph-osd-operator")]
        lease_name: String,
        /// Serve /metrics only to bearer tokens the API server authenticates (TokenReview) and
        /// allows `get` on the URL /metrics (SubjectAccessReview); `--metrics-auth=false`
        /// serves it to anyone who can connect (local use only).
        #[arg(long, action = ArgAction::Set, num_args = 0..=1, require_equals = true,
              default_value_t = true, default_missing_value = "true")]
        metrics_auth: bool,
        /// How to reach Ceph and gate rollout steps on it.
        #[command(flatten)]
        ceph: Box<CephArgs>,
    },
    /// Print the CustomResourceDefinition YAML.
    Crd,
    /// Print, offline, the pods the operator would create for a CephOSD manifest.
    Render {
        /// The CephOSD manifest (YAML).
        #[arg(long, short = 'f')]
        file: PathBuf,
        /// Namespace for the pods when the manifest names none.
        #[arg(long, short = 'n', default_value = "default")]
        namespace: String,
    },
}

/// The Ceph options of `run`.
#[derive(clap::Args)]
#[expect(
    clippy::struct_field_names,
    reason = "each field is its flag: --ceph-conf, --ceph-id, …"
)]
struct CephArgs {
    /// Ceph configuration file: with it, every rollout step asks Ceph first (ok-to-stop,
    /// noout on the OSDs stopped, PGs clean before the next step). Without it the Ceph gate
    /// is off, which the `CephGate` condition of every CephOSD says.
    #[arg(long)]
    ceph_conf: Option<PathBuf>,
    /// Keyring of the operator's Ceph key (default: Ceph's own search path).
    #[arg(long)]
    ceph_keyring: Option<PathBuf>,
    /// The operator's Ceph user id (`ceph-osd-operator` for `client.ceph-osd-operator`;
    /// default: Ceph's, `admin`).
    #[arg(long)]
    ceph_id: Option<String>,
    /// Seconds one `ceph` call may take before it is killed.
    #[arg(long, default_value_t = DEFAULT_CALL_TIMEOUT.as_secs())]
    ceph_timeout: u64,
    /// Seconds `noout` may be held on the OSDs of one step: past it `noout` is cleared so
    /// Ceph re-replicates, and the rollout stays halted.
    #[arg(long, default_value_t = 1800)]
    ceph_max_noout_seconds: u64,
    /// Seconds PG states may trail the osdmap (Ceph's `mgr_stats_period` and a margin): clean
    /// PGs count only this long after a placement change was first seen, and without `pg
    /// ls-by-osd` a step ends only on clean PGs seen this long after its OSDs were back.
    #[arg(long, default_value_t = DEFAULT_PG_STATS_LAG.as_secs())]
    ceph_pg_stats_lag_seconds: u64,
    /// Namespace of the step lock of the Ceph cluster (a Lease `ceph-osd-step-<fsid>`): one
    /// rollout step at a time per Ceph cluster, so every operator on the same Ceph must
    /// name the same namespace and be allowed its Leases there (default: the leader
    /// Lease's namespace, else the watched namespace).
    #[arg(long, env = "CEPH_LOCK_NAMESPACE")]
    ceph_lock_namespace: Option<String>,
}

#[derive(Clone, Copy, ValueEnum)]
enum LogFormat {
    Human,
    Json,
}

/// The name kubectl looks for on PATH to run `kubectl ceph-osd`.
const PLUGIN_NAME: &str = "kubectl-ceph_osd";

fn main() -> ExitCode {
    let invoked_as = std::env::args_os()
        .next()
        .map(PathBuf::from)
        .and_then(|p| p.file_stem().map(|s| s.to_string_lossy().into_owned()));
    if invoked_as.as_deref() == Some(PLUGIN_NAME) {
        return ceph_osd_operator::kubectl::run_plugin(
            ceph_osd_operator::kubectl::PluginCli::parse(),
        );
    }
    match Cli::parse().command {
        Command::Crd => match crd::custom_resource_definition_yaml() {
            Ok(yaml) => {
                print!("{yaml}");
                ExitCode::SUCCESS
            }
            Err(error) => {
                eprintln!("error: {error}");
                ExitCode::FAILURE
            }
        },
        Command::Render { file, namespace } => render(&file, &namespace),
        Command::Run {
            kubeconfig,
            namespace,
            log_format,
            resync_seconds,
            http_address,
            leader_elect,
            lease_namespace: lease_ns,
            lease_name,
            metrics_auth,
            ceph,
        } => {
            let (ceph, gate) = match ceph.settings(lease_ns.as_deref(), namespace.as_deref()) {
                Ok(settings) => settings,
                Err(error) => {
                    eprintln!("error: {error}");
                    return ExitCode::from(2);
                }
            };
            let lease = if leader_elect {
                match lease_namespace(lease_ns.as_deref(), namespace.as_deref()) {
                    Ok(lease_ns) => Some(LeaseSettings {
                        namespace: lease_ns,
                        name: lease_name,
                        identity: identity(),
                        duration: Duration::from_secs(15),
                        retry: Duration::from_secs(3),
                    }),
                    Err(error) => {
                        eprintln!("error: {error}");
                        return ExitCode::from(2);
                    }
                }
            } else {
                None
            };
            init_logging(log_format);
            let settings = Settings {
                namespace,
                resync: Duration::from_secs(resync_seconds),
                retry: Duration::from_secs(5),
                ceph,
                gate,
            };
            let http = http_address.map(|address| Http {
                address,
                metrics_auth,
            });
            match run(kubeconfig, settings, http, lease) {
                Ok(()) => ExitCode::SUCCESS,
                Err(message) => {
                    eprintln!("error: {message}");
                    ExitCode::FAILURE
                }
            }
        }
    }
}

impl CephArgs {
    /// How to reach Ceph (None: the gate is off) and how steps are gated; the step lock's
    /// namespace follows the leader Lease's (`lease`) or the watched one when not given.
    fn settings(
        self,
        lease: Option<&str>,
        watched: Option<&str>,
    ) -> Result<(Option<CliSettings>, GateSettings), NoLockNamespace> {
        let lock_namespace = match self.ceph_conf {
            Some(_) => Some(ceph_lock_namespace(
                self.ceph_lock_namespace.as_deref(),
                lease,
                watched,
            )?),
            None => None,
        };
        let ceph = self.ceph_conf.map(|conf| CliSettings {
            conf: Some(conf),
            keyring: self.ceph_keyring,
            user: self.ceph_id.map(CephUser::Id),
            timeout: Duration::from_secs(self.ceph_timeout.max(1)),
            ..CliSettings::default()
        });
        let gate = GateSettings {
            max_noout: Duration::from_secs(self.ceph_max_noout_seconds),
            pg_stats_lag: Duration::from_secs(self.ceph_pg_stats_lag_seconds),
            lock_namespace,
        };
        Ok((ceph, gate))
    }
}

fn render(file: &Path, namespace: &str) -> ExitCode {
    let shown = file.display();
    let text = match read_manifest(file) {
        Ok(text) => text,
        Err(e) => {
            eprintln!("error: {shown}: {e}");
            return ExitCode::from(2);
        }
    };
    let result = parse_cephosd(&text)
        .map_err(|e| e.to_string())
        .and_then(|cr| {
            let ns = cr
                .metadata
                .namespace
                .clone()
                .unwrap_or_else(|| namespace.to_owned());
            preview_pods(&cr, &ns, &mut RandomSuffix).map_err(|e| e.to_string())
        });
    match result {
        Ok(yaml) => {
            print!("{yaml}");
            ExitCode::SUCCESS
        }
        Err(message) => {
            eprintln!("error: {shown}: {message}");
            ExitCode::from(2)
        }
    }
}

/// Where to serve the probes and metrics, and whether /metrics asks for credentials.
#[derive(Clone, Copy)]
struct Http {
    address: std::net::SocketAddr,
    metrics_auth: bool,
}

fn run(
    kubeconfig: Option<PathBuf>,
    settings: Settings,
    http: Option<Http>,
    lease: Option<LeaseSettings>,
) -> Result<(), String> {
    // kube's rustls needs a process-wide crypto provider.
    let _ = rustls::crypto::ring::default_provider().install_default();
    let runtime = tokio::runtime::Runtime::new().map_err(|e| format!("cannot start tokio: {e}"))?;
    runtime.block_on(async {
        let config = match kubeconfig {
            Some(path) => {
                let kubeconfig = Kubeconfig::read_from(&path)
                    .map_err(|e| format!("cannot read kubeconfig {}: {e}", path.display()))?;
                kube::Config::from_custom_kubeconfig(kubeconfig, &KubeConfigOptions::default())
                    .await
                    .map_err(|e| format!("invalid kubeconfig {}: {e}", path.display()))?
            }
            None => kube::Config::infer()
                .await
                .map_err(|e| format!("no kubeconfig and not in a cluster: {e}"))?,
        };
        let metrics = Arc::new(Metrics::default());
        let client = counted_client(config, metrics.clone())
            .map_err(|e| format!("cannot build client: {e}"))?;
        let health = Arc::new(Health::default());
        let metrics_auth = http.is_some_and(|h| h.metrics_auth);
        if let Some(Http { address, .. }) = http {
            let listener = tokio::net::TcpListener::bind(address)
                .await
                .map_err(|e| format!("cannot listen on {address}: {e}"))?;
            let auth = metrics_auth.then(|| Arc::new(MetricsAuth::new(client.clone())));
            if auth.is_none() {
                tracing::warn!(%address, "--metrics-auth=false: /metrics is served to anyone who connects");
            }
            tokio::spawn(serve(listener, health.clone(), metrics.clone(), auth));
        }
        // Says at once, by name, which permission the RBAC lacks (the calls would fail later).
        tokio::spawn(report_missing_permissions(
            client.clone(),
            settings.namespace.clone(),
            lease.clone(),
            settings.gate.lock_namespace.clone(),
            metrics_auth,
        ));
        health.ready.store(true, Ordering::Relaxed);
        ceph_osd_operator::run(client, settings, metrics, lease)
            .await
            .map_err(|lost| lost.to_string())
    })
}

fn init_logging(format: LogFormat) {
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info"));
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()));
    match format {
        LogFormat::Human => builder.init(),
        LogFormat::Json => builder.json().init(),
    }
}

/// This replica's identity in the Lease: the pod name, else host name plus a random part.
fn identity() -> String {
    std::env::var("POD_NAME").unwrap_or_else(|_| {
        let host = hostname::get().map_or_else(
            |_| "ceph-osd-operator".into(),
            |h| h.to_string_lossy().into_owned(),
        );
        format!("{host}-{}", RandomSuffix.next_suffix())
    })
}
