//! Fixtures for the end-to-end scenarios (`tests/scenarios.rs`), in Molecule's stages:
//!
//! - **create**: the local control plane must be up ([`Scenario::create`] fails with
//!   [`HOW_TO_START`](crate::HOW_TO_START) otherwise);
//! - **converge**: the `CephOSD` CRD is server-side applied (once per process, idempotent) and
//!   Established, the scenario gets a fresh namespace `mlt-<scenario>-<random>`, a
//!   [`PodRecorder`] starts watching it, and the operator binary runs as a child process for
//!   that namespace only, logging to `target/molecule-like-tests/<namespace>/operator.log`;
//! - **verify**: the test itself, with [`Scenario::wait_until`] (polling with a timeout, never
//!   fixed sleeps) and the recorder's replay checks;
//! - **destroy**: [`Scenario::destroy`] kills the operator and deletes the CR and the pods of
//!   the namespace. A scenario dropped without `destroy` (a panic or an early `?` return)
//!   counts as failed: the guard prints the pods (annotations, phase, Ready) and the tail of the
//!   operator's log, then cleans up all the same.
//!
//! Shared by the scenario test files: the timeouts [`CONVERGE`] and [`ROLLOUT`], the CR name
//! [`CR`], manifest helpers ([`keys`], [`storage`], [`hash_of`], [`never_ready_revision`]),
//! [`hold`], [`kubectl`], and the steps [`Scenario::create_converged`],
//! [`Scenario::patch_template_metadata`] and [`Scenario::assert_one_pod_per_key`].
//!
//! Host names: a disk (`host:data`) belongs to one CephOSD in the whole cluster, and the
//! scenarios share one control plane (side by side, and with what earlier runs left behind).
//! So every scenario names hosts of its own: [`Scenario::host`] / [`Scenario::hosts`] (the
//! scenario's tag joined to the first DNS label), [`Scenario::own_sample`] for the reference
//! sample, and [`tagged_host`] / [`with_tagged_hosts`] with a [`random_suffix`] for code
//! without a scenario.

use std::collections::{BTreeMap, BTreeSet};
use std::future::Future;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use anyhow::{anyhow, bail, Context as _};
use ceph_osd_operator::crd::UpdateDomain;
use ceph_osd_operator::crd::{custom_resource_definition, CephOsd, CephOsdStatus};
use ceph_osd_operator::labels;
use ceph_osd_operator::testing::CephOsdBuilder;
use ceph_osd_operator::OsdKey;
use ceph_osd_operator::TemplateHash;
use futures::stream::BoxStream;
use futures::StreamExt;
use k8s_openapi::api::core::v1::{Namespace, Pod, ServiceAccount};
use k8s_openapi::api::events::v1::Event as K8sEvent;
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::api::{
    Api, ApiResource, DeleteParams, DynamicObject, ListParams, Patch, PatchParams, PostParams,
    WatchEvent, WatchParams,
};
use kube::runtime::wait::{await_condition, conditions};
use kube::{Client, ResourceExt};
use serde_json::{json, Value};

/// Pod annotation (KWOK stage `pod-ready`): seconds after creation until the pod is Ready.
pub const READY_AFTER_ANNOTATION: &str = "testing.local/ready-after-seconds";
/// Pod annotation (KWOK stage `pod-running-never-ready`): `"never"` keeps the pod not Ready.
pub const READY_ANNOTATION: &str = "testing.local/ready";
/// Pod annotation (KWOK stage `pod-failed`): `"true"` makes the pod fail.
pub const FAIL_ANNOTATION: &str = "testing.local/fail";

/// Field manager of the scenarios' server-side applies.
pub const FIELD_MANAGER: &str = "molecule-like-tests";
/// The reference sample CR, relative to the workspace root.
pub const SAMPLE: &str = "deploy/samples/ceph-osds.yaml";

/// The workspace root (the operator crate).
pub fn workspace_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .map_or_else(|| PathBuf::from(".."), Path::to_path_buf)
}

/// The cargo target directory: `$CARGO_TARGET_DIR` (relative to the workspace root when
/// relative) or `<workspace>/target`.
pub fn target_dir() -> PathBuf {
    match std::env::var_os("CARGO_TARGET_DIR") {
        Some(dir) if Path::new(&dir).is_absolute() => PathBuf::from(dir),
        Some(dir) => workspace_root().join(dir),
        None => workspace_root().join("target"),
    }
}

/// The operator binary: `$CEPH_OSD_OPERATOR_BIN`, else `ceph-osd-operator` next to the running
/// test's profile directory (`<target>/debug/deps/<test>` → `<target>/debug/`), else
/// `<target>/debug/ceph-osd-operator`.
pub fn operator_binary() -> anyhow::Result<PathBuf> {
    if let Some(bin) = std::env::var_os("CEPH_OSD_OPERATOR_BIN") {
        return Ok(PathBuf::from(bin));
    }
    let name = format!("ceph-osd-operator{}", std::env::consts::EXE_SUFFIX);
    let mut candidates = Vec::new();
    if let Ok(exe) = std::env::current_exe() {
        if let Some(profile) = exe.parent().and_then(Path::parent) {
            candidates.push(profile.join(&name));
        }
    }
    candidates.push(target_dir().join("debug").join(&name));
    for candidate in &candidates {
        if candidate.is_file() {
            warn_if_stale(candidate);
            return Ok(candidate.clone());
        }
    }
    bail!(
        "the operator binary is not built (looked at {candidates:?}): run \
         `cargo build -p ceph-osd-operator` first (molecule-like-tests/run does)"
    )
}

/// A binary older than the operator's sources tests old code: say so (but go on).
fn warn_if_stale(bin: &Path) {
    let Ok(built) = bin.metadata().and_then(|m| m.modified()) else {
        return;
    };
    let src = workspace_root().join("src");
    let mut newer = Vec::new();
    let mut folders = vec![src.clone()];
    while let Some(folder) = folders.pop() {
        for entry in std::fs::read_dir(&folder).into_iter().flatten().flatten() {
            let path = entry.path();
            if path.is_dir() {
                folders.push(path);
            } else if entry
                .metadata()
                .and_then(|m| m.modified())
                .is_ok_and(|t| t > built)
            {
                let relative = path.strip_prefix(&src).unwrap_or(&path);
                newer.push(relative.to_string_lossy().into_owned());
            }
        }
    }
    if !newer.is_empty() {
        eprintln!(
            "WARNING: {} is older than src/{{{}}}: run `cargo build -p ceph-osd-operator`",
            bin.display(),
            newer.join(",")
        );
    }
}

/// A short random lowercase hex string (namespaces, names).
pub fn random_suffix() -> String {
    use std::hash::{BuildHasher, Hasher};
    let mut h = std::collections::hash_map::RandomState::new().build_hasher();
    h.write_u128(
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos()),
    );
    h.write_u32(std::process::id());
    format!("{:06x}", h.finish() & 0xff_ffff)
}

/// The `ApiResource` of `CephOSD` (for untyped objects, e.g. malformed CRs).
pub fn cephosd_resource() -> ApiResource {
    ApiResource::erase::<CephOsd>(&())
}

/// The reference sample CR as JSON.
pub fn sample() -> anyhow::Result<Value> {
    let path = workspace_root().join(SAMPLE);
    let text =
        std::fs::read_to_string(&path).with_context(|| format!("reading {}", path.display()))?;
    serde_saphyr::from_str(&text).map_err(|e| anyhow!("parsing {}: {e}", path.display()))
}

/// Adds the fake kubelet's knobs (KWOK stages in `kwok/stages.yaml`) and a short grace period
/// to a pod template: `testing.local/ready-after-seconds`, optionally `testing.local/ready:
/// never`, and `spec.terminationGracePeriodSeconds`.
pub fn with_kubelet_knobs(
    mut template: Value,
    ready_after_seconds: u32,
    never_ready: bool,
    grace_seconds: i64,
) -> Value {
    let annotations = &mut template["metadata"]["annotations"];
    if !annotations.is_object() {
        *annotations = json!({});
    }
    annotations[READY_AFTER_ANNOTATION] = json!(ready_after_seconds.to_string());
    if never_ready {
        annotations[READY_ANNOTATION] = json!("never");
    } else if let Some(map) = annotations.as_object_mut() {
        map.remove(READY_ANNOTATION);
    }
    template["spec"]["terminationGracePeriodSeconds"] = json!(grace_seconds);
    template
}

/// The sample's podTemplate with the kubelet knobs (Ready after 1 s, grace 1 s).
pub fn fast_sample_template() -> anyhow::Result<Value> {
    let sample = sample()?;
    let template = sample
        .pointer("/spec/podTemplate")
        .cloned()
        .ok_or_else(|| anyhow!("{SAMPLE} has no spec.podTemplate"))?;
    Ok(with_kubelet_knobs(template, 1, false, 1))
}

/// The `spec.podTemplate.metadata` of a template edit to revision `rev` (label `rev`) whose
/// pods the test kubelet never makes Ready (`testing.local/ready: never`).
pub fn never_ready_revision(rev: &str) -> Value {
    json!({"labels": {"rev": rev}, "annotations": {READY_ANNOTATION: "never"}})
}

/// The `spec.podTemplate.metadata` of a template edit to revision `rev` (label `rev`) that
/// removes `testing.local/ready: never` again (the fix of [`never_ready_revision`]).
pub fn ready_again_revision(rev: &str) -> Value {
    json!({"labels": {"rev": rev}, "annotations": {READY_ANNOTATION: null}})
}

/// A `CephOSD` manifest.
pub fn cephosd(name: &str, storage: Value, update_domain: &str, template: Value) -> Value {
    CephOsdBuilder::new(name)
        .raw_storage(storage)
        .update_domain(update_domain)
        .template(template)
        .manifest()
}

/// How long a scenario waits for a CR's pods to converge (or its status to settle).
pub const CONVERGE: Duration = Duration::from_mins(1);
/// How long a scenario waits for a rollout to complete.
pub const ROLLOUT: Duration = Duration::from_mins(2);
/// The name of the scenarios' `CephOSD`.
pub const CR: &str = "ceph-osds";

/// Every OSD key of `devices` on each of `hosts`.
pub fn keys(hosts: &[impl AsRef<str>], devices: &[&str]) -> BTreeSet<OsdKey> {
    hosts
        .iter()
        .flat_map(|h| devices.iter().map(move |d| OsdKey::new(h.as_ref(), *d)))
        .collect()
}

/// A `spec.storage` of one entry: `devices` (as `data`) on each of `hosts`.
pub fn storage(hosts: &[impl AsRef<str>], devices: &[&str]) -> Value {
    ceph_osd_operator::testing::storage(hosts, devices)
}

/// `base` made unique to the run tagged `tag`: the tag joins its first DNS label
/// (`worker1` → `worker1-3f9c2a`, `w1.example.com` → `w1-3f9c2a.example.com`). A disk belongs
/// to one CephOSD cluster-wide, so scenarios running side by side must not name the same
/// host:data.
pub fn tagged_host(base: &str, tag: &str) -> String {
    match base.split_once('.') {
        Some((first, rest)) => format!("{first}-{tag}.{rest}"),
        None => format!("{base}-{tag}"),
    }
}

/// `manifest` (a CephOSD, or its spec) with every host of `spec.storage[].hosts[]` made unique
/// to the run tagged `tag` ([`tagged_host`]); everything else as it was. For manifests written
/// with fixed hosts (the reference sample): scenarios running side by side must not claim each
/// other's disks.
pub fn with_tagged_hosts(mut manifest: Value, tag: &str) -> Value {
    let spec = if manifest.get("spec").is_some() {
        &mut manifest["spec"]
    } else {
        &mut manifest
    };
    for entry in spec
        .get_mut("storage")
        .and_then(Value::as_array_mut)
        .into_iter()
        .flatten()
    {
        for host in entry
            .get_mut("hosts")
            .and_then(Value::as_array_mut)
            .into_iter()
            .flatten()
        {
            if let Some(base) = host.as_str() {
                *host = json!(tagged_host(base, tag));
            }
        }
    }
    manifest
}

/// The template hash of a CR's pod template (what its up-to-date pods carry).
pub fn hash_of(cr: &CephOsd) -> String {
    TemplateHash::of(&cr.spec.pod_template).as_str().to_owned()
}

/// Checks `check` every 500 ms for `duration` (a property that must hold for a while).
pub async fn hold<F, Fut>(duration: Duration, mut check: F) -> anyhow::Result<()>
where
    F: FnMut() -> Fut,
    Fut: Future<Output = anyhow::Result<()>>,
{
    let end = Instant::now() + duration;
    while Instant::now() < end {
        check().await?;
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
    check().await
}

/// The kubectl to use: `$KUBECTL`, else the one `control-plane up` links into its state dir,
/// else `kubectl` on the PATH; None when there is none.
pub fn kubectl() -> Option<String> {
    if let Ok(k) = std::env::var("KUBECTL") {
        return Some(k);
    }
    let linked = crate::state_dir().join("kubectl");
    if linked.exists() {
        return Some(linked.to_string_lossy().into_owned());
    }
    Command::new("kubectl")
        .args(["version", "--client"])
        .output()
        .ok()
        .filter(|o| o.status.success())
        .map(|_| "kubectl".to_string())
}

/// Whether the pod's `Ready` condition is `True`.
pub fn is_ready(pod: &Pod) -> bool {
    pod.status
        .as_ref()
        .and_then(|s| s.conditions.as_ref())
        .is_some_and(|cs| cs.iter().any(|c| c.type_ == "Ready" && c.status == "True"))
}

/// The rollout order, computed independently of the operator: case-insensitive `host:data`,
/// ties broken by the exact key.
pub fn rollout_order(key: &OsdKey) -> (String, String) {
    let k = key.to_string();
    (k.to_lowercase(), k)
}

/// An annotation of a pod.
pub fn annotation<'a>(pod: &'a Pod, key: &str) -> Option<&'a str> {
    pod.metadata
        .annotations
        .as_ref()
        .and_then(|a| a.get(key))
        .map(String::as_str)
}

/// The OSD a pod claims by its `host` and `data` annotations.
pub fn pod_key(pod: &Pod) -> Option<OsdKey> {
    Some(OsdKey::new(
        annotation(pod, labels::HOST)?,
        annotation(pod, labels::DATA)?,
    ))
}

/// One line per pod: name, key, phase, Ready, deletion, annotations.
pub fn describe_pods(pods: &[Pod]) -> String {
    let mut out = String::new();
    for p in pods {
        let phase = p
            .status
            .as_ref()
            .and_then(|s| s.phase.clone())
            .unwrap_or_else(|| "-".into());
        let deleting = if p.metadata.deletion_timestamp.is_some() {
            " TERMINATING"
        } else {
            ""
        };
        let annotations: BTreeMap<_, _> = p
            .metadata
            .annotations
            .clone()
            .unwrap_or_default()
            .into_iter()
            .collect();
        out.push_str(&format!(
            "  {} phase={phase} ready={}{deleting} uid={} rv={} annotations={annotations:?}\n",
            p.name_any(),
            is_ready(p),
            p.metadata.uid.as_deref().unwrap_or("-"),
            p.metadata.resource_version.as_deref().unwrap_or("-"),
        ));
    }
    if out.is_empty() {
        out.push_str("  (no pods)\n");
    }
    out
}

/// The last `n` lines of a file (empty when unreadable).
pub fn tail(path: &Path, n: usize) -> String {
    let text = std::fs::read_to_string(path).unwrap_or_default();
    let lines: Vec<&str> = text.lines().collect();
    lines[lines.len().saturating_sub(n)..].join("\n")
}

static CRD_APPLIED: tokio::sync::Mutex<bool> = tokio::sync::Mutex::const_new(false);

/// Server-side applies the `CephOSD` CRD (once per process) and waits until it is Established.
/// Creates namespace `name` and waits until the controller manager has given it its `default`
/// ServiceAccount (pods are refused before).
pub async fn create_namespace(client: &Client, name: &str) -> anyhow::Result<()> {
    let namespaces: Api<Namespace> = Api::all(client.clone());
    let ns: Namespace = serde_json::from_value(json!({"metadata": {"name": name}}))?;
    namespaces
        .create(&PostParams::default(), &ns)
        .await
        .with_context(|| format!("creating namespace {name}"))?;
    let accounts: Api<ServiceAccount> = Api::namespaced(client.clone(), name);
    let deadline = Instant::now() + Duration::from_secs(30);
    while accounts.get_opt("default").await?.is_none() {
        if Instant::now() > deadline {
            bail!("namespace {name} got no default ServiceAccount within 30 s (is kube-controller-manager running?)");
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    Ok(())
}

pub async fn ensure_crd(client: &Client) -> anyhow::Result<()> {
    let mut applied = CRD_APPLIED.lock().await;
    if *applied {
        return Ok(());
    }
    let api: Api<CustomResourceDefinition> = Api::all(client.clone());
    let crd = custom_resource_definition()?;
    let name = crd.name_any();
    api.patch(
        &name,
        &PatchParams::apply(FIELD_MANAGER).force(),
        &Patch::Apply(&crd),
    )
    .await
    .with_context(|| format!("server-side applying CRD {name}"))?;
    tokio::time::timeout(
        Duration::from_secs(30),
        await_condition(api, &name, conditions::is_crd_established()),
    )
    .await
    .map_err(|_| anyhow!("CRD {name} not Established after 30 s"))??;
    *applied = true;
    Ok(())
}

// ---------------------------------------------------------------------------------------------
// The pod event recorder
// ---------------------------------------------------------------------------------------------

/// What a watch event said about a pod.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum EventKind {
    Added,
    Modified,
    Deleted,
}

/// One recorded watch event.
#[derive(Clone, Debug)]
pub struct PodEvent {
    /// Position in the recording (0, 1, 2, …).
    pub seq: usize,
    /// Time since the recorder started.
    pub at: Duration,
    pub kind: EventKind,
    pub pod: Pod,
}

#[derive(Default)]
struct Recording {
    events: Vec<PodEvent>,
    /// Set when the watch could not resume (events may be missing): every check fails.
    gap: Option<String>,
}

/// Records every watch event of the pods of one namespace, from before the CR exists.
pub struct PodRecorder {
    recording: Arc<Mutex<Recording>>,
    started: Instant,
    task: tokio::task::JoinHandle<()>,
}

impl Drop for PodRecorder {
    fn drop(&mut self) {
        self.task.abort();
    }
}

fn lock(recording: &Mutex<Recording>) -> std::sync::MutexGuard<'_, Recording> {
    recording
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

impl PodRecorder {
    /// Lists the namespace's pods and watches from that list's resourceVersion on, resuming
    /// from the last seen resourceVersion whenever a watch ends (relisting when it is gone).
    /// Returns once the watch is open, so nothing that happens afterwards can be missed.
    pub async fn start(api: Api<Pod>) -> anyhow::Result<Self> {
        let list = api.list(&ListParams::default()).await?;
        let recording = Arc::new(Mutex::new(Recording::default()));
        let started = Instant::now();
        {
            let mut r = lock(&recording);
            for pod in list.items.iter().cloned() {
                let seq = r.events.len();
                r.events.push(PodEvent {
                    seq,
                    at: Duration::ZERO,
                    kind: EventKind::Added,
                    pod,
                });
            }
        }
        let rv = list.metadata.resource_version.unwrap_or_default();
        let params = WatchParams::default().timeout(290);
        let first = api.watch(&params, &rv).await?.boxed();
        let (rec, gap) = (Arc::clone(&recording), Arc::clone(&recording));
        let task = spawn_watch(
            api,
            params,
            rv,
            first,
            &list.items,
            "recorder",
            move |kind, pod| {
                let mut r = lock(&rec);
                let seq = r.events.len();
                r.events.push(PodEvent {
                    seq,
                    at: started.elapsed(),
                    kind,
                    pod,
                });
            },
            move |why| lock(&gap).gap = Some(why),
        );
        Ok(Self {
            recording,
            started,
            task,
        })
    }

    /// Now on the clock of [`PodEvent::at`].
    pub fn elapsed(&self) -> Duration {
        self.started.elapsed()
    }

    /// A copy of every event recorded so far.
    pub fn events(&self) -> Vec<PodEvent> {
        lock(&self.recording).events.clone()
    }

    /// Number of events recorded so far.
    pub fn len(&self) -> usize {
        lock(&self.recording).events.len()
    }

    /// Whether nothing was recorded yet.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The pods alive after replaying every event: name → (resourceVersion).
    fn replayed_state(&self) -> BTreeMap<String, String> {
        let mut state = BTreeMap::new();
        for e in &lock(&self.recording).events {
            let name = e.pod.name_any();
            if e.kind == EventKind::Deleted {
                state.remove(&name);
            } else {
                state.insert(
                    name,
                    e.pod.metadata.resource_version.clone().unwrap_or_default(),
                );
            }
        }
        state
    }

    /// Waits until the recording has caught up with `api`'s current list (same pods, same
    /// resourceVersions), so checks see everything that happened so far.
    pub async fn catch_up(&self, api: &Api<Pod>) -> anyhow::Result<()> {
        let deadline = Instant::now() + Duration::from_secs(10);
        loop {
            let list = api.list(&ListParams::default()).await?;
            let now: BTreeMap<String, String> = list
                .items
                .iter()
                .map(|p| {
                    (
                        p.name_any(),
                        p.metadata.resource_version.clone().unwrap_or_default(),
                    )
                })
                .collect();
            if let Some(gap) = &lock(&self.recording).gap {
                bail!("pod recorder: {gap}");
            }
            let seen = self.replayed_state();
            if seen == now {
                return Ok(());
            }
            if Instant::now() > deadline {
                bail!("pod recorder did not catch up in 10 s: recorded {seen:?}, listed {now:?}");
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }

    /// Replays the events and checks that at no moment two pods (terminating ones included)
    /// existed for one disk (each pod keyed by the disk it held when first seen).
    pub fn assert_one_pod_per_key(&self) -> anyhow::Result<()> {
        let r = lock(&self.recording);
        if let Some(gap) = &r.gap {
            bail!("pod recorder: {gap}");
        }
        check_one_pod_per_key(&r.events).map_err(|e| anyhow!("{e}\n{}", render_events(&r.events)))
    }

    /// [`Self::assert_one_pod_per_key`] among the pods a CephOSD controls: for scenarios that
    /// put pods of their own (strays, another controller's) on an OSD's disk on purpose.
    pub fn assert_one_controlled_pod_per_key(&self) -> anyhow::Result<()> {
        let r = lock(&self.recording);
        if let Some(gap) = &r.gap {
            bail!("pod recorder: {gap}");
        }
        let controlled: Vec<PodEvent> = r
            .events
            .iter()
            .filter(|e| {
                e.pod
                    .metadata
                    .owner_references
                    .iter()
                    .flatten()
                    .any(|o| o.controller == Some(true) && o.kind == "CephOSD")
            })
            .cloned()
            .collect();
        check_one_pod_per_key(&controlled).map_err(|e| anyhow!("{e}\n{}", render_events(&r.events)))
    }

    /// Replays the events and returns, after each one from event `from` on, the update domains
    /// (`OSD`: the key; `Host`: the host) with an OSD of `want` that has no live Ready pod
    /// (each pod counted for the OSD it was first seen with).
    pub fn unavailable_domains(
        &self,
        want: &BTreeSet<OsdKey>,
        domain: UpdateDomain,
        from: usize,
    ) -> Vec<(usize, BTreeSet<String>)> {
        let r = lock(&self.recording);
        let mut first_seen = FirstSeen::default();
        let mut pods: BTreeMap<String, (&Pod, Option<OsdKey>)> = BTreeMap::new();
        let mut out = Vec::new();
        for e in &r.events {
            let name = e.pod.name_any();
            let key = first_seen.key(&e.pod);
            if e.kind == EventKind::Deleted {
                pods.remove(&name);
            } else {
                pods.insert(name, (&e.pod, key));
            }
            if e.seq < from {
                continue;
            }
            let available: BTreeSet<OsdKey> = pods
                .values()
                .filter(|(p, _)| p.metadata.deletion_timestamp.is_none() && is_ready(p))
                .filter_map(|(_, key)| key.clone())
                .collect();
            let down = want
                .difference(&available)
                .map(|k| match domain {
                    UpdateDomain::Osd => k.to_string(),
                    UpdateDomain::Host => k.host.clone(),
                })
                .collect();
            out.push((e.seq, down));
        }
        out
    }

    /// The rollout invariant: from event `from` on, never more than `max` update domains with
    /// an OSD of `want` lacking a live Ready pod.
    pub fn assert_unavailable_domains_at_most(
        &self,
        want: &BTreeSet<OsdKey>,
        domain: UpdateDomain,
        max: usize,
        from: usize,
    ) -> anyhow::Result<()> {
        if let Some((seq, down)) = self
            .unavailable_domains(want, domain, from)
            .into_iter()
            .find(|(_, down)| down.len() > max)
        {
            bail!(
                "{} update domains unavailable at once after event #{seq} (at most {max}): \
                 {down:?}\n{}",
                down.len(),
                self.render()
            );
        }
        Ok(())
    }

    /// The recorded history as facts (created, Ready, deletion started, gone) per pod.
    pub fn timeline(&self) -> Timeline {
        Timeline::from_events(&lock(&self.recording).events)
    }

    /// The recording, one line per event (for failure messages).
    pub fn render(&self) -> String {
        render_events(&lock(&self.recording).events)
    }
}

/// The disk each pod held when it was first seen (its annotations then, as the operator
/// wrote them): an annotation edited later does not move a running daemon.
#[derive(Default)]
struct FirstSeen(BTreeMap<String, Option<OsdKey>>);

impl FirstSeen {
    /// The key `pod` was first seen with (learning it now if this is its first event).
    fn key(&mut self, pod: &Pod) -> Option<OsdKey> {
        let first = self.0.entry(pod.name_any()).or_insert_with(|| pod_key(pod));
        if first.is_none() {
            *first = pod_key(pod);
        }
        first.clone()
    }
}

/// The invariant: replaying `events`, never two existing pods (terminating ones included) on
/// one disk, each pod keyed by the disk it held when first seen.
pub fn check_one_pod_per_key(events: &[PodEvent]) -> Result<(), String> {
    let mut first_seen = FirstSeen::default();
    let mut alive: BTreeMap<String, Option<OsdKey>> = BTreeMap::new();
    for e in events {
        let name = e.pod.name_any();
        let key = first_seen.key(&e.pod);
        if e.kind == EventKind::Deleted {
            alive.remove(&name);
            continue;
        }
        alive.insert(name, key);
        let mut by_disk: BTreeMap<String, Vec<&str>> = BTreeMap::new();
        for (name, key) in &alive {
            if let Some(key) = key {
                by_disk
                    .entry(key.device_id().to_string())
                    .or_default()
                    .push(name);
            }
        }
        if let Some((disk, names)) = by_disk.iter().find(|(_, names)| names.len() > 1) {
            return Err(format!(
                "after event #{} ({:?} {}) disk {disk} had {} pods at once: {names:?}",
                e.seq,
                e.kind,
                e.pod.name_any(),
                names.len()
            ));
        }
    }
    Ok(())
}

fn render_events(events: &[PodEvent]) -> String {
    let mut out = String::from("recorded pod events:\n");
    for e in events {
        out.push_str(&format!(
            "  #{:<3} {:>7.3}s {:<8} {} ready={} deleting={} state={}\n",
            e.seq,
            e.at.as_secs_f64(),
            format!("{:?}", e.kind),
            e.pod.name_any(),
            is_ready(&e.pod),
            e.pod.metadata.deletion_timestamp.is_some(),
            annotation(&e.pod, labels::POD_STATE).unwrap_or("-"),
        ));
    }
    out
}

/// What happened to one pod, by event sequence numbers.
#[derive(Clone, Debug, Default)]
pub struct PodHistory {
    pub name: String,
    pub key: Option<OsdKey>,
    pub created: Option<usize>,
    pub ready: Option<usize>,
    pub deletion_started: Option<usize>,
    pub gone: Option<usize>,
}

/// Every pod's history, from a recording.
#[derive(Clone, Debug, Default)]
pub struct Timeline {
    pub pods: BTreeMap<String, PodHistory>,
    /// Deletion starts in order: (seq, pod name).
    pub deletions: Vec<(usize, String)>,
    /// Creations in order: (seq, pod name).
    pub creations: Vec<(usize, String)>,
}

impl Timeline {
    pub fn from_events(events: &[PodEvent]) -> Self {
        let mut t = Timeline::default();
        for e in events {
            let name = e.pod.name_any();
            let h = t.pods.entry(name.clone()).or_insert_with(|| PodHistory {
                name: name.clone(),
                key: pod_key(&e.pod),
                ..PodHistory::default()
            });
            if h.created.is_none() {
                h.created = Some(e.seq);
                t.creations.push((e.seq, name.clone()));
            }
            if h.ready.is_none() && is_ready(&e.pod) {
                h.ready = Some(e.seq);
            }
            if h.deletion_started.is_none()
                && (e.pod.metadata.deletion_timestamp.is_some() || e.kind == EventKind::Deleted)
            {
                h.deletion_started = Some(e.seq);
                t.deletions.push((e.seq, name.clone()));
            }
            if e.kind == EventKind::Deleted {
                h.gone = Some(e.seq);
            }
        }
        t
    }

    pub fn get(&self, name: &str) -> anyhow::Result<&PodHistory> {
        self.pods
            .get(name)
            .ok_or_else(|| anyhow!("pod {name} was never recorded"))
    }

    /// The pods created for `key` after event `after`, in order.
    pub fn created_after(&self, key: &OsdKey, after: usize) -> Vec<&PodHistory> {
        let mut v: Vec<&PodHistory> = self
            .pods
            .values()
            .filter(|h| h.key.as_ref() == Some(key) && h.created.is_some_and(|c| c > after))
            .collect();
        v.sort_by_key(|h| h.created);
        v
    }

    /// Checks a completed rollout of `old` pods (name → key) against the update domain:
    /// - old pods were deleted in case-insensitive key order, one update domain at a time
    ///   (`OSD`: one key; `Host`: every key of a host before its first replacement is Ready);
    /// - each key's replacement was created only after its old pod was gone;
    /// - each domain's replacements were Ready before the next domain's first deletion.
    pub fn check_rollout(
        &self,
        old: &BTreeMap<String, OsdKey>,
        domain: UpdateDomain,
    ) -> anyhow::Result<()> {
        // Old pods by key, keys in rollout order (computed here, not by the operator's Ord).
        let by_key: BTreeMap<OsdKey, &String> = old.iter().map(|(n, k)| (k.clone(), n)).collect();
        let mut ordered: Vec<OsdKey> = by_key.keys().cloned().collect();
        ordered.sort_by_key(rollout_order);
        let domains: Vec<Vec<OsdKey>> = match domain {
            UpdateDomain::Osd => ordered.iter().map(|k| vec![k.clone()]).collect(),
            UpdateDomain::Host => {
                let mut hosts: Vec<&str> = ordered.iter().map(|k| k.host.as_str()).collect();
                hosts.sort_by_key(|h| (h.to_lowercase(), h.to_string()));
                hosts.dedup();
                hosts
                    .iter()
                    .map(|h| ordered.iter().filter(|k| k.host == *h).cloned().collect())
                    .collect()
            }
        };
        // The order in which old pods started terminating.
        let old_names: BTreeSet<&String> = old.keys().collect();
        let deleted: Vec<OsdKey> = self
            .deletions
            .iter()
            .filter(|(_, n)| old_names.contains(n))
            .filter_map(|(_, n)| old.get(n).cloned())
            .collect();
        let expected: Vec<OsdKey> = domains.iter().flatten().cloned().collect();
        let same_domains = domains.iter().map(Vec::len).try_fold(0usize, |at, len| {
            let mut want: Vec<&OsdKey> = expected[at..at + len].iter().collect();
            let mut got: Vec<&OsdKey> = deleted.get(at..at + len)?.iter().collect();
            want.sort();
            got.sort();
            (want == got).then_some(at + len)
        });
        if same_domains.is_none() || deleted.len() != expected.len() {
            bail!(
                "old pods were deleted in the order {deleted:?}; expected the domains {domains:?}"
            );
        }
        let mut previous_ready: Option<(usize, String)> = None;
        for keys in &domains {
            let mut first_deletion = usize::MAX;
            let mut last_deletion = 0;
            let mut first_ready = usize::MAX;
            let mut last_ready = 0;
            for key in keys {
                let name = by_key
                    .get(key)
                    .ok_or_else(|| anyhow!("no old pod for {key}"))?;
                let h = self.get(name)?;
                let (Some(started), Some(gone)) = (h.deletion_started, h.gone) else {
                    bail!("old pod {name} ({key}) was not deleted: {h:?}");
                };
                first_deletion = first_deletion.min(started);
                last_deletion = last_deletion.max(started);
                let successors = self.created_after(key, started);
                let Some(new) = successors.first() else {
                    bail!("no replacement was created for {key} after #{started}");
                };
                let created = new.created.unwrap_or(0);
                if created < gone {
                    bail!(
                        "replacement {} of {key} created at #{created} before old pod {name} \
                         was gone at #{gone}",
                        new.name
                    );
                }
                let Some(ready) = new.ready else {
                    bail!("replacement {} of {key} never became Ready", new.name);
                };
                first_ready = first_ready.min(ready);
                last_ready = last_ready.max(ready);
            }
            if let Some((ready, what)) = &previous_ready {
                if first_deletion < *ready {
                    bail!(
                        "domain {keys:?} started at #{first_deletion} before the previous \
                         domain's replacements were Ready ({what} at #{ready})"
                    );
                }
            }
            if domain == UpdateDomain::Host && last_deletion > first_ready {
                bail!(
                    "host domain {keys:?}: a replacement was Ready at #{first_ready} before the \
                     last old pod of the host was deleted at #{last_deletion} (not all at once)"
                );
            }
            previous_ready = Some((last_ready, format!("{keys:?}")));
        }
        Ok(())
    }
}

// ---------------------------------------------------------------------------------------------
// The scenario guard
// ---------------------------------------------------------------------------------------------

/// Options of the operator process.
#[derive(Clone, Debug)]
pub struct OperatorOptions {
    pub resync_seconds: u64,
}

impl Default for OperatorOptions {
    fn default() -> Self {
        Self { resync_seconds: 5 }
    }
}

/// Runs `ceph-osd-operator run` for `namespace`, stdout and stderr appended to `log_path`.
fn spawn_operator_process(
    namespace: Option<&str>,
    log_path: &Path,
    options: &OperatorOptions,
    extra_args: &[&str],
    env: &[(&str, &str)],
) -> anyhow::Result<Child> {
    let bin = operator_binary()?;
    let log = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(log_path)
        .with_context(|| format!("opening {}", log_path.display()))?;
    let mut command = Command::new(&bin);
    command
        .arg("run")
        .arg("--kubeconfig")
        .arg(crate::operator_kubeconfig_path())
        .args(
            namespace
                .map(|ns| ["--namespace", ns])
                .into_iter()
                .flatten(),
        )
        .arg("--resync-seconds")
        .arg(options.resync_seconds.to_string())
        // One process per test unless the test elects a leader itself.
        .args(
            (!extra_args.iter().any(|a| a.starts_with("--leader-elect")))
                .then_some("--leader-elect=false"),
        )
        .args(extra_args)
        .env("NO_COLOR", "1")
        .env_remove("POD_NAME")
        .env_remove("POD_NAMESPACE")
        .env(
            "RUST_LOG",
            // DEBUG of the controller: scenarios count every reconcile, no-op ones included.
            std::env::var("MLT_OPERATOR_LOG")
                .unwrap_or_else(|_| "info,ceph_osd_operator::runtime::controller=debug".into()),
        );
    for (k, v) in env {
        command.env(k, v);
    }
    command
        .stdin(Stdio::null())
        .stdout(log.try_clone()?)
        .stderr(log)
        .spawn()
        .with_context(|| format!("starting {}", bin.display()))
}

/// Who holds the operator's leader Lease in `namespace`, if anyone.
pub async fn lease_holder(client: &Client, namespace: &str) -> anyhow::Result<Option<String>> {
    let leases: Api<k8s_openapi::api::coordination::v1::Lease> =
        Api::namespaced(client.clone(), namespace);
    Ok(leases
        .get_opt("ceph-osd-operator")
        .await?
        .and_then(|l| l.spec)
        .and_then(|spec| spec.holder_identity))
}

/// An extra operator process ([`Scenario::spawn_operator`]); killed when dropped.
pub struct OperatorProcess {
    pub label: String,
    pub log_path: PathBuf,
    child: Mutex<Option<Child>>,
}

impl OperatorProcess {
    fn child(&self) -> std::sync::MutexGuard<'_, Option<Child>> {
        self.child
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Its log so far.
    pub fn log(&self) -> String {
        std::fs::read_to_string(&self.log_path).unwrap_or_default()
    }

    /// Its process id (None once reaped).
    pub fn pid(&self) -> Option<u32> {
        self.child().as_ref().map(Child::id)
    }

    /// Fails when the process has exited.
    pub fn check_alive(&self) -> anyhow::Result<()> {
        if let Some(child) = self.child().as_mut() {
            if let Some(status) = child.try_wait()? {
                bail!(
                    "operator {} exited ({status}); log tail:\n{}",
                    self.label,
                    tail(&self.log_path, 40)
                );
            }
        }
        Ok(())
    }

    /// SIGKILL: no graceful shutdown, no lease release.
    pub fn kill(&self) {
        if let Some(mut child) = self.child().take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }

    /// Sends SIGTERM (graceful shutdown) and waits up to `timeout` for the exit.
    pub async fn terminate(&self, timeout: Duration) -> anyhow::Result<std::process::ExitStatus> {
        let Some(pid) = self.pid() else {
            bail!("operator {} is not running", self.label);
        };
        let status = Command::new("kill")
            .arg("-TERM")
            .arg(pid.to_string())
            .status()
            .context("running kill -TERM")?;
        anyhow::ensure!(status.success(), "kill -TERM {pid} failed");
        let deadline = Instant::now() + timeout;
        loop {
            let exited = {
                let mut guard = self.child();
                match guard.as_mut().map(Child::try_wait).transpose()? {
                    Some(Some(status)) => {
                        *guard = None;
                        Some(status)
                    }
                    _ => None,
                }
            };
            if let Some(status) = exited {
                return Ok(status);
            }
            if Instant::now() > deadline {
                bail!(
                    "operator {} still running {timeout:?} after SIGTERM; log tail:\n{}",
                    self.label,
                    tail(&self.log_path, 40)
                );
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }
}

impl Drop for OperatorProcess {
    fn drop(&mut self) {
        self.kill();
    }
}

/// Watches `api` from `rv` (starting with the open stream `first`), resuming from the last
/// seen resourceVersion whenever a watch ends. When that resourceVersion is gone (`410`, e.g.
/// after kube-apiserver restarted), it relists as an informer does and records the difference
/// to what it knew (`initial` plus every event since) as Added / Modified / Deleted events.
#[allow(clippy::too_many_arguments)]
fn spawn_watch<K, R, F>(
    api: Api<K>,
    params: WatchParams,
    mut rv: String,
    first: BoxStream<'static, kube::Result<WatchEvent<K>>>,
    initial: &[K],
    label: &'static str,
    mut record: R,
    fail: F,
) -> tokio::task::JoinHandle<()>
where
    K: kube::Resource + Clone + serde::de::DeserializeOwned + std::fmt::Debug + Send + 'static,
    R: FnMut(EventKind, K) + Send + 'static,
    F: FnOnce(String) + Send + 'static,
{
    let key = |o: &K| {
        let meta = o.meta();
        format!(
            "{}/{}",
            meta.namespace.as_deref().unwrap_or(""),
            meta.name.as_deref().unwrap_or("")
        )
    };
    let mut known: BTreeMap<String, K> = initial.iter().map(|o| (key(o), o.clone())).collect();
    let list_params = ListParams {
        label_selector: params.label_selector.clone(),
        field_selector: params.field_selector.clone(),
        ..ListParams::default()
    };
    tokio::spawn(async move {
        let mut stream = Some(first);
        let mut relist = false;
        loop {
            if relist {
                let list = match api.list(&list_params).await {
                    Ok(list) => list,
                    Err(e) => {
                        tracing::warn!(error = %e, "{label}: relist failed; retrying");
                        tokio::time::sleep(Duration::from_millis(200)).await;
                        continue;
                    }
                };
                let listed: BTreeMap<String, K> =
                    list.items.into_iter().map(|o| (key(&o), o)).collect();
                for (name, old) in &known {
                    if !listed.contains_key(name) {
                        record(EventKind::Deleted, old.clone());
                    }
                }
                for (name, object) in &listed {
                    let changed = known
                        .get(name)
                        .map(|old| old.meta().resource_version != object.meta().resource_version);
                    match changed {
                        None => record(EventKind::Added, object.clone()),
                        Some(true) => record(EventKind::Modified, object.clone()),
                        Some(false) => {}
                    }
                }
                tracing::info!("{label}: resourceVersion {rv} is gone; relisted");
                known = listed;
                rv = list.metadata.resource_version.unwrap_or_default();
                relist = false;
            }
            let mut s = match stream.take() {
                Some(s) => s,
                None => match api.watch(&params, &rv).await {
                    Ok(s) => s.boxed(),
                    Err(kube::Error::Api(status)) if status.code == 410 => {
                        relist = true;
                        continue;
                    }
                    Err(e) => {
                        tracing::warn!(error = %e, "{label}: re-watch failed; retrying");
                        tokio::time::sleep(Duration::from_millis(200)).await;
                        continue;
                    }
                },
            };
            while let Some(item) = s.next().await {
                let (kind, object) = match item {
                    Ok(WatchEvent::Added(o)) => (EventKind::Added, o),
                    Ok(WatchEvent::Modified(o)) => (EventKind::Modified, o),
                    Ok(WatchEvent::Deleted(o)) => (EventKind::Deleted, o),
                    Ok(WatchEvent::Bookmark(b)) => {
                        rv = b.metadata.resource_version;
                        continue;
                    }
                    Ok(WatchEvent::Error(status)) if status.code == 410 => {
                        relist = true;
                        break;
                    }
                    Ok(WatchEvent::Error(status)) => {
                        fail(format!(
                            "the watch failed at resourceVersion {rv}: {status:?}"
                        ));
                        return;
                    }
                    Err(e) => {
                        tracing::warn!(error = %e, "{label}: watch stream error");
                        break;
                    }
                };
                if let Some(v) = object.meta().resource_version.as_ref() {
                    rv.clone_from(v);
                }
                if kind == EventKind::Deleted {
                    known.remove(&key(&object));
                } else {
                    known.insert(key(&object), object.clone());
                }
                record(kind, object);
            }
        }
    })
}

/// What a [`WatchRecorder`] saw: one watch event.
#[derive(Clone, Debug)]
pub struct Watched<K> {
    /// Time since the recorder started.
    pub at: Duration,
    pub kind: EventKind,
    pub object: K,
}

/// A [`WatchRecorder`]'s events and, when the watch could not resume, why.
type WatchLog<K> = Arc<Mutex<(Vec<Watched<K>>, Option<String>)>>;

/// Records every watch event of one kind of object (any `Api<K>`) from a list on: the objects
/// listed at the start are in [`WatchRecorder::initial`], everything afterwards in
/// [`WatchRecorder::events`]. Resumes from the last resourceVersion when a watch ends.
pub struct WatchRecorder<K> {
    pub initial: Vec<K>,
    events: WatchLog<K>,
    task: tokio::task::JoinHandle<()>,
}

impl<K> Drop for WatchRecorder<K> {
    fn drop(&mut self) {
        self.task.abort();
    }
}

impl<K> WatchRecorder<K>
where
    K: kube::Resource
        + Clone
        + serde::de::DeserializeOwned
        + std::fmt::Debug
        + Send
        + Sync
        + 'static,
{
    /// Lists `api` (with `list`'s selectors) and watches from that list's resourceVersion
    /// (with `watch`'s); returns once the watch is open.
    pub async fn start(api: Api<K>, list: ListParams, watch: WatchParams) -> anyhow::Result<Self> {
        let listed = api.list(&list).await?;
        let rv = listed.metadata.resource_version.unwrap_or_default();
        let watch = watch.timeout(290);
        let first = api.watch(&watch, &rv).await?.boxed();
        let events: WatchLog<K> = Arc::new(Mutex::new((Vec::new(), None)));
        let (sink, gap) = (Arc::clone(&events), Arc::clone(&events));
        let started = Instant::now();
        let task = spawn_watch(
            api,
            watch,
            rv,
            first,
            &listed.items,
            "watch recorder",
            move |kind, object| {
                sink.lock()
                    .unwrap_or_else(std::sync::PoisonError::into_inner)
                    .0
                    .push(Watched {
                        at: started.elapsed(),
                        kind,
                        object,
                    });
            },
            move |why| {
                gap.lock()
                    .unwrap_or_else(std::sync::PoisonError::into_inner)
                    .1 = Some(why);
            },
        );
        Ok(Self {
            initial: listed.items,
            events,
            task,
        })
    }

    /// Every event recorded so far; fails when the watch could not resume (events missing).
    pub fn events(&self) -> anyhow::Result<Vec<Watched<K>>> {
        let g = self
            .events
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if let Some(gap) = &g.1 {
            bail!("watch recorder: {gap}");
        }
        Ok(g.0.clone())
    }
}

/// The events.k8s.io Events of a namespace about CephOSD `cr`, in the order they happened
/// (eventTime, then creation order by name/resourceVersion as tie-breakers).
pub async fn cr_events(
    client: &Client,
    namespace: &str,
    cr: &str,
) -> anyhow::Result<Vec<K8sEvent>> {
    let api: Api<K8sEvent> = Api::namespaced(client.clone(), namespace);
    let mut events: Vec<K8sEvent> = api
        .list(&ListParams::default())
        .await?
        .items
        .into_iter()
        .filter(|e| {
            e.regarding.as_ref().is_some_and(|r| {
                r.kind.as_deref() == Some("CephOSD") && r.name.as_deref() == Some(cr)
            })
        })
        .collect();
    events.sort_by_key(|e| {
        (
            e.event_time.as_ref().map(|t| t.0),
            e.metadata
                .resource_version
                .as_deref()
                .and_then(|v| v.parse::<u64>().ok()),
        )
    });
    Ok(events)
}

/// One line per Event: time, type, reason, related object, note.
pub fn describe_events(events: &[K8sEvent]) -> String {
    let mut out = String::new();
    for e in events {
        out.push_str(&format!(
            "  {} {} {} related={} note={:?}\n",
            e.event_time
                .as_ref()
                .map_or_else(|| "-".to_owned(), |t| t.0.to_string()),
            e.type_.as_deref().unwrap_or("-"),
            e.reason.as_deref().unwrap_or("-"),
            e.related
                .as_ref()
                .and_then(|r| r.name.as_deref())
                .unwrap_or("-"),
            e.note.as_deref().unwrap_or(""),
        ));
    }
    if out.is_empty() {
        out.push_str("  (no events)\n");
    }
    out
}

/// A free loopback port (bound and released at once; good enough for a test).
pub fn free_port() -> anyhow::Result<u16> {
    let listener = std::net::TcpListener::bind("127.0.0.1:0")?;
    Ok(listener.local_addr()?.port())
}

/// A plain HTTP/1.1 GET against `127.0.0.1:<port><path>`: (status code, body).
pub async fn http_get(port: u16, path: &str) -> anyhow::Result<(u16, String)> {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let mut stream = tokio::net::TcpStream::connect(("127.0.0.1", port)).await?;
    stream
        .write_all(
            format!("GET {path} HTTP/1.1\r\nhost: 127.0.0.1\r\nconnection: close\r\n\r\n")
                .as_bytes(),
        )
        .await?;
    let mut out = String::new();
    stream.read_to_string(&mut out).await?;
    let (head, body) = out
        .split_once("\r\n\r\n")
        .ok_or_else(|| anyhow!("no HTTP header in {out:?}"))?;
    let code = head
        .split_whitespace()
        .nth(1)
        .and_then(|c| c.parse().ok())
        .ok_or_else(|| anyhow!("no status code in {head:?}"))?;
    Ok((code, body.to_owned()))
}

/// A CR whose pods converged ([`Scenario::create_converged`]).
#[derive(Clone, Debug)]
pub struct Converged {
    /// The OSD keys it wants.
    pub want: BTreeSet<OsdKey>,
    /// The CR as stored after its creation.
    pub cr: CephOsd,
    /// Its template hash.
    pub hash: String,
    /// Its pods by key, all Ready and up to date.
    pub pods: BTreeMap<OsdKey, Pod>,
}

/// One scenario: a namespace, its recorder, its operator; cleans up when dropped.
pub struct Scenario {
    pub name: String,
    pub namespace: String,
    /// The random part of the namespace, also in this scenario's host names.
    pub tag: String,
    pub client: Client,
    pub pods: Api<Pod>,
    pub crs: Api<CephOsd>,
    /// Untyped CRs (for manifests the typed struct cannot express).
    pub raw_crs: Api<DynamicObject>,
    pub recorder: Option<PodRecorder>,
    pub log_path: PathBuf,
    operator: Mutex<Option<Child>>,
    operator_started: Option<Instant>,
    /// Logs of extra operator processes ([`Scenario::spawn_operator`]), for failure dumps.
    extra_logs: Mutex<Vec<PathBuf>>,
    destroyed: bool,
}

impl Scenario {
    /// A host name of this scenario's own (see [`tagged_host`]).
    pub fn host(&self, base: &str) -> String {
        tagged_host(base, &self.tag)
    }

    /// [`Self::host`] of each of `bases`.
    pub fn hosts<const N: usize>(&self, bases: [&str; N]) -> [String; N] {
        bases.map(|b| self.host(b))
    }

    /// `manifest` with every host of its `spec.storage` made this scenario's own
    /// ([`with_tagged_hosts`] with this scenario's tag).
    pub fn with_own_hosts(&self, manifest: Value) -> Value {
        with_tagged_hosts(manifest, &self.tag)
    }

    /// The reference sample CR ([`sample`]) on this scenario's own hosts: each of the sample's
    /// hosts `h` becomes [`Self::host`]`(h)`.
    pub fn own_sample(&self) -> anyhow::Result<Value> {
        Ok(self.with_own_hosts(sample()?))
    }

    /// Stage **create**: the control plane must answer; the CRD is applied (once) and
    /// Established; a fresh namespace is chosen. No recorder, no operator yet.
    pub async fn create(name: &str) -> anyhow::Result<Self> {
        let kubeconfig = crate::kubeconfig_path();
        if !kubeconfig.exists() {
            bail!(
                "no control plane: {} does not exist; {}",
                kubeconfig.display(),
                crate::HOW_TO_START
            );
        }
        let client = crate::test_client().await?;
        ensure_crd(&client).await?;
        let tag = random_suffix();
        let namespace = format!("mlt-{name}-{tag}");
        create_namespace(&client, &namespace).await?;
        let log_dir = target_dir().join("molecule-like-tests").join(&namespace);
        std::fs::create_dir_all(&log_dir)
            .with_context(|| format!("creating {}", log_dir.display()))?;
        Ok(Self {
            name: name.to_owned(),
            pods: Api::namespaced(client.clone(), &namespace),
            crs: Api::namespaced(client.clone(), &namespace),
            raw_crs: Api::namespaced_with(client.clone(), &namespace, &cephosd_resource()),
            client,
            recorder: None,
            log_path: log_dir.join("operator.log"),
            namespace,
            tag,
            operator: Mutex::new(None),
            operator_started: None,
            extra_logs: Mutex::new(Vec::new()),
            destroyed: false,
        })
    }

    /// Stage **converge**: create + the pod recorder + the operator for this namespace.
    pub async fn converge(name: &str) -> anyhow::Result<Self> {
        Self::converge_with(name, &OperatorOptions::default()).await
    }

    /// [`Self::converge`] with an operator of other options (e.g. a shorter resync period).
    pub async fn converge_with(name: &str, options: &OperatorOptions) -> anyhow::Result<Self> {
        let mut s = Self::create(name).await?;
        s.start_recorder().await?;
        s.start_operator(options)?;
        Ok(s)
    }

    /// Starts the pod recorder (before the CR is created).
    pub async fn start_recorder(&mut self) -> anyhow::Result<()> {
        self.recorder = Some(PodRecorder::start(self.pods.clone()).await?);
        Ok(())
    }

    /// The recorder (started by `converge` or `start_recorder`).
    pub fn recorder(&self) -> anyhow::Result<&PodRecorder> {
        self.recorder
            .as_ref()
            .ok_or_else(|| anyhow!("the pod recorder was not started"))
    }

    /// Starts the operator binary for this namespace; its output goes to `log_path`.
    pub fn start_operator(&mut self, options: &OperatorOptions) -> anyhow::Result<()> {
        self.start_operator_with_args(options, &[])
    }

    /// [`Self::start_operator`] with extra command-line arguments (e.g. `--http-address`).
    pub fn start_operator_with_args(
        &mut self,
        options: &OperatorOptions,
        extra_args: &[&str],
    ) -> anyhow::Result<()> {
        let child = spawn_operator_process(
            Some(&self.namespace),
            &self.log_path,
            options,
            extra_args,
            &[],
        )?;
        *self
            .operator
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner) = Some(child);
        self.operator_started = Some(Instant::now());
        Ok(())
    }

    /// Starts another operator process for this namespace (e.g. a second replica), logging to
    /// `<log dir>/operator-<label>.log`, with extra arguments and environment variables. It is
    /// killed when the returned handle is dropped; its log is part of the failure dump.
    pub fn spawn_operator(
        &self,
        label: &str,
        options: &OperatorOptions,
        extra_args: &[&str],
        env: &[(&str, &str)],
    ) -> anyhow::Result<OperatorProcess> {
        self.spawn_operator_watching(Some(&self.namespace), label, options, extra_args, env)
    }

    /// [`Self::spawn_operator`] for an operator that watches every namespace (as a cluster
    /// deployment does): only for a test binary of its own, it acts on every CephOSD.
    pub fn spawn_cluster_wide_operator(
        &self,
        label: &str,
        options: &OperatorOptions,
    ) -> anyhow::Result<OperatorProcess> {
        self.spawn_operator_watching(None, label, options, &[], &[])
    }

    fn spawn_operator_watching(
        &self,
        namespace: Option<&str>,
        label: &str,
        options: &OperatorOptions,
        extra_args: &[&str],
        env: &[(&str, &str)],
    ) -> anyhow::Result<OperatorProcess> {
        let log_path = self
            .log_path
            .with_file_name(format!("operator-{label}.log"));
        let child = spawn_operator_process(namespace, &log_path, options, extra_args, env)?;
        self.extra_logs
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .push(log_path.clone());
        Ok(OperatorProcess {
            label: label.to_owned(),
            log_path,
            child: Mutex::new(Some(child)),
        })
    }

    /// Fails when the operator process has exited.
    pub fn check_operator_alive(&self) -> anyhow::Result<()> {
        let mut guard = self
            .operator
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if let Some(child) = guard.as_mut() {
            if let Some(status) = child.try_wait()? {
                bail!(
                    "the operator exited ({status}); log tail:\n{}",
                    tail(&self.log_path, 40)
                );
            }
        }
        Ok(())
    }

    /// Lines of the operator's log so far.
    pub fn operator_log(&self) -> String {
        std::fs::read_to_string(&self.log_path).unwrap_or_default()
    }

    /// Polls `probe` every 200 ms until it returns `Some`, failing after `timeout` (or as soon
    /// as the operator dies) with `what` and the probe's last error.
    pub async fn wait_until<T, F, Fut>(
        &self,
        what: &str,
        timeout: Duration,
        mut probe: F,
    ) -> anyhow::Result<T>
    where
        F: FnMut() -> Fut,
        Fut: Future<Output = anyhow::Result<Option<T>>>,
    {
        let deadline = Instant::now() + timeout;
        let mut last_error = None;
        loop {
            self.check_operator_alive()?;
            match probe().await {
                Ok(Some(v)) => return Ok(v),
                Ok(None) => {}
                Err(e) => last_error = Some(e),
            }
            if Instant::now() > deadline {
                let pods = self.list_pods().await.unwrap_or_default();
                bail!(
                    "timed out after {timeout:?} waiting until {what} (last error: {last_error:?}); \
                     pods now:\n{}",
                    describe_pods(&pods)
                );
            }
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
    }

    /// Every pod of the namespace, sorted by name.
    pub async fn list_pods(&self) -> anyhow::Result<Vec<Pod>> {
        let mut pods = self.pods.list(&ListParams::default()).await?.items;
        pods.sort_by_key(ResourceExt::name_any);
        Ok(pods)
    }

    /// Every pod carrying the owner label of CR `cr`.
    pub async fn owned_pods(&self, cr: &str) -> anyhow::Result<Vec<Pod>> {
        let selector = format!("{}={}", labels::OWNER, labels::owner_label_value(cr));
        let mut pods = self
            .pods
            .list(&ListParams::default().labels(&selector))
            .await?
            .items;
        pods.sort_by_key(ResourceExt::name_any);
        Ok(pods)
    }

    /// Creates a CR from a manifest (namespace filled in); returns it as the server stored it.
    pub async fn create_cr(&self, manifest: &Value) -> anyhow::Result<CephOsd> {
        let mut manifest = manifest.clone();
        manifest["metadata"]["namespace"] = json!(self.namespace);
        crate::nodes::ensure_nodes(&self.client, &crate::nodes::hosts_of(&manifest)).await?;
        let cr: CephOsd = serde_json::from_value(manifest).context("manifest as CephOSD")?;
        Ok(self.crs.create(&PostParams::default(), &cr).await?)
    }

    /// JSON merge patch of a CR's spec; returns the CR as stored.
    pub async fn patch_spec(&self, cr: &str, spec_patch: Value) -> anyhow::Result<CephOsd> {
        crate::nodes::ensure_nodes(&self.client, &crate::nodes::hosts_of(&spec_patch)).await?;
        Ok(self
            .crs
            .patch(
                cr,
                &PatchParams::default(),
                &Patch::Merge(&json!({"spec": spec_patch})),
            )
            .await?)
    }

    /// Waits until CR `cr`'s pods are exactly one Ready, non-terminating pod per key of
    /// `keys`, each carrying `hash` and `pod-state: up-to-date`; returns them by key.
    pub async fn wait_converged(
        &self,
        cr: &str,
        keys: &BTreeSet<OsdKey>,
        hash: &str,
        timeout: Duration,
    ) -> anyhow::Result<BTreeMap<OsdKey, Pod>> {
        self.wait_until(
            &format!("{} pods Ready, up-to-date, hash {hash}", keys.len()),
            timeout,
            || async {
                let pods = self.owned_pods(cr).await?;
                let mut by_key = BTreeMap::new();
                for p in pods {
                    let ok = p.metadata.deletion_timestamp.is_none()
                        && is_ready(&p)
                        && annotation(&p, labels::TEMPLATE_HASH) == Some(hash)
                        && annotation(&p, labels::POD_STATE) == Some("up-to-date");
                    if !ok {
                        return Ok(None);
                    }
                    let Some(key) = pod_key(&p) else {
                        return Ok(None);
                    };
                    by_key.insert(key, p);
                }
                let got: BTreeSet<OsdKey> = by_key.keys().cloned().collect();
                Ok((got == *keys).then_some(by_key))
            },
        )
        .await
    }

    /// Creates a CR from `manifest` and waits (up to [`CONVERGE`]) until its pods are one per
    /// key of `want` on its template.
    pub async fn create_converged(
        &self,
        manifest: &Value,
        want: BTreeSet<OsdKey>,
    ) -> anyhow::Result<Converged> {
        let name = self.create_cr(manifest).await?.name_any();
        let cr = self.crs.get(&name).await?;
        let hash = hash_of(&cr);
        let pods = self.wait_converged(&name, &want, &hash, CONVERGE).await?;
        Ok(Converged {
            want,
            cr,
            hash,
            pods,
        })
    }

    /// A template edit: JSON merge patch of CR `cr`'s `spec.podTemplate.metadata`; returns the
    /// CR as stored and its new template hash.
    pub async fn patch_template_metadata(
        &self,
        cr: &str,
        metadata: Value,
    ) -> anyhow::Result<(CephOsd, String)> {
        let cr = self
            .patch_spec(cr, json!({"podTemplate": {"metadata": metadata}}))
            .await?;
        let hash = hash_of(&cr);
        Ok((cr, hash))
    }

    /// Lets the pod recorder catch up with the pods now and replays it: never two pods for
    /// one key (see [`PodRecorder::assert_one_pod_per_key`]).
    pub async fn assert_one_pod_per_key(&self) -> anyhow::Result<()> {
        let rec = self.recorder()?;
        rec.catch_up(&self.pods).await?;
        rec.assert_one_pod_per_key()
    }

    fn extra_log_paths(&self) -> Vec<PathBuf> {
        self.extra_logs
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .clone()
    }

    /// CR `cr`'s status (None when the operator wrote none yet).
    pub async fn cr_status(&self, cr: &str) -> anyhow::Result<Option<CephOsdStatus>> {
        Ok(self.crs.get(cr).await?.status)
    }

    /// The events.k8s.io Events about CR `cr`, in order (see [`cr_events`]).
    pub async fn cr_events(&self, cr: &str) -> anyhow::Result<Vec<K8sEvent>> {
        cr_events(&self.client, &self.namespace, cr).await
    }

    /// Kills the operator (and waits for it).
    pub fn stop_operator(&self) {
        let child = self
            .operator
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .take();
        if let Some(mut child) = child {
            let _ = child.kill();
            let _ = child.wait();
        }
    }

    /// Sends `signal` (e.g. `STOP`, `CONT`) to the operator process.
    pub fn signal_operator(&self, signal: &str) -> anyhow::Result<()> {
        let pid = self
            .operator
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .as_ref()
            .map(Child::id)
            .ok_or_else(|| anyhow!("the operator is not running"))?;
        let status = Command::new("kill")
            .arg(format!("-{signal}"))
            .arg(pid.to_string())
            .status()
            .context("running kill")?;
        anyhow::ensure!(status.success(), "kill -{signal} {pid} failed");
        Ok(())
    }

    /// When the operator was started.
    pub fn operator_started(&self) -> Option<Instant> {
        self.operator_started
    }

    /// Stage **destroy**: kills the operator, deletes the CRs and pods of the namespace and
    /// waits until they are gone. Marks the scenario as passed.
    pub async fn destroy(mut self) -> anyhow::Result<()> {
        self.stop_operator();
        let result = cleanup(&self.client, &self.namespace).await;
        self.destroyed = true;
        result
    }

    /// Diagnostics: the pods, the CRs' status and events, and the operators' log tails.
    pub async fn diagnostics(&self) -> String {
        diagnostics(
            &self.client,
            &self.namespace,
            &self.log_path,
            &self.extra_log_paths(),
            self.recorder.as_ref(),
        )
        .await
    }
}

async fn diagnostics(
    client: &Client,
    namespace: &str,
    log_path: &Path,
    extra_logs: &[PathBuf],
    recorder: Option<&PodRecorder>,
) -> String {
    let pods: Api<Pod> = Api::namespaced(client.clone(), namespace);
    let listed = match pods.list(&ListParams::default()).await {
        Ok(l) => describe_pods(&l.items),
        Err(e) => format!("  (cannot list pods: {e})\n"),
    };
    let events = recorder.map(PodRecorder::render).unwrap_or_default();
    let crs: Api<DynamicObject> =
        Api::namespaced_with(client.clone(), namespace, &cephosd_resource());
    let mut statuses = String::new();
    match crs.list(&ListParams::default()).await {
        Ok(list) => {
            for cr in list.items {
                let name = cr.name_any();
                statuses.push_str(&format!(
                    "  {name} generation={:?} status={}\n",
                    cr.metadata.generation,
                    cr.data.get("status").cloned().unwrap_or(Value::Null)
                ));
                match cr_events(client, namespace, &name).await {
                    Ok(ev) => statuses.push_str(&describe_events(&ev)),
                    Err(e) => statuses.push_str(&format!("  (cannot list events: {e})\n")),
                }
            }
        }
        Err(e) => statuses.push_str(&format!("  (cannot list CephOSDs: {e})\n")),
    }
    let mut logs = String::new();
    for path in std::iter::once(log_path).chain(extra_logs.iter().map(PathBuf::as_path)) {
        logs.push_str(&format!(
            "==== operator log {} (last 60 lines):\n{}\n",
            path.display(),
            tail(path, 60)
        ));
    }
    format!(
        "==== pods of namespace {namespace}:\n{listed}{events}==== CephOSDs and their events:\n{statuses}{logs}===="
    )
}

/// Deletes every CephOSD and pod of `namespace` (pods with grace 0), waits until none is left
/// (10 s at most), then deletes the namespace.
/// Deletes a namespace's CephOSDs and pods, then the namespace.
pub async fn cleanup(client: &Client, namespace: &str) -> anyhow::Result<()> {
    let crs: Api<DynamicObject> =
        Api::namespaced_with(client.clone(), namespace, &cephosd_resource());
    let pods: Api<Pod> = Api::namespaced(client.clone(), namespace);
    for cr in crs.list(&ListParams::default()).await?.items {
        let _ = crs.delete(&cr.name_any(), &DeleteParams::default()).await;
    }
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let left = pods.list(&ListParams::default()).await?.items;
        if left.is_empty() {
            let namespaces: Api<Namespace> = Api::all(client.clone());
            let _ = namespaces.delete(namespace, &DeleteParams::default()).await;
            return Ok(());
        }
        if Instant::now() > deadline {
            bail!(
                "pods left in {namespace} after cleanup:\n{}",
                describe_pods(&left)
            );
        }
        for p in left {
            let _ = pods
                .delete(&p.name_any(), &DeleteParams::default().grace_period(0))
                .await;
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

impl Drop for Scenario {
    fn drop(&mut self) {
        self.stop_operator();
        if self.destroyed {
            return;
        }
        // Failed (panic or early return): report, then clean up, on a runtime of our own (the
        // test's runtime may be single-threaded and is blocked in this drop).
        let namespace = self.namespace.clone();
        let log_path = self.log_path.clone();
        let extra_logs = self.extra_log_paths();
        let name = self.name.clone();
        let events = self.recorder.as_ref().map(PodRecorder::render);
        let handle = std::thread::spawn(move || {
            let Ok(rt) = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
            else {
                return;
            };
            rt.block_on(async move {
                let client = match crate::client_from(&crate::kubeconfig_path()).await {
                    Ok(c) => c,
                    Err(e) => {
                        eprintln!("scenario {name}: no client for diagnostics: {e}");
                        return;
                    }
                };
                let mut report =
                    diagnostics(&client, &namespace, &log_path, &extra_logs, None).await;
                if let Some(events) = events {
                    report = format!("{events}{report}");
                }
                eprintln!("scenario {name} FAILED in namespace {namespace}\n{report}");
                if let Err(e) = cleanup(&client, &namespace).await {
                    eprintln!("scenario {name}: cleanup: {e:#}");
                }
            });
        });
        let _ = handle.join();
    }
}

#[cfg(test)]
mod tests {
    //! The replay checks must be able to fail: synthetic recordings, no control plane.
    use super::*;

    #[test]
    fn a_pod_is_keyed_by_the_disk_it_held_when_first_seen() {
        use EventKind::{Added, Modified};
        // p1's host annotation is edited to h5; p2 then appears on p1's disk: two pods.
        let edited = events(&[
            (Added, "p1", "h1", "/dev/sdb", true, false),
            (Modified, "p1", "h5", "/dev/sdb", true, false),
            (Added, "p2", "h1", "/dev/sdb", false, false),
        ]);
        let error = check_one_pod_per_key(&edited).expect_err("two pods on h1:/dev/sdb");
        assert!(error.contains("h1:/dev/sdb"), "{error}");
        // And another spelling of one disk is that disk.
        let respelled = events(&[
            (Added, "p1", "h1", "/dev/sdb", true, false),
            (Added, "p2", "h1", "/dev//sdb", false, false),
        ]);
        assert!(check_one_pod_per_key(&respelled).is_err());
    }

    #[test]
    fn tagged_hosts_stay_dns_names() {
        assert_eq!(tagged_host("worker1", "3f9c2a"), "worker1-3f9c2a");
        assert_eq!(
            tagged_host("worker041.example.com", "3f9c2a"),
            "worker041-3f9c2a.example.com"
        );
    }

    #[test]
    fn tagged_hosts_rewrite_every_storage_entry_and_nothing_else() {
        let cr = json!({"metadata": {"name": "worker1"}, "spec": {"storage": [
            {"hosts": ["worker041.example.com", "w1"], "osds": [{"data": "/dev/w1"}]},
            {"hosts": ["w2"], "osds": []},
            {"osds": []},
        ], "podTemplate": {"spec": {"nodeName": "w1"}}}});
        let tagged = with_tagged_hosts(cr.clone(), "3f9c2a");
        let mut expected = cr;
        expected["spec"]["storage"][0]["hosts"] =
            json!(["worker041-3f9c2a.example.com", "w1-3f9c2a"]);
        expected["spec"]["storage"][1]["hosts"] = json!(["w2-3f9c2a"]);
        assert_eq!(tagged, expected);
        // A spec alone (a spec patch) too.
        let spec = with_tagged_hosts(json!({"storage": [{"hosts": ["w1"]}]}), "ab");
        assert_eq!(spec, json!({"storage": [{"hosts": ["w1-ab"]}]}));
        // The reference sample: its hosts only.
        let sample = sample().expect("the sample");
        let hosts = crate::nodes::hosts_of(&with_tagged_hosts(sample.clone(), "ab"));
        let want: BTreeSet<String> = crate::nodes::hosts_of(&sample)
            .iter()
            .map(|h| tagged_host(h, "ab"))
            .collect();
        assert_eq!(hosts, want);
        assert!(!want.is_empty());
    }

    fn pod(name: &str, host: &str, data: &str, ready: bool, deleting: bool) -> Pod {
        let mut v = json!({
            "metadata": {"name": name, "annotations": {labels::HOST: host, labels::DATA: data}},
            "status": {"conditions": [{"type": "Ready", "status": if ready { "True" } else { "False" }}]},
        });
        if deleting {
            v["metadata"]["deletionTimestamp"] = json!("2026-01-01T00:00:00Z");
        }
        serde_json::from_value(v).expect("pod")
    }

    /// Events from (kind, name, host, data, ready, deleting).
    fn events(list: &[(EventKind, &str, &str, &str, bool, bool)]) -> Vec<PodEvent> {
        list.iter()
            .enumerate()
            .map(
                |(seq, (kind, name, host, data, ready, deleting))| PodEvent {
                    seq,
                    at: Duration::ZERO,
                    kind: *kind,
                    pod: pod(name, host, data, *ready, *deleting),
                },
            )
            .collect()
    }

    use EventKind::{Added as A, Deleted as D, Modified as M};

    /// Replace `old` (key h:d) by `new`: terminate, gone, create, Ready.
    fn replace<'a>(
        old: &'a str,
        new: &'a str,
        h: &'a str,
        d: &'a str,
    ) -> Vec<(EventKind, &'a str, &'a str, &'a str, bool, bool)> {
        vec![
            (M, old, h, d, true, true),
            (D, old, h, d, true, true),
            (A, new, h, d, false, false),
            (M, new, h, d, true, false),
        ]
    }

    fn initial() -> Vec<(
        EventKind,
        &'static str,
        &'static str,
        &'static str,
        bool,
        bool,
    )> {
        vec![
            (A, "p1", "h1", "/dev/B", true, false),
            (A, "p2", "h1", "/dev/c", true, false),
            (A, "p3", "H2", "/dev/a", true, false),
        ]
    }

    fn old() -> BTreeMap<String, OsdKey> {
        [
            ("p1", "h1", "/dev/B"),
            ("p2", "h1", "/dev/c"),
            ("p3", "H2", "/dev/a"),
        ]
        .iter()
        .map(|(n, h, d)| ((*n).to_owned(), OsdKey::new(*h, *d)))
        .collect()
    }

    #[test]
    fn two_pods_for_one_key_are_caught_even_while_terminating() {
        let ok = events(&[
            (A, "a", "h", "/dev/sdb", true, false),
            (M, "a", "h", "/dev/sdb", true, true),
            (D, "a", "h", "/dev/sdb", true, true),
            (A, "b", "h", "/dev/sdb", false, false),
        ]);
        assert!(check_one_pod_per_key(&ok).is_ok());
        let bad = events(&[
            (A, "a", "h", "/dev/sdb", true, false),
            (M, "a", "h", "/dev/sdb", true, true),
            (A, "b", "h", "/dev/sdb", false, false),
            (D, "a", "h", "/dev/sdb", true, true),
        ]);
        let err = check_one_pod_per_key(&bad).expect_err("overlap");
        assert!(
            err.contains("event #2") && err.contains("h:/dev/sdb"),
            "{err}"
        );
    }

    #[test]
    fn osd_rollout_in_case_insensitive_key_order_passes() {
        // Order: h1:/dev/B < h1:/dev/c < H2:/dev/a (bytewise H2 would come first).
        let mut list = initial();
        list.extend(replace("p1", "n1", "h1", "/dev/B"));
        list.extend(replace("p2", "n2", "h1", "/dev/c"));
        list.extend(replace("p3", "n3", "H2", "/dev/a"));
        let t = Timeline::from_events(&events(&list));
        t.check_rollout(&old(), UpdateDomain::Osd).expect("valid");
        // The same recording is not a Host rollout (h1's pods were not deleted together).
        assert!(t.check_rollout(&old(), UpdateDomain::Host).is_err());
    }

    #[test]
    fn osd_rollout_in_bytewise_order_fails() {
        let mut list = initial();
        list.extend(replace("p3", "n3", "H2", "/dev/a"));
        list.extend(replace("p1", "n1", "h1", "/dev/B"));
        list.extend(replace("p2", "n2", "h1", "/dev/c"));
        let t = Timeline::from_events(&events(&list));
        let err = t
            .check_rollout(&old(), UpdateDomain::Osd)
            .expect_err("order");
        assert!(err.to_string().contains("deleted in the order"), "{err}");
    }

    #[test]
    fn next_deletion_before_the_replacement_is_ready_fails() {
        let mut list = initial();
        list.extend([
            (M, "p1", "h1", "/dev/B", true, true),
            (D, "p1", "h1", "/dev/B", true, true),
            (A, "n1", "h1", "/dev/B", false, false),
            (M, "p2", "h1", "/dev/c", true, true), // too early: n1 is not Ready yet
            (M, "n1", "h1", "/dev/B", true, false),
        ]);
        list.extend([
            (D, "p2", "h1", "/dev/c", true, true),
            (A, "n2", "h1", "/dev/c", false, false),
            (M, "n2", "h1", "/dev/c", true, false),
        ]);
        list.extend(replace("p3", "n3", "H2", "/dev/a"));
        let t = Timeline::from_events(&events(&list));
        let err = t
            .check_rollout(&old(), UpdateDomain::Osd)
            .expect_err("gate");
        assert!(err.to_string().contains("before the previous"), "{err}");
    }

    #[test]
    fn host_rollout_deletes_all_pods_of_a_host_then_the_next_host() {
        let mut list = initial();
        list.extend([
            (M, "p1", "h1", "/dev/B", true, true),
            (M, "p2", "h1", "/dev/c", true, true),
            (D, "p1", "h1", "/dev/B", true, true),
            (D, "p2", "h1", "/dev/c", true, true),
            (A, "n1", "h1", "/dev/B", false, false),
            (A, "n2", "h1", "/dev/c", false, false),
            (M, "n1", "h1", "/dev/B", true, false),
            (M, "n2", "h1", "/dev/c", true, false),
        ]);
        list.extend(replace("p3", "n3", "H2", "/dev/a"));
        let t = Timeline::from_events(&events(&list));
        t.check_rollout(&old(), UpdateDomain::Host).expect("valid");
        // Replacement created before the old pod was gone: caught.
        let mut early = initial();
        early.extend([
            (M, "p1", "h1", "/dev/B", true, true),
            (A, "n1", "h1", "/dev/B", false, false),
            (D, "p1", "h1", "/dev/B", true, true),
        ]);
        let t = Timeline::from_events(&events(&early));
        assert!(t.check_rollout(&old(), UpdateDomain::Host).is_err());
    }
}
