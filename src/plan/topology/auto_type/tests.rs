use super::*;
use crate::ceph::test_data::fixture;
use crate::ceph::{parse_crush_rules, parse_crush_tree, parse_pool_rules};

fn recorded() -> (
    Vec<PoolRule>,
    BTreeMap<i64, CrushRule>,
    BTreeMap<String, i64>,
) {
    let pools = parse_pool_rules(&fixture("osd_pool_ls_detail_racks")).unwrap();
    let rules = parse_crush_rules(&fixture("crush_rule_dump_racks")).unwrap();
    let types = parse_crush_tree(&fixture("crush_tree_racks"))
        .unwrap()
        .type_ids();
    (pools, rules, types)
}

fn only(pools: &[PoolRule], names: &[&str]) -> Vec<PoolRule> {
    pools
        .iter()
        .filter(|p| names.contains(&p.name.as_str()))
        .cloned()
        .collect()
}

fn rule(steps: &[(i64, &str)]) -> CrushRule {
    let mut all = vec![RuleStep::Take];
    all.extend(steps.iter().map(|(num, t)| RuleStep::Choose {
        num: *num,
        type_name: (*t).to_owned(),
    }));
    all.push(RuleStep::Emit);
    CrushRule {
        name: "r".into(),
        steps: all,
    }
}

#[test]
fn rack_pools_alone_make_racks() {
    let (pools, rules, types) = recorded();
    let racks = only(&pools, &["rackpool", "ecpool"]);
    assert_eq!(auto_bucket_type(&racks, &rules, &types), Ok("rack".into()));
}

#[test]
fn a_host_pool_beside_rack_pools_makes_hosts() {
    let (pools, rules, types) = recorded();
    assert_eq!(auto_bucket_type(&pools, &rules, &types), Ok("host".into()));
    let two = only(&pools, &["rackpool", "test"]);
    assert_eq!(auto_bucket_type(&two, &rules, &types), Ok("host".into()));
}

#[test]
fn no_pool_is_no_answer() {
    let (_, rules, types) = recorded();
    let why = auto_bucket_type(&[], &rules, &types).unwrap_err();
    assert!(why.contains("no pool"), "{why}");
}

#[test]
fn a_pool_whose_rule_is_not_listed_is_named() {
    let (pools, rules, types) = recorded();
    let mut odd = only(&pools, &["rackpool"]);
    odd[0].crush_rule = 7;
    let why = auto_bucket_type(&odd, &rules, &types).unwrap_err();
    assert!(
        why.contains("pool rackpool") && why.contains("rule 7"),
        "{why}"
    );
}

#[test]
fn a_type_no_bucket_has_is_named() {
    let (pools, _, types) = recorded();
    let rules = BTreeMap::from([(1, rule(&[(0, "row")]))]);
    let why = auto_bucket_type(&only(&pools, &["rackpool"]), &rules, &types).unwrap_err();
    assert!(
        why.contains("pool rackpool") && why.contains("type row"),
        "{why}"
    );
}

#[test]
fn a_rule_spreads_across_its_last_step_that_picks_several() {
    let spread = |steps: &[(i64, &str)]| spread_type(&rule(steps)).map(str::to_owned);
    assert_eq!(spread(&[(0, "rack")]), Ok("rack".into()));
    // One host in each of `size` racks: each replica in a rack of its own.
    assert_eq!(spread(&[(0, "rack"), (1, "host")]), Ok("rack".into()));
    // Two hosts in each of two racks: two replicas share a rack.
    assert_eq!(spread(&[(2, "rack"), (2, "host")]), Ok("host".into()));
    assert_eq!(spread(&[(1, "rack"), (1, "host")]), Ok("rack".into()));
    assert!(spread(&[]).unwrap_err().contains("no choose step"));
}

#[test]
fn a_rule_of_several_blocks_is_not_told() {
    let mut two = rule(&[(1, "host")]);
    two.steps.extend(rule(&[(-1, "host")]).steps);
    let (pools, _, types) = recorded();
    let rules = BTreeMap::from([(1, two)]);
    let why = auto_bucket_type(&only(&pools, &["rackpool"]), &rules, &types).unwrap_err();
    assert!(
        why.contains("pool rackpool") && why.contains("2 take…emit blocks"),
        "{why}"
    );
}

#[test]
fn an_osd_level_pool_makes_osds() {
    let (pools, mut rules, types) = recorded();
    rules.insert(9, rule(&[(0, "osd")]));
    let mut pools = only(&pools, &["rackpool"]);
    pools.push(PoolRule {
        name: "single".into(),
        crush_rule: 9,
        size: 2,
    });
    assert_eq!(auto_bucket_type(&pools, &rules, &types), Ok("osd".into()));
}
