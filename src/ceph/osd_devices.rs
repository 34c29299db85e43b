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
mod tests;
