use super::*;
use crate::ceph::fake::{Call, ScriptedCeph};
use crate::ceph::test_data::fixture;
use crate::ceph::{parse_crush_rules, parse_crush_tree, parse_pool_rules};

fn tree(name: &str) -> CrushTree {
    parse_crush_tree(&fixture(name)).unwrap()
}

fn refused(command: &str) -> CephError {
    CephError::Failed {
        command: command.into(),
        exit_code: Some(13),
        stderr: "Error EACCES: access denied".into(),
    }
}

#[tokio::test]
async fn a_named_type_reads_the_tree_alone() {
    let ceph = ScriptedCeph::default().on_crush_tree(Ok(tree("crush_tree_racks")));
    let look = look_at_crush(&ceph, false).await.unwrap();
    assert_eq!(ceph.calls(), vec![Call::CrushTree]);
    let placement = look.placement(["host-1", "host-2", "nowhere"]);
    assert_eq!(placement.ancestors["host-1"]["rack"], "r1");
    assert_eq!(placement.ancestors["host-2"]["rack"], "r2");
    assert!(!placement.ancestors.contains_key("nowhere"));
    assert!(placement.auto_type.is_err());
}

#[tokio::test]
async fn auto_reads_rules_and_pools_too() {
    let ceph = ScriptedCeph::default()
        .on_crush_tree(Ok(tree("crush_tree_racks")))
        .on_crush_rules(Ok(
            parse_crush_rules(&fixture("crush_rule_dump_racks")).unwrap()
        ))
        .on_pool_rules(Ok(
            parse_pool_rules(&fixture("osd_pool_ls_detail_racks")).unwrap()
        ));
    let look = look_at_crush(&ceph, true).await.unwrap();
    assert_eq!(look.auto_type, Ok("host".to_owned()));
    assert_eq!(ceph.calls().len(), 3);
}

#[tokio::test]
async fn a_tree_that_cannot_be_read_is_said_never_guessed() {
    let ceph = ScriptedCeph::default().on_crush_tree(Err(refused("osd crush tree")));
    let why = look_at_crush(&ceph, false).await.unwrap_err();
    assert!(
        why.contains("osd crush tree") && why.contains("EACCES"),
        "{why}"
    );
}

#[tokio::test]
async fn rules_that_cannot_be_read_leave_auto_unknown() {
    let ceph = ScriptedCeph::default()
        .on_crush_tree(Ok(tree("crush_tree_racks")))
        .on_crush_rules(Err(refused("osd crush rule dump")))
        .on_pool_rules(Ok(Vec::new()));
    let look = look_at_crush(&ceph, true).await.unwrap();
    let why = look.auto_type.clone().unwrap_err();
    assert!(why.contains("osd crush rule dump"), "{why}");
    // The tree still places the hosts.
    assert_eq!(look.placement(["host-0"]).ancestors["host-0"]["rack"], "r1");
}
