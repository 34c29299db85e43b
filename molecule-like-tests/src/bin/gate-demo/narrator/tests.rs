#![allow(clippy::unwrap_used)]
use super::*;
use molecule_like_tests::ceph::OsdInfo;

fn map(osds: &[(u32, bool, u64, bool)]) -> OsdMap {
    OsdMap {
        epoch: 1,
        osds: osds
            .iter()
            .map(|&(id, up, up_from, noout)| OsdInfo {
                id,
                up,
                in_: true,
                up_from,
                noout,
            })
            .collect(),
        hosts: BTreeMap::from([
            ("ceph-a".to_owned(), vec![0]),
            ("ceph-b".to_owned(), vec![1]),
        ]),
        ..OsdMap::default()
    }
}

fn texts(lines: &[Line]) -> Vec<&str> {
    lines.iter().map(|l| l.text.as_str()).collect()
}

#[test]
fn the_first_osdmap_is_the_baseline_then_only_changes_are_told() {
    let mut n = Narrator::default();
    assert!(n
        .osdmap(&map(&[(0, true, 5, false), (1, true, 6, false)]))
        .is_empty());
    let noout = n.osdmap(&map(&[(0, true, 5, true), (1, true, 6, false)]));
    assert_eq!(texts(&noout), ["noout set on osd.0"]);
    let down = n.osdmap(&map(&[(0, false, 5, true), (1, true, 6, false)]));
    assert_eq!(texts(&down), ["osd.0 down (CRUSH host ceph-a)"]);
    let booted = n.osdmap(&map(&[(0, true, 12, true), (1, true, 6, false)]));
    assert_eq!(
        texts(&booted),
        ["osd.0 up: a new daemon booted (up_from 5 → 12) (CRUSH host ceph-a)"]
    );
    let cleared = n.osdmap(&map(&[(0, true, 12, false), (1, true, 6, false)]));
    assert_eq!(texts(&cleared), ["noout cleared on osd.0"]);
    assert!(n
        .osdmap(&map(&[(0, true, 12, false), (1, true, 6, false)]))
        .is_empty());
}

#[test]
fn a_restart_between_two_samples_shows_as_a_new_daemon() {
    let mut n = Narrator::default();
    let _ = n.osdmap(&map(&[(1, true, 6, false)]));
    let lines = n.osdmap(&map(&[(1, true, 9, false)]));
    assert_eq!(
        texts(&lines),
        ["osd.1 up: a new daemon booted (up_from 6 → 9) (CRUSH host ceph-b)"]
    );
}

fn pgs(states: &[(&str, u64)]) -> PgStat {
    PgStat {
        ready: true,
        num_pgs: states.iter().map(|(_, n)| n).sum(),
        by_state: states.iter().map(|(s, n)| ((*s).to_owned(), *n)).collect(),
        pgs: Vec::new(),
    }
}

#[test]
fn pg_states_are_told_when_their_counts_change() {
    let mut n = Narrator::default();
    assert_eq!(
        texts(&n.pgs(&pgs(&[("active+clean", 33)]))),
        ["every PG active+clean (33 of 33)"]
    );
    assert!(n.pgs(&pgs(&[("active+clean", 33)])).is_empty());
    assert_eq!(
        texts(&n.pgs(&pgs(&[("active+clean", 21), ("peering", 12)]))),
        ["PGs: 21 active+clean, 12 peering"]
    );
}

#[test]
fn the_operators_step_commands_are_read_from_its_log() {
    let log = "\
2026-11-26T14:11:25.1Z DEBUG ceph_osd_operator::ceph::cli: ceph call command=osd dump -f json elapsed=20ms exit_code=Some(0)
2026-11-26T14:11:25.2Z DEBUG ceph_osd_operator::ceph::cli: ceph call command=osd ok-to-stop 0 -f json elapsed=212.5ms exit_code=Some(0)
2026-11-26T14:11:25.3Z DEBUG ceph_osd_operator::ceph::cli: ceph call command=osd add-noout osd.0 elapsed=1.01s exit_code=Some(0)
2026-11-26T14:11:25.4Z DEBUG ceph_osd_operator::ceph::cli: ceph call command=osd rm-noout os";
    let mut n = Narrator::default();
    assert_eq!(
        texts(&n.log(log)),
        [
            "ceph osd ok-to-stop 0 -f json: exit code 0 in 212 ms",
            "ceph osd add-noout osd.0: exit code 0 in 1.01 s"
        ]
    );
    // The cut line is read once complete, and nothing twice.
    let more = format!("{log}d.0 elapsed=0.9s exit_code=Some(0)\n");
    assert_eq!(
        texts(&n.log(&more)),
        ["ceph osd rm-noout osd.0: exit code 0 in 0.90 s"]
    );
    assert!(n.log(&more).is_empty());
    assert_eq!(rounded("1.613124ms"), "1.61 ms");
    assert_eq!(rounded("983.2µs"), "983 µs");
    assert_eq!(rounded("soon"), "soon");
}

#[test]
fn a_step_is_told_when_it_opens_and_when_it_closes() {
    let mut n = Narrator::default();
    let mut status: CephOsdStatus = serde_json::from_value(serde_json::json!({
        "cephStep": {
            "keys": ["ceph-a:/dev/sdb"],
            "osds": [{"id": 0, "upFrom": 5}],
            "noout": [0],
            "started": "2026-11-26T14:00:00Z"
        }
    }))
    .unwrap();
    assert_eq!(
        texts(&n.status(&status)),
        ["cephStep: ceph-a:/dev/sdb (osd.0), noout held on [osd.0]"]
    );
    assert!(n.status(&status).is_empty());
    status.ceph_step = None;
    assert_eq!(
        texts(&n.status(&status)),
        ["cephStep closed: ceph-a:/dev/sdb done"]
    );
}
