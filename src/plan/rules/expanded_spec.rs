//! What a CephOSD's spec expands to before any pod is looked at: the template hash, the OSDs
//! it asks for and what is wrong with it. A function of the spec alone, so the runtime
//! expands each version of a CephOSD (uid and resourceVersion) once, not on every reconcile
//! (`runtime/memory/mod.rs` keeps the expansions).

use crate::crd::desired::{desired_osds, DesiredOsds};
use crate::crd::osd::OsdKey;
use crate::crd::template_rules::template_problems;
use crate::crd::CephOsdSpec;
use crate::hash::TemplateHash;
use crate::plan::says::conditions::{ConditionReason, SpecProblem};
use std::collections::BTreeSet;

/// A spec, expanded.
#[derive(Debug)]
pub struct ExpandedSpec {
    pub(crate) template_hash: TemplateHash,
    pub(crate) desired: DesiredOsds,
    /// Storage problems first (the most severe first), then forbidden template fields.
    pub(crate) problems: Vec<SpecProblem>,
}

impl ExpandedSpec {
    pub fn of(spec: &CephOsdSpec) -> Self {
        let desired = desired_osds(spec);
        let problems = spec_problems(&desired, &spec.pod_template);
        Self {
            template_hash: TemplateHash::of(&spec.pod_template),
            desired,
            problems,
        }
    }

    /// This expansion less `keys` (disks being replaced, withheld from the spec for a while).
    pub(crate) fn without(&self, keys: &BTreeSet<OsdKey>) -> Self {
        Self {
            template_hash: self.template_hash.clone(),
            desired: self.desired.without(keys),
            problems: self.problems.clone(),
        }
    }
}

/// Everything wrong with the spec: storage problems first, then forbidden template fields.
fn spec_problems(desired: &DesiredOsds, template: &serde_json::Value) -> Vec<SpecProblem> {
    let storage = desired.problems.iter().map(|p| SpecProblem {
        reason: if p.blocks.is_empty() {
            ConditionReason::InvalidStorage
        } else {
            ConditionReason::ConflictingDevices
        },
        message: p.message.clone(),
    });
    let template = template_problems(template)
        .into_iter()
        .map(|p| SpecProblem {
            reason: ConditionReason::ForbiddenTemplateField,
            message: format!("{p} (left out of every pod)"),
        });
    let mut problems: Vec<SpecProblem> = storage.chain(template).collect();
    // The most severe reason first: it names the condition.
    problems.sort_by_key(|p| p.reason != ConditionReason::ConflictingDevices);
    problems
}
