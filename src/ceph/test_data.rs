//! The unit tests' data: answers recorded from the test cluster (`tests/data/ceph/`, Ceph
//! 16.2.15, the operator's key) and small builders.

use super::answers::{ClusterStatus, OsdDump, OsdInfo, OsdMetadata};
use super::osd_devices::ReportedDevices;
use super::osd_id::OsdId;
use std::collections::{BTreeMap, BTreeSet};

/// The path of the recorded answer `name` (`pg_stat_clean`).
pub(crate) fn fixture_path(name: &str) -> String {
    format!("{}/tests/data/ceph/{name}.json", env!("CARGO_MANIFEST_DIR"))
}

/// The recorded answer `name`, as the CLI printed it.
pub(crate) fn fixture(name: &str) -> Vec<u8> {
    let path = fixture_path(name);
    std::fs::read(&path).unwrap_or_else(|e| panic!("{path}: {e}"))
}

pub(crate) fn ids(ids: &[u32]) -> BTreeSet<OsdId> {
    ids.iter().copied().map(OsdId).collect()
}

/// The fsid of the test cluster.
pub(crate) const FSID: &str = "5b9d0f4e-7c1a-4e2b-9f3d-2a6c8e1b0d4f";

/// A status with quorum and a mgr.
pub(crate) fn healthy_status() -> ClusterStatus {
    ClusterStatus {
        fsid: FSID.to_owned(),
        quorum: vec![0],
        quorum_names: vec!["a".into()],
        mgr_available: true,
        health: "HEALTH_OK".into(),
        health_checks: BTreeMap::new(),
    }
}

/// An osdmap (epoch 20) of these OSDs, each up or down, all in.
pub(crate) fn osd_dump(osds: &[(u32, bool)]) -> OsdDump {
    let info = |id, up| OsdInfo {
        id: OsdId(id),
        up,
        is_in: true,
        up_from: 5,
        noout: false,
        state: vec!["exists".into()],
    };
    OsdDump {
        epoch: 20,
        osds: (osds.iter())
            .map(|&(id, up)| (OsdId(id), info(id, up)))
            .collect(),
        require_osd_release: None,
        placement: crate::ceph::Placement::default(),
    }
}

/// The metadata of daemons that report no pod (as the reference operator's), each with the
/// hostname it reports and no device.
pub(crate) fn podless_metadata(daemons: &[(u32, &str)]) -> BTreeMap<OsdId, OsdMetadata> {
    (daemons.iter())
        .map(|&(id, hostname)| {
            let m = OsdMetadata {
                id: OsdId(id),
                hostname: Some(hostname.into()),
                pod_name: None,
                pod_namespace: None,
                ceph_version: None,
                devices: ReportedDevices::default(),
            };
            (OsdId(id), m)
        })
        .collect()
}
