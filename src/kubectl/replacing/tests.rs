use super::*;
use crate::crd::CephOsdStatus;
use crate::testing::CephOsdBuilder;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;

const KEY: &str = "node-a:/dev/sdb";

fn key() -> OsdKey {
    OsdKey::new("node-a", "/dev/sdb")
}

fn cr(records: Vec<Replacement>) -> CephOsd {
    let mut cr = CephOsdBuilder::new("osds")
        .storage(&["node-a", "node-b"], &["/dev/sdb"])
        .build()
        .expect("a CephOSD");
    cr.status = Some(CephOsdStatus {
        osd_ids: [
            (KEY.to_owned(), vec![3]),
            ("node-b:/dev/sdb".to_owned(), vec![4]),
        ]
        .into_iter()
        .collect(),
        replacements: records,
        ..CephOsdStatus::default()
    });
    cr
}

fn record(key: &str, phase: ReplacementPhase, swapped: Option<&str>) -> Replacement {
    Replacement {
        key: key.to_owned(),
        id: 3,
        phase,
        started: Time(Timestamp::UNIX_EPOCH),
        since: Time(Timestamp::UNIX_EPOCH),
        message: String::new(),
        pgs_remaining: None,
        pgs_at_most: None,
        eta: None,
        disk_swapped: swapped.map(str::to_owned),
    }
}

fn next(cr: &CephOsd, verb: ReplaceVerb, listed: &str) -> Result<Option<String>, Failed> {
    let (mut requests, _) = replace_requests(listed);
    let record = (cr.status.iter())
        .flat_map(|s| &s.replacements)
        .find(|r| r.key == KEY);
    next_requests(cr, &key(), verb, record, &mut requests)
        .map(|n| n.map(|r| replace_annotation(&r)))
}

#[test]
fn a_key_is_one_host_and_device_without_a_confirmation() {
    assert_eq!(key_of(KEY).unwrap(), key());
    for bad in [
        "node-a",
        "node-a:/dev/sdb=swapped",
        "a:/dev/sdb,b:/dev/sdc",
        "",
    ] {
        assert_eq!(key_of(bad).unwrap_err().code, 2, "{bad}");
    }
}

#[test]
fn a_start_adds_the_key_once_and_refuses_what_the_operator_would() {
    assert_eq!(
        next(&cr(vec![]), ReplaceVerb::Start, "")
            .unwrap()
            .as_deref(),
        Some(KEY)
    );
    assert_eq!(next(&cr(vec![]), ReplaceVerb::Start, KEY).unwrap(), None);
    let not_in_spec = next_requests(
        &cr(vec![]),
        &OsdKey::new("node-z", "/dev/sdb"),
        ReplaceVerb::Start,
        None,
        &mut Vec::new(),
    );
    assert!(not_in_spec.unwrap_err().message.contains("not in the spec"));
    let busy = cr(vec![record(
        "node-b:/dev/sdb",
        ReplacementPhase::Draining,
        None,
    )]);
    let refused = next(&busy, ReplaceVerb::Start, "").unwrap_err();
    assert_eq!(refused.code, 2);
    assert!(
        refused.message.contains("one at a time"),
        "{}",
        refused.message
    );
    let done = cr(vec![record(KEY, ReplacementPhase::Done, Some("swapped"))]);
    assert!(next(&done, ReplaceVerb::Start, KEY)
        .unwrap_err()
        .message
        .contains("--cancel"));
}

#[test]
fn the_disk_is_confirmed_only_once_the_id_is_destroyed_and_each_retry_is_new() {
    let draining = cr(vec![record(KEY, ReplacementPhase::Draining, None)]);
    let early = next(&draining, ReplaceVerb::DiskSwapped, KEY).unwrap_err();
    assert!(early.message.contains("is Draining"), "{}", early.message);
    let awaiting = cr(vec![record(KEY, ReplacementPhase::AwaitingDisk, None)]);
    assert_eq!(
        next(&awaiting, ReplaceVerb::DiskSwapped, KEY)
            .unwrap()
            .as_deref(),
        Some("node-a:/dev/sdb=swapped")
    );
    let failed = cr(vec![record(
        KEY,
        ReplacementPhase::PrepareFailed,
        Some("swapped"),
    )]);
    let retry = next(&failed, ReplaceVerb::DiskSwapped, "node-a:/dev/sdb=swapped")
        .unwrap()
        .unwrap();
    assert!(retry.starts_with("node-a:/dev/sdb=swapped-"), "{retry}");
}

#[test]
fn a_cancel_is_refused_once_the_id_is_destroyed() {
    let draining = cr(vec![record(KEY, ReplacementPhase::Draining, None)]);
    assert_eq!(
        next(&draining, ReplaceVerb::Cancel, KEY)
            .unwrap()
            .as_deref(),
        Some("")
    );
    let awaiting = cr(vec![record(KEY, ReplacementPhase::AwaitingDisk, None)]);
    assert!(next(&awaiting, ReplaceVerb::Cancel, KEY)
        .unwrap_err()
        .message
        .contains("cannot be called off"));
    assert_eq!(next(&draining, ReplaceVerb::Cancel, "").unwrap(), None);
}

#[test]
fn the_time_is_estimated_from_the_rate_or_said_unknown() {
    assert_eq!(
        eta_text(10 * 1024 * 1024, 1024 * 1024),
        "about 10s each way at the current recovery rate of 1.0 MiB/s"
    );
    assert!(eta_text(1, 0).contains("no rate"));
    assert_eq!(bytes_text(1536), "1.5 KiB");
}
