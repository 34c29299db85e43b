use super::*;
use crate::testing::CephOsdBuilder;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use serde_json::json;

fn cr_with(record: Option<RolloutProgress>) -> CephOsd {
    let mut cr = CephOsdBuilder::new("osds")
        .template(json!({"spec": {"terminationGracePeriodSeconds": 20}}))
        .build()
        .expect("cr");
    cr.spec.min_ready_seconds = Some(10);
    cr.status = Some(crate::crd::CephOsdStatus {
        rollout: record,
        ..Default::default()
    });
    cr
}

#[test]
fn measured_steps_give_median_and_p90_else_a_guess_from_the_template() {
    let record = RolloutProgress {
        template_hash: "new".into(),
        recent_domain_seconds: vec![60, 100, 80, 70, 300],
        previous_median_seconds: Some(50),
        ..Default::default()
    };
    let measured = StepEstimate::of(&cr_with(Some(record.clone())), "new");
    assert_eq!(
        (
            measured.median_seconds,
            measured.p90_seconds,
            measured.measured
        ),
        (80, 300, 5)
    );
    assert_eq!(measured.remaining(3), (240, 900));
    // No domain of this template finished: grace + soak + the previous median.
    let fresh = RolloutProgress {
        recent_domain_seconds: Vec::new(),
        ..record.clone()
    };
    assert_eq!(
        StepEstimate::of(&cr_with(Some(fresh)), "new").median_seconds,
        80
    );
    // A record of the previous template: its median is the previous one.
    assert_eq!(
        StepEstimate::of(&cr_with(Some(record)), "newer").median_seconds,
        110
    );
    assert_eq!(StepEstimate::of(&cr_with(None), "new").median_seconds, 30);
}

#[test]
fn elapsed_leaves_paused_time_out_and_durations_read_as_people_write_them() {
    let at = |s| Timestamp::from_second(s).expect("time");
    let record = RolloutProgress {
        started: Some(Time(at(0))),
        paused_seconds: 100,
        paused_since: Some(Time(at(900))),
        ..Default::default()
    };
    assert_eq!(elapsed(&record, at(1000)), Some(800));
    assert_eq!(human(12), "12s");
    assert_eq!(human(245), "4m05s");
    assert_eq!(human(3720), "1h02m");
}
