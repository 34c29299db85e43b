use super::*;
use crate::ceph::parse_crush_tree;
use crate::ceph::test_data::fixture;
use crate::crd::topology::TopologySpec;
use crate::testing::CephOsdBuilder;

fn rack_cr(hosts: &[&str]) -> CephOsd {
    let mut cr = CephOsdBuilder::new("c")
        .storage(hosts, &["/dev/sdb"])
        .build()
        .unwrap();
    cr.spec.update_domain = UpdateDomain::Topology;
    cr.spec.topology = Some(TopologySpec {
        bucket_type: "rack".into(),
        topology_key: Some("rack".into()),
    });
    cr
}

fn look(tree: &str) -> CrushLook {
    CrushLook {
        tree: parse_crush_tree(&fixture(tree)).unwrap(),
        auto_type: Err("not asked".into()),
    }
}

fn labels(pairs: &[(&str, Option<&str>)]) -> BTreeMap<String, Option<String>> {
    pairs
        .iter()
        .map(|(n, v)| ((*n).to_owned(), v.map(str::to_owned)))
        .collect()
}

#[test]
fn the_view_holds_the_plans_hosts_only() {
    let cr = rack_cr(&["host-0", "Host-1"]);
    let inputs = TopologyInputs {
        crush: Some(Ok(look("crush_tree_racks"))),
        labels: Some(labels(&[
            ("host-0", Some("r1")),
            ("host-1", None),
            ("other", Some("r9")),
        ])),
    };
    let view = inputs.view(&ExpandedSpec::of(&cr.spec), &[]);
    let crush = view.crush.unwrap().unwrap();
    let placed: Vec<&String> = crush.ancestors.keys().collect();
    assert_eq!(placed, ["Host-1", "host-0"]);
    assert_eq!(crush.ancestors["Host-1"]["rack"], "r1");
    // Hosts as the CephOSD spells them, their Node's labels by its lower-case name; a node
    // of no host of the CephOSD left out.
    assert_eq!(
        view.labels,
        BTreeMap::from([
            ("host-0".to_owned(), Some("r1".to_owned())),
            ("Host-1".to_owned(), None)
        ])
    );
}

#[test]
fn nothing_read_is_the_default_view() {
    let cr = rack_cr(&["host-0"]);
    let view = TopologyInputs::default().view(&ExpandedSpec::of(&cr.spec), &[]);
    assert_eq!(view, TopologyView::default());
}

#[test]
fn a_crush_move_or_a_relabelled_host_changes_the_fingerprint() {
    let cr = rack_cr(&["host-0", "host-1"]);
    let at = |tree: &str, l: Option<&str>| {
        TopologyInputs {
            crush: Some(Ok(look(tree))),
            labels: Some(labels(&[
                ("host-0", Some("r1")),
                ("host-1", l),
                ("x", Some("r1")),
            ])),
        }
        .fingerprint(&cr)
    };
    let before = at("crush_tree_racks", Some("r1"));
    assert_eq!(before, at("crush_tree_racks", Some("r1")));
    assert_ne!(before, at("crush_tree_host_moved", Some("r1")));
    assert_ne!(before, at("crush_tree_racks", Some("r2")));
    assert_ne!(before, at("crush_tree_racks", None));
    let unreadable = TopologyInputs {
        crush: Some(Err("timeout".into())),
        labels: None,
    };
    assert_ne!(before, unreadable.fingerprint(&cr));
}
