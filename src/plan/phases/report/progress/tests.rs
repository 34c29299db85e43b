use super::*;

fn at(s: i64) -> Timestamp {
    Timestamp::from_second(s).expect("time")
}

fn input(now: i64, under_way: &[String], waiting: usize) -> ProgressInput<'_> {
    ProgressInput {
        template_hash: "new",
        now: at(now),
        paused: false,
        under_way,
        waiting,
        held: 0,
    }
}

#[test]
fn a_rollout_counts_domains_and_measures_each_from_start_to_done() {
    let (none, _) = next_progress(None, &input(0, &[], 0));
    assert_eq!(none, None, "nothing to roll: no record");
    let (started, _) = next_progress(None, &input(10, &[], 3));
    let started = started.expect("record");
    assert_eq!(started.started, Some(Time(at(10))));
    assert_eq!(started.domains_eligible, 3);
    let a = ["a".to_owned()];
    let (one, finished) = next_progress(Some(&started), &input(20, &a, 2));
    let one = one.expect("record");
    assert!(finished.is_empty());
    assert_eq!((one.domains_started, one.domains_eligible), (1, 3));
    let b = ["b".to_owned()];
    let (two, finished) = next_progress(Some(&one), &input(95, &b, 1));
    let two = two.expect("record");
    assert_eq!(finished, [75]);
    assert_eq!(two.recent_domain_seconds, [75]);
    assert_eq!((two.domains_started, two.domains_done), (2, 1));
    assert_eq!(two.in_progress[0].domain, "b");
    // Done: the record stays with its measurements.
    let (done, finished) = next_progress(Some(&two), &input(200, &[], 0));
    assert_eq!(finished, [105]);
    let done = done.expect("record");
    assert_eq!((done.domains_done, done.domains_eligible), (2, 2));
    // The next template starts a new record that remembers the last median.
    let mut next = input(300, &[], 4);
    next.template_hash = "newer";
    let (newer, _) = next_progress(Some(&done), &next);
    let newer = newer.expect("record");
    assert_eq!(newer.previous_median_seconds, Some(105));
    assert_eq!((newer.domains_done, newer.domains_started), (0, 0));
}

#[test]
fn paused_time_is_added_up_and_only_ten_durations_are_kept() {
    let mut record = RolloutProgress {
        template_hash: "new".into(),
        recent_domain_seconds: (1..=10).collect(),
        ..RolloutProgress::default()
    };
    let mut paused = input(100, &[], 2);
    paused.paused = true;
    record = next_progress(Some(&record), &paused).0.expect("record");
    assert_eq!(record.paused_since, Some(Time(at(100))));
    paused.now = at(150);
    record = next_progress(Some(&record), &paused).0.expect("record");
    assert_eq!(
        record.paused_since,
        Some(Time(at(100))),
        "unchanged while paused"
    );
    let x = ["x".to_owned()];
    record = next_progress(Some(&record), &input(160, &x, 1))
        .0
        .expect("record");
    assert_eq!((record.paused_seconds, &record.paused_since), (60, &None));
    record = next_progress(Some(&record), &input(170, &[], 1))
        .0
        .expect("record");
    assert_eq!(
        record.recent_domain_seconds,
        [2, 3, 4, 5, 6, 7, 8, 9, 10, 10]
    );
    assert_eq!(median(&record.recent_domain_seconds), Some(7));
    assert_eq!(median(&[]), None);
}
