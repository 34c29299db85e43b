//! What is known of an OSD key (`host:data`) before and after its ids are mapped: the key as
//! the operator runs it (`KeyToMap`), the ids found for it and where from (`KeyIds`,
//! `IdSource`), or why none could be (`UnknownReason`, `StatedRefusal`). Pure vocabulary of
//! `pod_map`, `by_node` and `stated_ids`.

use super::answers::OsdDump;
use super::osd_id::{self, OsdId};
use crate::labels;
use std::collections::BTreeSet;
use std::fmt;

/// A pod as the daemon in it reports it (`POD_NAMESPACE`, `POD_NAME`, `NODE_NAME`).
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct PodRef {
    pub namespace: String,
    pub name: String,
    pub node: String,
}

impl fmt::Display for PodRef {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.namespace, self.name)
    }
}

impl PodRef {
    /// The command that states this pod's OSD id.
    pub fn annotate_command(&self) -> String {
        format!(
            "kubectl annotate pod --overwrite -n {} {} {}=N",
            self.namespace,
            self.name,
            labels::OSD_IDS
        )
    }
}

/// What the operator knows of one OSD key before asking Ceph.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct KeyToMap {
    /// `host:data`.
    pub key: String,
    /// The key's pod now, if any.
    pub pod: Option<PodRef>,
    /// Ids recorded for this key in the CephOSD's status (learnt earlier, kept over restarts).
    pub recorded: BTreeSet<OsdId>,
    /// Ids an admin stated by annotation.
    pub stated: Option<BTreeSet<OsdId>>,
    /// The annotation's value when it is not a list of ids (it states nothing).
    pub unreadable_statement: Option<String>,
    /// The update domain this key's pods are proposed to stop with; None when they are not.
    pub step_domain: Option<String>,
}

impl KeyToMap {
    /// The key's host and data device (a host has no `:`).
    pub(crate) fn host_and_data(&self) -> (&str, &str) {
        self.key.split_once(':').unwrap_or((&self.key, ""))
    }
}

/// Where a key's ids come from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum IdSource {
    /// Up OSDs whose daemon reports the key's pod.
    Metadata,
    /// The up OSD that reports no pod, the key's node and its data device.
    Device,
    /// The one up OSD that reports no pod and the key's node, claimed by no other key, for
    /// the one key there without ids.
    Node,
    /// The up OSDs that report no pod and the key's node, claimed by no other key, as many as
    /// the keys there without ids, all stopped in one step: exact for the step, not per key.
    NodeSet,
    /// The CephOSD's status.
    Recorded,
    /// The admin's annotation.
    Stated,
}

impl IdSource {
    /// Learnt from Ceph for this very key: recorded in the status.
    pub fn learnt(self) -> bool {
        matches!(self, Self::Metadata | Self::Device | Self::Node)
    }
}

/// Why a key's ids are unknown.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum UnknownReason {
    /// No up OSD reports the key's pod, nor its node and data device; nothing is recorded or
    /// stated. `reported_by_down`: OSDs whose last report named the pod but that are down now
    /// (their metadata may be stale).
    NoEvidence {
        pod: Option<PodRef>,
        reported_by_down: Vec<OsdId>,
        /// What the daemons that report no pod tell of the key's node.
        node: NodeEvidence,
        /// The `osd-ids` annotation, when it is not a list of ids.
        unreadable_statement: Option<String>,
    },
    /// The admin stated ids other than those whose up daemons report the key's pod, or its
    /// node and data device (`device`).
    StatedContradictsMetadata {
        stated: BTreeSet<OsdId>,
        reported: BTreeSet<OsdId>,
        device: Option<String>,
    },
    /// A recorded or stated id is up in another pod (or in a pod while the key has none).
    IdInOtherPod { id: OsdId, pod: PodRef },
    /// The same id came out for another key too.
    IdSharedWith { id: OsdId, other_key: String },
    /// Ceph refutes the ids the admin stated on the key's pod.
    StatedRefuted(StatedRefusal),
}

/// Ceph refutes an `osd-ids` statement on a key's pod: a stated id is up on another node, or
/// not up while the pod's node runs up daemons no disk claims.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StatedRefusal {
    pub pod: PodRef,
    pub stated: BTreeSet<OsdId>,
    /// The stated id Ceph refutes.
    pub id: OsdId,
    /// The hostname `id` reports while up; None: it is not up.
    pub up_on: Option<String>,
    /// Whether Ceph has an OSD `id` at all.
    pub exists: bool,
    /// The up OSDs Ceph reports on the pod's node.
    pub on_node: BTreeSet<OsdId>,
    /// Those of `on_node` that report no pod and that no disk claims.
    pub unclaimed: BTreeSet<OsdId>,
}

impl StatedRefusal {
    /// The value to state instead: the unclaimed daemons of the node when they are as many as
    /// the stated ids, else a placeholder.
    fn right_value(&self) -> String {
        if self.unclaimed.is_empty() || self.unclaimed.len() != self.stated.len() {
            return "N".to_owned();
        }
        (self.unclaimed.iter())
            .map(|id| id.0.to_string())
            .collect::<Vec<_>>()
            .join(",")
    }
}

impl fmt::Display for StatedRefusal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let Self { pod, id, .. } = self;
        let node = &pod.node;
        let stated = (self.stated.iter().map(|i| i.0.to_string()))
            .collect::<Vec<_>>()
            .join(",");
        write!(
            f,
            "pod {pod} states {}={stated} but Ceph reports ",
            labels::OSD_IDS
        )?;
        match (&self.up_on, self.exists) {
            (Some(host), _) => write!(f, "{id} up on node {host}")?,
            (None, true) => write!(f, "{id} down")?,
            (None, false) => write!(f, "no {id}")?,
        }
        if self.on_node.is_empty() {
            write!(f, " and no up OSD on node {node}")?;
        } else {
            write!(f, " and {} up on node {node}", osd_id::list(&self.on_node))?;
        }
        if !self.unclaimed.is_empty() {
            write!(
                f,
                " ({} without a pod, claimed by no disk)",
                osd_id::list(&self.unclaimed)
            )?;
        }
        write!(
            f,
            ": nothing is stopped on this statement; state the pod's own id: `kubectl annotate \
             pod --overwrite -n {} {} {}={}`, or remove the annotation: `kubectl annotate pod \
             -n {} {} {}-`",
            pod.namespace,
            pod.name,
            labels::OSD_IDS,
            self.right_value(),
            pod.namespace,
            pod.name,
            labels::OSD_IDS
        )
    }
}

impl fmt::Display for UnknownReason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::NoEvidence {
                pod,
                reported_by_down,
                node,
                unreadable_statement,
            } => {
                match pod {
                    Some(pod) => write!(f, "no up OSD reports pod {pod} on node {}", pod.node)?,
                    None => f.write_str("no pod runs")?,
                }
                if !reported_by_down.is_empty() {
                    write!(
                        f,
                        " ({} reported it but {} down)",
                        osd_id::list(reported_by_down),
                        if reported_by_down.len() == 1 {
                            "is"
                        } else {
                            "are"
                        }
                    )?;
                }
                f.write_str(", no OSD id is recorded for it and none is stated by annotation")?;
                if let Some(value) = unreadable_statement {
                    write!(
                        f,
                        " (its {} annotation {value:?} is not a list of OSD ids)",
                        labels::OSD_IDS
                    )?;
                }
                if *node != NodeEvidence::NotLooked {
                    write!(f, "; {node}")?;
                }
                if let Some(pod) = pod {
                    write!(f, "; state its OSD id: `{}`", pod.annotate_command())?;
                }
                Ok(())
            }
            Self::StatedContradictsMetadata {
                stated,
                reported,
                device: None,
            } => write!(
                f,
                "the annotation states {} but the pod runs {}",
                osd_id::list(stated),
                osd_id::list(reported)
            ),
            Self::StatedContradictsMetadata {
                stated,
                reported,
                device: Some(device),
            } => write!(
                f,
                "the annotation states {} but {} reports {device} as its data device",
                osd_id::list(stated),
                osd_id::list(reported)
            ),
            Self::IdInOtherPod { id, pod } => {
                write!(f, "{id} is up in pod {pod} on node {}", pod.node)
            }
            Self::IdSharedWith { id, other_key } => {
                write!(f, "{id} is also the OSD of {other_key}")
            }
            Self::StatedRefuted(refusal) => refusal.fmt(f),
        }
    }
}

/// A key's ids, or why they are unknown.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum KeyIds {
    Known {
        ids: BTreeSet<OsdId>,
        source: IdSource,
    },
    Unknown(UnknownReason),
}

/// The outcome for one key.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MappedKey {
    pub key: String,
    pub pod: Option<PodRef>,
    pub ids: KeyIds,
}

/// What the daemons that report no pod tell of a key's node.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum NodeEvidence {
    /// Not looked at (the key is mapped, or unknown for another reason).
    NotLooked,
    /// No daemon reports the node.
    NoDaemon { node: String },
    /// Several reported hostnames could be the node.
    SeveralNames {
        node: String,
        names: BTreeSet<String>,
    },
    /// The node's up OSDs that report no pod and that no other key claims (`ids`), and why
    /// they are not the key's.
    Candidates {
        node: String,
        ids: BTreeSet<OsdId>,
        /// Those of `ids` that report the key's data device.
        on_device: BTreeSet<OsdId>,
        not_exact: NotExact,
    },
}

/// Why a node's candidates are not a key's ids.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum NotExact {
    /// Not as many as the keys there without ids.
    Count { keys: usize },
    /// As many, but those keys are not stopped in one step.
    NotOneStep { keys: usize },
    /// An OSD last reported on the node without a pod is down: it may be one of the keys'.
    DownOnNode(OsdId),
    /// A candidate reports a data device that no key without ids there lists.
    OtherDevice { id: OsdId, device: String },
    /// Another key on the node has contradicting ids.
    KeyInConflict(String),
    /// Another CephOSD lists disks on the host without recorded ids.
    OtherCephOsd(String),
}

impl fmt::Display for NodeEvidence {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::NotLooked => Ok(()),
            Self::NoDaemon { node } => {
                write!(f, "no OSD daemon without a pod reports node {node}")
            }
            Self::SeveralNames { node, names } => write!(
                f,
                "OSDs that report no pod report {}: each could be node {node}",
                names.iter().cloned().collect::<Vec<_>>().join(", ")
            ),
            Self::Candidates {
                node,
                ids,
                on_device,
                not_exact,
            } => {
                if ids.is_empty() {
                    write!(
                        f,
                        "no up OSD on node {node} reports no pod and is unclaimed"
                    )?;
                } else {
                    write!(
                        f,
                        "candidates (up on node {node}, no pod reported, claimed by no other \
                         disk): {}",
                        osd_id::list(ids)
                    )?;
                }
                if on_device.len() > 1 {
                    write!(f, "; {} report its data device", osd_id::list(on_device))?;
                }
                write!(f, "; {not_exact}")
            }
        }
    }
}

impl fmt::Display for NotExact {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Count { keys } => write!(
                f,
                "not as many as the {keys} disk(s) of this CephOSD there without known ids"
            ),
            Self::NotOneStep { keys } => write!(
                f,
                "as many as the {keys} disks there without known ids, but those do not stop in \
                 one step (update domain)"
            ),
            Self::DownOnNode(id) => write!(
                f,
                "{id}, last reported on that node without a pod, is down: it may be one of them"
            ),
            Self::OtherDevice { id, device } => write!(
                f,
                "{id} reports data device {device}, which no disk there without known ids lists"
            ),
            Self::KeyInConflict(key) => {
                write!(f, "the ids of {key} on that node contradict each other")
            }
            Self::OtherCephOsd(other) => write!(
                f,
                "CephOSD {other} lists disks on that host whose OSD ids it has not recorded"
            ),
        }
    }
}

pub(crate) fn is_up(dump: &OsdDump, id: OsdId) -> bool {
    dump.osds.get(&id).is_some_and(|o| o.up)
}
