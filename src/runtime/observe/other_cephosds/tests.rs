use super::*;
use crate::crd::CephOsdStatus;
use crate::testing::CephOsdBuilder;
use std::collections::{BTreeMap, BTreeSet};

fn cr(name: &str, uid: &str, hosts: &[&str], recorded: &[(&str, u32)]) -> Arc<CephOsd> {
    let mut cr = CephOsdBuilder::new(name)
        .namespace("ceph")
        .uid(uid)
        .storage(hosts, &["/dev/sdb"])
        .build()
        .expect("a CephOSD");
    cr.status = Some(CephOsdStatus {
        osd_ids: recorded
            .iter()
            .map(|(key, id)| ((*key).to_owned(), vec![*id]))
            .collect(),
        ..CephOsdStatus::default()
    });
    Arc::new(cr)
}

#[test]
fn the_others_recorded_ids_and_their_hosts_without_records() {
    let mine = cr("hdds", "u1", &["h1"], &[("h1:/dev/sdb", 1)]);
    let ssds = cr("ssds", "u2", &["h1", "h2"], &[("h1:/dev/sdb", 7)]);
    let others = other_cephosds(&mine, &[mine.clone(), ssds], &Memory::default());
    assert_eq!(
        others.ids_on_host,
        BTreeMap::from([("h1".to_owned(), BTreeSet::from([OsdId(7)]))]),
        "by host, not my own"
    );
    assert_eq!(
        others.unrecorded_hosts,
        BTreeMap::from([("h2".to_owned(), "ceph/ssds".to_owned())])
    );
}
