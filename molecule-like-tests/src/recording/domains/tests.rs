use std::collections::BTreeMap;

use ceph_osd_operator::crd::UpdateDomain;
use ceph_osd_operator::OsdKey;

use super::Domains;

#[test]
fn a_key_belongs_to_its_host_s_bucket_and_a_host_in_none_is_its_own() {
    let buckets = Domains::Buckets(BTreeMap::from([("h1".to_owned(), "rack-a".to_owned())]));
    assert_eq!(buckets.id(&OsdKey::new("h1", "/dev/sdb")), "rack-a");
    assert_eq!(
        buckets.id(&OsdKey::new("h2", "/dev/sdb")),
        "h2 (in no bucket)"
    );
    assert_eq!(Domains::Host.id(&OsdKey::new("h1", "/dev/sdb")), "h1");
    assert_eq!(
        Domains::from(UpdateDomain::Topology),
        Domains::Buckets(BTreeMap::new())
    );
    assert!(buckets.all_at_once() && !Domains::Osd.all_at_once());
}
