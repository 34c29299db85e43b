use super::*;
use crate::crd::osd::OsdKey;
use crate::crd::topology::TopologySpec;
use crate::crd::{CephOsdStatus, FailureDomainsStatus};
use crate::plan::topology::host_buckets;
use crate::testing::CephOsdBuilder;

/// A CephOSD by rack on `h1`..`h4` (`/dev/sdb` each) with `recorded` as its membership.
fn by_rack(recorded: Option<FailureDomainsStatus>) -> CephOsd {
    let mut cr = CephOsdBuilder::new("osds")
        .storage(&["h1", "h2", "h3", "h4"], &["/dev/sdb"])
        .update_domain("Topology")
        .build()
        .expect("cephosd");
    cr.spec.topology = Some(TopologySpec {
        bucket_type: "rack".into(),
        topology_key: Some("topology.kubernetes.io/zone".into()),
    });
    cr.status = Some(CephOsdStatus {
        failure_domains: recorded,
        ..CephOsdStatus::default()
    });
    cr
}

fn recorded(buckets: &[(&str, &[&str])], unplaced: &[(&str, &str)]) -> FailureDomainsStatus {
    FailureDomainsStatus {
        bucket_type: Some("rack".into()),
        buckets: (buckets.iter())
            .map(|(b, hosts)| ((*b).into(), hosts.iter().map(|h| (*h).into()).collect()))
            .collect(),
        unplaced: (unplaced.iter())
            .map(|(h, why)| ((*h).into(), (*why).into()))
            .collect(),
    }
}

#[test]
fn every_host_placed_groups_keys_by_bucket() {
    let cr = by_rack(Some(recorded(
        &[
            ("rack1", &["h1", "h2"]),
            ("rack2", &["h3", "h4", "elsewhere"]),
        ],
        &[],
    )));
    let domains = RecordedDomains::of(&cr);
    assert_eq!(domains.unknown, None);
    assert_eq!(domains.bucket_type.as_deref(), Some("rack"));
    // Hosts of other CephOSDs in the record are not this one's.
    assert_eq!(domains.buckets["rack2"], ["h3", "h4"]);
    assert_eq!(
        domains.domains().id(&OsdKey::new("h2", "/dev/sdb")),
        "rack1"
    );
    assert_eq!(
        domains.domains().id(&OsdKey::new("h4", "/dev/sdb")),
        "rack2"
    );
    // The planner takes the view in as the same membership, whatever the spec reads.
    let topology = cr.spec.topology.clone().expect("topology");
    let auto = TopologySpec {
        bucket_type: "Auto".into(),
        topology_key: None,
    };
    for spec in [topology, auto] {
        let again = host_buckets(&spec, ["h1", "h2", "h3", "h4"], &domains.view());
        assert_eq!(again.bucket_of, domains.bucket_of);
        assert_eq!(again.halt(), None);
    }
}

#[test]
fn nothing_recorded_is_said_never_guessed() {
    let none = RecordedDomains::of(&by_rack(None));
    assert!(
        none.unknown
            .as_deref()
            .is_some_and(|w| w.starts_with("no failure domain is recorded yet")),
        "{none:?}"
    );
    // Each host is a domain of its own, as the planner counts it, and no view is made.
    assert_eq!(none.domains().id(&OsdKey::new("h1", "/dev/sdb")), "h1");
    assert_eq!(none.view(), TopologyView::default());
    let untold = RecordedDomains::of(&by_rack(Some(FailureDomainsStatus::default())));
    assert!(
        untold
            .unknown
            .as_deref()
            .is_some_and(|w| w.starts_with("the operator could not tell the failure domains")),
        "{untold:?}"
    );
}

#[test]
fn a_host_in_no_known_bucket_is_named_with_why() {
    let cr = by_rack(Some(recorded(
        &[("rack1", &["h1", "h2"]), ("rack2", &["h3"])],
        &[("h4", "its Node has no label topology.kubernetes.io/zone")],
    )));
    let domains = RecordedDomains::of(&cr);
    assert_eq!(
        domains.unknown.as_deref(),
        Some(
            "host h4 is in no known failure domain: its Node has no label \
             topology.kubernetes.io/zone"
        )
    );
    assert_eq!(domains.view(), TopologyView::default());
    // A host the record does not list at all (added to the spec since) is not placed either.
    let cr = by_rack(Some(recorded(&[("rack1", &["h1", "h2", "h3"])], &[])));
    let domains = RecordedDomains::of(&cr);
    assert_eq!(
        domains.unplaced["h4"],
        "not in status.failureDomains yet: the operator has not placed it"
    );
    assert!(domains.unknown.is_some());
}

#[test]
fn a_record_by_another_bucket_type_is_not_used() {
    let mut cr = by_rack(Some(recorded(&[("rack1", &["h1", "h2", "h3", "h4"])], &[])));
    cr.spec.topology = Some(TopologySpec {
        bucket_type: "row".into(),
        topology_key: None,
    });
    let domains = RecordedDomains::of(&cr);
    assert_eq!(
        domains.unknown.as_deref(),
        Some(
            "status.failureDomains is by rack and spec.topology.bucketType is row: the \
             operator has not placed the hosts by row yet"
        )
    );
    assert!(domains.bucket_of.is_empty());
}

#[test]
fn other_update_domains_need_no_membership() {
    let cr = CephOsdBuilder::new("osds")
        .storage(&["h1"], &["/dev/sdb", "/dev/sdc"])
        .update_domain("Host")
        .build()
        .expect("cephosd");
    let domains = RecordedDomains::of(&cr);
    assert_eq!(domains.unknown, None);
    assert_eq!(domains.domains().id(&OsdKey::new("h1", "/dev/sdc")), "h1");
    let by_osd = RecordedDomains::of(&CephOsdBuilder::new("o").build().expect("cephosd"));
    assert_eq!(
        by_osd.domains().id(&OsdKey::new("h1", "/dev/sdc")),
        "h1:/dev/sdc"
    );
}
