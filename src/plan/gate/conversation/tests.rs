//! The conversation: the questions asked in turn (`ok-to-stop` for exactly the domains' ids,
//! then about fewer domains or part of a failure domain when Ceph refuses) and the answer
//! they reach, a drain's without `ok-to-stop`.

use super::*;
use crate::ceph::test_data::ids;
use crate::ceph::UnknownReason;
use crate::plan::gate::conversation;
use crate::testing::gate_inputs::{
    answered, asked, known, ok_to_stop, CephFactsBuilder, GateSubjectBuilder,
};

fn messages(d: &GateDecision) -> Vec<String> {
    d.blockers().iter().map(ToString::to_string).collect()
}

#[test]
fn a_conversation_asks_ok_to_stop_for_exactly_the_domains_ids_and_proceeds_on_its_yes() {
    let question = [GateSubjectBuilder::host("host-1").build()];
    let facts = CephFactsBuilder::healthy().noout(&[1]).build();
    let mapped = vec![
        known("host-1:/dev/sdb", &[1]),
        known("host-2:/dev/sdb", &[2]),
    ];
    let runs = [OsdKey::new("host-2", "/dev/sdb")];
    let unreadable = BTreeMap::from([("osd-host-3-sdb".to_owned(), "three".to_owned())]);
    let turn = conversation::start(&question, &runs, facts, mapped, unreadable.clone());
    let asking = asked(turn);
    assert_eq!(asking.ids(), &ids(&[1]));
    let done = answered(asking.heard(Ok(&ok_to_stop(true, &[1]))));
    let answer = done.answer;
    assert_eq!(answer.decision, GateDecision::Proceed { ids: ids(&[1]) });
    assert_eq!(
        answer.keys,
        BTreeMap::from([(OsdKey::new("host-1", "/dev/sdb"), ids(&[1]))])
    );
    assert_eq!(
        answer.up_from.keys().copied().collect::<Vec<_>>(),
        [OsdId(1)]
    );
    assert_eq!(answer.noout_before, ids(&[1]), "the admin's noout");
    assert!(answer.out.is_empty(), "{answer:?}");
    // Learnt from metadata: the asked key and the other key the operator runs.
    assert_eq!(
        answer
            .learned
            .keys()
            .map(ToString::to_string)
            .collect::<Vec<_>>(),
        ["host-1:/dev/sdb", "host-2:/dev/sdb"]
    );
    assert_eq!(answer.unreadable_statements, unreadable);
    assert!(done.refused_together.is_empty());
}

#[test]
fn a_conversation_asks_about_fewer_domains_when_ceph_refuses_them_together() {
    let question = [
        GateSubjectBuilder::host("host-1").build(),
        GateSubjectBuilder::host("host-2").build(),
    ];
    let mapped = vec![
        known("host-1:/dev/sdb", &[1]),
        known("host-2:/dev/sdb", &[2]),
    ];
    let turn = conversation::start(
        &question,
        &[],
        CephFactsBuilder::healthy().build(),
        mapped,
        BTreeMap::new(),
    );
    let both = asked(turn);
    assert_eq!(both.ids(), &ids(&[1, 2]));
    let first = asked(both.heard(Ok(&ok_to_stop(false, &[1, 2]))));
    assert_eq!(first.ids(), &ids(&[1]), "the first domain alone");
    let done = answered(first.heard(Ok(&ok_to_stop(true, &[1]))));
    assert_eq!(
        done.answer.decision,
        GateDecision::Proceed { ids: ids(&[1]) }
    );
    assert_eq!(
        done.answer
            .keys
            .keys()
            .map(ToString::to_string)
            .collect::<Vec<_>>(),
        ["host-1:/dev/sdb"],
        "the step is the first domain"
    );
    assert_eq!(
        done.refused_together.len(),
        1,
        "{:?}",
        done.refused_together
    );
    assert_eq!(done.refused_together[0].domains, 2);
    assert!(matches!(
        done.refused_together[0].decision,
        GateDecision::Wait { .. }
    ));

    // Refused alone too: Ceph's answer about the first domain stands.
    let mapped = vec![
        known("host-1:/dev/sdb", &[1]),
        known("host-2:/dev/sdb", &[2]),
    ];
    let both = asked(conversation::start(
        &question,
        &[],
        CephFactsBuilder::healthy().build(),
        mapped,
        BTreeMap::new(),
    ));
    let first = asked(both.heard(Ok(&ok_to_stop(false, &[1, 2]))));
    let done = answered(first.heard(Ok(&ok_to_stop(false, &[1]))));
    assert!(
        matches!(done.answer.decision, GateDecision::Wait { .. }),
        "{:?}",
        done.answer.decision
    );
    assert_eq!(done.answer.keys.len(), 1);
}

#[test]
fn no_reply_is_a_wait_that_says_why() {
    let question = [GateSubjectBuilder::host("host-1").build()];
    let mapped = vec![known("host-1:/dev/sdb", &[1])];
    let asking = asked(conversation::start(
        &question,
        &[],
        CephFactsBuilder::healthy().build(),
        mapped,
        BTreeMap::new(),
    ));
    let done = answered(asking.heard(Err(&"ceph timed out after 5s")));
    assert_eq!(
        messages(&done.answer.decision),
        [Blocker::NoAnswer {
            error: "ceph timed out after 5s".into()
        }
        .to_string()]
    );
    assert!(done.answer.noout_before.is_empty() && done.answer.out.is_empty());

    let unanswered = conversation::unanswered(&question, BTreeMap::new(), &"no mon answered");
    assert_eq!(
        unanswered.keys,
        BTreeMap::from([(OsdKey::new("host-1", "/dev/sdb"), BTreeSet::new())])
    );
    assert_eq!(
        unanswered.decision,
        GateDecision::no_answer(&"no mon answered")
    );
}

#[test]
fn a_drain_is_answered_without_ok_to_stop_and_says_which_ids_are_out() {
    let question = [GateSubjectBuilder::host("host-1").leaving(true).build()];
    let mut facts = CephFactsBuilder::healthy().build();
    facts.osds.osds.get_mut(&OsdId(1)).expect("osd.1").is_in = false;
    let mapped = vec![known("host-1:/dev/sdb", &[1])];
    let done = answered(conversation::start(
        &question,
        &[],
        facts,
        mapped,
        BTreeMap::new(),
    ));
    assert_eq!(
        done.answer.decision,
        GateDecision::Proceed { ids: ids(&[1]) }
    );
    assert_eq!(done.answer.out, ids(&[1]));

    // A key Ceph cannot map is refused by the precheck: nothing is asked.
    let question = [GateSubjectBuilder::host("host-1").build()];
    let unmapped = vec![MappedKey {
        key: "host-1:/dev/sdb".into(),
        pod: None,
        ids: KeyIds::Unknown(UnknownReason::NoEvidence {
            pod: None,
            reported_by_down: vec![],
            node: crate::ceph::NodeEvidence::NotLooked,
            unreadable_statement: None,
        }),
    }];
    let done = answered(conversation::start(
        &question,
        &[],
        CephFactsBuilder::healthy().build(),
        unmapped,
        BTreeMap::new(),
    ));
    assert!(
        matches!(done.answer.decision, GateDecision::Halt { .. }),
        "{:?}",
        done.answer.decision
    );
}

#[test]
fn a_conversation_asks_about_part_of_a_failure_domain_ceph_refuses_whole() {
    let question = [
        GateSubjectBuilder::host("host-1").domain("r1").build(),
        GateSubjectBuilder::host("host-2").domain("r1").build(),
    ];
    let mapped = vec![
        known("host-1:/dev/sdb", &[1]),
        known("host-2:/dev/sdb", &[2]),
    ];
    let turn = conversation::start(
        &question,
        &[],
        CephFactsBuilder::healthy().build(),
        mapped,
        BTreeMap::new(),
    );
    let whole = asked(turn);
    assert_eq!(whole.ids(), &ids(&[1, 2]), "the whole rack first");
    let part = asked(whole.heard(Ok(&ok_to_stop(false, &[1, 2]))));
    assert_eq!(part.ids(), &ids(&[1]), "then its first host");
    let done = answered(part.heard(Ok(&ok_to_stop(true, &[1]))));
    assert_eq!(
        done.answer.decision,
        GateDecision::Proceed { ids: ids(&[1]) }
    );
    let refused = done.answer.refused_whole.expect("the rack's refusal kept");
    assert_eq!(refused.domain, "r1");
    assert!(
        refused.decision.to_string().contains("8 PGs not ok"),
        "Ceph's numbers: {}",
        refused.decision
    );
    assert!(done.refused_together.is_empty(), "one domain, not several");
}
