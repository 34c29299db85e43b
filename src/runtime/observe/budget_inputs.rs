//! What the disruption budget is planned from: the PodDisruptionBudgets of a CephOSD's
//! namespace and the cordoned nodes, from their watch caches (nodes kept as their name,
//! labels and `spec.unschedulable` only: the labels tell failure domains), and which
//! CephOSDs a change of either concerns.

use crate::crd::CephOsd;
use crate::plan::rules::budget::DisruptionView;
use crate::pod::owner_reference::is_cephosd;
use crate::runtime::backoff::WatchRetry;
use futures::{Stream, TryStreamExt};
use k8s_openapi::api::core::v1::{Node, NodeSpec};
use k8s_openapi::api::policy::v1::PodDisruptionBudget;
use kube::api::{Api, ListParams};
use kube::runtime::reflector::{self, ObjectRef, Store};
use kube::runtime::{watcher, WatchStreamExt};
use kube::{Client, ResourceExt};
use std::collections::hash_map::DefaultHasher;
use std::collections::{BTreeSet, HashMap};
use std::hash::{Hash, Hasher};
use std::sync::Arc;

/// The watch caches of PodDisruptionBudgets and nodes, and whether both have synced.
pub(crate) struct BudgetCaches {
    pub budgets: Store<PodDisruptionBudget>,
    pub nodes: Store<Node>,
    pub synced: tokio::sync::watch::Receiver<bool>,
}

/// The event streams feeding [`BudgetCaches`].
pub(crate) type BudgetEvents = (
    std::pin::Pin<Box<dyn Stream<Item = Result<PodDisruptionBudget, watcher::Error>> + Send>>,
    std::pin::Pin<Box<dyn Stream<Item = Result<Node, watcher::Error>> + Send>>,
);

/// Watches PodDisruptionBudgets (of `namespace`, or all) and nodes (only a change of a cordon
/// or of the labels is passed on: nodes report their status every few seconds). Needs a
/// tokio runtime.
pub(crate) fn watch_budgets_and_nodes(
    client: &Client,
    namespace: Option<&str>,
) -> (BudgetCaches, BudgetEvents) {
    let budgets_api: Api<PodDisruptionBudget> = match namespace {
        Some(ns) => Api::namespaced(client.clone(), ns),
        None => Api::all(client.clone()),
    };
    let (budgets, budget_writer) = reflector::store();
    let budget_events = watcher(budgets_api, watcher::Config::default())
        .backoff(WatchRetry::default())
        .reflect(budget_writer)
        .touched_objects();
    let (nodes, node_writer) = reflector::store();
    let mut changes = NodeChanges::default();
    let node_events = watcher(Api::<Node>::all(client.clone()), watcher::Config::default())
        .backoff(WatchRetry::default())
        .modify(strip_node)
        .reflect(node_writer)
        .touched_objects()
        .try_filter(move |node| std::future::ready(changes.changed(node)));
    let (synced_tx, synced) = tokio::sync::watch::channel(false);
    let (budgets_ready, nodes_ready) = (budgets.clone(), nodes.clone());
    tokio::spawn(async move {
        let ready = budgets_ready.wait_until_ready().await.is_ok()
            && nodes_ready.wait_until_ready().await.is_ok();
        let _ = synced_tx.send(ready);
    });
    let caches = BudgetCaches {
        budgets,
        nodes,
        synced,
    };
    (caches, (Box::pin(budget_events), Box::pin(node_events)))
}

/// The PodDisruptionBudgets of one namespace and the cordoned nodes, as one reconcile saw them.
pub(crate) struct BudgetInputs {
    pub budgets: Vec<Arc<PodDisruptionBudget>>,
    pub cordoned: BTreeSet<String>,
}

impl BudgetInputs {
    /// From the caches, for a CephOSD in `namespace`.
    pub(crate) fn cached(
        budgets: &Store<PodDisruptionBudget>,
        nodes: &Store<Node>,
        namespace: &str,
    ) -> Self {
        let budgets = (budgets.state().into_iter())
            .filter(|b| b.namespace().as_deref() == Some(namespace))
            .collect();
        let cordoned = (nodes.state().iter())
            .filter(|n| is_cordoned(n))
            .map(|n| n.name_any())
            .collect();
        Self { budgets, cordoned }
    }

    /// The namespace's budgets listed again (the nodes stay as cached): read before the pods
    /// a disrupting plan is made from, so that an eviction admitted before that read shows in
    /// the budget or in the pods.
    pub(crate) async fn list_again(
        self,
        budgets: &Api<PodDisruptionBudget>,
    ) -> Result<Self, kube::Error> {
        let listed = budgets.list(&ListParams::default()).await?;
        Ok(Self {
            budgets: listed.items.into_iter().map(Arc::new).collect(),
            cordoned: self.cordoned,
        })
    }

    /// The planner's view of these.
    pub(crate) fn view(&self) -> DisruptionView<'_> {
        DisruptionView {
            budgets: self.budgets.iter().map(|b| &**b).collect(),
            cordoned: self.cordoned.clone(),
        }
    }

    /// Identifies these inputs for `cr` (its hosts' cordons only): part of the fingerprint
    /// that lets an unchanged reconcile be skipped.
    pub(crate) fn fingerprint(&self, cr: &CephOsd) -> u64 {
        let mut hasher = DefaultHasher::new();
        let mut budgets: Vec<(Option<&String>, Option<&String>)> = (self.budgets.iter())
            .map(|b| {
                (
                    b.metadata.uid.as_ref(),
                    b.metadata.resource_version.as_ref(),
                )
            })
            .collect();
        budgets.sort();
        budgets.hash(&mut hasher);
        let hosts = hosts_of(cr);
        (self.cordoned.iter())
            .filter(|n| hosts.contains(n.as_str()))
            .for_each(|n| n.hash(&mut hasher));
        hasher.finish()
    }
}

fn is_cordoned(node: &Node) -> bool {
    node.spec.as_ref().and_then(|s| s.unschedulable) == Some(true)
}

fn hosts_of(cr: &CephOsd) -> BTreeSet<&str> {
    (cr.spec.storage.iter())
        .flat_map(|e| &e.hosts)
        .map(String::as_str)
        .collect()
}

/// A node as cached: its name, its labels and whether it is cordoned (nothing else of a Node
/// is kept).
fn strip_node(node: &mut Node) {
    let unschedulable = is_cordoned(node).then_some(true);
    node.status = None;
    node.spec = Some(NodeSpec {
        unschedulable,
        ..NodeSpec::default()
    });
    let meta = &mut node.metadata;
    meta.annotations = None;
    meta.managed_fields = None;
    meta.owner_references = None;
}

/// Passes a node on only when its cordon or its labels changed since it was last seen (nodes
/// report their status every few seconds; only a cordon and the labels matter here).
#[derive(Default)]
struct NodeChanges {
    /// Each node's cordon and a hash of its labels.
    seen: HashMap<String, (bool, u64)>,
}

impl NodeChanges {
    fn changed(&mut self, node: &Node) -> bool {
        let mut hasher = DefaultHasher::new();
        node.metadata.labels.hash(&mut hasher);
        let now = (is_cordoned(node), hasher.finish());
        self.seen.insert(node.name_any(), now) != Some(now)
    }
}

/// The CephOSDs an object's change concerns.
type Mapper<K> = Box<dyn Fn(K) -> Vec<ObjectRef<CephOsd>> + Send + Sync>;

/// What a PodDisruptionBudget and what a node change concerns (see [`cephosds_of_budget`],
/// [`cephosds_on_node`]).
pub(crate) fn budget_mappers(
    crs: &Store<CephOsd>,
    watched: Option<&str>,
) -> (Mapper<PodDisruptionBudget>, Mapper<Node>) {
    let (of_budget, of_node) = (crs.clone(), crs.clone());
    let (watched_budget, watched_node) = (watched.map(str::to_owned), watched.map(str::to_owned));
    (
        Box::new(move |budget: PodDisruptionBudget| {
            cephosds_of_budget(&budget, &of_budget, watched_budget.as_deref())
        }),
        Box::new(move |node: Node| cephosds_on_node(&node, &of_node, watched_node.as_deref())),
    )
}

/// The CephOSDs (in `watched`, or every namespace) that list `node` as a host.
fn cephosds_on_node(
    node: &Node,
    crs: &Store<CephOsd>,
    watched: Option<&str>,
) -> Vec<ObjectRef<CephOsd>> {
    let name = node.name_any();
    (crs.state().iter())
        .filter(|cr| watched.is_none_or(|ns| cr.namespace().as_deref() == Some(ns)))
        .filter(|cr| hosts_of(cr).contains(name.as_str()))
        .map(|cr| ObjectRef::from_obj(&**cr))
        .collect()
}

/// The CephOSDs a PodDisruptionBudget change concerns: the one controlling it, else every
/// CephOSD of its namespace (it may select their pods).
fn cephosds_of_budget(
    budget: &PodDisruptionBudget,
    crs: &Store<CephOsd>,
    watched: Option<&str>,
) -> Vec<ObjectRef<CephOsd>> {
    let Some(namespace) = budget.namespace() else {
        return Vec::new();
    };
    if watched.is_some_and(|ns| ns != namespace) {
        return Vec::new();
    }
    let controller =
        (budget.owner_references().iter()).find(|o| o.controller == Some(true) && is_cephosd(o));
    if let Some(owner) = controller {
        return vec![ObjectRef::new(&owner.name).within(&namespace)];
    }
    (crs.state().iter())
        .filter(|cr| cr.namespace().as_deref() == Some(namespace.as_str()))
        .map(|cr| ObjectRef::from_obj(&**cr))
        .collect()
}

#[cfg(test)]
mod tests;
