//! The observe phase: what one reconcile sees of a CephOSD (`Seen`), read once from the CR
//! and what carries its owner label, and the questions the later phases ask of it.

use crate::crd::desired::{DesiredOsd, DesiredOsds};
use crate::crd::osd::{DeviceId, OsdKey};
use crate::crd::update_domain::UpdateDomains;
use crate::crd::{CephOsd, CephOsdSpec, CephOsdStatus, UpdateDomain};
use crate::hash::TemplateHash;
use crate::labels::{self, PodState};
use crate::plan::gate::CephView;
use crate::plan::observed::classify::{classify, Owner, Timing};
use crate::plan::observed::classify::{ObservedPod, Ownership, PodClass};
use crate::plan::observed::replica_sets::{
    classify_replica_sets, ObservedReplicaSet, ReplicaSetClass,
};
use crate::plan::rules::budget::DisruptionView;
use crate::plan::rules::budget::Keeping;
use crate::plan::rules::deletion::{checked_against_pods, deletion_of, Deletion};
use crate::plan::rules::expanded_spec::ExpandedSpec;
use crate::plan::rules::rollout::{Hold, Limits};
use crate::plan::says::actions::DeleteReason;
use crate::plan::says::conditions::{ConditionReason, SpecProblem};
use crate::plan::topology::{host_buckets, HostBuckets, TopologyView};
use crate::pod::identity::held_disks;
use crate::pod::osd_pod::render_pod;
use crate::pod::pod_additions::{PodIdentity, RenderError};
use crate::pod::prepare_id::set_prepare_id;
use k8s_openapi::api::apps::v1::ReplicaSet;
use k8s_openapi::api::core::v1::Pod;
use k8s_openapi::jiff::Timestamp;
use kube::ResourceExt;
use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};
use std::sync::LazyLock;

/// What the planner observed of one CephOSD: every pod it owns (by owner label or controller
/// reference) and every ReplicaSet carrying its owner label (borrowed: the watch caches'
/// objects are not copied), the pods of other CephOSDs, and the disks older CephOSDs claim.
#[derive(Clone, Debug, Default)]
pub struct Observed<'a> {
    pub pods: Vec<&'a Pod>,
    pub replica_sets: Vec<&'a ReplicaSet>,
    /// Pods of other CephOSDs: each holds the disks it may run a daemon on.
    pub others: Vec<&'a Pod>,
    /// The CR's OSDs whose disk an older CephOSD lists, with that CephOSD (`namespace/name`).
    pub claimed: BTreeMap<OsdKey, String>,
    /// What the runtime learnt of Ceph (default: no Ceph configured).
    pub ceph: CephView,
    /// The PodDisruptionBudgets of the namespace and the cordoned nodes (None: not watched,
    /// no budget is kept or reported).
    pub disruption: Option<DisruptionView<'a>>,
    /// Whether the CephOSD's namespace is being deleted (its pods go at once).
    pub namespace_terminating: bool,
    /// What the runtime learnt of the hosts' failure domains (for `updateDomain: Topology`).
    pub topology: TopologyView,
}

impl<'a> Observed<'a> {
    pub fn new(
        pods: impl IntoIterator<Item = &'a Pod>,
        replica_sets: impl IntoIterator<Item = &'a ReplicaSet>,
    ) -> Self {
        Self {
            pods: pods.into_iter().collect(),
            replica_sets: replica_sets.into_iter().collect(),
            ..Self::default()
        }
    }

    /// Pods only (a cluster without ReplicaSets of the Ansible operator).
    pub fn pods(pods: &'a [Pod]) -> Self {
        Self::new(pods, [])
    }
}

/// The OSDs a CephOSD being deleted asks for: none (every key leaves the spec).
static LEAVING_ALL: LazyLock<DesiredOsds> = LazyLock::new(DesiredOsds::default);

/// No node cordoned (the budget is not managed, or nothing is).
static NO_CORDONS: BTreeSet<String> = BTreeSet::new();

/// What one reconcile sees of a CephOSD: its spec expanded, what each object it owns is,
/// and what other CephOSDs hold or claim of its disks.
pub(in crate::plan) struct Seen<'a> {
    pub(in crate::plan) cr: &'a CephOsd,
    pub(in crate::plan) spec: &'a CephOsdSpec,
    pub(in crate::plan) cr_name: String,
    pub(in crate::plan) template_hash: &'a TemplateHash,
    pub(in crate::plan) desired: &'a DesiredOsds,
    /// What is wrong with the spec as expanded (nothing while the CephOSD is deleted).
    pub(in crate::plan) spec_problems: &'a [SpecProblem],
    pub(in crate::plan) previous: CephOsdStatus,
    /// How the CephOSD is being deleted, if it is.
    pub(in crate::plan) deletion: Option<Deletion>,
    /// How its disruption budget is kept.
    pub(in crate::plan) keeping: Keeping<'a>,
    pub(in crate::plan) pods: Vec<ObservedPod>,
    pub(in crate::plan) replica_sets: Vec<ObservedReplicaSet>,
    /// The Ansible operator's ReplicaSets of desired OSDs: each stands for its OSD's pod until
    /// replaced.
    pub(in crate::plan) era: Vec<ObservedPod>,
    /// The Ansible operator's ReplicaSets of OSDs no longer in the spec, as workloads.
    pub(in crate::plan) era_superfluous: Vec<ObservedPod>,
    /// Disks the pods of other CephOSDs may run a daemon on, with one such pod (described).
    pub(in crate::plan) held_elsewhere: HashMap<DeviceId, String>,
    /// The CR's OSDs whose disk an older CephOSD claims.
    pub(in crate::plan) claimed: &'a BTreeMap<OsdKey, String>,
    /// Cordoned nodes where no missing pod is created (while the budget is managed).
    pub(in crate::plan) cordoned: &'a BTreeSet<String>,
    /// With `updateDomain: Topology`: each host's failure domain (None: other domains).
    pub(in crate::plan) buckets: Option<HostBuckets>,
    /// The image pre-pull pods this CephOSD controls (never classified as OSD pods).
    pub(in crate::plan) pre_pull: Vec<&'a Pod>,
    /// The OSDs whose pod is built to prepare a new disk with their id (a disk replacement).
    pub(in crate::plan) prepare_ids: BTreeMap<OsdKey, u32>,
    /// The keys withheld from the spec for a disk replacement (`host:data`).
    pub(in crate::plan) replacing: BTreeSet<String>,
    /// Why no rollout step starts while a disk replacement destroys or prepares.
    pub(in crate::plan) replacement_hold: Option<String>,
}

impl<'a> Seen<'a> {
    /// What `observed` shows of `cr` (whose spec expands to `expanded`) at `now`. Deleted:
    /// every key leaves the spec, and only the pods that name it as owner are its own (those it
    /// controls, and those the Ansible operator made, which name it without `controller`: the
    /// garbage collector would take them all at once once it is gone).
    pub(in crate::plan) fn new(
        cr: &'a CephOsd,
        expanded: &'a ExpandedSpec,
        observed: &'a Observed<'_>,
        now: Timestamp,
    ) -> Self {
        let spec = &cr.spec;
        let deletion = deletion_of(cr, observed.namespace_terminating);
        let (desired, spec_problems): (&DesiredOsds, &[SpecProblem]) = match deletion {
            Some(_) => (&LEAVING_ALL, &[]),
            None => (&expanded.desired, &expanded.problems),
        };
        let template_hash = &expanded.template_hash;
        let keeping = Keeping::of(cr, observed.disruption.as_ref(), &observed.pods);
        let cordoned = keeping.cordoned().unwrap_or(&NO_CORDONS);
        let timing = Timing {
            now,
            min_ready: spec.min_ready(),
        };
        let cr_name = cr.name_any();
        let owner_uid = cr.uid();
        let owner = Owner {
            name: &cr_name,
            uid: owner_uid.as_deref(),
        };
        let (pre_pull, osd_pods): (Vec<&Pod>, Vec<&Pod>) =
            (observed.pods.iter().copied()).partition(|p| is_own_pre_pull(p, owner_uid.as_deref()));
        let mut pods = classify(&osd_pods, &owner, template_hash, desired, &timing);
        let mut replica_sets = classify_replica_sets(&observed.replica_sets, &pods, &owner);
        let (mut era, mut era_superfluous): (Vec<_>, Vec<_>) = replica_sets
            .iter()
            .filter(|rs| rs.class == ReplicaSetClass::Era)
            .map(|rs| {
                let osd = rs.key.as_ref().and_then(|k| desired.osds.get(k));
                rs.as_workload(osd.map(|o| o.index))
            })
            .partition(|w| w.osd.is_some());
        let orphans_left = deletion.is_some() && pods.iter().any(ObservedPod::is_orphan);
        if deletion.is_some() {
            pods.retain(|p| p.ownership != Ownership::None);
            replica_sets.clear();
            era.clear();
            era_superfluous.clear();
        }
        let previous = cr.status.clone().unwrap_or_default();
        let deletion = checked_against_pods(deletion, &previous, !pods.is_empty(), orphans_left);
        let held_elsewhere = held_elsewhere(&observed.others, desired);
        let buckets = buckets(spec, desired, pods.iter().chain(&era), &observed.topology);
        Self {
            cr,
            spec,
            template_hash,
            desired,
            spec_problems,
            previous,
            deletion,
            keeping,
            pods,
            replica_sets,
            era,
            era_superfluous,
            held_elsewhere,
            claimed: &observed.claimed,
            cordoned,
            cr_name,
            buckets,
            pre_pull,
            prepare_ids: BTreeMap::new(),
            replacing: BTreeSet::new(),
            replacement_hold: None,
        }
    }

    /// Whether the planner may neither create nor replace the pod of `key`: the spec is
    /// ambiguous about it, or an older CephOSD claims its disk.
    pub(in crate::plan) fn is_blocked(&self, key: Option<&OsdKey>) -> bool {
        key.is_some_and(|k| self.desired.blocked.contains(k) || self.claimed.contains_key(k))
    }

    /// The live pods of desired OSDs, then the era ReplicaSets standing for theirs.
    pub(in crate::plan) fn current(&self) -> Vec<&ObservedPod> {
        self.pods
            .iter()
            .filter(|p| p.is_live() && p.osd.is_some())
            .chain(&self.era)
            .collect()
    }

    pub(in crate::plan) fn domain_of(&self, key: &OsdKey) -> String {
        self.domains().id(key)
    }

    /// How OSD keys group into update domains.
    pub(in crate::plan) fn domains(&self) -> UpdateDomains<'_> {
        UpdateDomains {
            kind: self.spec.update_domain,
            bucket_of: self.buckets.as_ref().map(|b| &b.bucket_of),
        }
    }

    /// How many update domains the spec has.
    pub(in crate::plan) fn domain_count(&self) -> usize {
        (self.desired.osds.keys())
            .map(|k| self.domain_of(k))
            .collect::<BTreeSet<_>>()
            .len()
    }

    /// How far the rollout may go under the current template (`partition`, the canary), with
    /// the domains under way (`continuing`); a value that cannot be read holds everything and
    /// is a problem of the spec.
    pub(in crate::plan) fn limits<'c>(
        &self,
        continuing: &'c BTreeSet<&'c str>,
    ) -> (Limits<'c>, Vec<SpecProblem>) {
        let total = self.domain_count();
        let mut problems = Vec::new();
        let mut unreadable = |message: String| {
            problems.push(SpecProblem {
                reason: ConditionReason::InvalidRolloutControl,
                message: format!("{message}; no update domain is replaced"),
            });
        };
        let partition = self.spec.partition_of(total).unwrap_or_else(|e| {
            unreadable(e);
            usize::MAX
        });
        let canary = self.spec.canary_of(total).unwrap_or_else(|e| {
            unreadable(e);
            usize::MAX
        });
        let promoted =
            self.spec.promoted_template_hash.as_deref() == Some(self.template_hash.as_str());
        let canary_left = (canary > 0 && !promoted).then(|| {
            let started = (self.previous.rollout.as_ref())
                .filter(|r| r.template_hash == self.template_hash.as_str())
                .map_or(0, |r| {
                    usize::try_from(r.domains_started).unwrap_or(usize::MAX)
                });
            if canary == usize::MAX {
                0
            } else {
                canary.saturating_sub(started)
            }
        });
        let limits = Limits {
            partition,
            canary_left,
            continuing,
            start_blocked: None,
        };
        (limits, problems)
    }

    /// Why the rollout stops at its cut, in words.
    pub(in crate::plan) fn hold_message(
        &self,
        hold: Hold,
        held: &BTreeMap<String, Hold>,
    ) -> String {
        let total = self.domain_count();
        let unit = self.spec.update_domain.plural();
        let updated = total.saturating_sub(held.len());
        match hold {
            Hold::Partition => format!(
                "{updated} of {total} {unit} updated; spec.partition holds the last {} \
                 out of date",
                held.len()
            ),
            Hold::Canary => format!(
                "{updated} of {total} {unit} updated; promote {} to continue \
                 (kubectl ceph-osd promote)",
                self.template_hash
            ),
        }
    }

    /// The update domains the previous status listed as being replaced.
    pub(in crate::plan) fn previous_update(&self) -> BTreeSet<&str> {
        self.previous
            .current_update
            .iter()
            .map(String::as_str)
            .collect()
    }

    /// The pod for `osd` named `name`, as the operator creates it (waiting for Ready: every
    /// pod we create gates the rollout until it is Ready).
    pub(in crate::plan) fn build(&self, osd: &DesiredOsd, name: &str) -> Result<Pod, Unbuildable> {
        let namespace = self.cr.namespace().ok_or(Unbuildable::NoNamespace)?;
        let owner_uid = self.cr.uid();
        let identity = PodIdentity {
            cr_name: &self.cr_name,
            namespace: &namespace,
            owner_uid: owner_uid.as_deref(),
            name,
            template_hash: self.template_hash,
            pod_state: PodState::WaitForReady,
        };
        let mut pod = render_pod(&self.spec.pod_template, osd, &identity).map_err(|source| {
            Unbuildable::Render {
                key: osd.key.clone(),
                source,
            }
        })?;
        if let Some(id) = self.prepare_ids.get(&osd.key) {
            set_prepare_id(&mut pod, *id);
        }
        let domain = labels::update_domain_label_value(&self.domain_of(&osd.key));
        (pod.metadata.labels.get_or_insert_with(BTreeMap::new))
            .insert(labels::UPDATE_DOMAIN.to_owned(), domain);
        Ok(pod)
    }

    /// Pods with the owner label controlled by something else than this CephOSD or its era
    /// ReplicaSets (whose pods are expected), with their controller.
    pub(in crate::plan) fn foreign_pods(&self) -> Vec<(&ObservedPod, String)> {
        let era_sets: BTreeSet<&str> = self
            .replica_sets
            .iter()
            .filter(|rs| !matches!(rs.class, ReplicaSetClass::Foreign(_)))
            .map(|rs| rs.name.as_str())
            .collect();
        self.pods
            .iter()
            .filter_map(|p| match &p.class {
                PodClass::Foreign(c)
                    if !(c.kind == "ReplicaSet" && era_sets.contains(c.name.as_str())) =>
                {
                    Some((p, c.to_string()))
                }
                _ => None,
            })
            .collect()
    }

    /// The disks our live pods and era ReplicaSets keep (one pod each).
    pub(in crate::plan) fn kept_disks(&self) -> HashSet<&DeviceId> {
        self.pods
            .iter()
            .filter(|p| p.is_live())
            .chain(&self.era)
            .chain(&self.era_superfluous)
            .filter_map(ObservedPod::device)
            .collect()
    }

    /// The desired OSD on `disk`, if the CR lists one.
    pub(in crate::plan) fn osd_on(&self, disk: &DeviceId) -> Option<&DesiredOsd> {
        let number = *self.desired.disks.get(disk)?;
        self.desired.osds.values().find(|o| o.disk == number)
    }

    /// What goes in its domain's turn without a successor of its own, each with the disk of a
    /// desired OSD it holds if one (that OSD is served until it goes): pods and era
    /// ReplicaSets of OSDs no longer in the spec, and pods that may run a daemon on a desired
    /// disk no other pod keeps although their OSD cannot be told.
    pub(in crate::plan) fn removals(&self) -> Vec<Removal<'_>> {
        let superfluous = self
            .pods
            .iter()
            .filter(|p| p.is_live() && p.osd.is_none())
            .chain(&self.era_superfluous)
            .map(|p| {
                let served = p.holds().find_map(|d| self.osd_on(d));
                (p, DeleteReason::Superfluous, served)
            });
        let unplaced: Vec<&ObservedPod> = self
            .pods
            .iter()
            .filter(|p| matches!(p.class, PodClass::Invalid(_)) && !p.duplicate)
            .collect();
        let kept = if unplaced.is_empty() {
            HashSet::new()
        } else {
            self.kept_disks()
        };
        let unplaced = unplaced.into_iter().filter_map(|p| {
            let PodClass::Invalid(why) = &p.class else {
                return None;
            };
            let served = p
                .holds()
                .filter(|d| !kept.contains(d))
                .find_map(|d| self.osd_on(d))?;
            Some((p, DeleteReason::Invalid(why.clone()), Some(served)))
        });
        superfluous.chain(unplaced).collect()
    }

    /// One `SpecProblem` per OSD whose disk an older CephOSD claims.
    pub(in crate::plan) fn claimed_problems(&self) -> impl Iterator<Item = SpecProblem> + '_ {
        self.claimed.iter().map(|(key, holder)| SpecProblem {
            reason: ConditionReason::DiskClaimed,
            message: format!(
                "OSD {key}: CephOSD {holder}, which is older, lists the same disk; no pod is \
                 created or replaced for it here"
            ),
        })
    }
}

/// A pod (or era ReplicaSet) that goes in its domain's turn without a successor of its own,
/// why, and the desired OSD it serves until then (the one on its disk), if any.
pub(in crate::plan) type Removal<'a> = (&'a ObservedPod, DeleteReason, Option<&'a DesiredOsd>);

/// Whether `pod` is a pre-pull pod of the CephOSD with `uid`: labelled so, controlled by it,
/// and naming no OSD (a pod that may run one is never taken for a pre-pull pod).
pub(in crate::plan) fn is_own_pre_pull(pod: &Pod, uid: Option<&str>) -> bool {
    let controlled = uid.is_some_and(|uid| {
        (pod.owner_references().iter()).any(|o| o.controller == Some(true) && o.uid == uid)
    });
    let annotations = pod.annotations();
    labels::is_pre_pull(pod)
        && controlled
        && !annotations.contains_key(labels::HOST)
        && !annotations.contains_key(labels::DATA)
}

/// `pod ns/name of CephOSD ns/cr`, for messages about pods of other CephOSDs.
fn describe_other(pod: &Pod) -> String {
    let namespace = pod.namespace().unwrap_or_default();
    let owner = crate::plan::observed::classify::owning_cephosd(pod)
        .map(|cr| format!(" of CephOSD {namespace}/{cr}"))
        .unwrap_or_default();
    format!("pod {namespace}/{}{owner}", pod.name_any())
}

/// Why no pod can be built for this spec: the plan then makes no write at all (a replaced
/// pod without a successor would leave its OSD down) and says why in `InvalidSpec`.
#[derive(Debug, thiserror::Error)]
pub(in crate::plan) enum Unbuildable {
    #[error("cannot build the pod for OSD {key}: {source}")]
    Render { key: OsdKey, source: RenderError },
    #[error("the CephOSD has no namespace")]
    NoNamespace,
}

/// The disks of `desired` that pods of other CephOSDs hold, each with the first such pod
/// described.
fn held_elsewhere(others: &[&Pod], desired: &DesiredOsds) -> HashMap<DeviceId, String> {
    let mut held = HashMap::new();
    for pod in others {
        for disk in held_disks(pod, desired) {
            held.entry(disk).or_insert_with(|| describe_other(pod));
        }
    }
    held
}

/// With `updateDomain: Topology`, the CRUSH bucket of each host the spec lists or a pod runs
/// on.
fn buckets<'p>(
    spec: &CephOsdSpec,
    desired: &DesiredOsds,
    pods: impl Iterator<Item = &'p ObservedPod>,
    topology: &TopologyView,
) -> Option<HostBuckets> {
    let topology_spec = spec.topology.as_ref()?;
    if spec.update_domain != UpdateDomain::Topology {
        return None;
    }
    let hosts: BTreeSet<&str> = (desired.osds.keys().map(|k| k.host.as_str()))
        .chain(pods.filter_map(|p| Some(p.key.as_ref()?.host.as_str())))
        .collect();
    Some(host_buckets(topology_spec, hosts, topology))
}
