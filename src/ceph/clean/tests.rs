use super::*;

#[test]
fn rooks_clean_states() {
    for s in [
        "active+clean",
        "active+clean+scrubbing",
        "active+clean+scrubbing+deep",
        "active+clean+snaptrim",
        "active+clean+snaptrim_wait",
        "active+scrubbing",
        "active+deep",
    ] {
        assert!(is_clean_state(s), "{s}");
    }
}

#[test]
fn not_clean_states() {
    for s in [
        "",
        "active",
        "active+",
        "+active+clean",
        "clean",
        "clean+active",
        "stale+active+clean",
        "active+clean+stale",
        "active+undersized",
        "active+undersized+degraded",
        "active+clean+remapped",
        "active+recovering",
        "active+clean+inconsistent",
        "peering",
        "unknown",
        "down",
        "activating",
        "Active+clean",
        "active+clean ",
        "active++clean",
    ] {
        assert!(!is_clean_state(s), "{s:?}");
    }
}

fn pgs(ready: bool, num_pgs: u64, by_state: &[(&str, u64)]) -> PgStates {
    PgStates {
        ready,
        num_pgs,
        by_state: by_state
            .iter()
            .map(|(s, n)| PgStateCount {
                state: (*s).to_owned(),
                count: *n,
            })
            .collect(),
    }
}

#[test]
fn all_clean_needs_ready_consistent_counts_and_clean_states() {
    assert!(pgs(true, 33, &[("active+clean", 33)]).all_clean());
    assert!(pgs(
        true,
        3,
        &[("active+clean", 2), ("active+clean+scrubbing", 1)]
    )
    .all_clean());
    assert!(pgs(true, 0, &[]).all_clean());
    assert!(!pgs(false, 33, &[("active+clean", 33)]).all_clean());
    assert!(!pgs(true, 34, &[("active+clean", 33)]).all_clean());
    assert!(!pgs(
        true,
        33,
        &[("stale+active+clean", 11), ("active+clean", 22)]
    )
    .all_clean());
    assert!(!pgs(true, 33, &[("peering", 33)]).all_clean());
}

#[test]
fn describes_what_is_not_clean() {
    let p = pgs(
        true,
        33,
        &[
            ("active+undersized", 5),
            ("active+clean", 0),
            ("active+undersized+degraded", 28),
        ],
    );
    assert_eq!(p.not_clean_count(), 33);
    assert_eq!(
        p.describe_not_clean(),
        "5 active+undersized, 28 active+undersized+degraded"
    );
}
