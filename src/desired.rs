//! The OSDs a CR asks for: the cartesian product of `storage[].hosts × storage[].osds`.
//!
//! Duplicate keys collapse and the last occurrence wins (as in the reference); a duplicate
//! that disagrees on `db`/`wal` is reported as a conflict so it can surface as a condition.

use crate::crd::CephOsdSpec;
use crate::osd::OsdKey;
use std::collections::BTreeMap;

/// One OSD the CR asks for.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DesiredOsd {
    pub key: OsdKey,
    pub db: Option<String>,
    pub wal: Option<String>,
}

/// Two `storage[]` entries name the same `host:data` with different `db`/`wal`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DeviceConflict {
    pub key: OsdKey,
    pub message: String,
}

/// Desired OSDs by key, in rollout order, plus any conflicting duplicates.
pub fn desired_osds(spec: &CephOsdSpec) -> (BTreeMap<OsdKey, DesiredOsd>, Vec<DeviceConflict>) {
    let mut osds = BTreeMap::new();
    let mut conflicts = Vec::new();
    for (index, entry) in spec.storage.iter().enumerate() {
        for host in &entry.hosts {
            for devices in &entry.osds {
                let osd = DesiredOsd {
                    key: OsdKey::new(host.clone(), devices.data.clone()),
                    db: devices.db.clone().filter(|s| !s.is_empty()),
                    wal: devices.wal.clone().filter(|s| !s.is_empty()),
                };
                if let Some(previous) = osds.insert(osd.key.clone(), osd.clone()) {
                    if previous != osd {
                        conflicts.push(DeviceConflict {
                            message: format!(
                                "OSD {} is listed more than once with different db/wal devices; \
                                 storage[{index}] wins",
                                osd.key
                            ),
                            key: osd.key.clone(),
                        });
                    }
                }
            }
        }
    }
    (osds, conflicts)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::crd::{OsdDevices, StorageEntry, UpdateDomain};
    use serde_json::json;

    fn devices(data: &str, db: Option<&str>) -> OsdDevices {
        OsdDevices {
            data: data.into(),
            db: db.map(Into::into),
            wal: None,
        }
    }

    fn spec(storage: Vec<StorageEntry>) -> CephOsdSpec {
        CephOsdSpec::new(storage, UpdateDomain::Osd, json!({}))
    }

    #[test]
    fn expands_the_cartesian_product_in_key_order() {
        let (osds, conflicts) = desired_osds(&spec(vec![StorageEntry {
            hosts: vec!["h2".into(), "H1".into()],
            osds: vec![
                devices("/dev/sdb", Some("/dev/nvme0n1p1")),
                devices("/dev/sda", None),
            ],
        }]));
        let keys: Vec<String> = osds.keys().map(ToString::to_string).collect();
        assert_eq!(
            keys,
            ["H1:/dev/sda", "H1:/dev/sdb", "h2:/dev/sda", "h2:/dev/sdb"]
        );
        assert_eq!(
            osds.values().nth(1).and_then(|o| o.db.as_deref()),
            Some("/dev/nvme0n1p1")
        );
        assert!(conflicts.is_empty());
    }

    #[test]
    fn duplicates_collapse_last_wins_and_conflicts_are_reported() {
        let (osds, conflicts) = desired_osds(&spec(vec![
            StorageEntry {
                hosts: vec!["h".into()],
                osds: vec![devices("/dev/sdb", Some("/dev/a"))],
            },
            StorageEntry {
                hosts: vec!["h".into()],
                osds: vec![devices("/dev/sdb", Some("/dev/b"))],
            },
            StorageEntry {
                hosts: vec!["h".into()],
                osds: vec![devices("/dev/sdb", Some("/dev/b"))],
            },
        ]));
        assert_eq!(osds.len(), 1);
        assert_eq!(
            osds.values().next().and_then(|o| o.db.as_deref()),
            Some("/dev/b")
        );
        assert_eq!(conflicts.len(), 1);
        assert!(conflicts[0].message.contains("h:/dev/sdb"));
    }

    #[test]
    fn empty_storage_wants_nothing() {
        assert!(desired_osds(&spec(vec![])).0.is_empty());
    }
}
