//! A disk replacement in whole plans, the gate on: the key leaves the spec for its drain (the
//! removal's, under the step lock), the id is destroyed at the epoch its safe-to-destroy passed
//! at, no pod comes back until the new disk is confirmed, then the pod carries `OSD_ID`.

use super::removal::{kinds, letting_go};
use super::*;
use crate::ceph::{DestroyLook, OsdDump, OsdId, OsdInfo, SafeToDestroy};
use crate::crd::replacement::ReplacementPhase;
use crate::plan::gate::{CephInput, DrainProgress, StepProgress};

const HOSTS: [&str; 3] = ["w1", "w2", "w3"];
const KEY: &str = "w3:/dev/sdb";

fn asking(cr: &CephOsd, value: &str) -> CephOsd {
    let mut cr = cr.clone();
    (cr.metadata.annotations.get_or_insert_with(Default::default))
        .insert(crate::labels::REPLACE.to_owned(), value.to_owned());
    cr
}

/// Ceph's OSD map: osd.3, osd.4 up and in; osd.5 (w3) as given.
fn osd_map(epoch: u64, up: bool, is_in: bool, destroyed: bool) -> OsdDump {
    let info = |id: u32, up: bool, is_in: bool, destroyed: bool| {
        let mut state = vec!["exists".to_owned()];
        if destroyed {
            state.push("destroyed".to_owned());
        }
        OsdInfo {
            id: OsdId(id),
            up,
            is_in,
            up_from: 5,
            noout: false,
            state,
        }
    };
    OsdDump {
        epoch,
        osds: [
            info(3, true, true, false),
            info(4, true, true, false),
            info(5, up, is_in, destroyed),
        ]
        .into_iter()
        .map(|o| (o.id, o))
        .collect(),
        ..OsdDump::default()
    }
}

fn view(input: CephInput, step: Option<StepProgress>, osds: OsdDump) -> CephView {
    CephView {
        input,
        step,
        osds: Some(osds),
        ..CephView::default()
    }
}

fn phase(plan: &Plan) -> ReplacementPhase {
    plan.status.replacements[0].phase
}

fn prepared_id(pod: &Pod) -> Option<String> {
    let env = pod.spec.as_ref()?.containers.first()?.env.as_ref()?;
    env.iter().find(|e| e.name == "OSD_ID")?.value.clone()
}

#[test]
fn a_disk_is_drained_destroyed_kept_away_and_prepared_again_with_its_id() {
    let all = cr(UpdateDomain::Host, &HOSTS, &["/dev/sdb"], "a");
    let mut cluster = converged(&all);
    let status = cluster.status.as_mut().expect("a status");
    status.osd_ids = [("w1:/dev/sdb", 3), ("w2:/dev/sdb", 4), (KEY, 5)]
        .into_iter()
        .map(|(k, id)| (k.to_owned(), vec![id]))
        .collect();
    let asked = asking(&all, KEY);

    // Asked for: drained as a removal's, in its domain's turn (Ceph asked first).
    cluster.ceph = view(CephInput::NotAsked, None, osd_map(20, true, true, false));
    let plan = cluster.reconcile(&asked);
    assert_eq!(phase(&plan), ReplacementPhase::Draining);
    let question = plan.gate_question.clone().expect("a question");
    assert_eq!(question.len(), 1);
    assert!(question[0].leaving && question[0].key.to_string() == KEY);
    assert!(creates(&plan).is_empty() && deletes(&plan).is_empty());

    cluster.ceph = view(
        letting_go(&plan, 5, &[]),
        None,
        osd_map(20, true, true, false),
    );
    let plan = cluster.reconcile(&asked);
    assert_eq!(kinds(&plan), ["RecordCephStep", "MarkOut"]);

    // Safe: its pod stops; gone: the drain ends, saying the id is kept (never purged).
    let draining = |progress| Some(StepProgress::Draining(progress));
    cluster.ceph = view(
        CephInput::NotAsked,
        draining(DrainProgress::Safe),
        osd_map(21, true, false, false),
    );
    let plan = cluster.reconcile(&asked);
    assert_eq!(
        deletes(&plan),
        [(KEY.to_owned(), DeleteReason::Superfluous)]
    );
    cluster.finish_terminations();
    cluster.ceph = view(CephInput::NotAsked, None, osd_map(22, false, false, false));
    let plan = cluster.reconcile(&asked);
    assert!(plan.status.ceph_step.is_none());
    let drained = (plan.events.iter())
        .find(|e| e.note.contains("drained and stopped"))
        .expect("an event");
    assert!(drained.note.contains("never purged"), "{}", drained.note);
    assert!(!drained.note.contains("ceph osd purge"), "{}", drained.note);
    // The next look finds the step over: the destroy is asked about.
    let plan = cluster.reconcile(&asked);
    assert_eq!(phase(&plan), ReplacementPhase::Destroying);
    assert!(creates(&plan).is_empty(), "no pod on the old disk");

    // Destroyed at the epoch its safe-to-destroy passed at.
    cluster.ceph = CephView {
        destroy_look: Some(DestroyLook {
            epoch: 22,
            answer: Ok(SafeToDestroy {
                safe_to_destroy: [OsdId(5)].into(),
                ..SafeToDestroy::default()
            }),
        }),
        ..view(CephInput::NotAsked, None, osd_map(22, false, false, false))
    };
    let plan = cluster.reconcile(&asked);
    assert!(matches!(
        &plan.actions[..],
        [Action::DestroyOsd {
            id: OsdId(5),
            epoch: 22
        }]
    ));

    // Destroyed: nothing comes back until the new disk is confirmed.
    cluster.ceph = view(CephInput::NotAsked, None, osd_map(23, false, false, true));
    let plan = cluster.reconcile(&asked);
    assert_eq!(phase(&plan), ReplacementPhase::AwaitingDisk);
    assert!(plan.actions.is_empty(), "{:?}", kinds(&plan));
    let progressing = condition(&plan, "Progressing");
    assert!(
        progressing.message.contains("AwaitingDisk"),
        "{}",
        progressing.message
    );

    let confirmed = asking(&all, &format!("{KEY}=swapped"));
    let plan = cluster.reconcile(&confirmed);
    assert_eq!(phase(&plan), ReplacementPhase::Preparing);
    let created: Vec<&Pod> = (plan.actions.iter())
        .filter_map(|a| match a {
            Action::Create { key, pod, .. } if key.to_string() == KEY => Some(&**pod),
            _ => None,
        })
        .collect();
    assert_eq!(created.len(), 1, "{:?}", kinds(&plan));
    assert_eq!(prepared_id(created[0]).as_deref(), Some("5"));

    // While it prepares, a template change starts no rollout step.
    let rolled = asking(
        &cr(UpdateDomain::Host, &HOSTS, &["/dev/sdb"], "b"),
        &format!("{KEY}=swapped"),
    );
    let plan = cluster.reconcile(&rolled);
    assert!(
        plan.gate_question.is_none() && deletes(&plan).is_empty(),
        "{:?} {:?} {:?} {:?}",
        kinds(&plan),
        plan.gate_question,
        plan.halted,
        plan.status.replacements
    );
    let halted = plan.halted.clone().unwrap_or_default();
    assert!(halted.contains("disk replacement of osd.5"), "{halted}");
}
