use super::*;
use crate::crd::osd::OsdKey;
use crate::plan::says::actions::DeleteReason;

fn delete() -> Action {
    Action::Delete {
        name: "p".into(),
        uid: None,
        key: None,
        reason: DeleteReason::Superfluous,
    }
}

fn patch() -> Action {
    Action::PatchState {
        name: "p".into(),
        key: OsdKey::new("h", "/dev/sdb"),
        state: labels::PodState::OutOfDate,
    }
}

#[test]
fn failure_summaries_are_stable_from_one_attempt_to_the_next() {
    let rejected = |name: &str| {
        let status: kube::core::Status = serde_json::from_value(json!({
                "status": "Failure", "code": 422, "reason": "Invalid",
                "message": format!("Pod \"{name}\" is invalid: spec.containers[0].image: Required value"),
                "details": {"name": name, "kind": "Pod", "causes": [
                    {"reason": "FieldValueRequired", "message": "Required value", "field": "spec.containers[0].image"}]}
            }))
            .expect("status");
        ExecuteError::Create {
            name: name.to_owned(),
            key: "h1:/dev/sdb".to_owned(),
            source: kube::Error::Api(Box::new(status)),
        }
    };
    let first = rejected("osd-h1-sdb-aaaaa").summary();
    assert_eq!(first, rejected("osd-h1-sdb-bbbbb").summary());
    assert_eq!(
        first,
        "cannot create the pod of OSD h1:/dev/sdb: spec.containers[0].image: Required value"
    );
    assert!(!rejected("x").may_have_applied());
}

#[test]
fn an_events_action_is_its_note_cut_to_the_apis_limit() {
    let event = |note: &str| PlannedEvent {
        warning: true,
        reason: EventReason::NooutExpired,
        note: note.to_owned(),
        pod: None,
    };
    assert_eq!(
        action_of(&event("noout on osd.3 was held")),
        "noout on osd.3 was held"
    );
    assert_eq!(action_of(&event("")), "NooutExpired");
    let long = "é".repeat(100);
    let action = action_of(&event(&long));
    assert!(action.len() <= MAX_ACTION_LEN && action.chars().all(|c| c == 'é'));
    assert_eq!(action.chars().count(), 64);
}

#[test]
fn runs_keep_kinds_in_order() {
    let mut actions: Vec<Action> = (0..3).map(|_| delete()).collect();
    actions.extend((0..20).map(|_| patch()));
    actions.push(delete());
    assert_eq!(runs(&actions), [0..3, 3..23, 23..24]);
    assert!(runs(&[]).is_empty());
}
