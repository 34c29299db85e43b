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
    let DesiredOsds { osds, problems, .. } = desired_osds(&spec(vec![StorageEntry {
        hosts: vec!["h2".into(), "h1".into()],
        osds: vec![
            devices("/dev/sdb", Some("/dev/nvme0n1p1")),
            devices("/dev/sda", None),
        ],
    }]));
    let keys: Vec<String> = osds.keys().map(ToString::to_string).collect();
    assert_eq!(
        keys,
        ["h1:/dev/sda", "h1:/dev/sdb", "h2:/dev/sda", "h2:/dev/sdb"]
    );
    assert_eq!(
        osds.values().nth(1).and_then(|o| o.db.as_deref()),
        Some("/dev/nvme0n1p1")
    );
    assert!(problems.is_empty());
}

#[test]
fn duplicates_collapse_last_wins_and_conflicts_block_the_osd() {
    let DesiredOsds {
        osds,
        problems,
        blocked,
        ..
    } = desired_osds(&spec(vec![
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
    assert_eq!(problems.len(), 1);
    assert!(problems[0].message.contains("h:/dev/sdb"));
    // Plain words, no Rust debug text.
    assert!(
        problems[0]
            .message
            .contains("says db /dev/b, no wal; an earlier entry says db /dev/a, no wal"),
        "{}",
        problems[0].message
    );
    assert_eq!(
        blocked.into_iter().collect::<Vec<_>>(),
        [key("h", "/dev/sdb")]
    );
}

fn key(host: &str, data: &str) -> OsdKey {
    OsdKey::new(host, data)
}

#[test]
fn spellings_of_one_disk_block_each_other() {
    let desired = desired_osds(&spec(vec![
        StorageEntry {
            hosts: vec!["h".into()],
            osds: [
                "/dev/sdb",
                "/dev/sdb/",
                "/dev//sdb",
                "/dev/./sdb",
                "/dev/sdc",
            ]
            .into_iter()
            .map(|d| devices(d, None))
            .collect(),
        },
        StorageEntry {
            hosts: vec!["a76-h1".into(), "A76-H1".into()],
            osds: vec![devices("/dev/sdd", None)],
        },
    ]));
    assert_eq!(desired.osds.len(), 7);
    let blocked: Vec<String> = desired.blocked.iter().map(ToString::to_string).collect();
    assert_eq!(
        blocked,
        [
            "A76-H1:/dev/sdd",
            "a76-h1:/dev/sdd",
            "h:/dev/./sdb",
            "h:/dev//sdb",
            "h:/dev/sdb",
            "h:/dev/sdb/"
        ]
    );
    let messages: Vec<&str> = desired
        .problems
        .iter()
        .map(|p| p.message.as_str())
        .collect();
    assert!(messages
        .iter()
        .any(|m| m.contains("storage[0].osds[1].data \"/dev/sdb/\"")));
    assert!(messages
        .iter()
        .any(|m| m.contains("storage[1].hosts[1] \"A76-H1\"")));
    assert!(messages
        .iter()
        .any(|m| m.contains("name one disk (h:/dev/sdb)")));
}

#[test]
fn empty_storage_wants_nothing() {
    assert!(desired_osds(&spec(vec![])).osds.is_empty());
}
