//! `kubectl ceph-osd status` as text: the header, then the hosts in rollout order with the
//! pods of those being replaced or next (by failure domain: under a line per bucket, those in
//! none known last); long runs of alike hosts fold into one line.

use crate::crd::replacement::Replacement;
use crate::crd::{CephOsdStatus, CephStep, ReleasesStatus, UpdateDomain};
use crate::offline::eta::human;
use crate::offline::status_view::{HostState, HostView, PodView, StatusView};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;
use k8s_openapi::jiff::Timestamp;
use std::fmt::Write as _;

/// Runs of at least this many alike hosts fold (unless every host is asked for).
const FOLD_AT: usize = 4;

/// How much of the tree to show.
#[derive(Clone, Debug, Default)]
pub(crate) struct TextOptions {
    /// Every host, each with its pods (`-o wide`, `--all`).
    pub(crate) all: bool,
    /// Only this host, with its pods (`--host`).
    pub(crate) host: Option<String>,
}

/// The text `status` prints for `view`.
pub(crate) fn status_text(view: &StatusView, options: &TextOptions) -> String {
    let mut out = header(view);
    out.push('\n');
    let shown: Vec<&HostView> = (view.hosts.iter())
        .filter(|h| options.host.as_ref().is_none_or(|only| *only == h.host))
        .collect();
    if shown.is_empty() {
        if let Some(host) = &options.host {
            let _ = writeln!(out, "no host {host} in this CephOSD");
        }
        return out;
    }
    let width = shown.iter().map(|h| h.host.len()).max().unwrap_or(4).max(4);
    let expand_all = options.all || options.host.is_some();
    let by_bucket = view.update_domain == UpdateDomain::Topology;
    let mut index = 0;
    while index < shown.len() {
        let host = shown[index];
        if by_bucket && (index == 0 || shown[index - 1].bucket != host.bucket) {
            let _ = writeln!(out, "{}", bucket_line(view, &shown[index..]));
        }
        let run = shown[index..]
            .iter()
            .take_while(|h| h.state == host.state && h.why == host.why && h.bucket == host.bucket)
            .count();
        let foldable = matches!(
            host.state,
            HostState::Updated | HostState::Waiting | HostState::Held
        );
        let indent = if by_bucket { "  " } else { "" };
        let _ = writeln!(out, "{indent}{}", host_line(host, width));
        if expand_all || matches!(host.state, HostState::Replacing | HostState::Next) {
            pods_text(&mut out, &host.pods);
        }
        if foldable && !expand_all && run >= FOLD_AT {
            let _ = writeln!(
                out,
                "{indent}  … {} more {} hosts",
                run - 1,
                host.state.word()
            );
            index += run;
        } else {
            index += 1;
        }
    }
    out
}

/// Phase and why, templates, settings, progress and time.
fn header(view: &StatusView) -> String {
    let status = &view.status;
    let progressing = status.conditions.iter().find(|c| c.type_ == "Progressing");
    let phase = status
        .phase
        .map_or_else(|| "Unknown".to_owned(), |p| format!("{p:?}"));
    let mut out = format!("CephOSD {}/{}: {phase}", view.namespace, view.name);
    if let Some(c) = progressing {
        let _ = write!(out, " ({}): {}", c.reason, c.message);
    }
    out.push('\n');
    let template = if view.old_template_hashes.is_empty() {
        view.template_hash.clone()
    } else {
        format!(
            "{} → {}",
            view.old_template_hashes.join(", "),
            view.template_hash
        )
    };
    let count = |v: &Option<IntOrString>| match v {
        None => "off".to_owned(),
        Some(IntOrString::Int(n)) => n.to_string(),
        Some(IntOrString::String(s)) => s.clone(),
    };
    let unit = view.update_domain.plural();
    let by = match &view.bucket_type {
        Some(bucket_type) => format!("{} ({bucket_type})", view.update_domain.noun()),
        None => view.update_domain.noun().to_owned(),
    };
    let _ = writeln!(
        out,
        "template  {template}\nrollout   by {by} · maxUnavailable {} · partition {} · canary {}{}",
        view.max_unavailable,
        count(&view.partition),
        count(&view.canary),
        if view.paused { " · paused" } else { "" },
    );
    let _ = writeln!(
        out,
        "progress  {}/{} {unit} updated · OSDs {} desired, {} updated, {} ready, {} out of date",
        view.domains_updated,
        view.domains_total,
        status.desired,
        status.updated,
        status.ready,
        status.out_of_date,
    );
    if let Some(why) = &view.failure_domains_unknown {
        let _ = writeln!(out, "domains   {why}");
    }
    if let Some(osds_in) =
        (status.conditions.iter()).find(|c| c.type_ == "OsdsIn" && c.status == "False")
    {
        let _ = writeln!(out, "out       {}", osds_in.message);
    }
    if let Some(step) = &status.ceph_step {
        let _ = writeln!(out, "ceph      {}", ceph_step_line(step, status));
    }
    for r in &status.replacements {
        let _ = writeln!(out, "replace   {}", replacement_line(r, view.now));
    }
    if let Some(gate) = (status.conditions.iter())
        .find(|c| c.type_ == "CephGate" && RELEASE_REFUSALS.contains(&c.reason.as_str()))
    {
        let _ = writeln!(out, "release   {} ({})", gate.message, gate.reason);
    }
    if let Some(releases) = &status.releases {
        let _ = writeln!(out, "releases  {}", releases_line(releases));
    }
    if let Some(finalized) = status.conditions.iter().find(|c| c.type_ == "Finalized") {
        let _ = writeln!(
            out,
            "finalize  {} ({})",
            finalized.message, finalized.reason
        );
    }
    let mut time = Vec::new();
    if let Some(elapsed) = view.elapsed_seconds {
        time.push(format!("elapsed {}", human(elapsed)));
    }
    if let Some((median, p90)) = view.eta_seconds {
        let basis = if view.step.measured == 0 {
            "estimated".to_owned()
        } else {
            format!("{} measured", view.step.measured)
        };
        time.push(format!(
            "ETA {} (up to {}; {} a step, {basis})",
            human(median),
            human(p90),
            human(view.step.median_seconds)
        ));
    }
    if !time.is_empty() {
        let _ = writeln!(out, "time      {}", time.join(" · "));
    }
    out
}

/// `osd.5 w3:/dev/sdb AwaitingDisk for 4m (started 12m ago) · 3 PGs to move: <message>`.
fn replacement_line(r: &Replacement, now: Option<Timestamp>) -> String {
    let ago = |t: &Time| now.map(|now| human(now.duration_since(t.0).as_secs().max(0)));
    let mut line = format!("osd.{} {} {}", r.id, r.key, r.phase);
    if let Some(since) = ago(&r.since) {
        let _ = write!(line, " for {since}");
    }
    if let Some(started) = ago(&r.started).filter(|_| r.started != r.since) {
        let _ = write!(line, " (started {started} ago)");
    }
    if let Some(pgs) = r.pgs_remaining.filter(|n| *n > 0) {
        let _ = write!(line, " · {pgs} PGs to move");
    }
    let _ = write!(line, ": {}", r.message);
    line
}

/// `running pacific 2, reef 1 · target reef · require_osd_release pacific · rollback
/// possible` (each part when known).
fn releases_line(releases: &ReleasesStatus) -> String {
    let mut parts = Vec::new();
    if !releases.running.is_empty() {
        let running: Vec<String> = (releases.running.iter())
            .map(|(release, n)| format!("{release} {n}"))
            .collect();
        parts.push(format!("running {}", running.join(", ")));
    }
    if let Some(target) = &releases.target {
        parts.push(format!("target {target}"));
    }
    if let Some(require) = &releases.require_osd_release {
        parts.push(format!("require_osd_release {require}"));
    }
    match releases.rollback_possible {
        Some(true) => parts.push("rollback possible".to_owned()),
        Some(false) => parts.push("no rollback".to_owned()),
        None => {}
    }
    parts.join(" · ")
}

/// The `CephGate` reasons of Ceph's release rules.
const RELEASE_REFUSALS: [&str; 7] = [
    "MonitorsOlder",
    "ManagersOlder",
    "TooFarAhead",
    "Downgrade",
    "ClusterUnhealthy",
    "CephVersionsUnknown",
    "ReleaseNotReported",
];

/// The open Ceph step: its keys, the OSDs it stops, its own `noout`, and what it waits for
/// (the `CephGate` condition).
fn ceph_step_line(step: &CephStep, status: &CephOsdStatus) -> String {
    let ids = |ids: &mut dyn Iterator<Item = u32>| {
        let ids: Vec<String> = ids.map(|id| format!("osd.{id}")).collect();
        if ids.is_empty() {
            "none".to_owned()
        } else {
            ids.join(",")
        }
    };
    let mut line = format!(
        "step open on {} · stops {} · noout {}",
        step.keys.join(", "),
        ids(&mut step.osds.iter().map(|o| o.id)),
        ids(&mut step.noout.iter().copied()),
    );
    if let Some(gate) = status.conditions.iter().find(|c| c.type_ == "CephGate") {
        let _ = write!(line, " · {}", gate.message);
    }
    line
}

/// The line above the hosts of one failure domain (the first of `rest`): its name and how
/// many of its hosts are updated, or that they are in none known.
fn bucket_line(view: &StatusView, rest: &[&HostView]) -> String {
    let bucket = rest.first().and_then(|h| h.bucket.as_ref());
    let members: Vec<&&HostView> = rest
        .iter()
        .take_while(|h| h.bucket.as_ref() == bucket)
        .collect();
    let updated = members
        .iter()
        .filter(|h| h.state == HostState::Updated)
        .count();
    match bucket {
        Some(bucket) => format!(
            "{} {bucket}: {updated}/{} hosts updated",
            view.bucket_type.as_deref().unwrap_or("failure domain"),
            members.len()
        ),
        None => format!(
            "in no known failure domain: {} (no step starts while one is)",
            match members.len() {
                1 => "1 host".to_owned(),
                n => format!("{n} hosts"),
            }
        ),
    }
}

fn host_line(host: &HostView, width: usize) -> String {
    let mark = match host.state {
        HostState::Updated => "✓",
        HostState::Replacing => "↻",
        HostState::Next => "→",
        HostState::Held => "‖",
        HostState::Waiting => "·",
    };
    let ready = host
        .pods
        .iter()
        .filter(|p| p.ready && !p.terminating)
        .count();
    let mut line = format!(
        "{mark} {:width$}  {:9}  {ready}/{} ready",
        host.host,
        host.state.word(),
        host.pods.len()
    );
    if host.state == HostState::Replacing {
        line.push_str("  ← current");
    }
    if let Some(why) = &host.why {
        let _ = write!(line, "  ({why})");
    }
    line
}

fn pods_text(out: &mut String, pods: &[PodView]) {
    for (i, pod) in pods.iter().enumerate() {
        let branch = if i + 1 == pods.len() {
            "└─"
        } else {
            "├─"
        };
        let name = pod.name.as_deref().unwrap_or("(no pod yet)");
        let ready = if pod.name.is_none() {
            "-"
        } else if pod.terminating {
            "Terminating"
        } else if pod.ready {
            "Ready"
        } else {
            "NotReady"
        };
        let age = pod.age_seconds.map(human).unwrap_or_default();
        let unknown_out = pod.out_ids.iter().filter(|id| !pod.osd_ids.contains(id));
        let ids: Vec<String> = (pod.osd_ids.iter().chain(unknown_out))
            .map(|id| {
                let out = if pod.out_ids.contains(id) {
                    "(out)"
                } else {
                    ""
                };
                format!("osd.{id}{out}")
            })
            .collect();
        let line = format!(
            "    {branch} {name}  {}  {}  {ready}  {age}  {}",
            pod.data,
            pod.pod_state.as_deref().unwrap_or("-"),
            ids.join(",")
        );
        let _ = writeln!(out, "{}", line.trim_end());
    }
}
