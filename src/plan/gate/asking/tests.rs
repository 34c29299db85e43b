//! The order of the questions: the update domains asked about together then fewer
//! (`DomainChoice`, `step_sets`, never reaching into the next failure domain) and when Ceph's
//! `ok-to-stop` must confirm a precheck (`after_precheck`).

use super::*;
use crate::ceph::test_data::ids;
use crate::ceph::OsdId;
use crate::crd::osd::OsdKey;
use crate::plan::gate::{Blocker, GateDecision};
use crate::testing::gate_inputs::{known, CephFactsBuilder, GateSubjectBuilder};

fn healthy() -> CephFacts {
    CephFactsBuilder::healthy().build()
}

#[test]
fn domains_are_asked_about_all_together_then_fewer_until_ceph_lets_a_set_go() {
    let subject = |host: &str| GateSubjectBuilder::new(host, "/dev/sdb").build();
    let hosts = |set: &[GateSubject]| set.iter().map(|s| s.domain.clone()).collect::<Vec<_>>();
    let proposed = vec![subject("a"), subject("b"), subject("c")];
    let refused = GateDecision::no_answer(&"not now");
    let mut choice = DomainChoice::new(&proposed);
    assert_eq!(hosts(&choice.next(None).expect("all")), ["a", "b", "c"]);
    assert_eq!(
        hosts(&choice.next(Some(&refused)).expect("two")),
        ["a", "b"]
    );
    let proceed = GateDecision::Proceed { ids: ids(&[1, 2]) };
    assert!(choice.next(Some(&proceed)).is_none(), "a set Ceph let go");

    // Refused down to the first alone: its answer stands.
    let mut choice = DomainChoice::new(&proposed);
    let mut asked = Vec::new();
    let mut last = None;
    while let Some(set) = choice.next(last.as_ref()) {
        asked.push(set.len());
        last = Some(refused.clone());
    }
    assert_eq!(asked, [3, 2, 1]);
    assert!(
        DomainChoice::new(&[]).next(None).is_none(),
        "nothing proposed"
    );
}

#[test]
fn ok_to_stop_confirms_a_passed_precheck_of_up_osds_only() {
    let domain = [known("host-1:/dev/sdb", &[1])];
    let up = after_precheck(&healthy(), &domain, false);
    assert_eq!(up.next, AfterPrecheck::AskOkToStop(ids(&[1])));
    assert_eq!(up.up_from.len(), 1, "{up:?}");
    assert!(up.up_from.contains_key(&OsdId(1)));
    // A drain stops nothing: no ok-to-stop.
    let drain = after_precheck(&healthy(), &domain, true);
    assert_eq!(
        drain.next,
        AfterPrecheck::Decided(GateDecision::Proceed { ids: ids(&[1]) })
    );
    assert_eq!(drain.up_from, up.up_from);
    // Every id down already: nothing up to stop.
    let down = CephFactsBuilder::healthy().osds("osd_dump_1_down").build();
    assert_eq!(
        after_precheck(&down, &domain, false).next,
        AfterPrecheck::Decided(GateDecision::Proceed { ids: ids(&[1]) })
    );
    // A refused precheck, or nothing to stop, is the verdict, without up_from.
    let mut no_quorum = healthy();
    no_quorum.status.quorum.clear();
    let refused = after_precheck(&no_quorum, &domain, false);
    assert!(
        matches!(
            &refused.next,
            AfterPrecheck::Decided(GateDecision::Wait { .. })
        ),
        "{refused:?}"
    );
    assert!(refused.up_from.is_empty());
    assert_eq!(
        after_precheck(&healthy(), &[], false),
        Prechecked {
            next: AfterPrecheck::Decided(GateDecision::Proceed { ids: ids(&[]) }),
            up_from: BTreeMap::new(),
        }
    );
}

/// `host:/dev/sdb` in the failure domain `rack`.
fn rack_subject(host: &str, rack: &str) -> GateSubject {
    GateSubjectBuilder::host(host).domain(rack).build()
}

#[test]
fn a_failure_domain_shrinks_by_hosts_and_never_reaches_into_the_next() {
    let proposed = [
        rack_subject("a", "r1"),
        rack_subject("b", "r1"),
        rack_subject("c", "r1"),
        rack_subject("d", "r2"),
    ];
    let hosts = |set: &Vec<GateSubject>| set.iter().map(|s| s.key.host.clone()).collect::<Vec<_>>();
    let sets: Vec<Vec<String>> = step_sets(&proposed).iter().map(hosts).collect();
    assert_eq!(
        sets,
        [
            vec!["a", "b", "c", "d"],
            vec!["a", "b", "c"],
            vec!["a", "b"],
            vec!["a"]
        ]
    );
    assert!(is_part_of_a_domain(&proposed[..2], &proposed));
    assert!(!is_part_of_a_domain(&proposed[..3], &proposed), "all of r1");
    assert!(!is_part_of_a_domain(&proposed, &proposed));
    // One host per domain (updateDomain: Host): never split below a domain.
    let by_host = [
        GateSubjectBuilder::host("a").build(),
        GateSubjectBuilder::host("b").build(),
    ];
    assert_eq!(step_sets(&by_host).len(), 2);
    // The OSDs of one host go together, whatever the domain.
    let two_disks = [
        rack_subject("a", "r1"),
        GateSubject {
            key: OsdKey::new("a", "/dev/sdc"),
            ..rack_subject("a", "r1")
        },
    ];
    assert_eq!(step_sets(&two_disks).len(), 1);
}

#[test]
fn pgs_inactive_already_end_the_questions_where_a_refusal_asks_fewer() {
    use crate::ceph::OkToStop;
    let subject = |host: &str| {
        GateSubjectBuilder::new(host, "/dev/sdb")
            .domain("rack-a")
            .build()
    };
    let proposed = vec![subject("a"), subject("b")];
    let not_ok = |become_inactive: &[&str], already_inactive: &[&str]| GateDecision::Wait {
        blockers: vec![Blocker::NotOkToStop {
            answer: OkToStop {
                osds: ids(&[1, 2]),
                num_not_ok_pgs: 1,
                bad_become_inactive: become_inactive.iter().map(|p| (*p).to_owned()).collect(),
                bad_already_inactive: already_inactive.iter().map(|p| (*p).to_owned()).collect(),
                ..OkToStop::default()
            },
        }],
    };
    // Refused whole (PGs would become inactive): the rack's first host is asked next.
    let mut choice = DomainChoice::new(&proposed);
    assert_eq!(choice.next(None).expect("the rack").len(), 2);
    let refused = not_ok(&["2.1"], &[]);
    assert!(!refused.finds_pgs_inactive());
    assert_eq!(choice.next(Some(&refused)).expect("a part").len(), 1);
    // PGs peering since the look: no part is asked, the rack waits whole.
    let mut choice = DomainChoice::new(&proposed);
    choice.next(None);
    let peering = not_ok(&["2.1"], &["2.7"]);
    assert!(peering.finds_pgs_inactive());
    assert!(choice.next(Some(&peering)).is_none());
}
