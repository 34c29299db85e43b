//! The OSDs a CR asks for: the cartesian product of `storage[].hosts × storage[].osds`.
//!
//! Duplicate keys collapse and the last occurrence wins (as in the reference). What the planner
//! must not guess about is a problem that blocks its OSDs: one `host:data` listed with
//! different `db`/`wal`, or two spellings of one disk (`/dev/sdb` and `/dev/sdb/`, `node1` and
//! `NODE1`). A blocked OSD gets no new pod and no replacement; a pod it has stays as it is.

use crate::crd::osd::{DeviceId, OsdKey};
use crate::crd::storage_rules::{device_path_problem, host_problem};
use crate::crd::CephOsdSpec;
use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::OnceLock;

/// One OSD the CR asks for.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct DesiredOsd {
    pub key: OsdKey,
    pub db: Option<String>,
    pub wal: Option<String>,
    /// The disk its key names, whatever the spelling.
    pub device: DeviceId,
    /// Its place in rollout order (0, 1, ...): the planner's tables per OSD use it.
    pub index: usize,
    /// Its disk's number: one per device id, shared by keys that spell one disk differently.
    pub disk: usize,
}

/// Something wrong in `spec.storage`, and the OSDs it blocks (none: reported only).
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct StorageProblem {
    pub message: String,
    pub blocks: Vec<OsdKey>,
}

/// The OSDs of a spec, by key in rollout order, and what is wrong with them.
#[derive(Clone, Debug, Default)]
pub(crate) struct DesiredOsds {
    pub osds: BTreeMap<OsdKey, DesiredOsd>,
    pub problems: Vec<StorageProblem>,
    /// Keys the planner must neither create nor replace a pod for.
    pub blocked: BTreeSet<OsdKey>,
    /// The disks of these OSDs, numbered (see [`DesiredOsd::disk`]).
    pub disks: BTreeMap<DeviceId, usize>,
    /// The keys by pod-name prefix, built when first asked (see [`DesiredOsds::named_like`]).
    by_prefix: OnceLock<HashMap<String, Vec<OsdKey>>>,
}

impl DesiredOsds {
    /// The OSDs whose pods are named like `name`: their name prefix followed by
    /// `suffix_len` characters. Asked only of pods whose annotations cannot be believed.
    pub(crate) fn named_like(&self, name: &str, suffix_len: usize) -> Vec<&DesiredOsd> {
        let Some(prefix) = (name.len().checked_sub(suffix_len)).and_then(|n| name.get(..n)) else {
            return Vec::new();
        };
        let by_prefix = self.by_prefix.get_or_init(|| {
            let mut by_prefix: HashMap<String, Vec<OsdKey>> = HashMap::new();
            for key in self.osds.keys() {
                by_prefix
                    .entry(key.name_prefix())
                    .or_default()
                    .push(key.clone());
            }
            by_prefix
        });
        (by_prefix.get(prefix).into_iter().flatten())
            .filter_map(|key| self.osds.get(key))
            .collect()
    }
}

impl DesiredOsds {
    /// These OSDs less `keys`, numbered again (a disk being replaced leaves the spec for a
    /// while); the problems and blocked keys stay.
    pub(crate) fn without(&self, keys: &BTreeSet<OsdKey>) -> Self {
        let mut osds: BTreeMap<OsdKey, DesiredOsd> = (self.osds.iter())
            .filter(|(key, _)| !keys.contains(*key))
            .map(|(key, osd)| (key.clone(), osd.clone()))
            .collect();
        let disks = number(&mut osds);
        Self {
            osds,
            problems: self.problems.clone(),
            blocked: self.blocked.clone(),
            disks,
            by_prefix: OnceLock::new(),
        }
    }
}

/// Expands `spec.storage` (see the module docs).
pub(crate) fn desired_osds(spec: &CephOsdSpec) -> DesiredOsds {
    let mut osds = BTreeMap::new();
    let mut problems = Vec::new();
    for (index, entry) in spec.storage.iter().enumerate() {
        for (h, host) in entry.hosts.iter().enumerate() {
            if let Some(why) = host_problem(host) {
                problems.push(StorageProblem {
                    message: format!("spec.storage[{index}].hosts[{h}] {host:?} {why}"),
                    blocks: Vec::new(),
                });
            }
        }
        for (o, devices) in entry.osds.iter().enumerate() {
            let paths = [
                ("data", Some(&devices.data)),
                ("db", devices.db.as_ref()),
                ("wal", devices.wal.as_ref()),
            ];
            for (field, path) in paths {
                if let Some(why) = path.and_then(|p| device_path_problem(p)) {
                    let path = path.map(String::as_str).unwrap_or_default();
                    problems.push(StorageProblem {
                        message: format!("spec.storage[{index}].osds[{o}].{field} {path:?} {why}"),
                        blocks: Vec::new(),
                    });
                }
            }
        }
        for host in &entry.hosts {
            for devices in &entry.osds {
                let key = OsdKey::new(host.clone(), devices.data.clone());
                let osd = DesiredOsd {
                    device: key.device_id(),
                    key: key.clone(),
                    db: devices.db.clone().filter(|s| !s.is_empty()),
                    wal: devices.wal.clone().filter(|s| !s.is_empty()),
                    // Numbered once all are known.
                    index: 0,
                    disk: 0,
                };
                if let Some(previous) = osds.insert(key, osd) {
                    if let Some(osd) = osds
                        .get(&previous.key)
                        .filter(|osd| (&osd.db, &osd.wal) != (&previous.db, &previous.wal))
                    {
                        problems.push(StorageProblem {
                            message: format!(
                                "OSD {} is listed more than once with different db/wal devices \
                                 (storage[{index}] says {}; an earlier entry says {}): it is \
                                 neither created nor replaced until the spec agrees",
                                osd.key,
                                devices_text(osd),
                                devices_text(&previous)
                            ),
                            blocks: vec![osd.key.clone()],
                        });
                    }
                }
            }
        }
    }
    problems.extend(aliases(&osds));
    let blocked = problems
        .iter()
        .flat_map(|p| p.blocks.iter().cloned())
        .collect();
    let disks = number(&mut osds);
    DesiredOsds {
        osds,
        problems,
        blocked,
        disks,
        by_prefix: OnceLock::new(),
    }
}

/// `db /dev/x, no wal`: an OSD's optional devices, for messages.
fn devices_text(osd: &DesiredOsd) -> String {
    let device = |name: &str, path: Option<&String>| match path {
        Some(path) => format!("{name} {path}"),
        None => format!("no {name}"),
    };
    format!(
        "{}, {}",
        device("db", osd.db.as_ref()),
        device("wal", osd.wal.as_ref())
    )
}

/// Numbers `osds` in rollout order and their disks in order of first appearance; returns the
/// disks' numbers.
fn number(osds: &mut BTreeMap<OsdKey, DesiredOsd>) -> BTreeMap<DeviceId, usize> {
    let mut disks = BTreeMap::new();
    for (index, osd) in osds.values_mut().enumerate() {
        let next = disks.len();
        osd.index = index;
        osd.disk = *disks.entry(osd.device.clone()).or_insert(next);
    }
    disks
}

/// Keys that are different spellings of one disk.
fn aliases(osds: &BTreeMap<OsdKey, DesiredOsd>) -> Vec<StorageProblem> {
    let mut by_device: BTreeMap<&DeviceId, Vec<&OsdKey>> = BTreeMap::new();
    for osd in osds.values() {
        by_device.entry(&osd.device).or_default().push(&osd.key);
    }
    by_device
        .into_iter()
        .filter(|(_, keys)| keys.len() > 1)
        .map(|(device, keys)| StorageProblem {
            message: format!(
                "{} name one disk ({device}): none of them is created or replaced until the \
                 spec lists it once",
                keys.iter()
                    .map(ToString::to_string)
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
            blocks: keys.into_iter().cloned().collect(),
        })
        .collect()
}

#[cfg(test)]
mod tests;
