//! `status`: the view once, redrawn on change (`-w`), or until a state is reached (`--until`).

use crate::crd::{CephOsd, Phase};
use crate::kubectl::choices::{Output, Until};
use crate::kubectl::cluster::{Cluster, Snapshot};
use crate::kubectl::failed::Failed;
use crate::offline::rollout_preview::preview_rollout;
use crate::offline::status_text::{status_text, TextOptions};
use crate::offline::status_view::status_view;
use k8s_openapi::jiff::Timestamp;
use kube::api::ListParams;
use kube::ResourceExt;
use std::io::IsTerminal as _;
use std::time::{Duration, Instant};

/// How often `-w` and `--until` look again (a redraw happens only on change).
const POLL: Duration = Duration::from_millis(500);

/// How the view is shown.
pub(crate) struct Shown {
    pub(crate) output: Output,
    pub(crate) all: bool,
    pub(crate) host: Option<String>,
}

/// The view of `snapshot` as `shown` asks.
pub(crate) fn render(snapshot: &Snapshot, shown: &Shown, now: Timestamp) -> Result<String, Failed> {
    let preview = preview_rollout(&snapshot.cr, &snapshot.pods, &snapshot.replica_sets, now);
    let view = status_view(&snapshot.cr, &snapshot.pods, &preview, now);
    match shown.output {
        Output::Table | Output::Wide => Ok(status_text(
            &view,
            &TextOptions {
                all: shown.all,
                host: shown.host.clone(),
            },
        )),
        Output::Json => serde_json::to_string_pretty(&view)
            .map(|t| t + "\n")
            .map_err(|e| Failed::not_reached(e.to_string())),
        Output::Yaml => {
            serde_saphyr::to_string(&view).map_err(|e| Failed::not_reached(e.to_string()))
        }
    }
}

pub(crate) async fn status(
    cluster: &Cluster,
    name: &str,
    shown: &Shown,
    watch: bool,
    until: Option<Until>,
    timeout: Option<Duration>,
) -> Result<(), Failed> {
    let started = Instant::now();
    let redraw = watch && std::io::stdout().is_terminal();
    let mut last = String::new();
    loop {
        let snapshot = cluster.snapshot(name).await?;
        let text = render(&snapshot, shown, Timestamp::now())?;
        let verdict = until.and_then(|u| judge(&snapshot.cr, u));
        let done = verdict.is_some() || !(watch || until.is_some());
        if (watch && text != last) || done {
            if redraw {
                print!("\x1b[H\x1b[2J");
            } else if watch && !last.is_empty() {
                println!();
            }
            print!("{text}");
            last = text;
        }
        if let Some(verdict) = verdict {
            return verdict;
        }
        if done {
            return Ok(());
        }
        if timeout.is_some_and(|t| started.elapsed() >= t) {
            let what = until.map_or_else(
                || "watching".to_owned(),
                |u| format!("{u:?}").to_lowercase(),
            );
            return Err(Failed::not_reached(format!(
                "timed out waiting for {name} ({what}): {}",
                progressing(&snapshot.cr)
            )));
        }
        tokio::time::sleep(POLL).await;
    }
}

/// Whether `cr` is where `until` asks (Ok), or will not get there by itself (Err): stalled
/// or invalid. None while it may still get there, or the operator has not seen its spec.
fn judge(cr: &CephOsd, until: Until) -> Option<Result<(), Failed>> {
    let status = cr.status.as_ref()?;
    if status.observed_generation != cr.metadata.generation {
        return None;
    }
    let reason = status
        .conditions
        .iter()
        .find(|c| c.type_ == "Progressing")
        .map(|c| c.reason.as_str());
    if matches!(status.phase, Some(Phase::Stalled | Phase::Error)) {
        return Some(Err(Failed::not_reached(format!(
            "CephOSD {} is {:?}: {}",
            cr.name_any(),
            status.phase.unwrap_or(Phase::Error),
            problem(cr)
        ))));
    }
    let reached = match until {
        Until::Complete => reason == Some("Complete"),
        Until::Paused => status.phase == Some(Phase::Paused),
        Until::Partitioned => matches!(reason, Some("Partitioned" | "CanaryWaiting" | "Complete")),
    };
    reached.then_some(Ok(()))
}

/// The message of the first condition that says what is wrong.
fn problem(cr: &CephOsd) -> String {
    let status = cr.status.clone().unwrap_or_default();
    (status.conditions.iter())
        .find(|c| c.status == "True" && matches!(c.type_.as_str(), "Stalled" | "InvalidSpec"))
        .map_or_else(|| progressing(cr), |c| c.message.clone())
}

/// `reason: message` of the Progressing condition.
fn progressing(cr: &CephOsd) -> String {
    (cr.status.iter().flat_map(|s| &s.conditions))
        .find(|c| c.type_ == "Progressing")
        .map_or_else(
            || "the operator has not reported on it yet".to_owned(),
            |c| format!("{}: {}", c.reason, c.message),
        )
}

/// One line per CephOSD of every namespace.
pub(crate) async fn list_all(cluster: &Cluster) -> Result<(), Failed> {
    let list = cluster
        .all_cephosds()
        .list(&ListParams::default())
        .await
        .map_err(|e| Failed::not_reached(format!("cannot list CephOSDs: {e}")))?;
    println!("NAMESPACE/NAME  PHASE  UPDATED/DESIRED  PROGRESSING");
    for cr in &list.items {
        let status = cr.status.clone().unwrap_or_default();
        println!(
            "{}/{}  {}  {}/{}  {}",
            cr.namespace().unwrap_or_default(),
            cr.name_any(),
            status
                .phase
                .map_or_else(|| "-".to_owned(), |p| format!("{p:?}")),
            status.updated,
            status.desired,
            progressing(cr)
        );
    }
    Ok(())
}
