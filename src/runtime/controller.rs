//! kube-runtime wiring: watch CephOSDs and their pods, reconcile = observe → plan → act.
//!
//! Pods and ReplicaSets come from the watch caches, trusted only once they show every write of
//! ours (`owned_objects`): a stale "no pod" would mean a second pod on a disk; a plan that takes
//! pods down is made again from a fresh read first. CephOSDs are watched in every namespace
//! (a disk listed by two of them belongs to the older one, wherever it lives); only those of
//! the watched namespace are reconciled.

use crate::ceph::{CephClient, CliClient, CliSettings};
use crate::crd::osd::OsdKey;
use crate::crd::osd::RandomSuffix;
use crate::crd::{object_key, CephOsd};
use crate::labels;
use crate::plan::cluster_lock::releases;
use crate::plan::deletion::{self, Deletion, FinalizerWrite};
use crate::plan::events::EventReason;
use crate::plan::failure::Failure;
use crate::plan::gate::{CephInput, CephView};
use crate::plan::{plan_expanded, Observed, Plan};
use crate::pod::pod_record::{bound_host, recorded_data};
use crate::runtime::act::executor::{ExecuteError, Executor};
use crate::runtime::act::finalizer;
use crate::runtime::act::unreadable::{self, Reported};
use crate::runtime::backoff::{Backoff, WatchRetry};
use crate::runtime::ceph::ceph_gate::{decision_label, first_view, GateSettings, Question};
use crate::runtime::ceph::cluster_lock::{answer_holding_the_lock, CephStepLocks, LockState};
use crate::runtime::ceph::metered_ceph::MeteredCeph;
use crate::runtime::memory::Memory;
use crate::runtime::observe::budget_inputs::{
    budget_mappers, watch_budgets_and_nodes, BudgetCaches, BudgetInputs,
};
use crate::runtime::observe::claims_registry::ClaimsRegistry;
use crate::runtime::observe::other_cephosds::other_cephosds;
use crate::runtime::observe::owned_objects::{
    is_osd_pod, strip_replica_set, Observation, OwnedObjects, Snapshot, Subject,
};
use crate::runtime::observe::watched_cephosd::{split_event, Unreadable, WatchedCephOsd};
use crate::runtime::observe::watched_pod::{self, WatchedPod};
use crate::runtime::serve::metrics::Metrics;
use futures::{Stream, StreamExt, TryStreamExt};
use k8s_openapi::api::apps::v1::ReplicaSet;
use k8s_openapi::api::core::v1::Pod;
use k8s_openapi::jiff::Timestamp;
use kube::api::Api;
use kube::runtime::controller::{self, Action, Controller};
use kube::runtime::events::{Recorder, Reporter};
use kube::runtime::reflector::ObjectRef;
use kube::runtime::{reflector, watcher, WatchStreamExt};
use kube::{Client, ResourceExt};
use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;
use tracing::{debug, info, warn};

/// Settings of one operator process.
#[derive(Clone, Debug)]
pub struct Settings {
    /// Watch only this namespace (None: all namespaces).
    pub namespace: Option<String>,
    /// Periodic resync of every CephOSD.
    pub resync: Duration,
    /// Delay before the first retry of a failed reconcile (doubling up to 5 minutes).
    pub retry: Duration,
    /// How to reach Ceph; `None`: the Ceph gate is off (the `CephGate` condition says so).
    pub ceph: Option<CliSettings>,
    /// How rollout steps are gated.
    pub gate: GateSettings,
}

struct Context {
    client: Client,
    settings: Settings,
    recorder: Recorder,
    backoff: Backoff,
    metrics: Arc<Metrics>,
    /// What is remembered of each CephOSD between reconciles.
    memory: Arc<Memory>,
    owned: OwnedObjects,
    /// Every CephOSD in the cluster (claims are cluster-wide).
    crs: reflector::Store<CephOsd>,
    claims: Arc<ClaimsRegistry>,
    /// Ceph, when configured.
    ceph: Option<Arc<dyn CephClient>>,
    /// The step lock of that Ceph cluster, when a namespace for it is configured.
    ceph_locks: Option<Arc<CephStepLocks>>,
    /// PodDisruptionBudgets (of the watched namespace) and nodes (name and cordon only).
    budget_caches: BudgetCaches,
}

/// How long a reconcile waits for the budget and node caches' first sync before it plans
/// without a disruption budget (a missing permission, said in the log).
const BUDGET_SYNC_TIMEOUT: Duration = Duration::from_secs(10);

#[derive(Debug, thiserror::Error)]
pub(crate) enum ReconcileError {
    #[error("failed to list the pods or ReplicaSets of CephOSD {cr}: {source}")]
    List {
        cr: String,
        #[source]
        source: kube::Error,
    },
    #[error("failed to read CephOSD {cr} again before taking pods down: {source}")]
    Get {
        cr: String,
        #[source]
        source: kube::Error,
    },
    #[error("failed to {what} the finalizer of CephOSD {cr}: {source}")]
    Finalizer {
        cr: String,
        what: &'static str,
        #[source]
        source: kube::Error,
    },
    #[error(transparent)]
    Execute(#[from] ExecuteError),
}

impl ReconcileError {
    pub(crate) fn category(&self) -> Failure {
        match self {
            Self::List { .. } | Self::Get { .. } => Failure::List,
            Self::Finalizer { .. } => Failure::Patch,
            Self::Execute(e) => e.category(),
        }
    }
}

/// Runs the controller until SIGTERM / Ctrl-C.
pub(crate) async fn run(client: Client, settings: Settings, metrics: Arc<Metrics>) {
    let (pods, replica_sets): (Api<WatchedPod>, Api<ReplicaSet>) = match &settings.namespace {
        Some(ns) => (
            Api::namespaced(client.clone(), ns),
            Api::namespaced(client.clone(), ns),
        ),
        None => (Api::all(client.clone()), Api::all(client.clone())),
    };
    let crs: Api<WatchedCephOsd> = Api::all(client.clone());
    let recorder = event_recorder(&client);
    // Each watch retries on its own (100 ms doubling to 2 s) and its errors stop there: a
    // watch that has to relist after an outage does not hold the others back.
    let (store, writer) = reflector::store();
    let (specs_changed, spec_changes) = futures::channel::mpsc::unbounded::<()>();
    let mut generations = SpecVersions::default();
    let watched_namespace = settings.namespace.clone();
    let memory = Arc::new(Memory::default());
    let (memory_of_crs, crs_seen) = (memory.clone(), store.clone());
    let cr_events = readable_only(
        watcher(crs, watcher::Config::default()).backoff(WatchRetry::default()),
        client.clone(),
        recorder.clone(),
        settings.namespace.clone(),
    )
    .reflect(writer)
    .inspect(move |event| {
        if let Ok(event) = event {
            // A CephOSD that appears, goes or changes its spec may change who holds which
            // disk: every CephOSD is reconciled again.
            if generations.changed_by(event) {
                let _ = specs_changed.unbounded_send(());
            }
            memory_of_crs.forget_gone(&crs_seen, event);
        }
    })
    .applied_objects()
    .try_filter(move |cr| {
        std::future::ready(in_scope(
            watched_namespace.as_deref(),
            cr.namespace().as_deref(),
        ))
    });
    // Every OSD pod: by owner label (the reference operator's pods carry an ownerReference
    // without `controller: true`, and they must trigger us too) or by a CephOSD controller
    // reference (a pod we control is ours whatever its labels). Other pods never reach the
    // cache.
    let (pod_store, pod_writer) = reflector::store();
    let pod_events = watcher(pods, watcher::Config::default())
        .backoff(WatchRetry::default())
        .map_ok(watched_pod::into_pod_event)
        .try_filter_map(|event| std::future::ready(Ok(only_osd_pods(event))))
        .reflect(pod_writer)
        .touched_objects();
    // The Ansible operator's ReplicaSets (migrated away from by the rollout).
    let (replica_set_store, replica_set_writer) = reflector::store();
    let replica_set_events = watcher(
        replica_sets,
        watcher::Config::default().labels(labels::OWNER),
    )
    .backoff(WatchRetry::default())
    .modify(strip_replica_set)
    .reflect(replica_set_writer)
    .touched_objects();
    // PodDisruptionBudgets (ours, and anyone's that may select OSD pods) and cordons.
    let (budget_caches, (budget_events, node_events)) =
        watch_budgets_and_nodes(&client, settings.namespace.as_deref());
    let claims = Arc::new(ClaimsRegistry::default());
    let ceph_locks = (settings.gate.lock_namespace.as_deref())
        .map(|ns| Arc::new(CephStepLocks::new(client.clone(), ns)));
    let context = Arc::new(Context {
        budget_caches,
        backoff: Backoff::new(settings.retry, Duration::from_secs(300)),
        client,
        recorder,
        metrics: metrics.clone(),
        owned: OwnedObjects::new(pod_store, replica_set_store, memory.clone()),
        memory,
        crs: store.clone(),
        claims: claims.clone(),
        ceph: settings.ceph.clone().map(|s| {
            Arc::new(MeteredCeph {
                inner: Arc::new(CliClient::new(s)),
                metrics: metrics.clone(),
            }) as Arc<dyn CephClient>
        }),
        ceph_locks,
        settings,
    });
    let pods_of = {
        let (claims, namespace) = (claims.clone(), context.settings.namespace.clone());
        move |pod: Pod| cephosds_of_pod(&pod, &claims, namespace.as_deref())
    };
    let (budgets_of, on_node) = budget_mappers(&store, context.settings.namespace.as_deref());
    Controller::for_stream(logging_errors(cr_events, "CephOSD"), store)
        .watches_stream(logging_errors(pod_events, "Pod"), pods_of)
        .watches_stream(logging_errors(replica_set_events, "ReplicaSet"), owner_of)
        .watches_stream(
            logging_errors(budget_events, "PodDisruptionBudget"),
            budgets_of,
        )
        .watches_stream(logging_errors(node_events, "Node"), on_node)
        .reconcile_all_on(spec_changes)
        .shutdown_on_signal()
        .run(timed_reconcile, error_policy, context.clone())
        .for_each(|result| {
            after_reconcile(result, &context);
            std::future::ready(())
        })
        .await;
}

/// Events as `ceph-osd-operator`, this pod's instance.
fn event_recorder(client: &Client) -> Recorder {
    let reporter = Reporter {
        controller: "ceph-osd-operator".into(),
        instance: std::env::var("POD_NAME").ok(),
    };
    Recorder::new(client.clone(), reporter)
}

/// The CephOSD watch's events without the objects the operator cannot read, which are
/// reported on their own: never a failed LIST that stops every other CephOSD.
fn readable_only(
    events: impl Stream<Item = Result<watcher::Event<WatchedCephOsd>, watcher::Error>> + Send,
    client: Client,
    recorder: Recorder,
    watched: Option<String>,
) -> impl Stream<Item = Result<watcher::Event<CephOsd>, watcher::Error>> + Send {
    let (found, unreadable) = futures::channel::mpsc::unbounded::<Unreadable>();
    tokio::spawn(report_unreadable(unreadable, client, recorder, watched));
    events
        .map_ok(split_event)
        .try_filter_map(move |(event, unreadable)| {
            if let Some(u) = unreadable {
                let _ = found.unbounded_send(u);
            }
            std::future::ready(Ok(event))
        })
}

/// Reports each unreadable CephOSD once per generation and reason; the operator whose scope
/// holds it writes the event and the condition.
async fn report_unreadable(
    mut found: futures::channel::mpsc::UnboundedReceiver<Unreadable>,
    client: Client,
    recorder: Recorder,
    watched: Option<String>,
) {
    let mut reported = Reported::default();
    while let Some(u) = found.next().await {
        if reported.is_new(&u) {
            let writes = in_scope(watched.as_deref(), u.metadata.namespace.as_deref());
            unreadable::report(&client, &recorder, &u, writes).await;
        }
    }
}

/// Logs a controller error; a reconcile due for a CephOSD that was deleted drops everything
/// kept of it.
fn after_reconcile<T>(
    result: Result<T, controller::Error<ReconcileError, watcher::Error>>,
    context: &Context,
) {
    match result {
        Err(controller::Error::ObjectNotFound(object)) => {
            debug!(%object, "event for a CephOSD that no longer exists");
            let namespace = object.namespace.as_deref().unwrap_or_default();
            context.metrics.forget(namespace, &object.name);
            context.memory.forget(&object_key(namespace, &object.name));
        }
        Err(error) => warn!(%error, "controller error"),
        Ok(_) => {}
    }
}

/// Whether a CephOSD in `namespace` is reconciled by an operator watching `watched` (None:
/// every namespace).
fn in_scope(watched: Option<&str>, namespace: Option<&str>) -> bool {
    watched.is_none_or(|w| namespace == Some(w))
}

/// The spec version (generation) of every CephOSD seen by the watch, to tell spec changes
/// from status writes.
#[derive(Default)]
struct SpecVersions(HashMap<String, Option<i64>>);

impl SpecVersions {
    /// Records `event`; true when a CephOSD appeared, went, or changed its spec.
    fn changed_by(&mut self, event: &watcher::Event<CephOsd>) -> bool {
        match event {
            watcher::Event::Apply(cr) | watcher::Event::InitApply(cr) => {
                let uid = cr.uid().unwrap_or_default();
                self.0.insert(uid, cr.metadata.generation) != Some(cr.metadata.generation)
            }
            watcher::Event::Delete(cr) => self.0.remove(&cr.uid().unwrap_or_default()).is_some(),
            watcher::Event::Init | watcher::Event::InitDone => false,
        }
    }
}

/// The event as the pod cache takes it: a pod that is no OSD pod (any more) is removed, or
/// not listed.
fn only_osd_pods(event: watcher::Event<Pod>) -> Option<watcher::Event<Pod>> {
    match event {
        watcher::Event::Apply(pod) if !is_osd_pod(&pod) => Some(watcher::Event::Delete(pod)),
        watcher::Event::InitApply(pod) if !is_osd_pod(&pod) => None,
        other => Some(other),
    }
}

/// The CephOSDs a pod event concerns: the one whose owner label it carries, the one that
/// controls it, and those listing a disk it may run on (waiting for it to be gone).
fn cephosds_of_pod(
    pod: &Pod,
    claims: &ClaimsRegistry,
    watched: Option<&str>,
) -> Vec<ObjectRef<CephOsd>> {
    let Some(namespace) = pod.metadata.namespace.as_deref() else {
        return Vec::new();
    };
    let labelled = pod
        .labels()
        .get(labels::OWNER)
        .and_then(|v| labels::owner_named_by(v));
    let controller = pod
        .owner_references()
        .iter()
        .find(|o| o.controller == Some(true) && crate::pod::owner_reference::is_cephosd(o))
        .map(|o| o.name.as_str());
    let mut refs: Vec<ObjectRef<CephOsd>> = [labelled, controller]
        .into_iter()
        .flatten()
        .map(|name| ObjectRef::new(name).within(namespace))
        .collect();
    let annotation = |k: &str| pod.annotations().get(k).map(String::as_str);
    let disks = [
        annotation(labels::HOST).zip(annotation(labels::DATA)),
        bound_host(pod).zip(recorded_data(pod)),
    ];
    let claims = claims.latest();
    for (host, data) in disks.into_iter().flatten() {
        for id in claims.listing(&OsdKey::new(host, data).device_id()) {
            if let Some((ns, name)) = id.split_once('/') {
                if in_scope(watched, Some(ns)) {
                    refs.push(ObjectRef::new(name).within(ns));
                }
            }
        }
    }
    refs.sort_by(|a, b| (&a.namespace, &a.name).cmp(&(&b.namespace, &b.name)));
    refs.dedup();
    refs
}

/// `events` without its errors, which are logged: the watch behind it retries by itself. An
/// error said once is said again only at debug level until the watch works again or fails
/// otherwise (a LIST failing every 2 s for an hour is one warning, not 1,800).
fn logging_errors<K: Send + 'static>(
    events: impl Stream<Item = Result<K, watcher::Error>> + Send + 'static,
    kind: &'static str,
) -> impl Stream<Item = Result<K, watcher::Error>> + Send + 'static {
    let mut said: Option<String> = None;
    events.filter_map(move |event| {
        let kept = match event {
            Ok(object) => {
                said = None;
                Some(Ok(object))
            }
            Err(error) => {
                let words = watch_error(kind, &error);
                if said.as_deref() == Some(words.as_str()) {
                    debug!(error = %words, watch = kind, "watch still failing; retrying");
                } else {
                    warn!(error = %words, watch = kind, "watch failed; retrying");
                    said = Some(words);
                }
                None
            }
        };
        std::future::ready(kept)
    })
}

/// A watch's error in one line: the API server's status and message, and for the CephOSD
/// watch answered 404, that the CRD is not installed.
fn watch_error(kind: &str, error: &watcher::Error) -> String {
    let api = match error {
        watcher::Error::InitialListFailed(kube::Error::Api(s))
        | watcher::Error::WatchStartFailed(kube::Error::Api(s))
        | watcher::Error::WatchFailed(kube::Error::Api(s)) => Some(s),
        _ => None,
    };
    match api {
        Some(s) if s.code == 404 && kind == "CephOSD" => format!(
            "the CephOSD CRD is not installed (404 {}): apply crds/cephosds.ceph.elemental.net.yaml; \
             waiting for it",
            s.message
        ),
        Some(s) => format!("{} {}: {}", s.code, s.reason, s.message),
        None => error.to_string(),
    }
}

/// The CephOSD an object belongs to, from its owner label `CephOSD-<name>`.
#[allow(clippy::needless_pass_by_value)] // the mapper signature `watches_stream` wants
fn owner_of<K: ResourceExt>(object: K) -> Option<ObjectRef<CephOsd>> {
    let name = labels::owner_named_by(object.labels().get(labels::OWNER)?)?;
    Some(ObjectRef::new(name).within(&object.namespace()?))
}

async fn timed_reconcile(cr: Arc<CephOsd>, ctx: Arc<Context>) -> Result<Action, ReconcileError> {
    let started = std::time::Instant::now();
    let object = cr.object_key();
    let result = Box::pin(reconcile(cr, ctx.clone())).await;
    match &result {
        Ok(_) => ctx.memory.succeeded(&object),
        Err(error) => ctx.metrics.failed(error.category(), started.elapsed()),
    }
    result
}

#[expect(
    clippy::too_many_lines,
    reason = "one reconcile's steps in the order they run: observe, plan (again from a fresh read before taking pods down), act, remember"
)]
async fn reconcile(cr: Arc<CephOsd>, ctx: Arc<Context>) -> Result<Action, ReconcileError> {
    let started = std::time::Instant::now();
    if !in_scope(ctx.settings.namespace.as_deref(), cr.namespace().as_deref()) {
        // Watched only for its claims on disks.
        return Ok(Action::await_change());
    }
    let mut cr = ctx.memory.latest(cr);
    let namespace = cr.namespace().unwrap_or_default();
    let cr_name = cr.object_key();
    let crs: Api<CephOsd> = Api::namespaced(ctx.client.clone(), &namespace);
    let finalizer_failed = |what| {
        let cr = cr_name.clone();
        move |source| ReconcileError::Finalizer { cr, what, source }
    };
    if cr.metadata.deletion_timestamp.is_some() {
        if awaits_deletion(&cr) {
            return Ok(Action::await_change());
        }
    } else if deletion::finalizer_write(&cr, None, true, true) == Some(FinalizerWrite::Add) {
        Box::pin(finalizer::write(&crs, &cr.name_any(), true))
            .await
            .map_err(finalizer_failed("add"))?;
        info!(cephosd = %cr_name, finalizer = deletion::FINALIZER, "added the finalizer");
    }
    let namespace_terminating = cr.metadata.deletion_timestamp.is_some()
        && Box::pin(finalizer::namespace_terminating(&ctx.client, &namespace)).await;
    let watched_pods: Api<WatchedPod> = Api::namespaced(ctx.client.clone(), &namespace);
    let replica_sets: Api<ReplicaSet> = Api::namespaced(ctx.client.clone(), &namespace);
    // The API keeps whole seconds; so do we, so an unchanged status compares equal.
    let now = Timestamp::from_second(Timestamp::now().as_second()).unwrap_or(Timestamp::UNIX_EPOCH);
    let claims = ctx.claims.of(&ctx.crs, &ctx.memory);
    let mut expanded = ctx.memory.expanded(&cr);
    let mut claimed = cr.uid().and_then(|uid| claims.lost_by(&uid));
    // Budgets and cordons are read before the pods: an eviction admitted before the read
    // shows in the budget or in the pods.
    let mut budget_inputs = budget_inputs(&ctx, &namespace).await;
    let others_fingerprint = budget_inputs.as_ref().map_or(0, |b| b.fingerprint(&cr));
    let subject = Subject {
        cr: &cr,
        expanded: &expanded,
        claimed: claimed.as_deref(),
        others_fingerprint,
    };
    let list_failed = |source| ReconcileError::List {
        cr: cr_name.clone(),
        source,
    };
    let snapshot = ctx
        .owned
        .observe(&subject, &watched_pods, &replica_sets, now)
        .await
        .map_err(list_failed)?;
    let mut observation = match snapshot {
        Snapshot::Plan(observation) => observation,
        Snapshot::Unchanged => {
            // Inputs exactly those of a plan with nothing to do: no planning, no API call.
            debug!(cephosd = %cr_name, unchanged = true, "reconciled");
            ctx.metrics.unchanged(started.elapsed());
            return Ok(Action::requeue(ctx.settings.resync));
        }
        // Our last writes are not in the caches yet: their watch events bring the next
        // reconcile (the requeue only covers a write that is never seen).
        Snapshot::Lagging => return Ok(Action::requeue(Duration::from_secs(1))),
    };
    let ceph = ctx.ceph.as_deref();
    // An open step keeps its Ceph cluster's step lock (this CephOSD may hold it; one that
    // opts out of the gate only lets it go).
    let mut may_hold_lock = cr.status.as_ref().is_some_and(|s| s.ceph_step.is_some());
    let keeps = may_hold_lock && !cr.spec.skips_ceph_gate();
    if let (true, Some(ceph), Some(locks)) = (keeps, ceph, &ctx.ceph_locks) {
        if let LockState::Busy { busy, lease } = Box::pin(locks.keep(ceph, &cr)).await {
            warn!(cephosd = %cr_name, holder = %busy, %lease, "the step lock of the Ceph cluster is another CephOSD's while this one's step is open (it expired, or this step ended and is being closed)");
        }
    }
    let (view, looked) = first_view(ceph, &ctx.memory, &cr, &ctx.settings.gate).await;
    let mut plan = planned(
        &cr,
        &expanded,
        &observation,
        claimed.as_deref(),
        &view,
        budget_inputs.as_ref(),
        namespace_terminating,
        now,
    );
    // Pods go down only on a view as new as the decision: a plan that takes pods down, or
    // asks Ceph whether it may, is made again from the CephOSD and its pods read again (a
    // cache may be seconds behind, and a domain it shows available be down), and Ceph's
    // answer, asked meanwhile.
    let answering = plan
        .gate_question
        .clone()
        .zip(ceph)
        .map(|(question, ceph)| {
            let (cr, pods, observed) = (cr.clone(), observation.pods.clone(), plan.pods.clone());
            let others = other_cephosds(&cr, &ctx.crs.state(), &ctx.memory);
            let locks = ctx.ceph_locks.clone();
            async move {
                let locks = locks.as_deref();
                let asked = Question {
                    cr: &cr,
                    observed: &observed,
                    pods: &pods,
                    subjects: &question,
                    others: &others,
                };
                Box::pin(answer_holding_the_lock(locks, ceph, &asked, looked)).await
            }
        });
    let answering = async move {
        match answering {
            Some(answering) => Some(answering.await),
            None => None,
        }
    };
    let read_again =
        observation.fingerprint.is_some() && (plan.disrupts() || plan.gate_question.is_some());
    let (fresh, answered) = if read_again {
        let name = cr.name_any();
        if let Some(inputs) = budget_inputs.take() {
            let budgets = Api::namespaced(ctx.client.clone(), &namespace);
            budget_inputs = Some(inputs.list_again(&budgets).await.map_err(list_failed)?);
        }
        let subject = Subject {
            cr: &cr,
            expanded: &expanded,
            claimed: claimed.as_deref(),
            others_fingerprint,
        };
        let fresh = futures::future::join(
            crs.get(&name),
            ctx.owned.fresh(&subject, &watched_pods, &replica_sets, now),
        );
        let ((fresh_cr, fresh_objects), answered) = futures::join!(fresh, answering);
        (Some((fresh_cr, fresh_objects)), answered)
    } else {
        (None, answering.await)
    };
    if let Some((fresh_cr, fresh_objects)) = fresh {
        let fresh_cr = fresh_cr.map_err(|source| ReconcileError::Get {
            cr: cr_name.clone(),
            source,
        })?;
        observation = fresh_objects.map_err(list_failed)?;
        if fresh_cr.resource_version() != cr.resource_version() {
            let was_deleting = cr.metadata.deletion_timestamp.is_some();
            cr = ctx.memory.latest(Arc::new(fresh_cr));
            // Deleted meanwhile: planned again from the next reconcile.
            if cr.metadata.deletion_timestamp.is_some() != was_deleting || awaits_deletion(&cr) {
                return Ok(Action::requeue(Duration::from_secs(1)));
            }
            expanded = ctx.memory.expanded(&cr);
            claimed = cr.uid().and_then(|uid| claims.lost_by(&uid));
        }
    }
    let answered = answered.map(|(answer, took_lock)| {
        may_hold_lock |= took_lock;
        answer
    });
    let view = match answered {
        Some(answer) => {
            let label = decision_label(&answer.decision);
            ctx.metrics.gate_decided(label);
            info!(cephosd = %cr_name, decision = %answer.decision, category = label, "asked Ceph before a rollout step");
            CephView {
                input: CephInput::Answered(answer),
                ..view
            }
        }
        None => view,
    };
    if read_again || matches!(view.input, CephInput::Answered(_)) {
        plan = planned(
            &cr,
            &expanded,
            &observation,
            claimed.as_deref(),
            &view,
            budget_inputs.as_ref(),
            namespace_terminating,
            now,
        );
        debug!(cephosd = %cr_name, disrupts = plan.disrupts(), "planned again from a fresh read and Ceph's answer");
    }
    let s = &plan.summary;
    macro_rules! reconciled {
        ($level:ident) => {
            $level!(
                cephosd = %cr_name,
                hash = %plan.template_hash,
                desired = s.desired, current = s.current, ready = s.ready, updated = s.updated,
                out_of_date = s.out_of_date, unready = s.unready, invalid = s.invalid,
                terminating = s.terminating, superfluous = s.superfluous,
                actions = plan.actions.len(),
                halted = plan.halted.as_deref().unwrap_or(""),
                "reconciled"
            )
        };
    }
    // INFO only when something changes: a resync of a settled CephOSD is a DEBUG line.
    let changes = !plan.actions.is_empty() || !plan.events.is_empty() || plan.status_changed;
    if changes {
        reconciled!(info);
    } else {
        reconciled!(debug);
    }
    let executor = Executor {
        pods: Api::namespaced(ctx.client.clone(), &namespace),
        budgets: Api::namespaced(ctx.client.clone(), &namespace),
        replica_sets,
        crs: Api::namespaced(ctx.client.clone(), &namespace),
        recorder: &ctx.recorder,
        cr: &cr,
        ceph,
    };
    let outcome = executor
        .carry_out(&plan, now, &|action| ctx.owned.written(&cr, action, now))
        .await;
    if let Some(status) = &outcome.status {
        ctx.memory.remember(&cr, status);
    }
    let step_open_after = plan.status.ceph_step.is_some();
    if releases(may_hold_lock, step_open_after, outcome.failed.is_some()) {
        if let (Some(ceph), Some(locks)) = (ceph, &ctx.ceph_locks) {
            Box::pin(locks.release(ceph, &cr)).await;
        }
    }
    let quiet = !changes && plan.requeue_after.is_none() && outcome.failed.is_none();
    ctx.owned.planned(&cr, &observation, quiet);
    if let Some(error) = outcome.failed {
        // The retry follows the error policy's backoff.
        return Err(error.into());
    }
    if plan.finalizer == Some(FinalizerWrite::Remove) {
        let how = match plan.deletion {
            Some(Deletion::AtOnce(why)) => why,
            _ => "its pods went one update domain at a time",
        };
        // A terminating namespace takes no Event: the log says it.
        for event in plan
            .events
            .iter()
            .filter(|e| e.reason == EventReason::Deleting)
        {
            warn!(cephosd = %cr_name, note = %event.note, "deletion");
        }
        Box::pin(finalizer::write(&crs, &cr.name_any(), false))
            .await
            .map_err(finalizer_failed("remove"))?;
        info!(cephosd = %cr_name, how, "no pod of the CephOSD is left and no Ceph step is open: removed the finalizer");
        return Ok(Action::await_change());
    }
    ctx.metrics
        .reconciled(&namespace, &cr.name_any(), &plan.summary, started.elapsed());
    ctx.metrics.domains_finished(&plan.finished_domain_seconds);
    let resync = ctx.settings.resync;
    let next = plan
        .requeue_after
        .and_then(|d| Duration::try_from(d).ok())
        .map_or(resync, |d| d.min(resync));
    Ok(Action::requeue(next))
}

/// Whether a deleted CephOSD is left alone for now: the operator's finalizer is not on it
/// (nothing to do), or the garbage collector is still orphaning its pods.
fn awaits_deletion(cr: &CephOsd) -> bool {
    !deletion::is_held(cr) || deletion::deletion_of(cr, false) == Some(Deletion::Orphaning)
}

/// The plan for `cr` from `observation`.
#[expect(
    clippy::too_many_arguments,
    reason = "each input of one plan, as the reconcile holds it"
)]
fn planned(
    cr: &CephOsd,
    expanded: &crate::plan::expanded_spec::ExpandedSpec,
    observation: &Observation,
    claimed: Option<&std::collections::BTreeMap<OsdKey, String>>,
    ceph: &CephView,
    budgets: Option<&BudgetInputs>,
    namespace_terminating: bool,
    now: Timestamp,
) -> Plan {
    let observed = Observed {
        pods: observation.pods.iter().map(|p| &**p).collect(),
        replica_sets: observation.replica_sets.iter().map(|r| &**r).collect(),
        others: observation.others.iter().map(|p| &**p).collect(),
        claimed: claimed.cloned().unwrap_or_default(),
        ceph: ceph.clone(),
        disruption: budgets.map(BudgetInputs::view),
        namespace_terminating,
    };
    plan_expanded(cr, expanded, &observed, &mut RandomSuffix, now)
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

#[allow(clippy::needless_pass_by_value)] // the signature `Controller::run` wants
fn error_policy(cr: Arc<CephOsd>, error: &ReconcileError, ctx: Arc<Context>) -> Action {
    let object = cr.object_key();
    let delay = ctx.backoff.delay(ctx.memory.failed(&object));
    warn!(cephosd = %object, category = %error.category(), retry_in = ?delay, %error, "reconcile failed");
    Action::requeue(delay)
}

#[cfg(test)]
mod fresh_read_tests;

#[cfg(test)]
mod watch_error_tests {
    use super::*;
    use kube::core::Status;

    fn api(code: u16, reason: &str, message: &str) -> kube::Error {
        kube::Error::Api(Status::failure(message, reason).with_code(code).boxed())
    }

    #[test]
    fn a_missing_crd_is_said_as_such_in_one_line() {
        let missing = watcher::Error::InitialListFailed(api(
            404,
            "NotFound",
            "the server could not find the requested resource",
        ));
        let words = watch_error("CephOSD", &missing);
        assert!(
            words.starts_with("the CephOSD CRD is not installed (404 the server could not find"),
            "{words}"
        );
        assert!(
            !words.contains('\n') && !words.contains("ErrorResponse"),
            "{words}"
        );
        // Another watch's 404, or another failure: the server's own words.
        let forbidden =
            watcher::Error::InitialListFailed(api(403, "Forbidden", "pods is forbidden"));
        assert_eq!(
            watch_error("Pod", &forbidden),
            "403 Forbidden: pods is forbidden"
        );
        assert!(watch_error("Pod", &missing).starts_with("404 NotFound"));
    }
}
