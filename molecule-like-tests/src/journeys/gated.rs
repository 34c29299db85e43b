//! A gated scenario: a real Ceph whose OSD daemons the bridge runs for KWOK's pods, the
//! operator asking that Ceph before each rollout step (`--ceph-conf`/`--ceph-keyring`/
//! `--ceph-id`, by default with the operator's minimal caps), a CephOSD converged with its
//! pods Ready when their OSD is up, the pool active+clean; and the gate's status recorded.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use ceph_osd_operator::crd::CephOsd;
use ceph_osd_operator::OsdKey;
use kube::api::{Api, PostParams};
use kube::ResourceExt;

use crate::ceph::{CephCluster, PoolSpec};
use crate::journeys::bridge::{ready_when_osd_up, CephBridge};
use crate::journeys::scenario::{Converged, Scenario, CONVERGE};
use crate::kubernetes::manifests::{
    cephosd, fast_sample_template, hash_of, random_suffix, reference_pod, storage,
    with_kubelet_knobs, Knobs, CR,
};
use crate::kubernetes::operator::OperatorOptions;
use crate::recording::ceph::CephRecorder;

/// Longer than any daemon stop: the bridge removes a pod once its daemon has exited.
pub const GRACE_SECONDS: i64 = 30;

/// The fast sample's pod template with pods Ready once their OSD is up in Ceph and a grace
/// period of [`GRACE_SECONDS`]: the template of a gated scenario's CephOSDs.
pub fn gated_template() -> anyhow::Result<serde_json::Value> {
    Ok(ready_when_osd_up(with_kubelet_knobs(
        fast_sample_template()?,
        Knobs {
            ready_after: 1,
            never_ready: false,
            grace: GRACE_SECONDS,
        },
    )))
}
/// The test cluster's `mgr stats period` is 1 s: PG states trail the osdmap by about that.
pub const PG_STATS_LAG_SECONDS: &str = "2";
/// The operator's Ceph user, with the minimal caps `molecule-like-tests/ceph` gives it.
pub const OPERATOR_USER: &str = "client.ceph-osd-operator";

/// The operator's flags for `cluster` as `user` (`client.<id>`): its conf, key and id, a
/// 10 s call bound, `PG_STATS_LAG_SECONDS`.
pub fn ceph_args(cluster: &CephCluster, user: &str) -> Vec<String> {
    let id = user.strip_prefix("client.").unwrap_or(user);
    vec![
        "--ceph-conf".into(),
        cluster.conf().display().to_string(),
        "--ceph-keyring".into(),
        cluster.keyring(user).display().to_string(),
        "--ceph-id".into(),
        id.into(),
        "--ceph-timeout".into(),
        "10".into(),
        "--ceph-pg-stats-lag-seconds".into(),
        PG_STATS_LAG_SECONDS.into(),
    ]
}

/// One sample of the CephOSD's gate status, on the recorders' clock.
#[derive(Clone, Debug, PartialEq)]
pub struct GateSample {
    pub at: Duration,
    /// `status.cephStep`: its keys and OSD ids, None when no step is open.
    pub step: Option<(Vec<String>, Vec<u32>)>,
    /// `status.cephStep.noout`.
    pub noout: Vec<u32>,
    /// The `CephGate` condition: (status, reason, message).
    pub condition: Option<(String, String, String)>,
}

/// Polls the CephOSD's gate status every 200 ms and keeps each change.
pub struct GateWatch {
    samples: Arc<Mutex<Vec<GateSample>>>,
    task: tokio::task::JoinHandle<()>,
}

impl GateWatch {
    pub fn start(crs: Api<CephOsd>, name: &str, clock: Instant) -> Self {
        let samples: Arc<Mutex<Vec<GateSample>>> = Arc::default();
        let out = Arc::clone(&samples);
        let name = name.to_owned();
        let task = tokio::spawn(async move {
            loop {
                if let Ok(cr) = crs.get(&name).await {
                    let status = cr.status.unwrap_or_default();
                    let sample = GateSample {
                        at: clock.elapsed(),
                        noout: status
                            .ceph_step
                            .as_ref()
                            .map(|s| s.noout.clone())
                            .unwrap_or_default(),
                        step: status
                            .ceph_step
                            .map(|s| (s.keys, s.osds.iter().map(|o| o.id).collect::<Vec<u32>>())),
                        condition: status
                            .conditions
                            .iter()
                            .find(|c| c.type_ == "CephGate")
                            .map(|c| (c.status.clone(), c.reason.clone(), c.message.clone())),
                    };
                    let mut all = out.lock().unwrap();
                    if all.last().is_none_or(|l| {
                        l.step != sample.step
                            || l.noout != sample.noout
                            || l.condition != sample.condition
                    }) {
                        all.push(sample);
                    }
                }
                tokio::time::sleep(Duration::from_millis(200)).await;
            }
        });
        Self { samples, task }
    }

    pub fn samples(&self) -> Vec<GateSample> {
        self.samples.lock().unwrap().clone()
    }

    pub fn render(&self) -> String {
        self.samples()
            .iter()
            .map(|s| {
                format!(
                    "  {:>8.2}s step {:?} noout {:?} | CephGate {:?}\n",
                    s.at.as_secs_f64(),
                    s.step,
                    s.noout,
                    s.condition
                )
            })
            .collect()
    }
}

impl Drop for GateWatch {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// What a gated scenario runs.
pub struct GatedOptions<'a> {
    /// Host bases (made the scenario's own), each with `data` OSDs.
    pub hosts: &'a [&'a str],
    pub data: &'a [&'a str],
    /// `Host` or `OSD`.
    pub update_domain: &'a str,
    /// Added to `spec` (e.g. `{"maxUnavailable": 2}`).
    pub spec_patch: Option<serde_json::Value>,
    /// The Ceph user the operator asks as (its keyring from the cluster).
    pub ceph_user: &'a str,
    /// Operator flags besides the Ceph connection.
    pub extra_args: &'a [&'a str],
    /// Host bases whose daemons report no pod ([`CephBridge::anonymous`]) from the start.
    pub anonymous: &'a [&'a str],
    /// Wait at the end until the gate is idle (`CephGate` True `CephIdle`).
    pub expect_idle: bool,
    /// Per host (in `hosts`' order), its data devices instead of `data`.
    pub data_per_host: Option<&'a [&'a [&'a str]]>,
    /// BlueStore on a loop device of its own per OSD: the CephOSD lists the loop devices
    /// (`/dev/loopN`, as many per host as its data devices), not the names in `data`.
    pub loop_devices: bool,
    /// Adopted: the CephOSD and the reference operator's pods (no `POD_NAME` env: their
    /// daemons report no pod, the node as `hostname`) laid before the operator starts, as a
    /// migration finds them; converged once the operator labelled every pod.
    pub adopt: bool,
    /// The host bases `CR` lists (None: all of `hosts`): the other hosts' OSDs are created
    /// and their daemons run for the pod of their key, whichever CephOSD the test gives them;
    /// the pool is then left for the test to create once they run.
    pub cr_hosts: Option<&'a [&'a str]>,
    /// CRUSH racks (root → rack → host), each with its host bases; hosts in none are under
    /// the root.
    pub racks: &'a [(&'a str, &'a [&'a str])],
    /// The pools made once the OSDs run (None: the test pool, host failure domain).
    pub pools: Option<&'a [PoolSpec<'a>]>,
}

impl Default for GatedOptions<'_> {
    fn default() -> Self {
        Self {
            hosts: &["ceph-a", "ceph-b", "ceph-c"],
            data: &["/dev/sdb"],
            update_domain: "Host",
            spec_patch: None,
            ceph_user: OPERATOR_USER,
            extra_args: &[],
            anonymous: &[],
            expect_idle: true,
            data_per_host: None,
            loop_devices: false,
            adopt: false,
            cr_hosts: None,
            racks: &[],
            pools: None,
        }
    }
}

/// The OSDs of `options` on `hosts`, created (not started), each host under its rack of
/// `rack_of`: each key with its OSD id.
async fn create_osds(
    cluster: &CephCluster,
    hosts: &[String],
    rack_of: &BTreeMap<String, String>,
    options: &GatedOptions<'_>,
) -> anyhow::Result<BTreeMap<OsdKey, u32>> {
    let planned: Vec<(&str, &str)> = hosts
        .iter()
        .enumerate()
        .flat_map(|(i, host)| {
            let data = options
                .data_per_host
                .and_then(|d| d.get(i).copied())
                .unwrap_or(options.data);
            data.iter().map(move |d| (host.as_str(), *d))
        })
        .collect();
    if options.loop_devices {
        let made = futures::future::try_join_all(
            planned
                .iter()
                .map(|(host, _)| cluster.osd_create_on_loop(host)),
        )
        .await?;
        return Ok((planned.iter().zip(made))
            .map(|((host, _), (id, device))| (OsdKey::new(*host, device), id))
            .collect());
    }
    let ids = futures::future::try_join_all(
        (planned.iter())
            .map(|(host, _)| cluster.osd_create_in(host, rack_of.get(*host).map(String::as_str))),
    )
    .await?;
    Ok((planned.iter().zip(ids))
        .map(|((host, data), id)| (OsdKey::new(*host, *data), id))
        .collect())
}

/// The pools of `options` (the test pool by default), each active+clean.
async fn create_pools(cluster: &CephCluster, options: &GatedOptions<'_>) -> anyhow::Result<()> {
    match options.pools {
        None => cluster.pool_create().await,
        Some(pools) => {
            for pool in pools {
                cluster.pool_create_with(pool).await?;
            }
            Ok(())
        }
    }
}

/// The hosts `CR` lists, and its keys of `table`.
fn cr_want(
    s: &Scenario,
    hosts: &[String],
    table: &BTreeMap<OsdKey, u32>,
    options: &GatedOptions<'_>,
) -> (Vec<String>, BTreeSet<OsdKey>) {
    let cr_hosts: Vec<String> = match options.cr_hosts {
        Some(bases) => bases.iter().map(|h| s.host(h)).collect(),
        None => hosts.to_vec(),
    };
    let want = (table.keys())
        .filter(|k| cr_hosts.contains(&k.host))
        .cloned()
        .collect();
    (cr_hosts, want)
}

/// A `spec.storage` of one entry per host, with that host's keys of `want`.
fn storage_of(want: &BTreeSet<OsdKey>) -> serde_json::Value {
    let mut by_host: BTreeMap<&str, Vec<serde_json::Value>> = BTreeMap::new();
    for key in want {
        by_host
            .entry(&key.host)
            .or_default()
            .push(serde_json::json!({"data": key.data}));
    }
    by_host
        .into_iter()
        .map(|(host, osds)| serde_json::json!({"hosts": [host], "osds": osds}))
        .collect()
}

/// The CephOSD of `manifest` created and the reference operator's pods of `want` laid (its
/// names, labels, annotations, env from annotations, no `POD_NAME`), before any operator
/// runs; once they are Ready (their daemons up).
async fn lay_reference_pods(
    s: &Scenario,
    manifest: &serde_json::Value,
    want: &BTreeSet<OsdKey>,
) -> anyhow::Result<Converged> {
    let cr = s.create_cr(manifest).await?;
    let hash = hash_of(&cr);
    let uid = cr.uid().unwrap_or_default();
    let template = serde_json::to_value(&cr.spec.pod_template)?;
    for key in want {
        let short = key.host.split('.').next().unwrap_or(&key.host);
        let device: String = (key.data.trim_start_matches("/dev/").chars())
            .map(|c| if c.is_ascii_alphanumeric() { c } else { '-' })
            .collect();
        let name = format!("osd-{short}-{device}-{}", &random_suffix()[..5]);
        let pod = reference_pod(&template, &uid, &name, &key.host, &key.data, "", &hash)?;
        s.pods.create(&PostParams::default(), &pod).await?;
    }
    let pods = s.wait_converged(CR, want, &hash, CONVERGE).await?;
    Ok(Converged {
        want: want.clone(),
        cr,
        hash,
        pods,
    })
}

/// Waits until the operator adopted every pod of `want` (its update-domain label).
async fn wait_adopted(s: &Scenario, want: &BTreeSet<OsdKey>) -> anyhow::Result<()> {
    s.wait_until(
        "every reference pod adopted (labelled with its update domain)",
        Duration::from_mins(1),
        || async {
            let pods = s.owned_pods(CR).await?;
            let all = pods.len() == want.len()
                && pods.iter().all(|p| {
                    p.labels()
                        .contains_key(ceph_osd_operator::labels::UPDATE_DOMAIN)
                });
            Ok(all.then_some(()))
        },
    )
    .await
}

/// A gated scenario, converged.
pub struct Gated {
    pub s: Scenario,
    /// Each host's CRUSH rack, for hosts in one (`GatedOptions::racks`).
    pub rack_of: BTreeMap<String, String>,
    pub cluster: Arc<CephCluster>,
    pub ceph: CephRecorder,
    pub bridge: CephBridge,
    pub gate: GateWatch,
    /// Each key's OSD id.
    pub table: BTreeMap<OsdKey, u32>,
    pub want: BTreeSet<OsdKey>,
    pub converged: Converged,
    /// The operator's flags (to start another operator process like it).
    pub operator_args: Vec<String>,
}

impl Gated {
    /// 3 hosts × 1 OSD by host, the operator's minimal caps.
    pub async fn up(name: &str) -> anyhow::Result<Self> {
        Self::up_with(name, &GatedOptions::default()).await
    }

    pub async fn up_with(name: &str, options: &GatedOptions<'_>) -> anyhow::Result<Self> {
        let mut s = Scenario::create(name).await?;
        s.start_recorder().await?;
        let hosts: Vec<String> = options.hosts.iter().map(|h| s.host(h)).collect();
        let rack_of: BTreeMap<String, String> = (options.racks.iter())
            .flat_map(|(rack, bases)| bases.iter().map(|b| (s.host(b), (*rack).to_owned())))
            .collect();
        let cluster = Arc::new(CephCluster::for_scenario(&s, 0).await?);
        let table = create_osds(&cluster, &hosts, &rack_of, options).await?;
        let (cr_hosts, want) = cr_want(&s, &hosts, &table, options);
        let clock = Instant::now()
            .checked_sub(s.recorder()?.elapsed())
            .ok_or_else(|| anyhow::anyhow!("no clock"))?;
        let ceph = CephRecorder::start(&cluster, clock).await?;
        let bridge = CephBridge::start(s.pods.clone(), Arc::clone(&cluster), &table, &ceph).await?;
        for key in table.keys() {
            if options.anonymous.iter().any(|h| s.host(h) == key.host) {
                bridge.anonymous(key);
            }
        }
        if options.adopt {
            bridge.like_reference_pods();
        }

        let mut operator_args = ceph_args(&cluster, options.ceph_user);
        operator_args.extend(options.extra_args.iter().map(|a| (*a).to_owned()));
        // The step lock of the Ceph cluster: in the watched namespace (the operator's default).
        crate::kubernetes::rbac::grant_ceph_lock_in(&s.client, &s.namespace).await?;
        let args: Vec<&str> = operator_args.iter().map(String::as_str).collect();
        // Every `ceph` call the operator makes in its log (`ceph call command=…`).
        let log_filter = format!(
            "{},ceph_osd_operator::ceph::cli=debug",
            crate::kubernetes::operator::operator_log_filter()
        );
        let start_operator = |s: &mut Scenario| {
            s.start_operator_with_env(
                &OperatorOptions::default(),
                &args,
                &[("RUST_LOG", &log_filter)],
            )
        };
        if !options.adopt {
            start_operator(&mut s)?;
        }
        let gate = GateWatch::start(s.crs.clone(), CR, clock);

        let template = gated_template()?;
        let storage = if options.loop_devices || options.data_per_host.is_some() {
            storage_of(&want)
        } else {
            storage(&cr_hosts, options.data)
        };
        let mut manifest = cephosd(CR, storage, options.update_domain, template);
        if let Some(serde_json::Value::Object(patch)) = &options.spec_patch {
            for (k, v) in patch {
                manifest["spec"][k] = v.clone();
            }
        }
        let converged = if options.adopt {
            let converged = lay_reference_pods(&s, &manifest, &want).await?;
            create_pools(&cluster, options).await?;
            start_operator(&mut s)?;
            wait_adopted(&s, &want).await?;
            converged
        } else {
            // Creating missing pods is never gated: their daemons are down already.
            let converged = s.create_converged(&manifest, want.clone()).await?;
            // Hosts left for another CephOSD: the test creates the pool once they run.
            if options.cr_hosts.is_none() {
                create_pools(&cluster, options).await?;
            }
            converged
        };
        let g = Self {
            s,
            rack_of,
            cluster,
            ceph,
            bridge,
            gate,
            table,
            want,
            converged,
            operator_args,
        };
        if options.expect_idle {
            g.wait_gate_idle(Duration::from_mins(1)).await?;
        }
        Ok(g)
    }

    /// Sets `noout` on OSD `id` as an admin does (`ceph osd add-noout`) and waits until Ceph's
    /// recorded view shows it on that OSD alone; returns its name (`osd.N`).
    pub async fn add_admin_noout(&self, id: u32, timeout: Duration) -> anyhow::Result<String> {
        let name = format!("osd.{id}");
        self.cluster.cli(&["osd", "add-noout", &name]).await?;
        self.ceph
            .wait_until("the admin's noout", timeout, |v| {
                v.osdmap
                    .as_ref()
                    .is_some_and(|(_, m)| m.noout() == [name.clone()])
            })
            .await?;
        Ok(name)
    }

    /// Waits until no step is open and `CephGate` is True `CephIdle`, and Ceph was sampled since.
    pub async fn wait_gate_idle(&self, timeout: Duration) -> anyhow::Result<()> {
        self.wait_gate("CephGate True CephIdle, no cephStep", timeout, |status| {
            status.ceph_step.is_none()
                && status
                    .conditions
                    .iter()
                    .any(|c| c.type_ == "CephGate" && c.status == "True" && c.reason == "CephIdle")
        })
        .await?;
        // Checks of "the end" (no noout left) read the recording: it must hold an osdmap taken
        // after the gate said idle, not one polled just before.
        let idle_at = self.ceph.elapsed();
        self.ceph
            .wait_until(
                "an osdmap sample after the gate went idle",
                Duration::from_secs(30),
                |s| s.osdmap.as_ref().is_some_and(|(at, _)| *at > idle_at),
            )
            .await?;
        Ok(())
    }

    /// Waits until the CephOSD's status satisfies `done`; the error shows the gate's record.
    pub async fn wait_gate(
        &self,
        what: &str,
        timeout: Duration,
        done: impl Fn(&ceph_osd_operator::crd::CephOsdStatus) -> bool,
    ) -> anyhow::Result<()> {
        let r = self
            .s
            .wait_until(what, timeout, || async {
                let status = self.s.cr_status(CR).await?.unwrap_or_default();
                Ok(done(&status).then_some(()))
            })
            .await;
        r.map_err(|e| anyhow::anyhow!("{e:#}\ngate status:\n{}", self.gate.render()))
    }

    /// The `CephGate` condition now: (status, reason, message).
    pub async fn gate_condition(&self) -> anyhow::Result<Option<(String, String, String)>> {
        let status = self.s.cr_status(CR).await?.unwrap_or_default();
        Ok(status
            .conditions
            .iter()
            .find(|c| c.type_ == "CephGate")
            .map(|c| (c.status.clone(), c.reason.clone(), c.message.clone())))
    }

    /// Ceph's recording from `from` (its summary, then every change), the bridge's record
    /// and the gate's status samples: what a failure message shows.
    pub fn report(&self, from: Duration) -> String {
        let recording = self.ceph.recording();
        format!(
            "{}{}{}gate status:\n{}",
            recording.summary(from),
            recording.render(from),
            self.bridge.render(),
            self.gate.render()
        )
    }

    /// Starts OSD `id` again as the daemon of `key`'s pod `pod` (its name, namespace, node).
    pub async fn start_as_pod(&self, id: u32, key: &OsdKey, pod: &str) -> anyhow::Result<()> {
        self.cluster
            .osd_start(
                id,
                &crate::ceph::OsdStart {
                    host: &key.host,
                    pod_name: Some(pod),
                    pod_namespace: Some(&self.s.namespace),
                    node_name: Some(&key.host),
                    container_image: None,
                    ..crate::ceph::OsdStart::default()
                },
            )
            .await
    }

    /// Stops the bridge, deletes the scenario's objects and brings Ceph down. Boxed: the
    /// future holds the whole fixture, too large to keep on a caller's stack.
    pub fn down(
        self,
    ) -> std::pin::Pin<Box<dyn std::future::Future<Output = anyhow::Result<()>> + Send>> {
        Box::pin(async move {
            self.bridge.stop().await?;
            drop(self.ceph);
            drop(self.gate);
            self.s.destroy().await?;
            self.cluster.down()?;
            Ok(())
        })
    }
}
