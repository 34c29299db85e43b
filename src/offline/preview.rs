//! Offline preview: the pods the operator would create for a CephOSD manifest, as a YAML
//! stream sorted by OSD key (`ceph-osd-operator render`). No cluster is contacted.

use crate::crd::desired::desired_osds;
use crate::crd::osd::{CountingSuffix, SuffixSource};
use crate::crd::{apply_server_defaults, CephOsd};
use crate::hash::TemplateHash;
use crate::labels::PodState;
use crate::plan::says::actions::Action;
use crate::plan::{plan, Observed};
use crate::pod::osd_pod::render_pod;
use crate::pod::pod_additions::{PodIdentity, RenderError};
use k8s_openapi::api::core::v1::Pod;
use k8s_openapi::jiff::Timestamp;
use kube::ResourceExt;

/// Renders every desired pod of `cr` (state `up-to-date`, as after a completed rollout).
/// The template is first defaulted the way the API server defaults it, and its numbers
/// written as the server stores them (`1.0` as `1`), so the hash shown is the one the running
/// operator will compute.
pub fn preview_pods(
    cr: &CephOsd,
    namespace: &str,
    suffixes: &mut dyn SuffixSource,
) -> Result<String, RenderError> {
    let mut template = cr.spec.pod_template.clone();
    apply_server_defaults(&mut template).map_err(|e| RenderError::Schema(Box::new(e)))?;
    let hash = TemplateHash::of(&template);
    let cr_name = cr.name_any();
    let owner_uid = cr.uid();
    let osds = desired_osds(&cr.spec).osds;
    let mut out = String::new();
    for osd in osds.values() {
        let name = format!("{}{}", osd.key.name_prefix(), suffixes.next_suffix());
        let identity = PodIdentity {
            cr_name: &cr_name,
            namespace,
            owner_uid: owner_uid.as_deref(),
            name: &name,
            template_hash: &hash,
            pod_state: PodState::UpToDate,
        };
        let pod = render_pod(&template, osd, &identity)?;
        out.push_str("---\n");
        out.push_str(&serde_saphyr::to_string(&pod).map_err(|e| RenderError::Output(Box::new(e)))?);
    }
    Ok(out)
}

/// The pods the planner creates for `cr` from none, batch after batch, as it would post them
/// (suffixes counted from 1; a spec nothing can be built from yields none).
pub fn created_pods(cr: &CephOsd) -> Vec<Pod> {
    let mut pods: Vec<Pod> = Vec::new();
    let mut suffixes = CountingSuffix::default();
    loop {
        let planned = plan(
            cr,
            &Observed::pods(&pods),
            &mut suffixes,
            Timestamp::UNIX_EPOCH,
        );
        let before = pods.len();
        pods.extend(planned.actions.into_iter().filter_map(|a| match a {
            Action::Create { pod, .. } => Some(*pod),
            _ => None,
        }));
        if pods.len() == before {
            return pods;
        }
    }
}

#[cfg(test)]
mod tests;
