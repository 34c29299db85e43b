use super::*;
use crate::crd::{BudgetStatus, CephStep};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{Condition, Time};
use k8s_openapi::jiff::Timestamp;

#[test]
fn exposes_counts_by_state_and_errors() {
    let metrics = Metrics::default();
    let summary = Summary {
        desired: 4,
        ready: 3,
        updated: 2,
        out_of_date: 2,
        ..Summary::default()
    };
    metrics.reconciled("ceph", "osds", &summary, Duration::from_millis(12));
    metrics.failed(Failure::List, Duration::from_millis(3));
    metrics.set_leader(true);
    let text = metrics.encode();
    for line in [
        "ceph_osd_operator_reconciles_total 2",
        r#"ceph_osd_operator_reconcile_errors_total{category="ListFailed"} 1"#,
        r#"ceph_osd_operator_osd_pods{namespace="ceph",cephosd="osds",state="out-of-date"} 2"#,
        r#"ceph_osd_operator_osds_desired{namespace="ceph",cephosd="osds"} 4"#,
        "ceph_osd_operator_leader 1",
        "ceph_osd_operator_reconcile_duration_seconds_count 2",
    ] {
        assert!(text.lines().any(|l| l == line), "missing {line} in\n{text}");
    }
    metrics.forget("ceph", "osds");
    assert!(!metrics.encode().contains(r#"cephosd="osds""#));
}

fn condition(type_: &str, status: &str, reason: &str, since: i64) -> Condition {
    Condition {
        type_: type_.to_owned(),
        status: status.to_owned(),
        reason: reason.to_owned(),
        message: String::new(),
        observed_generation: None,
        last_transition_time: Time(Timestamp::from_second(since).unwrap()),
    }
}

#[test]
fn exposes_what_the_status_shows_since_when_and_drops_what_it_no_longer_shows() {
    let metrics = Metrics::default();
    let mut status = CephOsdStatus {
        conditions: vec![
            condition("Stalled", "True", "ProgressDeadlineExceeded", 1000),
            condition("CephGate", "False", "CephUnavailable", 900),
        ],
        ceph_step: Some(CephStep {
            keys: vec!["node-a:/dev/sdb".to_owned()],
            osds: vec![],
            noout: vec![3],
            started: Time(Timestamp::from_second(950).unwrap()),
            drain: None,
            domains: std::collections::BTreeMap::new(),
        }),
        budget: Some(BudgetStatus {
            allowed_domains: 0,
            unavailable_domains: vec!["node-a".to_owned()],
            drains_waiting: vec!["node-b".to_owned(), "node-c".to_owned()],
        }),
        ..CephOsdStatus::default()
    };
    let limit = Duration::from_secs(1800);
    metrics.status_shown("ceph", "osds", &status, limit);
    let text = metrics.encode();
    for line in [
        r#"ceph_osd_operator_condition_since_timestamp_seconds{namespace="ceph",cephosd="osds",type="Stalled",status="True",reason="ProgressDeadlineExceeded"} 1000"#,
        r#"ceph_osd_operator_condition_since_timestamp_seconds{namespace="ceph",cephosd="osds",type="CephGate",status="False",reason="CephUnavailable"} 900"#,
        r#"ceph_osd_operator_ceph_noout_since_timestamp_seconds{namespace="ceph",cephosd="osds"} 950"#,
        r#"ceph_osd_operator_ceph_noout_limit_seconds{namespace="ceph",cephosd="osds"} 1800"#,
        r#"ceph_osd_operator_budget_drains_waiting{namespace="ceph",cephosd="osds"} 2"#,
    ] {
        assert!(text.lines().any(|l| l == line), "missing {line} in\n{text}");
    }
    // The gate answers again, the step ended, the budget is off: their series go.
    status.conditions = vec![condition("CephGate", "True", "CephIdle", 1200)];
    status.ceph_step = None;
    status.budget = None;
    metrics.status_shown("ceph", "osds", &status, limit);
    let text = metrics.encode();
    assert!(text.contains(r#"type="CephGate",status="True",reason="CephIdle"} 1200"#));
    for gone in [
        "Stalled",
        "CephUnavailable",
        "ceph_noout_since_timestamp_seconds{",
        "ceph_noout_limit_seconds{",
        "drains_waiting{",
    ] {
        assert!(!text.contains(gone), "{gone} left in\n{text}");
    }
    metrics.forget("ceph", "osds");
    assert!(!metrics.encode().contains(r#"cephosd="osds""#));
}
