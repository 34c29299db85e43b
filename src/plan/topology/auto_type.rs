//! `spec.topology.bucketType: Auto`: the widest CRUSH bucket type every pool's rule spreads
//! its replicas across. Pure.
//!
//! A rule spreads a pool's replicas across the type of its earliest choose step after which
//! every choose step picks one item (each replica then lies under a bucket of that type of
//! its own); a rule with several `take … emit` blocks spreads them across nothing known (two
//! blocks may choose the same bucket). Wider types have larger CRUSH type ids: the type of
//! smallest id over all pools wins.

use crate::ceph::{CrushRule, PoolRule, RuleStep};
use std::collections::BTreeMap;

/// The bucket type every pool's replicas are spread across, or why there is none (naming the
/// pool). `type_ids`: each CRUSH type's id.
pub(crate) fn auto_bucket_type(
    pools: &[PoolRule],
    rules: &BTreeMap<i64, CrushRule>,
    type_ids: &BTreeMap<String, i64>,
) -> Result<String, String> {
    let mut narrowest: Option<(i64, &str)> = None;
    for pool in pools {
        let rule = rules.get(&pool.crush_rule).ok_or_else(|| {
            format!(
                "pool {} uses CRUSH rule {}, which Ceph does not list",
                pool.name, pool.crush_rule
            )
        })?;
        let spread = spread_type(rule)
            .map_err(|why| format!("pool {}'s CRUSH rule {} {why}", pool.name, rule.name))?;
        let id = *type_ids.get(spread).ok_or_else(|| {
            format!(
                "pool {}'s CRUSH rule {} spreads across type {spread}, which no item of the \
                 CRUSH tree has",
                pool.name, rule.name
            )
        })?;
        if narrowest.is_none_or(|(smallest, _)| id < smallest) {
            narrowest = Some((id, spread));
        }
    }
    narrowest
        .map(|(_, t)| t.to_owned())
        .ok_or_else(|| "Ceph has no pool whose CRUSH rule tells a failure domain".to_owned())
}

/// The type `rule` spreads replicas across (see the module docs).
fn spread_type(rule: &CrushRule) -> Result<&str, String> {
    let emits = rule.steps.iter().filter(|s| **s == RuleStep::Emit).count();
    if emits > 1 {
        return Err(format!(
            "has {emits} take…emit blocks: its replicas' failure domain cannot be told"
        ));
    }
    let chooses: Vec<(i64, &str)> = (rule.steps.iter())
        .filter_map(|step| match step {
            RuleStep::Choose { num, type_name } => Some((*num, type_name.as_str())),
            _ => None,
        })
        .collect();
    let ones_after = chooses
        .iter()
        .rev()
        .take_while(|(num, _)| *num == 1)
        .count();
    // The last step picking more than one item (the first when none does).
    let spread = chooses.len().saturating_sub(ones_after + 1);
    chooses
        .get(spread)
        .map(|(_, t)| *t)
        .ok_or_else(|| "has no choose step".to_owned())
}

#[cfg(test)]
mod tests;
