//! The plugin's command line (krew's conventions: `-n`, `-A`, `--kubeconfig`, `--context`).

use crate::kubectl::choices::{Output, Until};
use crate::kubectl::cluster::Cluster;
use crate::kubectl::failed::Failed;
use crate::kubectl::replacing::{CephAccess, ReplaceVerb};
use crate::kubectl::{finalizing, replacing, steering, watching};
use clap::{Parser, Subcommand};
use std::path::PathBuf;
use std::time::Duration;

#[derive(Parser, Debug)]
#[command(
    name = "kubectl ceph-osd",
    bin_name = "kubectl ceph-osd",
    version,
    about = "Show, preview and steer the rollouts of CephOSDs"
)]
pub struct PluginCli {
    /// Namespace of the CephOSD (default: the kubeconfig context's).
    #[arg(short = 'n', long, global = true)]
    pub namespace: Option<String>,
    /// Every namespace (`status` without a name lists every CephOSD).
    #[arg(short = 'A', long = "all-namespaces", global = true)]
    pub all_namespaces: bool,
    /// Kubeconfig file (default: $KUBECONFIG, then ~/.kube/config).
    #[arg(long, global = true)]
    pub kubeconfig: Option<PathBuf>,
    /// Kubeconfig context (default: the current one).
    #[arg(long, global = true)]
    pub context: Option<String>,
    #[command(subcommand)]
    pub command: PluginCommand,
}

#[derive(Subcommand, Debug)]
pub enum PluginCommand {
    /// The rollout: phase and why, progress and ETA, then the hosts in rollout order.
    Status {
        /// The CephOSD (default: the only one in the namespace).
        name: Option<String>,
        /// Redraw whenever it changes.
        #[arg(short = 'w', long)]
        watch: bool,
        #[arg(short = 'o', long, value_enum, default_value_t = Output::Table)]
        output: Output,
        /// Wait for this state: exit 0 there, 1 if the CephOSD stalls or `--timeout` passes.
        #[arg(long, value_enum)]
        until: Option<Until>,
        /// How long `--until` or `-w` waits (e.g. `90s`, `10m`, `1h`).
        #[arg(long, value_parser = parse_duration)]
        timeout: Option<Duration>,
        /// Show every host with its pods.
        #[arg(long)]
        all: bool,
        /// Show only this host, with its pods.
        #[arg(long)]
        host: Option<String>,
    },
    /// What the next rollout does, without doing it: its steps in order with an ETA.
    Plan {
        /// The CephOSD (default: the only one in the namespace, or the one of `-f`).
        name: Option<String>,
        /// A CephOSD manifest to plan instead of the stored spec (the pods are the cluster's).
        #[arg(short = 'f', long)]
        file: Option<PathBuf>,
        #[arg(short = 'o', long, value_enum, default_value_t = Output::Table)]
        output: Output,
    },
    /// Start no further replacement (`spec.paused: true`).
    Pause { name: Option<String> },
    /// Let the rollout go on (`spec.paused` removed).
    Resume { name: Option<String> },
    /// Release the canary hold of the current template; `--full` also drops the partition,
    /// `--to N` sets it to N.
    Promote {
        name: Option<String>,
        #[arg(long, conflicts_with = "to")]
        full: bool,
        #[arg(long)]
        to: Option<u32>,
    },
    /// Roll every OSD pod again (a template annotation, as `kubectl rollout restart`).
    Restart { name: Option<String> },
    /// Raise the Ceph cluster's require_osd_release once every OSD and monitor runs RELEASE
    /// (ends rollback).
    Finalize {
        name: Option<String>,
        /// The release (e.g. reef).
        #[arg(long)]
        release: String,
    },
    /// Replace the disk of one OSD keeping its id: drained, destroyed, then the new disk is
    /// prepared with the same id once confirmed (`--disk-swapped`).
    Replace {
        /// The CephOSD.
        name: String,
        /// The OSD key, HOST:DATA (e.g. node-a:/dev/sdb).
        key: String,
        /// Confirm that the new disk is in (after the old id was destroyed, or to retry a
        /// failed prepare).
        #[arg(long, conflicts_with = "cancel")]
        disk_swapped: bool,
        /// Call the replacement off (only before its id is destroyed), or forget a done one.
        #[arg(long)]
        cancel: bool,
        /// Write nothing: say what would be done (with --ceph-conf, what moves and for how long).
        #[arg(long)]
        dry_run: bool,
        /// A Ceph configuration for `--dry-run`'s figures (`osd df`, `status`).
        #[arg(long)]
        ceph_conf: Option<PathBuf>,
        /// The Ceph user id for `--dry-run` (e.g. admin).
        #[arg(long)]
        ceph_id: Option<String>,
        /// The keyring of that user.
        #[arg(long)]
        ceph_keyring: Option<PathBuf>,
    },
    /// Mark a pod `up-to-date` so the rollout goes on without waiting for it.
    Override {
        pod: String,
        /// Why (kept on the pod).
        #[arg(long)]
        reason: String,
        /// Also a pod the rollout does not wait on.
        #[arg(long)]
        force: bool,
    },
}

/// `90s`, `10m`, `1h`, or plain seconds.
fn parse_duration(text: &str) -> Result<Duration, String> {
    let (number, unit) = text
        .find(|c: char| !c.is_ascii_digit())
        .map_or((text, "s"), |i| text.split_at(i));
    let n: u64 = number
        .parse()
        .map_err(|_| format!("{text:?} is not a duration like 90s, 10m or 1h"))?;
    let seconds = match unit {
        "s" => n,
        "m" => n * 60,
        "h" => n * 3600,
        _ => return Err(format!("{text:?} is not a duration like 90s, 10m or 1h")),
    };
    Ok(Duration::from_secs(seconds))
}

pub(crate) async fn dispatch(cli: PluginCli) -> Result<(), Failed> {
    let cluster = Cluster::connect(
        cli.kubeconfig.as_deref(),
        cli.context.clone(),
        cli.namespace.clone(),
    )
    .await?;
    match cli.command {
        PluginCommand::Status {
            name,
            watch,
            output,
            until,
            timeout,
            all,
            host,
        } => {
            let shown = watching::Shown {
                output,
                all: all || output == Output::Wide,
                host,
            };
            if name.is_none() && cli.all_namespaces {
                return watching::list_all(&cluster).await;
            }
            let name = cluster.resolve(name).await?;
            watching::status(&cluster, &name, &shown, watch, until, timeout).await
        }
        PluginCommand::Plan { name, file, output } => {
            steering::plan(&cluster, name, file.as_deref(), output).await
        }
        PluginCommand::Pause { name } => steering::set_paused(&cluster, name, true).await,
        PluginCommand::Resume { name } => steering::set_paused(&cluster, name, false).await,
        PluginCommand::Promote { name, full, to } => {
            steering::promote(&cluster, name, full, to).await
        }
        PluginCommand::Restart { name } => steering::restart(&cluster, name).await,
        PluginCommand::Finalize { name, release } => {
            finalizing::finalize(&cluster, name, &release).await
        }
        PluginCommand::Replace {
            name,
            key,
            disk_swapped,
            cancel,
            dry_run,
            ceph_conf,
            ceph_id,
            ceph_keyring,
        } => {
            let verb = match (disk_swapped, cancel) {
                (true, _) => ReplaceVerb::DiskSwapped,
                (false, true) => ReplaceVerb::Cancel,
                (false, false) => ReplaceVerb::Start,
            };
            let ceph = CephAccess {
                conf: ceph_conf,
                keyring: ceph_keyring,
                id: ceph_id,
            };
            replacing::replace(&cluster, &name, &key, verb, dry_run, &ceph).await
        }
        PluginCommand::Override { pod, reason, force } => {
            steering::override_pod(&cluster, &pod, &reason, force).await
        }
    }
}

#[cfg(test)]
mod tests;
