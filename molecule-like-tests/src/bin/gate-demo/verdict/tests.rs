use super::*;

fn sample(at: u64, step: Option<(&str, u32)>) -> GateSample {
    GateSample {
        at: Duration::from_secs(at),
        step: step.map(|(k, id)| (vec![k.to_owned()], vec![id])),
        noout: Vec::new(),
        condition: None,
    }
}

#[test]
fn steps_are_read_from_the_status_samples_back_to_back_or_apart() {
    let samples = [
        sample(1, None),
        sample(2, Some(("a:/dev/sdb", 0))),
        sample(3, Some(("a:/dev/sdb", 0))),
        sample(5, Some(("b:/dev/sdb", 1))),
        sample(7, None),
        sample(8, Some(("c:/dev/sdb", 2))),
    ];
    let got = steps(&samples, Duration::ZERO);
    let seen: Vec<(u32, u64, Option<u64>)> = got
        .iter()
        .map(|s| (s.ids[0], s.opened.as_secs(), s.closed.map(|c| c.as_secs())))
        .collect();
    assert_eq!(seen, [(0, 2, Some(5)), (1, 5, Some(7)), (2, 8, None)]);
    assert!(steps(&samples, Duration::from_secs(9)).is_empty());
}

#[test]
fn a_rollout_without_a_recorded_step_fails() {
    let recording = CephRecording::default();
    let before = BTreeMap::from([(0, 5)]);
    let e = check(&[], &before, &recording, 0, Duration::ZERO).unwrap_err();
    assert!(e.to_string().contains("no Ceph step was recorded"), "{e}");
    let other = Step {
        keys: vec!["b:/dev/sdb".into()],
        ids: vec![1],
        opened: Duration::ZERO,
        closed: Some(Duration::from_secs(1)),
    };
    let e = check(&[other], &before, &recording, 1, Duration::ZERO).unwrap_err();
    assert!(
        e.to_string().contains("osd.0 restarted in no recorded"),
        "{e}"
    );
}
