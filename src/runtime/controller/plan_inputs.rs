//! What one plan of a CephOSD is made from, besides its objects and the view of Ceph: the
//! CephOSD as last known, its expansion, the OSDs whose disk an older CephOSD holds, the
//! disruption budget's inputs, whether its namespace is being deleted, and the time. Read
//! once per reconcile, again before a plan that takes pods down; planned from once, and again
//! after a fresh read or Ceph's answer.

use crate::crd::osd::{OsdKey, RandomSuffix};
use crate::crd::CephOsd;
use crate::plan::gate::CephView;
use crate::plan::rules::disk_claims::DiskClaims;
use crate::plan::rules::expanded_spec::ExpandedSpec;
use crate::plan::{plan_expanded, Observed, Plan};
use crate::runtime::act::finalizer;
use crate::runtime::controller::admit::awaits_deletion;
use crate::runtime::controller::context::Context;
use crate::runtime::controller::reconcile_error::ReconcileError;
use crate::runtime::controller::topology_inputs::TopologyInputs;
use crate::runtime::observe::budget_inputs::BudgetInputs;
use crate::runtime::observe::owned_objects::{Observation, Snapshot, Subject};
use crate::runtime::observe::watched_pod::WatchedPod;
use k8s_openapi::api::apps::v1::ReplicaSet;
use k8s_openapi::jiff::Timestamp;
use kube::api::Api;
use kube::ResourceExt;
use std::collections::BTreeMap;
use std::ops::ControlFlow;
use std::sync::Arc;
use std::time::Duration;
use tracing::warn;

/// How long a reconcile waits for the budget and node caches' first sync before it plans
/// without a disruption budget (a missing permission, said in the log).
const BUDGET_SYNC_TIMEOUT: Duration = Duration::from_secs(10);

/// What a plan is made from but the objects and Ceph (see the module docs).
pub(super) struct PlanInputs {
    /// The CephOSD as of our last status write.
    pub cr: Arc<CephOsd>,
    expanded: Arc<ExpandedSpec>,
    /// Every CephOSD's disk claims, as of this reconcile.
    claims: Arc<DiskClaims>,
    /// Its OSDs whose disk an older CephOSD holds.
    claimed: Option<Arc<BTreeMap<OsdKey, String>>>,
    /// None when the budget and node caches did not sync in time.
    budgets: Option<BudgetInputs>,
    /// Identifies `budgets` as first read, for the skip of unchanged inputs.
    others_fingerprint: u64,
    namespace_terminating: bool,
    /// The hosts' failure domains as far as learnt (for `updateDomain: Topology`).
    topology: TopologyInputs,
    /// In whole seconds, as the API keeps time: an unchanged status compares equal.
    pub now: Timestamp,
}

impl PlanInputs {
    /// What `cr` (as of our last status write) is planned from, but its objects. Budgets and
    /// cordons are read before the pods: an eviction admitted before the read shows in the
    /// budget or in the pods.
    pub(super) async fn read(ctx: &Context, cr: Arc<CephOsd>) -> Self {
        let namespace = cr.namespace().unwrap_or_default();
        let namespace_terminating = cr.metadata.deletion_timestamp.is_some()
            && Box::pin(finalizer::namespace_terminating(&ctx.client, &namespace)).await;
        let now =
            Timestamp::from_second(Timestamp::now().as_second()).unwrap_or(Timestamp::UNIX_EPOCH);
        let claims = ctx.claims.of(&ctx.crs, &ctx.memory);
        let expanded = ctx.memory.expanded(&cr);
        let claimed = cr.uid().and_then(|uid| claims.lost_by(&uid));
        let budgets = budget_inputs(ctx, &namespace).await;
        let topology = TopologyInputs::read(ctx, &cr).await;
        let others_fingerprint =
            budgets.as_ref().map_or(0, |b| b.fingerprint(&cr)) ^ topology.fingerprint(&cr);
        Self {
            cr,
            expanded,
            claims,
            claimed,
            budgets,
            others_fingerprint,
            namespace_terminating,
            topology,
            now,
        }
    }

    /// What the CephOSD's objects are read for.
    fn subject(&self) -> Subject<'_> {
        Subject {
            cr: &self.cr,
            expanded: &self.expanded,
            claimed: self.claimed.as_deref(),
            others_fingerprint: self.others_fingerprint,
        }
    }

    /// The CephOSD's objects from the watch caches (see `OwnedObjects::observe`).
    pub(super) async fn observe(&self, ctx: &Context) -> Result<Snapshot, ReconcileError> {
        let (pods, replica_sets) = self.apis(ctx);
        (ctx.owned
            .observe(&self.subject(), &pods, &replica_sets, self.now)
            .await)
            .map_err(|source| self.list_failed(source))
    }

    /// The plan from `observation` with `ceph`.
    /// The keys (`host:data`) the spec lists.
    pub(super) fn desired_keys(&self) -> std::collections::BTreeSet<String> {
        self.expanded
            .desired
            .osds
            .keys()
            .map(ToString::to_string)
            .collect()
    }

    pub(super) fn plan(&self, observation: &Observation, ceph: &CephView) -> Plan {
        let observed = Observed {
            pods: observation.pods.iter().map(|p| &**p).collect(),
            replica_sets: observation.replica_sets.iter().map(|r| &**r).collect(),
            others: observation.others.iter().map(|p| &**p).collect(),
            claimed: self.claimed.as_deref().cloned().unwrap_or_default(),
            ceph: ceph.clone(),
            disruption: self.budgets.as_ref().map(BudgetInputs::view),
            namespace_terminating: self.namespace_terminating,
            topology: self.topology.view(&self.expanded, &observation.pods),
        };
        plan_expanded(
            &self.cr,
            &self.expanded,
            &observed,
            &mut RandomSuffix,
            self.now,
        )
    }

    /// The budgets listed again, before the pods are.
    pub(super) async fn list_budgets_again(&mut self, ctx: &Context) -> Result<(), ReconcileError> {
        if let Some(inputs) = self.budgets.take() {
            let budgets = Api::namespaced(ctx.client.clone(), &self.namespace());
            let listed = inputs.list_again(&budgets).await;
            self.budgets = Some(listed.map_err(|source| self.list_failed(source))?);
        }
        Ok(())
    }

    /// The CephOSD and its objects read from the API now.
    pub(super) async fn read_again(
        &self,
        ctx: &Context,
    ) -> (
        Result<CephOsd, kube::Error>,
        Result<Observation, kube::Error>,
    ) {
        let crs: Api<CephOsd> = Api::namespaced(ctx.client.clone(), &self.namespace());
        let (pods, replica_sets) = self.apis(ctx);
        let name = self.cr.name_any();
        futures::future::join(
            crs.get(&name),
            ctx.owned
                .fresh(&self.subject(), &pods, &replica_sets, self.now),
        )
        .await
    }

    /// Takes the CephOSD and its objects as read again; a new version of the CephOSD is
    /// planned from with its expansion and claims. Break: it was deleted meanwhile, or its
    /// deletion ended (planned again from the next reconcile).
    pub(super) fn take_fresh(
        &mut self,
        ctx: &Context,
        (fresh_cr, fresh_objects): (
            Result<CephOsd, kube::Error>,
            Result<Observation, kube::Error>,
        ),
    ) -> Result<ControlFlow<(), Observation>, ReconcileError> {
        let fresh_cr = fresh_cr.map_err(|source| ReconcileError::Get {
            cr: self.cr.object_key(),
            source,
        })?;
        let observation = fresh_objects.map_err(|source| self.list_failed(source))?;
        if fresh_cr.resource_version() != self.cr.resource_version() {
            let was_deleting = self.cr.metadata.deletion_timestamp.is_some();
            self.cr = ctx.memory.latest(Arc::new(fresh_cr));
            if self.cr.metadata.deletion_timestamp.is_some() != was_deleting
                || awaits_deletion(&self.cr)
            {
                return Ok(ControlFlow::Break(()));
            }
            self.expanded = ctx.memory.expanded(&self.cr);
            self.claimed = self.cr.uid().and_then(|uid| self.claims.lost_by(&uid));
        }
        Ok(ControlFlow::Continue(observation))
    }

    fn list_failed(&self, source: kube::Error) -> ReconcileError {
        ReconcileError::List {
            cr: self.cr.object_key(),
            source,
        }
    }

    fn namespace(&self) -> String {
        self.cr.namespace().unwrap_or_default()
    }

    fn apis(&self, ctx: &Context) -> (Api<WatchedPod>, Api<ReplicaSet>) {
        let namespace = self.namespace();
        (
            Api::namespaced(ctx.client.clone(), &namespace),
            Api::namespaced(ctx.client.clone(), &namespace),
        )
    }
}

/// The budget inputs of a CephOSD in `namespace` from the caches, once they have synced
/// (None past `BUDGET_SYNC_TIMEOUT`: no budget is kept, as the log says).
async fn budget_inputs(ctx: &Context, namespace: &str) -> Option<BudgetInputs> {
    let caches = &ctx.budget_caches;
    let mut synced = caches.synced.clone();
    let ready = async move { synced.wait_for(|synced| *synced).await.is_ok() };
    if tokio::time::timeout(BUDGET_SYNC_TIMEOUT, ready)
        .await
        .unwrap_or(false)
    {
        Some(BudgetInputs::cached(
            &caches.budgets,
            &caches.nodes,
            namespace,
        ))
    } else {
        warn!(namespace, "the PodDisruptionBudget and Node caches have not synced (can the operator list and watch them?); planning without a disruption budget");
        None
    }
}
