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

use Purpose::{NewStep, Renew};

/// `lease` with a claim on the next turn by `who`, written at `since`.
fn claimed(mut lease: Lease, who: &str, since: i64) -> Lease {
    let annotations = lease
        .metadata
        .annotations
        .get_or_insert_with(Default::default);
    annotations.insert(NEXT_HOLDER.to_owned(), who.to_owned());
    annotations.insert(NEXT_SINCE.to_owned(), at(since).to_string());
    lease
}

fn busy(holder: &str, keys: &[&str], next: bool) -> Busy {
    Busy {
        holder: holder.into(),
        keys: keys.iter().map(|k| (*k).to_owned()).collect(),
        next,
    }
}

#[test]
fn no_lease_is_created_held() {
    assert_eq!(decide(None, ME, at(100), NewStep), LockDecision::Create);
}

#[test]
fn another_cephosds_valid_lock_is_busy_and_named_with_its_keys() {
    let theirs = lease(
        Some("other-ns/osds-b/uid-b"),
        Some(100),
        Some("h3:/dev/sdb, h4:/dev/sdb"),
    );
    let expected = busy("other-ns/osds-b", &["h3:/dev/sdb", "h4:/dev/sdb"], false);
    assert_eq!(
        expected.to_string(),
        "a step of CephOSD other-ns/osds-b (on h3:/dev/sdb, h4:/dev/sdb) holds the Ceph cluster"
    );
    // A new step waits and claims the next turn; an open step of ours claims nothing.
    assert_eq!(
        decide(Some(&theirs), ME, at(159), NewStep),
        LockDecision::Busy {
            busy: expected.clone(),
            claim: true
        }
    );
    assert_eq!(
        decide(Some(&theirs), ME, at(100), Renew),
        LockDecision::Busy {
            busy: expected,
            claim: false
        }
    );
}

#[test]
fn an_expired_free_or_unrenewed_lock_is_taken_as_a_new_holder() {
    let theirs = lease(Some("other-ns/osds-b/uid-b"), Some(100), None);
    assert_eq!(
        decide(Some(&theirs), ME, at(160), NewStep),
        LockDecision::Take { transition: true }
    );
    for free in [
        lease(None, Some(100), None),
        lease(Some(""), Some(100), None),
        lease(Some("other-ns/osds-b/uid-b"), None, None),
        Lease::default(),
    ] {
        assert_eq!(
            decide(Some(&free), ME, at(101), NewStep),
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
        decide(Some(&ours), ME, at(101), NewStep),
        LockDecision::Take { transition: false }
    );
    // An open step renews every RENEW_AFTER.
    assert_eq!(decide(Some(&ours), ME, at(109), Renew), LockDecision::Keep);
    assert_eq!(
        decide(Some(&ours), ME, at(110), Renew),
        LockDecision::Take { transition: false }
    );
    // Expired while ours (the operator was away): written again, still ours.
    assert_eq!(
        decide(Some(&ours), ME, at(200), Renew),
        LockDecision::Take { transition: false }
    );
}

/// Turns: the holder lets the lock go after its step when another waits, the free lock waits
/// for the claimant, a claim lapses when no longer renewed; the first claim stands.
#[test]
fn a_waiting_cephosd_gets_the_next_turn() {
    const OTHER: &str = "other-ns/osds-b/uid-b";
    let waiting = busy("other-ns/osds-b", &[], true);
    assert_eq!(
        waiting.to_string(),
        "CephOSD other-ns/osds-b has the next turn on the Ceph cluster (it waited for another's \
         step)"
    );
    let ours = claimed(lease(Some(ME), Some(100), None), OTHER, 100);
    // Our step ended and we would start another: we yield instead.
    assert_eq!(
        decide(Some(&ours), ME, at(105), NewStep),
        LockDecision::Yield(waiting.clone())
    );
    // Our step still open: kept, renewed as due.
    assert_eq!(decide(Some(&ours), ME, at(105), Renew), LockDecision::Keep);
    // Let go: reserved for the claimant while its claim stands, then anyone's.
    let free = claimed(lease(None, Some(105), None), OTHER, 100);
    assert_eq!(
        decide(Some(&free), ME, at(110), NewStep),
        LockDecision::Busy {
            busy: waiting,
            claim: false
        }
    );
    assert_eq!(
        decide(Some(&free), ME, at(100 + NEXT_TURN_FOR.as_secs()), NewStep),
        LockDecision::Take { transition: true }
    );
    assert_eq!(
        decide(Some(&free), OTHER, at(110), NewStep),
        LockDecision::Take { transition: true }
    );
    // Held by a third CephOSD: the first claim stands; the claimant writes its own again
    // once it is CLAIM_AGAIN_AFTER old.
    let third = claimed(lease(Some("x/osds-c/uid-c"), Some(100), None), OTHER, 100);
    assert!(matches!(
        decide(Some(&third), ME, at(104), NewStep),
        LockDecision::Busy { claim: false, .. }
    ));
    assert!(matches!(
        decide(Some(&third), OTHER, at(104), NewStep),
        LockDecision::Busy { claim: false, .. }
    ));
    assert!(matches!(
        decide(Some(&third), OTHER, at(105), NewStep),
        LockDecision::Busy { claim: true, .. }
    ));
    // A lapsed claim is anyone's to make.
    assert!(matches!(
        decide(Some(&third), ME, at(100 + NEXT_TURN_FOR.as_secs()), NewStep),
        LockDecision::Busy { claim: true, .. }
    ));
}

/// The claimant's turn lasts until its step opens: taking the lock spends nothing (Ceph may
/// say wait, and the lock goes free again still reserved for it); the first look of its open
/// step spends the claim, renewal due or not.
#[test]
fn a_claim_is_spent_when_the_claimants_step_opens() {
    const OTHER: &str = "other-ns/osds-b/uid-b";
    let taken = claimed(lease(Some(ME), Some(110), None), ME, 100);
    assert_eq!(
        decide(Some(&taken), ME, at(111), NewStep),
        LockDecision::Take { transition: false }
    );
    assert!(matches!(
        decide(Some(&taken), OTHER, at(111), NewStep),
        LockDecision::Busy { claim: false, .. }
    ));
    let let_go = claimed(lease(None, Some(111), None), ME, 100);
    assert!(matches!(
        decide(Some(&let_go), OTHER, at(112), NewStep),
        LockDecision::Busy {
            busy: Busy { next: true, .. },
            claim: false
        }
    ));
    assert_eq!(
        decide(Some(&let_go), ME, at(113), NewStep),
        LockDecision::Take { transition: true }
    );
    assert_eq!(
        decide(Some(&taken), ME, at(111), Renew),
        LockDecision::SpendClaim
    );
    // Lapsed, it is no longer ours to spend.
    assert_eq!(
        decide(Some(&taken), ME, at(100 + NEXT_TURN_FOR.as_secs()), Renew),
        LockDecision::Keep
    );
}

#[test]
fn a_cephosd_recreated_under_the_same_name_is_another_holder() {
    let old = lease(Some("ceph/osds-a/uid-old"), Some(100), None);
    assert!(matches!(
        decide(Some(&old), ME, at(101), NewStep),
        LockDecision::Busy { busy: Busy { holder, .. }, .. } if holder == "ceph/osds-a"
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
    use crate::crd::osd::OsdKey;
    use crate::plan::gate::{
        gate, Blocker, CephInput, CephView, GateAnswer, GateDecision, GateInput, GateSubject,
    };
    use crate::plan::says::conditions::ConditionReason;

    let key = OsdKey::new("h1", "/dev/sdb");
    let proposed = [GateSubject {
        key: key.clone(),
        pod: Some("osd-h1-sdb-x".into()),
        domain: "h1".into(),
        leaving: false,
    }];
    let busy = busy("other-ns/osds-b", &["h3:/dev/sdb"], false);
    let view = CephView {
        input: CephInput::Answered(GateAnswer {
            keys: [(key, std::collections::BTreeSet::new())].into(),
            decision: GateDecision::Wait {
                blockers: vec![Blocker::ClusterBusy {
                    holder: busy.to_string(),
                    lease: "ceph-osd-operator/ceph-osd-step-f00d".into(),
                }],
            },
            ..GateAnswer::default()
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
        returned: std::collections::BTreeSet::new(),
        crashed: None,
        replacing: &std::collections::BTreeSet::new(),
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

#[test]
fn only_a_held_lock_lets_a_step_start_and_the_others_say_why() {
    use crate::crd::osd::OsdKey;
    use crate::plan::gate::{Blocker, GateAnswer, GateDecision, GateSubject};
    assert_eq!(LockState::Held.blocker(), None);
    let busy = LockState::Busy {
        busy: busy("team-a/osds", &["h1:/dev/sdb"], false),
        lease: "ceph/ceph-osd-step-5b9d".into(),
    };
    let Some(Blocker::ClusterBusy { holder, lease }) = busy.blocker() else {
        panic!("{busy:?}");
    };
    assert_eq!(
        holder,
        "a step of CephOSD team-a/osds (on h1:/dev/sdb) holds the Ceph cluster"
    );
    assert_eq!(lease, "ceph/ceph-osd-step-5b9d");
    assert_eq!(
        LockState::Failed("forbidden".into()).blocker(),
        Some(Blocker::ClusterLockFailed {
            error: "forbidden".into()
        })
    );
    let no_fsid = LockState::NoFsid("no fsid".into())
        .blocker()
        .expect("no fsid");
    assert_eq!(
        no_fsid,
        Blocker::NoAnswer {
            error: "no fsid".into()
        }
    );
    // The answer while the lock is not held: a Wait on its keys, none mapped.
    let question = [GateSubject {
        key: OsdKey::new("h1", "/dev/sdb"),
        pod: None,
        domain: "h1".into(),
        leaving: false,
    }];
    let waiting = GateAnswer::waiting(&question, no_fsid.clone());
    assert_eq!(
        waiting.decision,
        GateDecision::Wait {
            blockers: vec![no_fsid]
        }
    );
    assert_eq!(waiting.keys.len(), 1);
    assert!(waiting
        .keys
        .values()
        .all(std::collections::BTreeSet::is_empty));
}

#[test]
fn a_lease_that_says_longer_than_the_cap_is_read_as_the_cap() {
    // A forged lock of an hour: expired 60 s after its last renewal.
    let mut forged = lease(Some("other-ns/osds-b/uid-b"), Some(100), None);
    forged.spec.as_mut().expect("spec").lease_duration_seconds = Some(3600);
    assert!(matches!(
        decide(Some(&forged), ME, at(159), NewStep),
        LockDecision::Busy { .. }
    ));
    assert_eq!(
        decide(Some(&forged), ME, at(160), NewStep),
        LockDecision::Take { transition: true }
    );
    assert_eq!(held_for(Some(3600)), LOCK_DURATION);
    assert_eq!(held_for(Some(15)), SignedDuration::from_secs(15));
    assert_eq!(held_for(None), SignedDuration::ZERO);
}

#[test]
fn an_open_step_finds_its_lock_lost_when_deleted_emptied_or_anothers() {
    assert_eq!(lost(None, ME), Some(LockLost::Deleted));
    assert_eq!(
        lost(Some(&lease(None, Some(100), None)), ME),
        Some(LockLost::Emptied)
    );
    let theirs = lease(Some("other-ns/osds-b/uid-b"), Some(100), None);
    assert_eq!(
        lost(Some(&theirs), ME),
        Some(LockLost::TakenBy("other-ns/osds-b".into()))
    );
    assert_eq!(
        LockLost::TakenBy("other-ns/osds-b".into()).to_string(),
        "its Lease names other-ns/osds-b as holder"
    );
    // Its own, even expired: no one took it.
    assert_eq!(lost(Some(&lease(Some(ME), Some(1), None)), ME), None);
}
