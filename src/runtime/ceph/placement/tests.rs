use super::*;
use crate::ceph::test_data::fixture;
use crate::ceph::{parse_crush_tree, parse_osd_dump, CrushTree, Placement};

fn placement(dump: &str) -> Placement {
    parse_osd_dump(&fixture(dump)).unwrap().placement
}

fn tree(name: &str) -> CrushTree {
    parse_crush_tree(&fixture(name)).unwrap()
}

const LAG: Duration = Duration::from_secs(6);

#[tokio::test]
async fn looks_are_stamped_reading_crush_only_when_the_placement_is_new() {
    use crate::ceph::fake::{Call, ScriptedCeph};
    use crate::testing::gate_inputs::CephFactsBuilder;
    let memory = Memory::default();
    let clock = PlacementClock {
        memory: &memory,
        key: "ceph/osds",
        lag: LAG,
    };
    let look = |crush_version| {
        let mut facts = CephFactsBuilder::healthy().build();
        facts.osds.placement = placement("osd_dump_1_down");
        facts.osds.placement.crush_version = crush_version;
        facts
    };
    let ceph = ScriptedCeph::default()
        .on_crush_tree(Ok(tree("crush_tree_racks")))
        .on_crush_tree(Ok(tree("crush_tree_racks")))
        .on_crush_tree(Ok(tree("crush_tree_host_moved")));
    let t0 = Instant::now();
    let first = clock.stamp(&ceph, look(3), t0).await;
    assert_eq!(first.pgs_trail_placement, Some(LAG), "first seen now");
    let settled = clock.stamp(&ceph, look(3), t0 + LAG).await;
    assert_eq!(settled.pgs_trail_placement, None);
    assert_eq!(
        ceph.calls(),
        [Call::CrushTree],
        "the same placement: CRUSH not read"
    );
    let started = clock.stamp(&ceph, look(4), t0 + LAG).await;
    assert_eq!(
        started.pgs_trail_placement, None,
        "an OSD started: same tree"
    );
    let moved = clock.stamp(&ceph, look(5), t0 + LAG * 2).await;
    assert_eq!(moved.pgs_trail_placement, Some(LAG), "a host moved");
    assert_eq!(ceph.calls().len(), 3);
}
