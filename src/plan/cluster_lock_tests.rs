use super::*;
use k8s_openapi::api::coordination::v1::LeaseSpec;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::MicroTime;
use kube::api::ObjectMeta;

const ME: &str = "ceph/osds-a/uid-a";

fn at(s: i64) -> Timestamp {
    Timestamp::from_second(s).expect("time")
}

fn lease(holder: Option<&str>, renewed: Option<i64>, keys: Option<&str>) -> Lease {
    Lease {
        metadata: ObjectMeta {
            annotations: keys.map(|k| [(STEP_KEYS.to_owned(), k.to_owned())].into()),
            ..ObjectMeta::default()
        },
        spec: Some(LeaseSpec {
            holder_identity: holder.map(Into::into),
            renew_time: renewed.map(|s| MicroTime(at(s))),
            lease_duration_seconds: Some(60),
            ..LeaseSpec::default()
        }),
    }
}

const ALWAYS: SignedDuration = SignedDuration::ZERO;

#[test]
fn no_lease_is_created_held() {
    assert_eq!(decide(None, ME, at(100), ALWAYS), LockDecision::Create);
}

#[test]
fn another_cephosds_valid_lock_is_busy_and_named_with_its_keys() {
    let theirs = lease(
        Some("other-ns/osds-b/uid-b"),
        Some(100),
        Some("h3:/dev/sdb, h4:/dev/sdb"),
    );
    let decision = decide(Some(&theirs), ME, at(159), ALWAYS);
    let LockDecision::Busy(busy) = decision else {
        panic!("{decision:?}");
    };
    assert_eq!(busy.holder, "other-ns/osds-b");
    assert_eq!(busy.keys, ["h3:/dev/sdb", "h4:/dev/sdb"]);
    assert_eq!(
        busy.to_string(),
        "CephOSD other-ns/osds-b (on h3:/dev/sdb, h4:/dev/sdb)"
    );
    // Renewals keep it busy for the whole duration after each.
    assert!(matches!(
        decide(Some(&theirs), ME, at(100), ALWAYS),
        LockDecision::Busy(_)
    ));
}

#[test]
fn an_expired_free_or_unrenewed_lock_is_taken_as_a_new_holder() {
    let theirs = lease(Some("other-ns/osds-b/uid-b"), Some(100), None);
    assert_eq!(
        decide(Some(&theirs), ME, at(160), ALWAYS),
        LockDecision::Take { transition: true }
    );
    for free in [
        lease(None, Some(100), None),
        lease(Some(""), Some(100), None),
        lease(Some("other-ns/osds-b/uid-b"), None, None),
        Lease::default(),
    ] {
        assert_eq!(
            decide(Some(&free), ME, at(101), ALWAYS),
            LockDecision::Take { transition: true },
            "{free:?}"
        );
    }
}

#[test]
fn ours_is_renewed_when_due_and_kept_otherwise() {
    let ours = lease(Some(ME), Some(100), None);
    // Taking for a step always writes (the keys, a fresh renewal).
    assert_eq!(
        decide(Some(&ours), ME, at(101), ALWAYS),
        LockDecision::Take { transition: false }
    );
    // An open step renews every RENEW_AFTER.
    assert_eq!(
        decide(Some(&ours), ME, at(109), RENEW_AFTER),
        LockDecision::Keep
    );
    assert_eq!(
        decide(Some(&ours), ME, at(110), RENEW_AFTER),
        LockDecision::Take { transition: false }
    );
    // Expired while ours (the operator was away): written again, still ours.
    assert_eq!(
        decide(Some(&ours), ME, at(200), RENEW_AFTER),
        LockDecision::Take { transition: false }
    );
}

#[test]
fn a_cephosd_recreated_under_the_same_name_is_another_holder() {
    let old = lease(Some("ceph/osds-a/uid-old"), Some(100), None);
    assert!(matches!(
        decide(Some(&old), ME, at(101), ALWAYS),
        LockDecision::Busy(Busy { holder, .. }) if holder == "ceph/osds-a"
    ));
    assert!(!held_by(&old, ME));
    assert!(held_by(&lease(Some(ME), Some(100), None), ME));
    assert!(!held_by(&lease(None, Some(100), None), ME));
}

#[test]
fn released_only_when_no_step_stays_open_and_the_plan_was_carried_out() {
    // Ceph said wait or halt, or the step ended: released.
    assert!(releases(true, false, false));
    // A step stays open (just started, or under way): kept.
    assert!(!releases(true, true, false));
    // The plan failed part-way: kept until it expires or the next reconcile decides.
    assert!(!releases(true, false, true));
    // Never held here (another's step holds it, or no question was asked).
    assert!(!releases(false, false, false));
}

#[test]
fn the_lease_is_named_by_the_fsid_only_when_it_is_one() {
    assert_eq!(
        lock_name("0C5E8C4A-2B1F-4E55-9C3B-6F3E2A1D0B7E").as_deref(),
        Some("ceph-osd-step-0c5e8c4a-2b1f-4e55-9c3b-6f3e2a1d0b7e")
    );
    for bad in ["", "-", "../x", "a b", &"a".repeat(37)] {
        assert_eq!(lock_name(bad), None, "{bad:?}");
    }
}

/// A CephOSD whose question found the lock another's: no step, no deletion, `CephGate`
/// False `CephClusterBusy` naming the holder and its keys, the rollout halted saying it
/// waits, asked again soon.
#[test]
fn a_busy_cluster_halts_the_proposal_naming_the_holder() {
    use crate::ceph::{Blocker, GateDecision};
    use crate::crd::osd::OsdKey;
    use crate::plan::ceph_gate::{gate, CephInput, CephView, GateAnswer, GateInput, GateSubject};
    use crate::plan::conditions::ConditionReason;

    let key = OsdKey::new("h1", "/dev/sdb");
    let proposed = [GateSubject {
        key: key.clone(),
        pod: Some("osd-h1-sdb-x".into()),
        domain: "h1".into(),
    }];
    let busy = Busy {
        holder: "other-ns/osds-b".into(),
        keys: vec!["h3:/dev/sdb".into()],
    };
    let view = CephView {
        input: CephInput::Answered(GateAnswer {
            keys: [(key, std::collections::BTreeSet::new())].into(),
            decision: GateDecision::Wait {
                blockers: vec![Blocker::ClusterBusy {
                    holder: busy.to_string(),
                    lease: "ceph-osd-operator/ceph-osd-step-f00d".into(),
                }],
            },
            up_from: std::collections::BTreeMap::new(),
            learned: std::collections::BTreeMap::new(),
        }),
        ..CephView::default()
    };
    let out = gate(&GateInput {
        view: &view,
        skipped: false,
        open: None,
        proposed: &proposed,
        settled: false,
        untouched: false,
        now: at(1000),
    });
    assert!(!out.deletions_allowed && out.step.is_none() && out.first.is_empty());
    assert!(!out.condition.holds);
    assert_eq!(
        out.condition.reason,
        ConditionReason::CephBlocked("CephClusterBusy")
    );
    assert_eq!(
        out.condition.message,
        "h1:/dev/sdb waits for the Ceph cluster: a step of CephOSD other-ns/osds-b (on \
         h3:/dev/sdb) holds the Ceph cluster (Lease ceph-osd-operator/ceph-osd-step-f00d): one \
         step at a time per Ceph cluster"
    );
    assert_eq!(out.halted.as_deref(), Some(out.condition.message.as_str()));
    assert!(out.requeue_after.is_some());
}
