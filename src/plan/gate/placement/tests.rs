use super::*;
use crate::ceph::test_data::fixture;
use crate::ceph::{parse_crush_tree, parse_osd_dump};

fn placement(dump: &str) -> Placement {
    parse_osd_dump(&fixture(dump)).unwrap().placement
}

fn tree(name: &str) -> CrushTree {
    parse_crush_tree(&fixture(name)).unwrap()
}

const LAG: Duration = Duration::from_secs(6);

#[test]
fn the_recorded_dumps_show_the_crush_version_each_start_moves() {
    let before = placement("osd_dump_1_down");
    let after = placement("osd_dump_1_up_again");
    assert_eq!((before.crush_version, after.crush_version), (3, 4));
    assert!(before.differs_only_in_crush_version(&after));
    assert!(!before.differs_only_in_crush_version(&before));
    assert_eq!(before.weights.len(), 3);
}

#[test]
fn the_same_placement_keeps_its_time_and_is_trusted_after_the_lag() {
    let t0 = Instant::now();
    let p = placement("osd_dump_1_down");
    assert!(needs_crush(None, &p), "the first look reads CRUSH");
    let first = seen_again(None, &p, Some(tree("crush_tree_hosts")), t0);
    assert_eq!(
        first.since, t0,
        "first seen now: after a start nothing is known"
    );
    assert_eq!(trail(first.since, t0, LAG), Some(LAG));
    let later = t0 + Duration::from_secs(4);
    assert!(!needs_crush(Some(&first), &p));
    let again = seen_again(Some(&first), &p, None, later);
    assert_eq!(again.since, t0);
    assert_eq!(again.crush, first.crush, "the tree is kept, not re-read");
    assert_eq!(trail(again.since, later, LAG), Some(Duration::from_secs(2)));
    assert_eq!(trail(again.since, t0 + LAG, LAG), None);
}

#[test]
fn a_new_crush_version_over_the_same_tree_is_no_change() {
    let t0 = Instant::now();
    let first = seen_again(
        None,
        &placement("osd_dump_1_down"),
        Some(tree("crush_tree_hosts")),
        t0,
    );
    let started = placement("osd_dump_1_up_again");
    assert!(needs_crush(Some(&first), &started));
    let later = t0 + Duration::from_secs(30);
    let again = seen_again(
        Some(&first),
        &started,
        Some(tree("crush_tree_hosts")),
        later,
    );
    assert_eq!(again.since, t0, "an OSD's start set its location again");
    assert_eq!(again.placement, started);
    assert_eq!(trail(again.since, later, LAG), None);
}

#[test]
fn a_host_moved_in_crush_starts_the_lag_again() {
    let t0 = Instant::now();
    let p = placement("osd_dump_1_down");
    let first = seen_again(None, &p, Some(tree("crush_tree_racks")), t0);
    let mut moved = p.clone();
    moved.crush_version += 1;
    let later = t0 + Duration::from_secs(30);
    let again = seen_again(
        Some(&first),
        &moved,
        Some(tree("crush_tree_host_moved")),
        later,
    );
    assert_eq!(again.since, later);
    assert_eq!(trail(again.since, later, LAG), Some(LAG));
    // A tree that cannot be read (the key lacks the cap) counts as a change too.
    let unread = seen_again(Some(&first), &moved, None, later);
    assert_eq!(unread.since, later);
}

#[test]
fn an_osd_out_or_an_upmap_is_a_change_whatever_crush_says() {
    let t0 = Instant::now();
    let p = placement("osd_dump_1_down");
    let first = seen_again(None, &p, Some(tree("crush_tree_hosts")), t0);
    let later = t0 + Duration::from_secs(30);
    let mut out = p.clone();
    out.weights.get_mut(&crate::ceph::OsdId(1)).unwrap().0 = false;
    let again = seen_again(Some(&first), &out, Some(tree("crush_tree_hosts")), later);
    assert_eq!(again.since, later);
    let mut upmapped = p;
    upmapped.upmaps = r#"[] [{"pgid":"1.0","mappings":[{"from":1,"to":2}]}]"#.to_owned();
    let again = seen_again(
        Some(&first),
        &upmapped,
        Some(tree("crush_tree_hosts")),
        later,
    );
    assert_eq!(again.since, later);
}
