//! Ceph's CRUSH map as the operator reads it: the bucket tree (`osd crush tree`), the rules
//! (`osd crush rule dump`) and each pool's rule (`osd pool ls detail`), parsed; and the
//! buckets above each node's CRUSH host bucket. Pure; judges nothing (which bucket type the
//! update domains are is the planner's).

use super::answers::{parse, ParseError};
use super::node_names::{reported_node, ReportedNode};
use serde::Deserialize;
use std::collections::{BTreeMap, BTreeSet};

/// The CRUSH type of the buckets a node's daemons are placed under.
pub const HOST_TYPE: &str = "host";

/// One bucket (or device) of the CRUSH tree.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct CrushBucket {
    pub name: String,
    /// Its type's name (`rack`).
    pub type_name: String,
    /// Its type's id: wider types have larger ids (`osd` 0, `host` 1, `rack` 3, `root` 11).
    pub type_id: i64,
}

/// The CRUSH hierarchy: every bucket and device, and the buckets each is in (a bucket linked
/// into two places has two).
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
pub struct CrushTree {
    pub items: BTreeMap<i64, CrushBucket>,
    pub parents: BTreeMap<i64, BTreeSet<i64>>,
}

#[derive(Deserialize)]
struct RawTree {
    nodes: Vec<RawNode>,
}

#[derive(Deserialize)]
struct RawNode {
    id: i64,
    name: String,
    #[serde(rename = "type")]
    type_name: String,
    type_id: i64,
    #[serde(default)]
    children: Vec<i64>,
}

/// `osd crush tree -f json` (also `osd tree -f json`: the same `nodes`). A bucket linked into
/// two places is listed twice; the two must agree.
pub fn parse_crush_tree(json: &[u8]) -> Result<CrushTree, ParseError> {
    let raw: RawTree = parse(json)?;
    let mut tree = CrushTree::default();
    for (i, node) in raw.nodes.into_iter().enumerate() {
        let item = CrushBucket {
            name: node.name,
            type_name: node.type_name,
            type_id: node.type_id,
        };
        if let Some(before) = tree.items.insert(node.id, item.clone()) {
            if before != item {
                return Err(ParseError {
                    path: format!("nodes[{i}]"),
                    message: format!("item {} is listed twice, differently", node.id),
                });
            }
        }
        for child in node.children {
            tree.parents.entry(child).or_default().insert(node.id);
        }
    }
    Ok(tree)
}

impl CrushTree {
    /// Each type's id, for the types some item of the tree has.
    pub fn type_ids(&self) -> BTreeMap<String, i64> {
        (self.items.values())
            .map(|b| (b.type_name.clone(), b.type_id))
            .collect()
    }

    /// For each of `nodes` (Kubernetes node names) whose CRUSH host bucket can be told: the
    /// buckets above it by type, its host bucket included (`host` → its name). A node's host
    /// bucket is named as its daemons report their hostname (the same name ignoring case,
    /// else its short name or an FQDN starting with it, if only one bucket is so); a node two
    /// host buckets could be is left out, and so is a type with two buckets above a host
    /// (a bucket linked into two places).
    pub fn ancestors_of_nodes<'n>(
        &self,
        nodes: impl IntoIterator<Item = &'n str>,
    ) -> BTreeMap<String, BTreeMap<String, String>> {
        let hosts: BTreeMap<&str, i64> = (self.items.iter())
            .filter(|(id, b)| **id < 0 && b.type_name == HOST_TYPE)
            .map(|(id, b)| (b.name.as_str(), *id))
            .collect();
        let mut out = BTreeMap::new();
        for node in nodes {
            if let ReportedNode::One(name) = reported_node(&[node], hosts.keys().copied()) {
                if let Some(id) = hosts.get(name.as_str()) {
                    out.insert(node.to_owned(), self.ancestors(*id));
                }
            }
        }
        out
    }

    /// The buckets `id` is in, itself included, by type; a type with two buckets is left out.
    fn ancestors(&self, id: i64) -> BTreeMap<String, String> {
        let mut seen = BTreeSet::new();
        let mut by_type: BTreeMap<&str, BTreeSet<&str>> = BTreeMap::new();
        let mut next = vec![id];
        while let Some(id) = next.pop() {
            if !seen.insert(id) {
                continue;
            }
            if let Some(bucket) = self.items.get(&id) {
                (by_type.entry(&bucket.type_name).or_default()).insert(&bucket.name);
            }
            next.extend(self.parents.get(&id).into_iter().flatten());
        }
        (by_type.into_iter())
            .filter(|(_, names)| names.len() == 1)
            .filter_map(|(t, names)| Some((t.to_owned(), (*names.first()?).to_owned())))
            .collect()
    }
}

/// One step of a CRUSH rule, as far as the failure domain goes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum RuleStep {
    /// `take`: where the choosing starts.
    Take,
    /// `choose_firstn`, `chooseleaf_indep`, …: `num` buckets of type `type_name` (0: as many
    /// as the pool has replicas; negative: that many fewer).
    Choose { num: i64, type_name: String },
    /// `emit`: the chosen items are the result.
    Emit,
    /// A tunable (`set_choose_tries`, …): places nothing.
    Other,
}

/// A CRUSH rule.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CrushRule {
    pub name: String,
    pub steps: Vec<RuleStep>,
}

#[derive(Deserialize)]
struct RawRule {
    rule_id: i64,
    rule_name: String,
    steps: Vec<RawStep>,
}

#[derive(Deserialize)]
struct RawStep {
    op: String,
    #[serde(default)]
    num: i64,
    #[serde(rename = "type")]
    type_name: Option<String>,
}

/// `osd crush rule dump -f json`: the rules by id.
pub fn parse_crush_rules(json: &[u8]) -> Result<BTreeMap<i64, CrushRule>, ParseError> {
    let raw: Vec<RawRule> = parse(json)?;
    let mut rules = BTreeMap::new();
    for (i, rule) in raw.into_iter().enumerate() {
        let mut steps = Vec::new();
        for (j, step) in rule.steps.into_iter().enumerate() {
            steps.push(match step.op.as_str() {
                "take" => RuleStep::Take,
                "emit" => RuleStep::Emit,
                op if op.starts_with("choose") => RuleStep::Choose {
                    num: step.num,
                    type_name: step.type_name.ok_or_else(|| ParseError {
                        path: format!("[{i}].steps[{j}].type"),
                        message: format!("a {op} step names no type"),
                    })?,
                },
                _ => RuleStep::Other,
            });
        }
        let rule_id = rule.rule_id;
        let parsed = CrushRule {
            name: rule.rule_name,
            steps,
        };
        if rules.insert(rule_id, parsed).is_some() {
            return Err(ParseError {
                path: format!("[{i}].rule_id"),
                message: format!("rule {rule_id} is listed twice"),
            });
        }
    }
    Ok(rules)
}

/// A pool and the CRUSH rule that places its PGs.
#[derive(Clone, Debug, PartialEq, Eq, Deserialize)]
pub struct PoolRule {
    #[serde(rename = "pool_name")]
    pub name: String,
    /// The rule's id.
    pub crush_rule: i64,
    /// Replicas (or chunks, k+m) of each PG.
    pub size: u32,
}

/// `osd pool ls detail -f json`: each pool's name, rule and size.
pub fn parse_pool_rules(json: &[u8]) -> Result<Vec<PoolRule>, ParseError> {
    parse(json)
}

#[cfg(test)]
mod tests;
