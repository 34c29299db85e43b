//! Cluster benchmark on the local control plane (`molecule-like-tests/control-plane up` first).
//! For each size (`BENCH_SIZES`, hosts×OSDs per host, default `100x10,1000x10`: 1,000 and
//! 10,000 OSDs on 100 and 1,000 fake nodes):
//! - creation from empty against a bare client POSTing the same pods (owned by a CephOSD no
//!   operator watches) with the operator's identity, at the concurrency that
//!   was fastest for it (searched at the first size among `BENCH_CONCURRENCIES`, default
//!   `16,32,64`), measured in the same run;
//! - the pods' readiness and the operator's status Ready;
//! - the settled operator: API requests, CPU per reconcile and resident memory over 20 s of
//!   2 s resyncs.
//!
//! Then (unless `BENCH_ROLLOUT=0`) two whole rollouts: by host on the first size, and by OSD on
//! a CephOSD of 100 OSDs (10 × 10): the latency from an update domain's last replacement
//! turning Ready to the next domain's first deletion, and the total against the sum of the
//! pods' own grace periods and readiness delays. Writes its section of BENCHMARKS.md.
//!
//!   cargo build --release -p ceph-osd-operator && cargo bench -p molecule-like-tests --bench cluster

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::fmt::Write as _;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use anyhow::Context as _;
use ceph_osd_operator::crd::{CephOsd, Phase};
use ceph_osd_operator::created_pods;
use ceph_osd_operator::{labels, OsdKey};
use futures::{stream, StreamExt, TryStreamExt};
use k8s_openapi::api::core::v1::Pod;
use kube::api::{Api, PostParams};
use kube::runtime::watcher;
use kube::ResourceExt;
use molecule_like_tests::journeys::scenario::Scenario;
use molecule_like_tests::kubernetes::manifests::{
    cephosd, fast_sample_template, keys, random_suffix, storage, tagged_host, CR,
};
use molecule_like_tests::kubernetes::nodes::ensure_nodes;
use molecule_like_tests::kubernetes::operator::{
    free_port, http_get, OperatorOptions, OperatorProcess,
};
use molecule_like_tests::kubernetes::pods::{annotation, is_ready, pod_key};
use molecule_like_tests::paths::operator_kubeconfig_path;
use serde_json::{json, Value};

/// Concurrencies the bare client tries (`BENCH_CONCURRENCIES` to narrow the search); the
/// fastest is its figure.
const CONCURRENCIES: &str = "16,32,64";

/// What limits the figures that miss the project's targets.
const LIMITS: &str = "\nWhat limits these figures: creation is bounded by the API server, which shares 2 cores \
with etcd, the scheduler, KWOK, the operator and the benchmark's own watch; the bare client's figure is the \
fastest of its runs, and moves from run to run by more than the operator's overhead. The operator's own costs \
while creating: it builds up to 1,000 pods before a plan's first write (about 17 ms for 1,000), each plan \
waits until the cache shows the previous plan's writes, each write window starts at one request and widens \
by one per success (so a systematic failure costs one request: at 1,000 OSDs the 64th pod is created 0.3 to \
0.5 s after the first, where the bare client starts at full concurrency; this is most of the gap there), and it \
decodes the watch events of the pods it creates (metadata, phase and conditions only), which the bare client \
does not; the `pod-state` marks of pods that turned Ready wait until no pod is being created. Resident \
memory after a burst is what jemalloc keeps of the peak (the peak is shown); settled, it is mostly the cached \
pods (metadata, phase, the Ready and unschedulable conditions). CPU per reconcile is the whole process's CPU \
time over the window divided by the reconciles in it: timers, the allocator's background thread and the \
watches' keep-alives included; a reconcile whose inputs are those of a plan with nothing to do is not planned \
again.\n";

/// Resident memory of process `pid`, now and at its peak, in MiB.
fn rss_mib(pid: u32) -> anyhow::Result<(f64, f64)> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status"))?;
    let field = |name: &str| -> anyhow::Result<f64> {
        let kib: f64 = status
            .lines()
            .find_map(|l| l.strip_prefix(name))
            .and_then(|v| v.split_whitespace().next())
            .with_context(|| format!("no {name}"))?
            .parse()?;
        Ok(kib / 1024.0)
    };
    Ok((field("VmRSS:")?, field("VmHWM:")?))
}

/// CPU time process `pid` has used: the sum over its threads of their time on a CPU
/// (nanosecond resolution, from schedstat).
fn cpu_time(pid: u32) -> anyhow::Result<Duration> {
    let mut nanos = 0u64;
    for task in std::fs::read_dir(format!("/proc/{pid}/task"))? {
        let schedstat = std::fs::read_to_string(task?.path().join("schedstat"))?;
        nanos += schedstat
            .split_whitespace()
            .next()
            .context("schedstat")?
            .parse::<u64>()?;
    }
    Ok(Duration::from_nanos(nanos))
}

/// The p-th percentile (0–100) of `values`, nearest rank.
fn percentile(values: &[Duration], p: usize) -> Duration {
    let mut sorted = values.to_vec();
    sorted.sort();
    let rank = (p * sorted.len()).div_ceil(100).max(1);
    sorted[rank - 1]
}

fn env_or(name: &str, default: usize) -> usize {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

/// `BENCH_CONCURRENCIES`: the bare client's concurrencies to try, comma-separated.
fn concurrencies() -> anyhow::Result<Vec<usize>> {
    let text = std::env::var("BENCH_CONCURRENCIES").unwrap_or_else(|_| CONCURRENCIES.into());
    text.split(',')
        .map(|c| c.trim().parse().context("BENCH_CONCURRENCIES"))
        .collect()
}

/// `BENCH_SIZES`: `hosts x OSDs per host`, comma-separated.
fn sizes() -> anyhow::Result<Vec<(usize, usize)>> {
    let text = std::env::var("BENCH_SIZES").unwrap_or_else(|_| "100x10,1000x10".into());
    text.split(',')
        .map(|size| {
            let (hosts, per_host) = size.trim().split_once('x').context("HOSTSxOSDS")?;
            Ok((hosts.parse()?, per_host.parse()?))
        })
        .collect()
}

/// One CephOSD of `hosts` × `per_host` OSDs.
struct Layout {
    host_names: Vec<String>,
    devices: Vec<String>,
}

impl Layout {
    /// Hosts `<prefix>-<nnnn>` tagged `run` ([`tagged_host`]: a disk belongs to one CephOSD in
    /// the whole cluster, and scenarios may run beside the benchmark). One tag for all hosts:
    /// their names still sort in host order.
    fn new(hosts: usize, per_host: usize, prefix: &str, run: &str) -> Self {
        Self {
            host_names: (0..hosts)
                .map(|h| tagged_host(&format!("{prefix}-{h:04}"), run))
                .collect(),
            devices: (0..per_host)
                .map(|d| format!("/dev/disk/by-id/osd-{d:02}"))
                .collect(),
        }
    }

    fn manifest(&self, update_domain: &str) -> anyhow::Result<Value> {
        let (hosts, devices) = self.refs();
        Ok(cephosd(
            CR,
            storage(&hosts, &devices),
            update_domain,
            fast_sample_template()?,
        ))
    }

    fn keys(&self) -> BTreeSet<OsdKey> {
        let (hosts, devices) = self.refs();
        keys(&hosts, &devices)
    }

    fn refs(&self) -> (Vec<&str>, Vec<&str>) {
        (
            self.host_names.iter().map(String::as_str).collect(),
            self.devices.iter().map(String::as_str).collect(),
        )
    }

    fn total(&self) -> usize {
        self.host_names.len() * self.devices.len()
    }
}

/// The bare client: POSTs the pods the operator would create for `manifest`, `concurrency`
/// in flight, into a namespace of its own; returns how long that took.
async fn bare_client(
    layout: &Layout,
    manifest: &Value,
    concurrency: usize,
) -> anyhow::Result<Duration> {
    let bare = Scenario::create(&format!("bench-bare-{concurrency}")).await?;
    ensure_nodes(
        &bare.client,
        &layout.host_names.iter().cloned().collect::<BTreeSet<_>>(),
    )
    .await?;
    // The operator's very requests: its pods, owned by a CephOSD (here one no operator
    // watches), POSTed with its identity (its ServiceAccount's token, under its RBAC).
    let mut cr: CephOsd = serde_json::from_value(manifest.clone())?;
    cr.metadata.namespace = Some(bare.namespace.clone());
    let cr = bare.crs.create(&PostParams::default(), &cr).await?;
    let pods = created_pods(&cr);
    anyhow::ensure!(pods.len() == layout.total(), "rendered {} pods", pods.len());
    let kubeconfig = kube::config::Kubeconfig::read_from(operator_kubeconfig_path())?;
    let options = kube::config::KubeConfigOptions::default();
    let as_operator =
        kube::Client::try_from(kube::Config::from_custom_kubeconfig(kubeconfig, &options).await?)?;
    let api: Api<Pod> = Api::namespaced(as_operator, &bare.namespace);
    // The same watch as the operator's run has, so both load the API server alike.
    let (progress, watch) = follow_pods(api.clone(), layout.total());
    tokio::time::sleep(Duration::from_secs(1)).await;
    let started = Instant::now();
    let results: Vec<kube::Result<Pod>> = stream::iter(pods.into_iter().map(|pod| {
        let api = api.clone();
        async move { api.create(&PostParams::default(), &pod).await }
    }))
    .buffer_unordered(concurrency)
    .collect()
    .await;
    let took = started.elapsed();
    anyhow::ensure!(
        results.iter().all(Result::is_ok),
        "the bare client's POSTs failed"
    );
    // Scheduled and started like the operator's, and only then deleted: pods deleted sooner
    // would still be in the scheduler's queue when the operator's pods come.
    bare.wait_until(
        "the bare client's pods Ready",
        Duration::from_hours(1),
        || async { Ok(progress.lock().unwrap().all_ready) },
    )
    .await?;
    watch.abort();
    bare.destroy().await?;
    Ok(took)
}

/// When a watch first saw `total` pods of the CephOSD, and all of them Ready.
#[derive(Default)]
struct Progress {
    ready: HashMap<String, bool>,
    created: Option<Instant>,
    all_ready: Option<Instant>,
}

/// Follows the CephOSD's pods with a watch (a LIST every poll would load the API server
/// the operator is measured against).
fn follow_pods(api: Api<Pod>, total: usize) -> (Arc<Mutex<Progress>>, tokio::task::JoinHandle<()>) {
    let progress = Arc::new(Mutex::new(Progress::default()));
    let shared = progress.clone();
    let selector = format!("{}={}", labels::OWNER, labels::owner_label_value(CR));
    let task = tokio::spawn(async move {
        let mut events = watcher(api, watcher::Config::default().labels(&selector)).boxed();
        while let Ok(Some(event)) = events.try_next().await {
            let mut p = shared.lock().unwrap();
            match event {
                watcher::Event::Apply(pod) | watcher::Event::InitApply(pod) => {
                    p.ready.insert(pod.name_any(), is_ready(&pod));
                }
                watcher::Event::Delete(pod) => {
                    p.ready.remove(&pod.name_any());
                }
                _ => {}
            }
            if p.ready.len() >= total {
                let now = Instant::now();
                p.created.get_or_insert(now);
                if p.all_ready.is_none() && p.ready.values().all(|r| *r) {
                    p.all_ready = Some(now);
                }
            }
        }
    });
    (progress, task)
}

/// The sum of the operator's `/metrics` series starting with `prefix` (all label sets).
async fn metric_sum(port: u16, prefix: &str) -> anyhow::Result<f64> {
    let (code, body) = http_get(port, "/metrics").await?;
    anyhow::ensure!(code == 200, "/metrics answered {code}");
    Ok(body
        .lines()
        .filter(|l| l.starts_with(prefix))
        .filter_map(|l| l.rsplit_once(' ')?.1.parse::<f64>().ok())
        .sum())
}

/// The figures of one size.
struct SizeFigures {
    hosts: usize,
    per_host: usize,
    concurrency: usize,
    baseline: Duration,
    created: Duration,
    /// The operator's CPU time and API requests from the apply until every pod was created.
    creation_cpu: Duration,
    creation_requests: f64,
    pods_ready: Duration,
    status_ready: Duration,
    rss_idle: f64,
    rss_settled: f64,
    rss_peak: f64,
    reconciles: f64,
    unchanged: f64,
    api_requests: f64,
    cpu_per_reconcile: Duration,
}

/// Creates the CephOSD of `layout` from empty with the operator, then measures it settled.
/// Returns the figures and the scenario (operator still running) with its pid.
async fn converge(
    layout: &Layout,
    concurrency: usize,
    baseline: Duration,
) -> anyhow::Result<(SizeFigures, Scenario, OperatorProcess)> {
    let manifest = layout.manifest("Host")?;
    let total = layout.total();
    let s = Scenario::create("bench-operator").await?;
    ensure_nodes(
        &s.client,
        &layout.host_names.iter().cloned().collect::<BTreeSet<_>>(),
    )
    .await?;
    let port = free_port()?;
    let address = format!("127.0.0.1:{port}");
    // Resync every 2 s: the settled operator is measured over many reconciles.
    let operator = s.spawn_operator(
        "bench",
        &OperatorOptions { resync_seconds: 2 },
        &["--http-address", &address, "--metrics-auth=false"],
        &[],
    )?;
    let pid = operator.pid().context("operator pid")?;
    // Idle: its watches synced, no CephOSD yet.
    tokio::time::sleep(Duration::from_secs(3)).await;
    let (rss_idle, _) = rss_mib(pid)?;
    let (progress, watch) = follow_pods(s.pods.clone(), total);
    tokio::time::sleep(Duration::from_secs(1)).await;
    let mut cr: CephOsd = serde_json::from_value(manifest)?;
    cr.metadata.namespace = Some(s.namespace.clone());
    let requests = || metric_sum(port, "ceph_osd_operator_api_requests_total");
    let before_creation = (cpu_time(pid)?, requests().await?);
    let started = Instant::now();
    s.crs.create(&PostParams::default(), &cr).await?;
    // The watch notes the times; polling only finds them.
    let created = s
        .wait_until("every pod created", Duration::from_mins(30), || async {
            Ok(progress.lock().unwrap().created)
        })
        .await?;
    let creation_cpu = cpu_time(pid)?.saturating_sub(before_creation.0);
    let creation_requests = requests().await? - before_creation.1;
    let pods_ready = s
        .wait_until("every pod Ready", Duration::from_hours(1), || async {
            Ok(progress.lock().unwrap().all_ready)
        })
        .await?;
    let status_ready = s
        .wait_until("status Ready", Duration::from_mins(10), || async {
            let status = s.cr_status(CR).await?.unwrap_or_default();
            Ok((status.phase == Some(Phase::Ready)).then(Instant::now))
        })
        .await?;

    watch.abort();
    // Settled: 20 s of resyncs.
    tokio::time::sleep(Duration::from_secs(3)).await;
    let reconciles = || metric_sum(port, "ceph_osd_operator_reconciles_total");
    let unchanged = || metric_sum(port, "ceph_osd_operator_reconciles_unchanged_total");
    let before = (
        cpu_time(pid)?,
        requests().await?,
        reconciles().await?,
        unchanged().await?,
    );
    tokio::time::sleep(Duration::from_secs(20)).await;
    let after = (
        cpu_time(pid)?,
        requests().await?,
        reconciles().await?,
        unchanged().await?,
    );
    let reconciled = after.2 - before.2;
    let (rss_settled, rss_peak) = rss_mib(pid)?;
    #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
    let cpu_per_reconcile = after.0.saturating_sub(before.0) / (reconciled.max(1.0) as u32);
    Ok((
        SizeFigures {
            hosts: layout.host_names.len(),
            per_host: layout.devices.len(),
            concurrency,
            baseline,
            created: created - started,
            creation_cpu,
            creation_requests,
            pods_ready: pods_ready - started,
            status_ready: status_ready - started,
            rss_idle,
            rss_settled,
            rss_peak,
            reconciles: reconciled,
            unchanged: after.3 - before.3,
            api_requests: after.1 - before.1,
            cpu_per_reconcile,
        },
        s,
        operator,
    ))
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let sizes = sizes()?;
    let rollouts = env_or("BENCH_ROLLOUT", 1) != 0;
    let mut figures = Vec::new();
    let mut rollout_tables = String::new();
    let mut best = None;
    // Host names of this run's own.
    let run = random_suffix();
    for (i, &(hosts, per_host)) in sizes.iter().enumerate() {
        let layout = Layout::new(hosts, per_host, "bench", &run);
        let manifest = layout.manifest("Host")?;
        // The bare client's best concurrency, searched at the first size.
        let (concurrency, baseline) = if let Some(concurrency) = best {
            (
                concurrency,
                bare_client(&layout, &manifest, concurrency).await?,
            )
        } else {
            let mut tried = Vec::new();
            for concurrency in concurrencies()? {
                let took = bare_client(&layout, &manifest, concurrency).await?;
                println!("bare client, {concurrency} in flight: {took:?}");
                tried.push((took, concurrency));
            }
            let (took, concurrency) = tried.into_iter().min().context("no concurrency")?;
            best = Some(concurrency);
            (concurrency, took)
        };
        let (size, mut s, operator) = converge(&layout, concurrency, baseline).await?;
        let pid = operator.pid().context("operator pid")?;
        println!("{}", size_row(&size));
        figures.push(size);
        if rollouts && i == 0 {
            // Hosts in rollout order (their names sort that way).
            let host_of = |key: &OsdKey| key.host.clone();
            rollout_tables += &rollout(
                &mut s,
                &layout.keys(),
                &layout.host_names,
                host_of,
                "host",
                pid,
            )
            .await?;
        }
        s.destroy().await?;
        drop(operator);
    }
    if rollouts {
        let layout = Layout::new(10, 10, "bench-osd", &run);
        let mut s = Scenario::create("bench-by-osd").await?;
        let operator = s.spawn_operator("by-osd", &OperatorOptions::default(), &[], &[])?;
        let pid = operator.pid().context("operator pid")?;
        let want = layout.keys();
        s.create_converged(&layout.manifest("OSD")?, want.clone())
            .await?;
        let domains: Vec<String> = want.iter().map(ToString::to_string).collect();
        rollout_tables +=
            &rollout(&mut s, &want, &domains, ToString::to_string, "OSD", pid).await?;
        s.destroy().await?;
        drop(operator);
    }

    let tried = concurrencies()?
        .iter()
        .map(ToString::to_string)
        .collect::<Vec<_>>()
        .join(", ");
    let mut section = format!(
        "## The operator on the local control plane\n\n\
         `cargo build --release -p ceph-osd-operator && cargo bench -p molecule-like-tests --bench cluster`\n\n\
         One CephOSD of hosts × OSDs per host, `updateDomain: Host`, fake nodes (KWOK) one per host; \
         pods Ready 1 s after start. The baseline is a bare client POSTing the same pods (owned by a CephOSD no operator watches) with the operator's identity (its ServiceAccount, under its RBAC), at the \
         concurrency of its fastest run (tried: {tried} in flight), measured in the same run; its pods are deleted once Ready, so the scheduler is idle again when the operator's run starts.\n\n\
         | OSDs (hosts × per host) | baseline: bare client | operator: applied → every pod created | ÷ baseline | operator while creating: CPU / API requests | every pod Ready (scheduler, KWOK) | status Ready after the last pod |\n\
         |---|---|---|---|---|---|---|\n",
    );
    for f in &figures {
        section += &size_row(f);
        section.push('\n');
    }
    section += "\n| settled, resync every 2 s, over 20 s | API requests | reconciles (skipped: inputs unchanged) | CPU per reconcile | resident memory: idle / settled / peak |\n|---|---|---|---|---|\n";
    for f in &figures {
        let _ = writeln!(
            section,
            "| {} OSDs | {:.0} | {:.0} ({:.0}) | {:.2} ms | {:.1} / {:.1} / {:.1} MiB |",
            f.hosts * f.per_host,
            f.api_requests,
            f.reconciles,
            f.unchanged,
            f.cpu_per_reconcile.as_secs_f64() * 1000.0,
            f.rss_idle,
            f.rss_settled,
            f.rss_peak,
        );
    }
    section += &rollout_tables;
    section += LIMITS;
    print!("{section}");
    molecule_like_tests::paths::write_benchmarks_section(
        "## The operator on the local control plane",
        &section,
    )?;
    Ok(())
}

fn size_row(f: &SizeFigures) -> String {
    format!(
        "| {} ({} × {}) | {:.1} s ({} in flight) | {:.1} s | {:.2} | {:.1} s / {:.0} | {:.1} s | {:.1} s |",
        f.hosts * f.per_host,
        f.hosts,
        f.per_host,
        f.baseline.as_secs_f64(),
        f.concurrency,
        f.created.as_secs_f64(),
        f.created.as_secs_f64() / f.baseline.as_secs_f64(),
        f.creation_cpu.as_secs_f64(),
        f.creation_requests,
        f.pods_ready.as_secs_f64(),
        f.status_ready.saturating_sub(f.pods_ready).as_secs_f64(),
    )
}

/// Replaces every pod of the settled CephOSD `CR` by a template edit, one update domain at a
/// time (`domains` in rollout order, `domain_of` a key's domain), and returns the table: the
/// latency from a domain's last replacement turning Ready to the next domain's first
/// deletion, and the whole rollout against the pods' own time.
async fn rollout(
    s: &mut Scenario,
    want: &BTreeSet<OsdKey>,
    domains: &[String],
    domain_of: impl Fn(&OsdKey) -> String,
    kind: &str,
    pid: u32,
) -> anyhow::Result<String> {
    s.start_recorder().await?;
    let started = Instant::now();
    let (_, hash) = s
        .patch_template_metadata(CR, json!({"labels": {"rev": "2"}}))
        .await?;
    s.wait_converged(CR, want, &hash, Duration::from_hours(1))
        .await?;
    let total = started.elapsed();
    let (rss, _) = rss_mib(pid)?;
    let mut ready_at: BTreeMap<String, BTreeMap<String, Duration>> = BTreeMap::new();
    let mut first_deletion: BTreeMap<String, Duration> = BTreeMap::new();
    for event in s.recorder()?.events() {
        let Some(key) = pod_key(&event.pod) else {
            continue;
        };
        let new = annotation(&event.pod, labels::TEMPLATE_HASH) == Some(hash.as_str());
        if new && is_ready(&event.pod) {
            ready_at
                .entry(domain_of(&key))
                .or_default()
                .entry(event.pod.name_any())
                .or_insert(event.at);
        }
        if !new && event.pod.metadata.deletion_timestamp.is_some() {
            first_deletion.entry(domain_of(&key)).or_insert(event.at);
        }
    }
    // Domain i done → domain i+1 started.
    let mut latencies = Vec::new();
    for pair in domains.windows(2) {
        let done = ready_at
            .get(&pair[0])
            .and_then(|pods| pods.values().max())
            .with_context(|| format!("{} without Ready replacements", pair[0]))?;
        let next = first_deletion
            .get(&pair[1])
            .with_context(|| format!("{} never deleted", pair[1]))?;
        latencies.push(next.saturating_sub(*done));
    }
    // What the pods themselves take per step: grace period 1 s, Ready 1 s after start.
    let steps = domains.len();
    let ideal = Duration::from_secs(2) * u32::try_from(steps)?;
    let ms = |d: Duration| d.as_secs_f64() * 1000.0;
    Ok(format!(
        "\n| a rollout by {kind} of {} OSDs ({steps} steps, every pod replaced) | time |\n|---|---|\n\
         | a step's last replacement Ready → the next step's first deletion, p50 / p99 / max over {} steps | {:.0} / {:.0} / {:.0} ms |\n\
         | whole rollout | {:.1} s |\n\
         | the pods' own time: {steps} × (grace 1 s + Ready 1 s after start) | {:.1} s |\n\
         | ratio (scheduling, KWOK's stage delays and the operator's reaction included) | {:.2} |\n\
         | resident memory after the rollout | {rss:.1} MiB |\n",
        want.len(),
        latencies.len(),
        ms(percentile(&latencies, 50)),
        ms(percentile(&latencies, 99)),
        ms(latencies.iter().max().copied().unwrap_or_default()),
        total.as_secs_f64(),
        ideal.as_secs_f64(),
        total.as_secs_f64() / ideal.as_secs_f64(),
    ))
}
