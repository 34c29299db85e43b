//! The devices an OSD's daemon reported when it booted (`ceph osd metadata`), and whether a
//! spelling of a data device (`/dev/sdb`, `/dev/disk/by-path/…`, `/dev/disk/by-id/…`) names
//! its data device. Pure.
//!
//! Rules, exact or nothing:
//! - only the data device counts: `bluestore_bdev_devices` (its kernel names),
//!   `bluestore_bdev_dev_node`, and the `device_paths`/`device_ids` entries of those kernel
//!   names; `devices` lists shared db/wal disks too (one db disk appears in several OSDs') and
//!   never matches alone;
//! - `/dev/NAME` matches the kernel name NAME, or the dev node as written;
//! - `/dev/disk/by-path/P` matches the data device's `device_paths` link exactly;
//! - `/dev/disk/by-id/L` matches when L ends with the serial of the data device's
//!   `device_ids` entry (`VENDOR_MODEL_SERIAL`: the text after its last `_`), right after a
//!   `_` or `-` (`ata-MODEL_SERIAL`, `nvme-MODEL_SERIAL`); `wwn-…` links carry no serial and
//!   never match;
//! - BlueStore on a file (`bluestore_bdev_access_mode: file`) reports the disk under the file
//!   system, shared by every such OSD there: it names no device of its own. Memstore reports
//!   none either.

use serde::Deserialize;
use std::collections::{BTreeMap, BTreeSet};

/// What a daemon reported of its devices.
#[derive(Clone, Debug, Default, PartialEq, Eq, Deserialize)]
#[serde(from = "RawDevices")]
pub struct ReportedDevices {
    /// The data device's kernel names (`sdb`; several for a volume over several disks).
    pub data: BTreeSet<String>,
    /// The data device's node (`/dev/sdb`, or `/dev/dm-3` for LVM).
    pub data_node: Option<String>,
    /// Every disk behind the OSD, db and wal disks included.
    pub all: BTreeSet<String>,
    /// Kernel name → its by-path link.
    pub paths: BTreeMap<String, String>,
    /// Kernel name → `VENDOR_MODEL_SERIAL`.
    pub ids: BTreeMap<String, String>,
    /// BlueStore on a file: `data` is the disk under the file system, not the OSD's own.
    pub file_backed: bool,
}

/// Ceph writes every metadata value as a string; lists are comma-separated, maps are
/// `name=value` items.
#[derive(Deserialize)]
struct RawDevices {
    #[serde(default)]
    bluestore_bdev_devices: Option<String>,
    #[serde(default)]
    bluestore_bdev_dev_node: Option<String>,
    #[serde(default)]
    bluestore_bdev_access_mode: Option<String>,
    #[serde(default)]
    devices: Option<String>,
    #[serde(default)]
    device_paths: Option<String>,
    #[serde(default)]
    device_ids: Option<String>,
}

fn items(list: Option<&str>) -> impl Iterator<Item = &str> {
    list.unwrap_or_default()
        .split(',')
        .map(str::trim)
        .filter(|item| !item.is_empty())
}

fn names(list: Option<&str>) -> BTreeSet<String> {
    items(list).map(str::to_owned).collect()
}

fn pairs(list: Option<&str>) -> BTreeMap<String, String> {
    items(list)
        .filter_map(|item| item.split_once('='))
        .filter(|(name, value)| !name.is_empty() && !value.is_empty())
        .map(|(name, value)| (name.to_owned(), value.to_owned()))
        .collect()
}

impl From<RawDevices> for ReportedDevices {
    fn from(raw: RawDevices) -> Self {
        Self {
            data: names(raw.bluestore_bdev_devices.as_deref()),
            data_node: raw.bluestore_bdev_dev_node.filter(|n| !n.is_empty()),
            all: names(raw.devices.as_deref()),
            paths: pairs(raw.device_paths.as_deref()),
            ids: pairs(raw.device_ids.as_deref()),
            file_backed: raw.bluestore_bdev_access_mode.as_deref() == Some("file"),
        }
    }
}

const BY_PATH: &str = "/dev/disk/by-path/";
const BY_ID: &str = "/dev/disk/by-id/";

/// The serial of a `device_ids` value: the text after its last `_`.
fn serial(device_id: &str) -> Option<&str> {
    let (_, serial) = device_id.rsplit_once('_')?;
    (!serial.is_empty()).then_some(serial)
}

/// Whether the by-id link name `link` ends with `serial` right after a `_` or `-`.
fn link_has_serial(link: &str, serial: &str) -> bool {
    link.strip_suffix(serial)
        .is_some_and(|head| head.ends_with('_') || head.ends_with('-'))
}

impl ReportedDevices {
    /// Whether the daemon named a data device of its own.
    pub fn names_a_data_device(&self) -> bool {
        !self.file_backed && (!self.data.is_empty() || self.data_node.is_some())
    }

    /// Whether `spelling` (a CephOSD's `data`) names this daemon's data device (module rules).
    pub fn is_data_device(&self, spelling: &str) -> bool {
        if !self.names_a_data_device() {
            return false;
        }
        if self.data_node.as_deref() == Some(spelling) {
            return true;
        }
        if let Some(link) = spelling.strip_prefix(BY_ID) {
            return self
                .data
                .iter()
                .filter_map(|name| self.ids.get(name))
                .filter_map(|id| serial(id))
                .any(|serial| link_has_serial(link, serial));
        }
        if spelling.starts_with(BY_PATH) {
            return self
                .data
                .iter()
                .any(|name| self.paths.get(name).is_some_and(|p| p == spelling));
        }
        spelling
            .strip_prefix("/dev/")
            .filter(|name| !name.contains('/'))
            .is_some_and(|name| self.data.contains(name))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn reported(json: serde_json::Value) -> ReportedDevices {
        serde_json::from_value(json).expect("devices")
    }

    /// The shape a BlueStore OSD on a whole disk with its db on a shared SSD reports.
    fn hdd_with_shared_db() -> ReportedDevices {
        reported(serde_json::json!({
            "bluestore_bdev_access_mode": "blk",
            "bluestore_bdev_devices": "sdb",
            "bluestore_bdev_dev_node": "/dev/sdb",
            "devices": "sdb,sdk",
            "device_paths": "sdb=/dev/disk/by-path/pci-0000:5c:00.0-sas-phy1-lun-0,sdk=/dev/disk/by-path/pci-0000:00:1f.2-ata-1",
            "device_ids": "sdb=SEAGATE_ST4000NM0025_ZC18JXXX,sdk=ATA_INTEL_SSDSC2KB48_BTYF9876",
        }))
    }

    #[test]
    fn lists_are_split_on_commas_and_maps_on_equals() {
        let d = hdd_with_shared_db();
        assert_eq!(d.data, BTreeSet::from(["sdb".to_owned()]));
        assert_eq!(d.all.len(), 2);
        assert_eq!(
            d.paths["sdk"], "/dev/disk/by-path/pci-0000:00:1f.2-ata-1",
            "a path's own `:` and `.` stay"
        );
        assert_eq!(d.ids["sdb"], "SEAGATE_ST4000NM0025_ZC18JXXX");
        assert!(!d.file_backed);
    }

    #[test]
    fn every_spelling_of_the_data_device_matches() {
        let d = hdd_with_shared_db();
        for spelling in [
            "/dev/sdb",
            "/dev/disk/by-path/pci-0000:5c:00.0-sas-phy1-lun-0",
            "/dev/disk/by-id/scsi-SSEAGATE_ST4000NM0025_ZC18JXXX",
            "/dev/disk/by-id/ata-ST4000NM0025_ZC18JXXX",
        ] {
            assert!(d.is_data_device(spelling), "{spelling}");
        }
    }

    #[test]
    fn the_shared_db_disk_is_never_the_data_device() {
        let d = hdd_with_shared_db();
        for spelling in [
            "/dev/sdk",
            "/dev/disk/by-path/pci-0000:00:1f.2-ata-1",
            "/dev/disk/by-id/ata-INTEL_SSDSC2KB48_BTYF9876",
        ] {
            assert!(!d.is_data_device(spelling), "{spelling}");
        }
    }

    #[test]
    fn near_spellings_do_not_match() {
        let d = hdd_with_shared_db();
        for spelling in [
            "/dev/sdb1",
            "/dev/sd",
            "sdb",
            "/dev/mapper/sdb",
            "/dev/disk/by-path/pci-0000:5c:00.0-sas-phy1-lun-0-part1",
            "/dev/disk/by-id/ata-ST4000NM0025_ZC18JXXX-part1",
            "/dev/disk/by-id/ata-ST4000NM0025_XZC18JXXX",
            "/dev/disk/by-id/wwn-0x5000c500a1b2c3d4",
            "/dev/disk/by-uuid/sdb",
        ] {
            assert!(!d.is_data_device(spelling), "{spelling}");
        }
    }

    #[test]
    fn an_lvm_volume_matches_by_its_dev_node_and_its_disk() {
        let d = reported(serde_json::json!({
            "bluestore_bdev_access_mode": "blk",
            "bluestore_bdev_devices": "nvme0n1",
            "bluestore_bdev_dev_node": "/dev/dm-3",
            "devices": "nvme0n1",
            "device_ids": "nvme0n1=Samsung_SSD_970_EVO_Plus_1TB_S4EWNX0R123456",
        }));
        assert!(d.is_data_device("/dev/dm-3"));
        assert!(d.is_data_device("/dev/nvme0n1"));
        assert!(
            d.is_data_device("/dev/disk/by-id/nvme-Samsung_SSD_970_EVO_Plus_1TB_S4EWNX0R123456")
        );
        assert!(!d.is_data_device("/dev/ceph-vg/osd-block"));
    }

    #[test]
    fn a_bluestore_file_names_no_device_of_its_own() {
        // As recorded on this machine: BlueStore on a sparse file in the OSD's dir reports
        // the virtual disk under the file system.
        let m =
            crate::ceph::parse_osd_metadata(&crate::ceph::test_data::fixture("osd_metadata_plain"))
                .expect("metadata");
        let d = &m[&crate::ceph::OsdId(0)].devices;
        assert_eq!(d.data, BTreeSet::from(["vda".to_owned()]));
        assert!(d.file_backed && !d.names_a_data_device());
        assert!(!d.is_data_device("/dev/vda"));
    }

    #[test]
    fn a_memstore_or_never_booted_osd_names_nothing() {
        let d = reported(serde_json::json!({
            "devices": "", "device_paths": "", "device_ids": "", "bluestore_bdev_devices": ""
        }));
        assert_eq!(d, ReportedDevices::default());
        assert!(!d.names_a_data_device());
        assert!(!d.is_data_device("/dev/sdb"));
        assert!(!reported(serde_json::json!({})).is_data_device("/dev/sdb"));
    }

    #[test]
    fn items_without_a_value_are_dropped() {
        let d = reported(serde_json::json!({
            "bluestore_bdev_devices": "sdb, ,sdc",
            "device_paths": "sdb=,=/dev/disk/by-path/x,sdc",
        }));
        assert_eq!(d.data.len(), 2);
        assert!(d.paths.is_empty());
    }
}
