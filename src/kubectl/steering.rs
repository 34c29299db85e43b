//! The commands that preview or steer a rollout: `plan`, `pause`, `resume`, `promote`,
//! `restart` and `override`. Each writes one merge patch of a field an admin could edit.

use crate::crd::apply_server_defaults;
use crate::crd::osd::OsdKey;
use crate::hash::TemplateHash;
use crate::kubectl::choices::Output;
use crate::kubectl::cluster::{Cluster, Snapshot};
use crate::kubectl::failed::Failed;
use crate::labels;
use crate::offline::eta::StepEstimate;
use crate::offline::failure_domains::RecordedDomains;
use crate::offline::manifest::{parse_cephosd, read_manifest};
use crate::offline::plan_text::plan_text;
use crate::offline::release_preview::{osd_image, release_note};
use crate::offline::rollout_preview::{preview_rollout, RolloutPreview};
use crate::pod::pod_status::ready_since;
use k8s_openapi::jiff::Timestamp;
use kube::ResourceExt;
use serde_json::json;
use std::path::Path;

/// The annotation `override` leaves on a pod: why it was marked up-to-date.
const OVERRIDE_REASON: &str = "ceph.elemental.net/override-reason";

/// The rollout `snapshot` is about to make.
fn preview(snapshot: &Snapshot) -> RolloutPreview {
    preview_rollout(
        &snapshot.cr,
        &snapshot.pods,
        &snapshot.replica_sets,
        Timestamp::now(),
    )
}

/// `next: h3, h4` (the first step), or that none follows and why.
fn next_words(preview: &RolloutPreview) -> String {
    match (preview.batches.first(), &preview.stops) {
        (Some(first), _) => format!("next: {}", first.join(", ")),
        (None, Some(stops)) => format!("nothing starts next: {stops}"),
        (None, None) => "nothing is left to replace".to_owned(),
    }
}

pub(crate) async fn plan(
    cluster: &Cluster,
    name: Option<String>,
    file: Option<&Path>,
    output: Output,
) -> Result<(), Failed> {
    let manifest = match file {
        Some(path) => {
            let text = read_manifest(path)
                .map_err(|e| Failed::usage(format!("{}: {e}", path.display())))?;
            Some(
                parse_cephosd(&text)
                    .map_err(|e| Failed::usage(format!("{}: {e}", path.display())))?,
            )
        }
        None => None,
    };
    let name = match (&name, &manifest) {
        (None, Some(cr)) => cr.name_any(),
        _ => cluster.resolve(name).await?,
    };
    let mut snapshot = cluster.snapshot(&name).await?;
    let image_before = osd_image(&snapshot.cr.spec.pod_template).map(str::to_owned);
    if let Some(manifest) = manifest {
        let mut spec = manifest.spec;
        apply_server_defaults(&mut spec.pod_template)
            .map_err(|e| Failed::usage(format!("the pod template: {e}")))?;
        snapshot.cr.spec = spec;
        snapshot.cr.metadata.generation = snapshot.cr.metadata.generation.map(|g| g + 1);
    }
    let hash = TemplateHash::of(&snapshot.cr.spec.pod_template).to_string();
    let preview = preview(&snapshot);
    let step = StepEstimate::of(&snapshot.cr, &hash);
    let shown = format!("{}/{name}", cluster.namespace);
    let release = release_note(
        image_before.as_deref(),
        osd_image(&snapshot.cr.spec.pod_template),
        snapshot.cr.spec.pre_pull.is_some(),
    );
    let text = match output {
        Output::Table | Output::Wide => {
            let mut text = plan_text(&shown, &hash, &preview, &step);
            if let Some(release) = &release {
                text.push_str(&format!("release: {release}\n"));
            }
            text
        }
        Output::Json => serde_json::to_string_pretty(&json!({
            "cephosd": shown, "templateHash": hash, "plan": preview, "step": step,
            "release": release,
        }))
        .map(|t| t + "\n")
        .map_err(|e| Failed::not_reached(e.to_string()))?,
        Output::Yaml => serde_saphyr::to_string(&json!({
            "cephosd": shown, "templateHash": hash, "plan": preview, "step": step,
            "release": release,
        }))
        .map_err(|e| Failed::not_reached(e.to_string()))?,
    };
    print!("{text}");
    Ok(())
}

pub(crate) async fn set_paused(
    cluster: &Cluster,
    name: Option<String>,
    paused: bool,
) -> Result<(), Failed> {
    let name = cluster.resolve(name).await?;
    let value = if paused { json!(true) } else { json!(null) };
    cluster
        .patch_cephosd(&name, &json!({"spec": {"paused": value}}))
        .await?;
    if paused {
        println!("cephosd {name} paused: no further replacement starts");
    } else {
        let snapshot = cluster.snapshot(&name).await?;
        println!(
            "cephosd {name} resumed; {}",
            next_words(&preview(&snapshot))
        );
    }
    Ok(())
}

pub(crate) async fn promote(
    cluster: &Cluster,
    name: Option<String>,
    full: bool,
    to: Option<u32>,
) -> Result<(), Failed> {
    let name = cluster.resolve(name).await?;
    let snapshot = cluster.snapshot(&name).await?;
    let hash = TemplateHash::of(&snapshot.cr.spec.pod_template).to_string();
    let mut spec = json!({"promotedTemplateHash": hash});
    if full {
        spec["partition"] = json!(null);
    } else if let Some(to) = to {
        spec["partition"] = json!(to);
    }
    let cr = cluster.patch_cephosd(&name, &json!({"spec": spec})).await?;
    let snapshot = Snapshot { cr, ..snapshot };
    println!(
        "cephosd {name}: template {hash} promoted; {}",
        next_words(&preview(&snapshot))
    );
    Ok(())
}

pub(crate) async fn restart(cluster: &Cluster, name: Option<String>) -> Result<(), Failed> {
    let name = cluster.resolve(name).await?;
    let now = Timestamp::now().to_string();
    let patch = json!({"spec": {"podTemplate": {"metadata": {"annotations": {
        "kubectl.kubernetes.io/restartedAt": now}}}}});
    let cr = cluster.patch_cephosd(&name, &patch).await?;
    println!(
        "cephosd {name} restarted: every OSD pod is replaced with template {}",
        TemplateHash::of(&cr.spec.pod_template)
    );
    Ok(())
}

pub(crate) async fn override_pod(
    cluster: &Cluster,
    pod_name: &str,
    reason: &str,
    force: bool,
) -> Result<(), Failed> {
    let pod = cluster.pods().get(pod_name).await.map_err(|e| match &e {
        kube::Error::Api(s) if s.code == 404 => Failed::usage(format!(
            "no pod {pod_name} in namespace {}",
            cluster.namespace
        )),
        _ => Failed::not_reached(format!("cannot read pod {pod_name}: {e}")),
    })?;
    let owner = (pod.labels().get(labels::OWNER))
        .and_then(|v| labels::owner_named_by(v))
        .map(str::to_owned)
        .ok_or_else(|| Failed::usage(format!("pod {pod_name} is not the OSD pod of a CephOSD")))?;
    let mut snapshot = cluster.snapshot(&owner).await?;
    if !force && !waited_on(&snapshot, &pod) {
        return Err(Failed::usage(format!(
            "pod {pod_name} is not the pod the rollout of {owner} waits on (it waits on the not \
             Ready pods of {}); --force marks it anyway",
            under_way(&snapshot)
        )));
    }
    let patch = json!({"metadata": {"annotations": {
        labels::POD_STATE: labels::PodState::UpToDate.as_str(),
        OVERRIDE_REASON: reason,
    }}});
    let patched = cluster.patch_pod(pod_name, &patch).await?;
    for p in &mut snapshot.pods {
        if p.name_any() == pod_name {
            *p = patched.clone();
        }
    }
    println!(
        "pod {pod_name} marked up-to-date ({reason}); {}",
        next_words(&preview(&snapshot))
    );
    Ok(())
}

/// The update domains under way, in words.
fn under_way(snapshot: &Snapshot) -> String {
    let domains = (snapshot.cr.status.iter())
        .flat_map(|s| s.current_update.clone())
        .collect::<Vec<_>>();
    if domains.is_empty() {
        "no update domain: none is under way".to_owned()
    } else {
        domains.join(", ")
    }
}

/// Whether the rollout waits on `pod`: it is not Ready and its update domain is under way.
fn waited_on(snapshot: &Snapshot, pod: &k8s_openapi::api::core::v1::Pod) -> bool {
    let annotations = pod.annotations();
    let (Some(host), Some(data)) = (annotations.get(labels::HOST), annotations.get(labels::DATA))
    else {
        return false;
    };
    let recorded = RecordedDomains::of(&snapshot.cr);
    let domain = recorded.domains().id(&OsdKey::new(host, data));
    let ready = ready_since(pod).is_some();
    let under_way = (snapshot.cr.status.iter()).any(|s| s.current_update.contains(&domain));
    under_way && !ready && pod.metadata.deletion_timestamp.is_none()
}
