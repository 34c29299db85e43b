use super::*;

fn event(reason: EventReason, pod: usize) -> PlannedEvent {
    PlannedEvent {
        warning: false,
        reason,
        note: format!("pod {pod}"),
        pod: Some(format!("pod-{pod}")),
    }
}

#[test]
fn a_reason_beyond_the_limit_gets_one_event_that_tells_them_all() {
    let mut events: Vec<PlannedEvent> = (0..500).map(|i| event(EventReason::Created, i)).collect();
    events.extend((0..EVENTS_PER_REASON).map(|i| event(EventReason::Replacing, i)));
    events.push(event(EventReason::Created, 500));
    let folded = fold_mass_events(events);
    assert_eq!(folded.len(), 1 + EVENTS_PER_REASON);
    assert_eq!(folded[0].reason, EventReason::Created);
    assert_eq!(
        folded[0].note,
        "501 alike in one reconcile, from the first: pod 0; to the last: pod 500"
    );
    assert_eq!(folded[0].pod, None);
    assert!(folded[1..]
        .iter()
        .all(|e| e.reason == EventReason::Replacing && e.pod.is_some()));
}

#[test]
fn warnings_are_not_folded_into_normal_events() {
    let mut events: Vec<PlannedEvent> = (0..=EVENTS_PER_REASON)
        .map(|i| event(EventReason::Deleted, i))
        .collect();
    events.push(PlannedEvent {
        warning: true,
        ..event(EventReason::Deleted, 99)
    });
    let folded = fold_mass_events(events);
    assert_eq!(folded.len(), 2);
    assert!(!folded[0].warning && folded[0].note.starts_with("17 alike"));
    assert_eq!(folded[1].note, "pod 99");
}
