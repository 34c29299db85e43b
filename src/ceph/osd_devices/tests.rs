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
    assert!(d.is_data_device("/dev/disk/by-id/nvme-Samsung_SSD_970_EVO_Plus_1TB_S4EWNX0R123456"));
    assert!(!d.is_data_device("/dev/ceph-vg/osd-block"));
}

#[test]
fn a_bluestore_file_names_no_device_of_its_own() {
    // As recorded on this machine: BlueStore on a sparse file in the OSD's dir reports
    // the virtual disk under the file system.
    let m = crate::ceph::parse_osd_metadata(&crate::ceph::test_data::fixture("osd_metadata_plain"))
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
