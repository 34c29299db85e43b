use super::super::pg_states::pg_class;
use super::super::recorder::parse_line;
use super::*;
use crate::ceph::{OsdInfo, PgBrief};

fn map(epoch: u64, up: &[(u32, bool, u64)]) -> Observed {
    Observed::OsdMap(OsdMap {
        epoch,
        osds: up
            .iter()
            .map(|&(id, up, up_from)| OsdInfo {
                id,
                up,
                in_: true,
                up_from,
                noout: false,
            })
            .collect(),
        hosts: [("a", 0), ("b", 1), ("c", 2)]
            .into_iter()
            .map(|(h, id)| (h.to_owned(), vec![id]))
            .collect(),
        ..OsdMap::default()
    })
}

fn pgs(states: &[(&str, u64)]) -> Observed {
    Observed::Pgs(PgStat {
        ready: true,
        num_pgs: states.iter().map(|(_, n)| n).sum(),
        by_state: states.iter().map(|(s, n)| ((*s).to_owned(), *n)).collect(),
        pgs: Vec::new(),
    })
}

fn recording(list: Vec<(u64, Observed)>) -> CephRecording {
    CephRecording {
        events: list
            .into_iter()
            .map(|(ms, observed)| CephEvent {
                at: Duration::from_millis(ms),
                observed,
            })
            .collect(),
    }
}

#[test]
fn watch_lines_are_read() {
    let line = r#"{"kind":"osdmap","epoch":18,"flags":"sortbitwise","crush_node_flags":{},"hosts":{"a":[1]},"pools":{"1":{"size":3,"min_size":2}},"osds":[{"id":1,"up":true,"in":true,"up_from":15,"noout":false}],"t":1.5}"#;
    let Ok(Observed::OsdMap(map)) = parse_line(line) else {
        panic!("{:?}", parse_line(line))
    };
    assert_eq!(map.pools[&1].min_size, 2);
    assert_eq!(map.host_of(1), Some("a"));
    let line = r#"{"kind":"pgs","ready":true,"num_pgs":1,"by_state":{"peering":1},"pgs":[{"pgid":"1.0","state":"peering","acting":[1]}],"t":1.5}"#;
    let Ok(Observed::Pgs(pgs)) = parse_line(line) else {
        panic!("{:?}", parse_line(line))
    };
    assert_eq!(pgs.pgs[0].pool(), Some(1));
    assert_eq!(
        parse_line(r#"{"kind":"error","error":"pgs: rc 110"}"#),
        Ok(Observed::Error("pgs: rc 110".into()))
    );
}

#[test]
fn pg_states_are_classified_by_their_last_report() {
    assert_eq!(classify("active+clean"), PgClass::Active);
    assert_eq!(classify("stale+active+clean"), PgClass::Active);
    assert_eq!(classify("active+undersized+degraded"), PgClass::Active);
    assert_eq!(classify("peering"), PgClass::Inactive);
    assert_eq!(classify("stale+peering"), PgClass::Inactive);
    assert_eq!(classify("activating+undersized"), PgClass::Inactive);
    assert_eq!(classify("undersized+degraded+peered"), PgClass::Unavailable);
    assert_eq!(classify("stale+down"), PgClass::Unavailable);
    assert_eq!(classify("unknown"), PgClass::Unknown);
}

#[test]
fn two_hosts_down_at_once_are_caught() {
    let one_at_a_time = recording(vec![
        (0, map(1, &[(0, true, 5), (1, true, 5), (2, true, 5)])),
        (250, map(2, &[(0, false, 5), (1, true, 5), (2, true, 5)])),
        (500, map(3, &[(0, true, 9), (1, true, 5), (2, true, 5)])),
        (750, map(4, &[(0, true, 9), (1, false, 5), (2, true, 5)])),
        (1000, map(5, &[(0, true, 9), (1, true, 11), (2, true, 5)])),
    ]);
    one_at_a_time
        .check_hosts_down_at_most(1, Duration::ZERO)
        .expect("one host at a time");
    let spans = one_at_a_time.host_down_spans(Duration::ZERO);
    assert_eq!(
        spans["a"],
        [Span {
            from: Duration::from_millis(250),
            to: Some(Duration::from_millis(500))
        }]
    );
    assert_eq!(
        one_at_a_time.boots(0),
        [(Duration::ZERO, 5), (Duration::from_millis(500), 9)]
    );
    let overlapping = recording(vec![
        (0, map(1, &[(0, true, 5), (1, true, 5), (2, true, 5)])),
        (250, map(2, &[(0, false, 5), (1, true, 5), (2, true, 5)])),
        (500, map(3, &[(0, false, 5), (1, false, 5), (2, true, 5)])),
    ]);
    let err = overlapping
        .check_hosts_down_at_most(1, Duration::ZERO)
        .expect_err("two hosts");
    assert!(err.to_string().contains("2 CRUSH hosts down"), "{err}");
    // Before `from` it does not count; the state at `from` does.
    overlapping
        .check_hosts_down_at_most(1, Duration::from_millis(600))
        .expect_err("still two hosts down at 600 ms");
}

#[test]
fn inactive_and_unavailable_pgs_are_told_apart() {
    let r = recording(vec![
        (0, pgs(&[("active+clean", 33)])),
        (
            250,
            pgs(&[("active+clean", 22), ("stale+active+clean", 11)]),
        ),
        (500, pgs(&[("peering", 33)])),
        (2000, pgs(&[("active+undersized+degraded", 33)])),
        (2250, pgs(&[("active+clean", 33)])),
    ]);
    let spans = r.pg_spans(Duration::ZERO);
    assert_eq!(spans.len(), 1, "{spans:?}");
    assert_eq!(spans[0].span.length(r.end()), Duration::from_millis(1500));
    r.check_pgs_never_unavailable(Duration::ZERO)
        .expect("peering is not unavailable");
    r.check_pgs_inactive_at_most(Duration::from_secs(2), Duration::ZERO)
        .expect("1.5 s");
    assert!(r
        .check_pgs_inactive_at_most(Duration::from_secs(1), Duration::ZERO)
        .is_err());
    let below_min_size = recording(vec![
        (0, pgs(&[("active+clean", 33)])),
        (
            250,
            pgs(&[("undersized+degraded+peered", 31), ("peering", 2)]),
        ),
    ]);
    assert_eq!(
        below_min_size.pg_spans(Duration::ZERO)[0].unavailable_for,
        Duration::ZERO,
        "the recording ends at the sample"
    );
    let err = below_min_size
        .check_pgs_never_unavailable(Duration::ZERO)
        .expect_err("peered");
    assert!(err.to_string().contains("31 PGs unavailable"), "{err}");
}

#[test]
fn a_pg_whose_acting_set_is_down_is_unavailable_whatever_it_last_said() {
    let brief = |pgid: &str, state: &str, acting: &[u32]| PgBrief {
        pgid: pgid.to_owned(),
        state: state.to_owned(),
        acting: acting.to_vec(),
    };
    let Observed::OsdMap(mut map) = map(9, &[(0, false, 5), (1, false, 5), (2, true, 5)]) else {
        unreachable!()
    };
    map.pools.insert(
        1,
        crate::ceph::PoolInfo {
            size: 3,
            min_size: 2,
        },
    );
    let cases = [
        (brief("1.0", "stale+peering", &[2]), PgClass::Unavailable),
        (brief("1.1", "peering", &[2]), PgClass::Unavailable),
        (
            brief("1.2", "stale+active+clean", &[0, 1, 2]),
            PgClass::Unavailable,
        ),
        (brief("1.3", "unknown", &[]), PgClass::Unknown),
        // A pool the osdmap does not know: the state alone.
        (brief("7.0", "peering", &[2]), PgClass::Inactive),
    ];
    for (pg, want) in &cases {
        assert_eq!(pg_class(pg, Some(&map)), *want, "{pg:?}");
    }
    map.osds[0].up = true;
    assert_eq!(
        pg_class(&brief("1.2", "stale+active+clean", &[0, 1, 2]), Some(&map)),
        PgClass::Active
    );
    let sample = PgStat {
        ready: true,
        num_pgs: 2,
        by_state: [("stale+peering".to_owned(), 2)].into(),
        pgs: vec![
            brief("1.0", "stale+peering", &[2]),
            brief("1.1", "stale+peering", &[0, 2]),
        ],
    };
    let r = recording(vec![
        (0, Observed::OsdMap(map.clone())),
        (10, Observed::Pgs(sample.clone())),
        (260, Observed::Pgs(sample.clone())),
        (510, pgs(&[("active+clean", 2)])),
    ]);
    assert_eq!(
        r.pg_spans(Duration::ZERO)[0].unavailable_for,
        Duration::from_millis(500)
    );
    let err = r
        .check_pgs_never_unavailable(Duration::ZERO)
        .expect_err("1.0 has one copy up");
    assert!(err.to_string().contains("1 PGs unavailable"), "{err}");
}

#[test]
fn noout_left_at_the_end_is_caught() {
    let Observed::OsdMap(mut with_noout) = map(1, &[(0, true, 5)]) else {
        unreachable!()
    };
    with_noout.osds[0].noout = true;
    let r = recording(vec![(0, Observed::OsdMap(with_noout.clone()))]);
    assert!(r.check_no_noout_at_end().is_err());
    with_noout.osds[0].noout = false;
    let r = recording(vec![
        (0, r.events[0].observed.clone()),
        (1, Observed::OsdMap(with_noout)),
    ]);
    r.check_no_noout_at_end().expect("cleared");
}
