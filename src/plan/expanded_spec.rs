//! What a CephOSD's spec expands to before any pod is looked at: the template hash, the OSDs
//! it asks for and what is wrong with it. A function of the spec alone, so the controller
//! expands each version of a CephOSD (uid and resourceVersion) once, not on every reconcile.

use crate::crd::desired::{desired_osds, DesiredOsds};
use crate::crd::template_rules::template_problems;
use crate::crd::{object_key, CephOsd, CephOsdSpec};
use crate::hash::TemplateHash;
use crate::plan::conditions::{ConditionReason, SpecProblem};
use crate::runtime::locked::locked;
use kube::ResourceExt;
use std::collections::HashMap;
use std::sync::{Arc, Mutex};

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

/// The last expansion of each CephOSD, with the version it was made from.
#[derive(Default)]
pub(crate) struct ExpandedSpecs {
    by_cr: Mutex<HashMap<String, (String, Arc<ExpandedSpec>)>>,
}

impl ExpandedSpecs {
    /// `cr`'s spec expanded: the kept expansion when `cr` is the version it was made from.
    /// An object without uid or resourceVersion (never one from the API) is expanded anew.
    pub(crate) fn of(&self, cr: &CephOsd) -> Arc<ExpandedSpec> {
        let (Some(uid), Some(version)) = (cr.uid(), cr.resource_version()) else {
            return Arc::new(ExpandedSpec::of(&cr.spec));
        };
        let version = format!("{uid}/{version}");
        let key = cr.object_key();
        if let Some((kept, expanded)) = locked(&self.by_cr).get(&key) {
            if *kept == version {
                return expanded.clone();
            }
        }
        let expanded = Arc::new(ExpandedSpec::of(&cr.spec));
        locked(&self.by_cr).insert(key, (version, expanded.clone()));
        expanded
    }

    /// Forgets a deleted CephOSD.
    pub(crate) fn forget(&self, namespace: &str, name: &str) {
        locked(&self.by_cr).remove(&object_key(namespace, name));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::crd::{OsdDevices, StorageEntry, UpdateDomain};
    use serde_json::json;

    fn cr(version: &str, hosts: &[&str]) -> CephOsd {
        let mut cr = CephOsd::new(
            "osds",
            CephOsdSpec::new(
                vec![StorageEntry {
                    hosts: hosts.iter().map(ToString::to_string).collect(),
                    osds: vec![OsdDevices {
                        data: "/dev/sdb".into(),
                        db: None,
                        wal: None,
                    }],
                }],
                UpdateDomain::Host,
                json!({"spec": {"containers": [{"name": "osd", "image": "ceph"}]}}),
            ),
        );
        cr.metadata.namespace = Some("ceph".into());
        cr.metadata.uid = Some("uid-1".into());
        cr.metadata.resource_version = Some(version.into());
        cr
    }

    #[test]
    fn one_version_is_expanded_once_and_a_new_one_anew() {
        let specs = ExpandedSpecs::default();
        let first = specs.of(&cr("1", &["h1"]));
        assert!(Arc::ptr_eq(&first, &specs.of(&cr("1", &["h1"]))));
        let edited = specs.of(&cr("2", &["h1", "h2"]));
        assert!(!Arc::ptr_eq(&first, &edited));
        assert_eq!(edited.desired.osds.len(), 2);
        let mut recreated = cr("2", &["h1"]);
        recreated.metadata.uid = Some("uid-2".into());
        assert_eq!(specs.of(&recreated).desired.osds.len(), 1);
        specs.forget("ceph", "osds");
        assert!(!Arc::ptr_eq(&edited, &specs.of(&cr("2", &["h1", "h2"]))));
    }

    #[test]
    fn an_object_without_a_version_is_expanded_every_time() {
        let specs = ExpandedSpecs::default();
        let mut unversioned = cr("1", &["h1"]);
        unversioned.metadata.resource_version = None;
        assert!(!Arc::ptr_eq(
            &specs.of(&unversioned),
            &specs.of(&unversioned)
        ));
    }
}
