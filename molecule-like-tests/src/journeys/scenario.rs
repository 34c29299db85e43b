//! Fixtures for the end-to-end scenarios (`tests/scenarios/`), in Molecule's stages:
//!
//! - **create**: the local control plane must be up ([`Scenario::create`] fails with
//!   [`HOW_TO_START`](crate::kubernetes::client::HOW_TO_START) otherwise);
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
//! Shared by the scenario test files: the timeouts [`CONVERGE`] and [`ROLLOUT`], [`hold`],
//! and the steps [`Scenario::create_converged`], [`Scenario::patch_template_metadata`] and
//! [`Scenario::assert_one_pod_per_key`]; manifests are built with [`crate::kubernetes::manifests`], pods
//! read with [`crate::kubernetes::pods`].
//!
//! Host names: a disk (`host:data`) belongs to one CephOSD in the whole cluster, and the
//! scenarios share one control plane (side by side, and with what earlier runs left behind).
//! So every scenario names hosts of its own: [`Scenario::host`] / [`Scenario::hosts`] (the
//! scenario's tag joined to the first DNS label), [`Scenario::own_sample`] for the reference
//! sample, and [`tagged_host`] / [`with_tagged_hosts`] with a
//! [`random_suffix`] for code without a scenario.

use std::collections::{BTreeMap, BTreeSet};
use std::future::Future;
use std::path::{Path, PathBuf};
use std::process::{Child, Command};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use anyhow::{anyhow, bail, Context as _};
use ceph_osd_operator::crd::{custom_resource_definition, CephOsd, CephOsdStatus};
use ceph_osd_operator::{labels, OsdKey};
use k8s_openapi::api::core::v1::{Namespace, Pod, ServiceAccount};
use k8s_openapi::api::events::v1::Event as K8sEvent;
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::api::{Api, DeleteParams, DynamicObject, ListParams, Patch, PatchParams, PostParams};
use kube::runtime::wait::{await_condition, conditions};
use kube::{Client, ResourceExt};
use serde_json::{json, Value};

use crate::kubernetes::manifests::{
    cephosd_resource, hash_of, random_suffix, sample, tagged_host, with_tagged_hosts, FIELD_MANAGER,
};
use crate::kubernetes::operator::{spawn_operator_process, OperatorOptions, OperatorProcess};
use crate::kubernetes::pods::{annotation, describe_pods, is_ready, pod_key};
use crate::paths::{output_dir, tail};
use crate::recording::pods::PodRecorder;

/// How long a scenario waits for a CR's pods to converge (or its status to settle).
pub const CONVERGE: Duration = Duration::from_mins(1);
/// How long a scenario waits for a rollout to complete.
pub const ROLLOUT: Duration = Duration::from_mins(2);

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
        let kubeconfig = crate::paths::kubeconfig_path();
        if !kubeconfig.exists() {
            bail!(
                "no control plane: {} does not exist; {}",
                kubeconfig.display(),
                crate::kubernetes::client::HOW_TO_START
            );
        }
        let client = crate::kubernetes::client::test_client().await?;
        ensure_crd(&client).await?;
        let tag = random_suffix();
        let namespace = format!("mlt-{name}-{tag}");
        create_namespace(&client, &namespace).await?;
        let log_dir = output_dir().join("molecule-like-tests").join(&namespace);
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

    /// A starting point in the pod recorder taken now: its next `seq` once it has recorded
    /// every pod change made before this call ([`PodRecorder::caught_up_seq`]).
    pub async fn pod_watch_mark(&self) -> anyhow::Result<usize> {
        self.recorder()?.caught_up_seq(&self.pods).await
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
        self.start_operator_with_env(options, extra_args, &[])
    }

    /// [`Self::start_operator_with_args`] with environment variables (e.g. `RUST_LOG`).
    pub fn start_operator_with_env(
        &mut self,
        options: &OperatorOptions,
        extra_args: &[&str],
        env: &[(&str, &str)],
    ) -> anyhow::Result<()> {
        let child = spawn_operator_process(
            Some(&self.namespace),
            &self.log_path,
            options,
            extra_args,
            env,
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
        crate::kubernetes::nodes::ensure_nodes(
            &self.client,
            &crate::kubernetes::nodes::hosts_of(&manifest),
        )
        .await?;
        let cr: CephOsd = serde_json::from_value(manifest).context("manifest as CephOSD")?;
        Ok(self.crs.create(&PostParams::default(), &cr).await?)
    }

    /// What the API server answers to creating a CephOSD in this namespace from this raw JSON
    /// body (any value, whether the operator's types hold it or not): the object as stored,
    /// or the rejection's message (422).
    pub async fn create_cr_raw(&self, body: String) -> anyhow::Result<Result<Value, String>> {
        let url = format!(
            "/apis/ceph.elemental.net/v1alpha1/namespaces/{}/cephosds",
            self.namespace
        );
        let request =
            kube::core::Request::new(url).create(&PostParams::default(), body.into_bytes())?;
        match self.client.request_text(request).await {
            Ok(text) => Ok(Ok(serde_json::from_str(&text)?)),
            Err(kube::Error::Api(status)) if status.code == 422 => Ok(Err(status.message)),
            Err(other) => Err(other.into()),
        }
    }

    /// JSON merge patch of a CR's spec; returns the CR as stored.
    pub async fn patch_spec(&self, cr: &str, spec_patch: Value) -> anyhow::Result<CephOsd> {
        crate::kubernetes::nodes::ensure_nodes(
            &self.client,
            &crate::kubernetes::nodes::hosts_of(&spec_patch),
        )
        .await?;
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
    /// waits until they are gone, then the scenario's own Nodes. Marks the scenario as passed.
    pub async fn destroy(mut self) -> anyhow::Result<()> {
        self.stop_operator();
        let result = cleanup(&self.client, &self.namespace).await;
        self.destroyed = true;
        result?;
        crate::kubernetes::nodes::delete_tagged_nodes(&self.client, &self.tag).await
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
    // The operator is stopped: its finalizer would keep each CephOSD (and the namespace).
    let unheld = json!({"metadata": {"finalizers": null}});
    for cr in crs.list(&ListParams::default()).await?.items {
        let _ = crs
            .patch(
                &cr.name_any(),
                &PatchParams::default(),
                &Patch::Merge(&unheld),
            )
            .await;
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
                let client =
                    match crate::kubernetes::client::client_from(&crate::paths::kubeconfig_path())
                        .await
                    {
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
