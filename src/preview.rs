//! Offline preview: the pods the operator would create for a CephOSD manifest, as a YAML
//! stream sorted by OSD key (`ceph-osd-operator render`). No cluster is contacted.

use crate::crd::{apply_server_defaults, CephOsd};
use crate::desired::desired_osds;
use crate::hash::TemplateHash;
use crate::labels::PodState;
use crate::osd::SuffixSource;
use crate::osd_pod::{render_pod, PodIdentity, RenderError};
use kube::ResourceExt;

/// Renders every desired pod of `cr` (state `up-to-date`, as after a completed rollout).
/// The template is first defaulted the way the API server defaults it, so the hash shown is
/// the one the running operator will compute.
pub fn preview_pods(
    cr: &CephOsd,
    namespace: &str,
    suffixes: &mut dyn SuffixSource,
) -> Result<String, RenderError> {
    let mut template = cr.spec.pod_template.clone();
    apply_server_defaults(&mut template).map_err(|e| RenderError::Schema(e.to_string()))?;
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
        out.push_str(&serde_saphyr::to_string(&pod).map_err(|e| RenderError::Yaml(e.to_string()))?);
    }
    Ok(out)
}
