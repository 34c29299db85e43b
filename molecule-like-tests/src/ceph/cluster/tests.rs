use super::*;
use serde_json::json;

#[test]
fn osd_dump_is_read_with_hosts_and_noout() {
    let dump = json!({"epoch": 21, "flags": "sortbitwise,noout", "crush_node_flags": {"node-b": ["noout"]},
            "pools": [{"pool": 1, "pool_name": "test", "size": 3, "min_size": 2}],
            "osds": [{"osd": 0, "up": 1, "in": 1, "up_from": 15, "state": ["exists", "up"]},
                     {"osd": 1, "up": 0, "in": 1, "up_from": 8, "state": ["exists", "noout"]}]});
    let tree = json!({"nodes": [{"id": -1, "name": "default", "type": "root", "children": [-3, -5]},
            {"id": -3, "name": "node-a", "type": "host", "children": [0]},
            {"id": -5, "name": "node-b", "type": "host", "children": [1]},
            {"id": 0, "name": "osd.0", "type": "osd"}]});
    let map = OsdMap::from_ceph(&dump, &tree).expect("parsed");
    assert_eq!(map.epoch, 21);
    assert_eq!(map.host_of(1), Some("node-b"));
    assert_eq!(map.host_of(7), None);
    let osd1 = map.osd(1).expect("osd.1");
    assert!(!osd1.up && osd1.in_ && osd1.noout && osd1.up_from == 8);
    assert_eq!(map.noout(), ["cluster", "osd.1", "node-b"]);
    assert_eq!(
        map.pools[&1],
        PoolInfo {
            size: 3,
            min_size: 2
        }
    );
}

#[test]
fn pg_stat_is_read() {
    let stat = json!({"pg_ready": true, "pg_summary": {"num_pgs": 33,
            "num_pg_by_state": [{"name": "active+clean", "num": 33}]}});
    let pgs = PgStat::from_ceph(&stat);
    assert!(pgs.all_clean());
    let stale = json!({"pg_ready": true, "pg_summary": {"num_pgs": 33,
            "num_pg_by_state": [{"name": "active+clean", "num": 22}, {"name": "stale+active+clean", "num": 11}]}});
    assert!(!PgStat::from_ceph(&stale).all_clean());
}

#[test]
fn owner_of_this_process_is_recognised() {
    let me = owner_id(std::process::id()).expect("own stat");
    assert!(me.starts_with(&format!("{} ", std::process::id())), "{me}");
    assert_eq!(
        owner_file(Path::new("/a/b/ceph")),
        Path::new("/a/b/ceph.owner")
    );
}
