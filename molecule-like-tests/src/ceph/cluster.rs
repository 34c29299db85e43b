//! A real Ceph cluster: [`CephCluster`] runs `molecule-like-tests/ceph` with a state dir
//! and a mon port of its own (test binaries run side by side), and reads Ceph's view through the
//! admin key ([`CephCluster::osd_dump`], [`CephCluster::pg_stat`], [`CephCluster::cli`]).
//!
//! - The mon port is picked from 20000-31999 (below the kernel's ephemeral range, away from the
//!   OSDs' 6800-7300): a port whose lock file (in the temp dir) no other harness process holds
//!   and that binds now. The lock is held for the cluster's life; a mon that still fails to bind
//!   makes `up` try another port.
//! - Dropped, the cluster is brought down (every daemon stopped by its PID). Dropped without
//!   [`CephCluster::down`] (a failed test), it keeps `logs/` and `ceph.conf` and says where.
//! - A cluster whose test process died without dropping it (SIGKILL) is brought down by the next
//!   [`CephCluster::up`] under the same target dir (its owner file names a process that is gone).

use std::collections::BTreeMap;
use std::fs::{File, OpenOptions};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use anyhow::{anyhow, bail, Context as _};
use serde::Deserialize;
use serde_json::Value;

use crate::ceph::release::Release;
use crate::kubernetes::manifests::random_suffix;
use crate::paths::{output_dir, workspace_root};

/// `molecule-like-tests/ceph`.
pub fn script_path() -> PathBuf {
    workspace_root().join("molecule-like-tests").join("ceph")
}

/// Mon ports are taken from this range.
const MON_PORTS: std::ops::Range<u16> = 20000..32000;
/// Admin sockets live in `<state>/run/`: a unix socket path has at most 107 bytes.
const MAX_STATE_LEN: usize = 80;
/// Tries of `up` when the mon's port was taken between the check and the bind.
const UP_TRIES: usize = 3;
/// How long `up` may take (daemon installs excluded).
const UP_TIMEOUT: Duration = Duration::from_mins(4);

/// One OSD in `ceph osd dump`.
#[derive(Clone, Debug, Deserialize, PartialEq, Eq)]
pub struct OsdInfo {
    pub id: u32,
    pub up: bool,
    #[serde(rename = "in")]
    pub in_: bool,
    /// The osdmap epoch at which its current (or last) daemon booted.
    pub up_from: u64,
    /// `noout` in its `state`.
    pub noout: bool,
}

/// `ceph osd dump`, as far as the tests read it.
#[derive(Clone, Debug, Default, Deserialize, PartialEq, Eq)]
pub struct OsdMap {
    pub epoch: u64,
    /// The cluster-wide flags, comma-separated (`noout` when set for every OSD).
    #[serde(default)]
    pub flags: String,
    pub osds: Vec<OsdInfo>,
    /// Flags set on CRUSH nodes (`set-group noout <host>`).
    #[serde(default)]
    pub crush_node_flags: BTreeMap<String, Vec<String>>,
    /// CRUSH host → its OSDs (from `ceph osd tree`).
    #[serde(default)]
    pub hosts: BTreeMap<String, Vec<i64>>,
    /// CRUSH host → the buckets above it by type (`rack` → `rack-a`, `root` → `default`).
    #[serde(default)]
    pub ancestors: BTreeMap<String, BTreeMap<String, String>>,
    /// Pool id → its replication.
    #[serde(default)]
    pub pools: BTreeMap<u64, PoolInfo>,
}

/// A pool's replication.
#[derive(Clone, Copy, Debug, Deserialize, PartialEq, Eq)]
pub struct PoolInfo {
    pub size: u64,
    /// A PG serves I/O only with at least this many copies up.
    pub min_size: u64,
}

impl OsdMap {
    /// The OSD `id`, when it exists.
    pub fn osd(&self, id: u32) -> Option<&OsdInfo> {
        self.osds.iter().find(|o| o.id == id)
    }

    /// The CRUSH host of OSD `id`, when it has one.
    pub fn host_of(&self, id: u32) -> Option<&str> {
        self.hosts
            .iter()
            .find(|(_, ids)| ids.contains(&i64::from(id)))
            .map(|(h, _)| h.as_str())
    }

    /// The CRUSH bucket of type `bucket_type` that OSD `id` is under (`host` is its host).
    pub fn bucket_of(&self, id: u32, bucket_type: &str) -> Option<&str> {
        let host = self.host_of(id)?;
        if bucket_type == "host" {
            return Some(host);
        }
        self.ancestors
            .get(host)?
            .get(bucket_type)
            .map(String::as_str)
    }

    /// Where `noout` is set: `cluster`, `osd.N`, or a CRUSH node's name.
    pub fn noout(&self) -> Vec<String> {
        let mut out = Vec::new();
        if self.flags.split(',').any(|f| f == "noout") {
            out.push("cluster".to_owned());
        }
        out.extend(
            self.osds
                .iter()
                .filter(|o| o.noout)
                .map(|o| format!("osd.{}", o.id)),
        );
        out.extend(
            self.crush_node_flags
                .iter()
                .filter(|(_, flags)| flags.iter().any(|f| f == "noout"))
                .map(|(node, _)| node.clone()),
        );
        out
    }

    /// From the JSON of `ceph osd dump -f json` and `ceph osd tree -f json`.
    pub fn from_ceph(dump: &Value, tree: &Value) -> anyhow::Result<Self> {
        let osds = dump["osds"]
            .as_array()
            .ok_or_else(|| anyhow!("osd dump without osds: {dump}"))?
            .iter()
            .map(|o| {
                Ok(OsdInfo {
                    id: o["osd"]
                        .as_u64()
                        .and_then(|id| u32::try_from(id).ok())
                        .ok_or_else(|| anyhow!("an OSD without id: {o}"))?,
                    up: o["up"].as_u64() == Some(1),
                    in_: o["in"].as_u64() == Some(1),
                    up_from: o["up_from"].as_u64().unwrap_or(0),
                    noout: o["state"]
                        .as_array()
                        .is_some_and(|s| s.iter().any(|f| f == "noout")),
                })
            })
            .collect::<anyhow::Result<_>>()?;
        let nodes: Vec<Value> = tree["nodes"].as_array().cloned().unwrap_or_default();
        let hosts = tree["nodes"]
            .as_array()
            .into_iter()
            .flatten()
            .filter(|n| n["type"] == "host")
            .filter_map(|n| {
                let ids = n["children"]
                    .as_array()
                    .map(|c| c.iter().filter_map(Value::as_i64).collect())
                    .unwrap_or_default();
                Some((n["name"].as_str()?.to_owned(), ids))
            })
            .collect();
        let pools = dump["pools"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|p| {
                let info = PoolInfo {
                    size: p["size"].as_u64()?,
                    min_size: p["min_size"].as_u64()?,
                };
                Some((p["pool"].as_u64()?, info))
            })
            .collect();
        Ok(Self {
            epoch: dump["epoch"].as_u64().unwrap_or(0),
            pools,
            flags: dump["flags"].as_str().unwrap_or("").to_owned(),
            osds,
            crush_node_flags: serde_json::from_value(dump["crush_node_flags"].clone())
                .unwrap_or_default(),
            hosts,
            ancestors: ancestors(&nodes),
        })
    }
}

/// Each CRUSH host of `ceph osd tree`'s nodes with the buckets above it, by type.
fn ancestors(nodes: &[Value]) -> BTreeMap<String, BTreeMap<String, String>> {
    let parent: BTreeMap<i64, &Value> = nodes
        .iter()
        .flat_map(|n| {
            let children = n["children"].as_array().into_iter().flatten();
            children.filter_map(Value::as_i64).map(move |c| (c, n))
        })
        .collect();
    let mut out = BTreeMap::new();
    for host in nodes.iter().filter(|n| n["type"] == "host") {
        let (Some(name), Some(mut id)) = (host["name"].as_str(), host["id"].as_i64()) else {
            continue;
        };
        let mut up = BTreeMap::new();
        while let Some(p) = parent.get(&id) {
            let (Some(t), Some(n), Some(pid)) =
                (p["type"].as_str(), p["name"].as_str(), p["id"].as_i64())
            else {
                break;
            };
            up.insert(t.to_owned(), n.to_owned());
            id = pid;
        }
        out.insert(name.to_owned(), up);
    }
    out
}

/// The mgr's PG states: `ceph pg stat`, or `pg dump pgs_brief` with each PG.
#[derive(Clone, Debug, Default, Deserialize, PartialEq, Eq)]
pub struct PgStat {
    /// False right after a mgr start (states `unknown`).
    pub ready: bool,
    pub num_pgs: u64,
    /// State (`active+clean`, `stale+active+clean`, `peering`, …) → number of PGs.
    pub by_state: BTreeMap<String, u64>,
    /// Each PG (from `pg dump pgs_brief`; empty from `pg stat`).
    #[serde(default)]
    pub pgs: Vec<PgBrief>,
}

/// One PG as last reported by its primary.
#[derive(Clone, Debug, Deserialize, PartialEq, Eq)]
pub struct PgBrief {
    /// `<pool id>.<hex>`.
    pub pgid: String,
    pub state: String,
    /// The OSDs that serve it, as last reported.
    #[serde(default)]
    pub acting: Vec<u32>,
}

impl PgBrief {
    /// The id of its pool.
    pub fn pool(&self) -> Option<u64> {
        self.pgid.split('.').next()?.parse().ok()
    }
}

impl PgStat {
    /// From the JSON of `ceph pg stat -f json`.
    pub fn from_ceph(stat: &Value) -> Self {
        let summary = &stat["pg_summary"];
        Self {
            ready: stat["pg_ready"].as_bool().unwrap_or(false),
            num_pgs: summary["num_pgs"].as_u64().unwrap_or(0),
            by_state: summary["num_pg_by_state"]
                .as_array()
                .into_iter()
                .flatten()
                .filter_map(|s| Some((s["name"].as_str()?.to_owned(), s["num"].as_u64()?)))
                .collect(),
            pgs: Vec::new(),
        }
    }

    /// Every PG `active+clean`.
    pub fn all_clean(&self) -> bool {
        self.ready && self.num_pgs > 0 && self.by_state.get("active+clean") == Some(&self.num_pgs)
    }
}

/// The environment of one `osd-start`: what its pod would give the daemon.
#[derive(Clone, Debug, Default)]
pub struct OsdStart<'a> {
    /// Its CRUSH host (the Kubernetes node).
    pub host: &'a str,
    pub pod_name: Option<&'a str>,
    pub pod_namespace: Option<&'a str>,
    pub node_name: Option<&'a str>,
    /// `CONTAINER_IMAGE`: with it Ceph counts the daemon as in a container and takes
    /// `NODE_NAME` as its `hostname` (as a pod without `POD_NAME` on its node).
    pub container_image: Option<&'a str>,
    /// The release of the daemon (by default the machine's Pacific).
    pub release: Release,
}

/// A replicated pool of the harness: its copies each in another CRUSH bucket of one type.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PoolSpec<'a> {
    pub name: &'a str,
    pub size: u32,
    pub min_size: u32,
    /// The CRUSH bucket type its copies are spread across (`host`, `rack`, …).
    pub failure_domain: &'a str,
}

/// A Ceph cluster of the harness (see the module docs).
pub struct CephCluster {
    state: PathBuf,
    mon_port: u16,
    /// Held for the cluster's life: other harness processes do not pick this mon port.
    _port_lock: File,
    /// Names this process as the cluster's owner.
    owner_file: PathBuf,
    /// Brought down by [`Self::down`].
    down: AtomicBool,
}

impl CephCluster {
    /// `ceph install` (when a daemon is missing), then `ceph up <osds>` in `state` (a state dir
    /// path too long for admin sockets is replaced by one in the temp dir).
    pub async fn up(state: impl Into<PathBuf>, osds: usize) -> anyhow::Result<Self> {
        let mut state: PathBuf = state.into();
        if state.as_os_str().len() > MAX_STATE_LEN {
            state = std::env::temp_dir().join(format!("ceph-osd-operator-{}", random_suffix()));
        }
        reap_orphans();
        let install = run_script(&state, 0, &["install"], Duration::from_mins(10)).await;
        install.context("installing the Ceph daemons")?;
        let mut last_error = None;
        for _ in 0..UP_TRIES {
            let (mon_port, lock) = pick_mon_port()?;
            let owner_file = owner_file(&state);
            std::fs::create_dir_all(state.parent().unwrap_or(Path::new("/")))?;
            std::fs::write(&owner_file, owner_id(std::process::id())?)
                .with_context(|| format!("writing {}", owner_file.display()))?;
            // From here on a failure brings down whatever started.
            let cluster = Self {
                state: state.clone(),
                mon_port,
                _port_lock: lock,
                owner_file,
                down: AtomicBool::new(false),
            };
            match cluster.run(&["up", &osds.to_string()], UP_TIMEOUT).await {
                Ok(_) => return Ok(cluster),
                // The port was taken after all: another one.
                Err(e) if format!("{e:#}").contains("mon.a exited at start") => {
                    let _ = cluster.down();
                    last_error = Some(e);
                }
                Err(e) => return Err(e),
            }
        }
        Err(last_error.unwrap_or_else(|| anyhow!("ceph up failed")))
    }

    /// The state dir (`ceph.conf`, keyrings, `logs/`).
    pub fn state_dir(&self) -> &Path {
        &self.state
    }

    /// The mon's port on 127.0.0.1 (msgr v2).
    pub fn mon_port(&self) -> u16 {
        self.mon_port
    }

    /// `ceph.conf`.
    pub fn conf(&self) -> PathBuf {
        self.state.join("ceph.conf")
    }

    /// The keyring of `client` (`client.admin`, `client.ceph-osd-operator`, `client.nocaps`).
    pub fn keyring(&self, client: &str) -> PathBuf {
        self.state.join(format!("{client}.keyring"))
    }

    /// The daemons' logs.
    pub fn log_dir(&self) -> PathBuf {
        self.state.join("logs")
    }

    /// Runs the script with `args` for this cluster; its stdout.
    pub async fn run(&self, args: &[&str], timeout: Duration) -> anyhow::Result<String> {
        run_script(&self.state, self.mon_port, args, timeout).await
    }

    /// The script's command for `args` (e.g. `watch`, a long-running child of the caller).
    pub fn command(&self, args: &[&str]) -> tokio::process::Command {
        script_command(&self.state, self.mon_port, args)
    }

    /// The `ceph` CLI as client.admin (bounded by the script's timeout); its stdout.
    pub async fn cli(&self, args: &[&str]) -> anyhow::Result<String> {
        let mut all = vec!["cli"];
        all.extend_from_slice(args);
        self.run(&all, Duration::from_mins(1)).await
    }

    /// [`Self::cli`] with `-f json`, parsed.
    pub async fn cli_json(&self, args: &[&str]) -> anyhow::Result<Value> {
        let mut all = args.to_vec();
        all.extend_from_slice(&["-f", "json"]);
        let out = self.cli(&all).await?;
        serde_json::from_str(out.trim()).with_context(|| format!("ceph {args:?}: {out:?}"))
    }

    /// A new OSD (`osd new` + mkfs) whose CRUSH host will be `host`, not started; its id.
    pub async fn osd_create(&self, host: &str) -> anyhow::Result<u32> {
        self.osd_create_in(host, None).await
    }

    /// As [`Self::osd_create`], its host under CRUSH rack `rack` (made when the first OSD of
    /// the host starts; a host CRUSH has already stays where it is).
    pub async fn osd_create_in(&self, host: &str, rack: Option<&str>) -> anyhow::Result<u32> {
        let mut args = vec!["osd-create", "--host", host];
        if let Some(rack) = rack {
            args.extend(["--rack", rack]);
        }
        let out = self.run(&args, Duration::from_mins(2)).await?;
        out.trim()
            .parse()
            .with_context(|| format!("osd-create printed {out:?}"))
    }

    /// A new OSD as [`Self::osd_create`], BlueStore on a loop device of its own (`osd metadata`
    /// then names a real block device; `down` detaches it): its id and the device
    /// (`/dev/loopN`).
    pub async fn osd_create_on_loop(&self, host: &str) -> anyhow::Result<(u32, String)> {
        let out = self
            .run(
                &["osd-create", "--host", host, "--loop"],
                Duration::from_mins(2),
            )
            .await?;
        let id: u32 = out
            .trim()
            .parse()
            .with_context(|| format!("osd-create printed {out:?}"))?;
        let file = self
            .state
            .join(format!("data/osd.{id}/harness-block-device"));
        let device = std::fs::read_to_string(&file)
            .with_context(|| format!("reading {}", file.display()))?;
        Ok((id, device.trim().to_owned()))
    }

    /// Starts OSD `id`'s daemon of `start.release` (returns at once; it boots in a few
    /// seconds).
    pub async fn osd_start(&self, id: u32, start: &OsdStart<'_>) -> anyhow::Result<()> {
        let id = id.to_string();
        let mut args = vec!["osd-start", id.as_str(), "--host", start.host];
        args.extend(["--release", start.release.name()]);
        for (flag, value) in [
            ("--pod-name", start.pod_name),
            ("--pod-namespace", start.pod_namespace),
            ("--node-name", start.node_name),
            ("--container-image", start.container_image),
        ] {
            if let Some(value) = value {
                args.extend([flag, value]);
            }
        }
        self.run(&args, Duration::from_secs(30)).await.map(drop)
    }

    /// Stops OSD `id`'s daemon: SIGTERM (SIGKILL with `kill`), returns once it has exited.
    pub async fn osd_stop(&self, id: u32, kill: bool) -> anyhow::Result<()> {
        let id = id.to_string();
        let mut args = vec!["osd-stop", id.as_str()];
        if kill {
            args.push("--kill");
        }
        self.run(&args, Duration::from_mins(1)).await.map(drop)
    }

    /// Crashes OSD `id`'s daemon (`osd-crash`: SIGABRT, Ceph's handler writes its crash
    /// report, posted as the host's `ceph-crash` posts it); returns the crash ids posted.
    pub async fn osd_crash(&self, id: u32) -> anyhow::Result<Vec<String>> {
        let id = id.to_string();
        let out = self
            .run(&["osd-crash", id.as_str()], Duration::from_mins(1))
            .await?;
        Ok(out
            .lines()
            .map(str::trim)
            .filter(|l| !l.is_empty())
            .map(str::to_owned)
            .collect())
    }

    /// Stops the mgr (`mgr-stop`): by default the mon is told at once (`mgr fail`: `status`
    /// says no mgr available); `silent` leaves it to find out after its beacon grace (30 s).
    pub async fn mgr_stop(&self, silent: bool) -> anyhow::Result<()> {
        let mut args = vec!["mgr-stop"];
        if silent {
            args.push("--silent");
        }
        self.run(&args, Duration::from_mins(1)).await.map(drop)
    }

    /// Starts the mgr again, of the release it ran (returns at once; it is available a few
    /// seconds later).
    pub async fn mgr_start(&self) -> anyhow::Result<()> {
        self.run(&["mgr-start"], Duration::from_secs(30))
            .await
            .map(drop)
    }

    /// Stops the mon (SIGTERM; returns once it has exited): no quorum, nothing answers.
    pub async fn mon_stop(&self) -> anyhow::Result<()> {
        self.run(&["mon-stop"], Duration::from_mins(1))
            .await
            .map(drop)
    }

    /// Starts the mon again, of the release it ran; returns once it answers.
    pub async fn mon_start(&self) -> anyhow::Result<()> {
        self.run(&["mon-start"], Duration::from_mins(4))
            .await
            .map(drop)
    }

    /// The test pool with data (`pool-create`): every OSD created must run; returns once every
    /// PG is active+clean.
    pub async fn pool_create(&self) -> anyhow::Result<()> {
        self.run(&["pool-create"], UP_TIMEOUT).await.map(drop)
    }

    /// A pool as `pool` says, with data (`pool-create`): every OSD created must run; returns
    /// once every PG is active+clean.
    pub async fn pool_create_with(&self, pool: &PoolSpec<'_>) -> anyhow::Result<()> {
        let (size, min_size) = (pool.size.to_string(), pool.min_size.to_string());
        let args = [
            "pool-create",
            "--pool",
            pool.name,
            "--size",
            &size,
            "--min-size",
            &min_size,
            "--failure-domain",
            pool.failure_domain,
        ];
        self.run(&args, UP_TIMEOUT).await.map(drop)
    }

    /// Waits (at most `timeout`) until every OSD is up and every PG active+clean.
    pub async fn wait_clean(&self, timeout: Duration) -> anyhow::Result<()> {
        let secs = timeout.as_secs().max(1).to_string();
        self.run(&["wait-clean", &secs], timeout + Duration::from_secs(30))
            .await
            .map(drop)
    }

    /// `ceph osd dump` with the CRUSH hosts of `ceph osd tree`.
    pub async fn osd_dump(&self) -> anyhow::Result<OsdMap> {
        let (dump, tree) = futures::try_join!(
            self.cli_json(&["osd", "dump"]),
            self.cli_json(&["osd", "tree"])
        )?;
        OsdMap::from_ceph(&dump, &tree)
    }

    /// `ceph pg stat`.
    pub async fn pg_stat(&self) -> anyhow::Result<PgStat> {
        Ok(PgStat::from_ceph(&self.cli_json(&["pg", "stat"]).await?))
    }

    /// `ceph osd metadata <id>` (`pod_name`, `pod_namespace`, `hostname`, …).
    pub async fn osd_metadata(&self, id: u32) -> anyhow::Result<Value> {
        self.cli_json(&["osd", "metadata", &id.to_string()]).await
    }

    /// Stops every daemon and removes the state dir (a shared cluster too: its other users
    /// find it gone).
    pub fn down(&self) -> anyhow::Result<()> {
        self.down.store(true, Ordering::SeqCst);
        self.bring_down(false)
    }

    fn bring_down(&self, keep_logs: bool) -> anyhow::Result<()> {
        let mut command = std::process::Command::new(script_path());
        command
            .arg("down")
            .args(keep_logs.then_some("--keep-logs"))
            .env("CEPH_STATE", &self.state)
            .env("CEPH_MON_PORT", self.mon_port.to_string())
            .stdin(std::process::Stdio::null());
        let out = command.output().context("running ceph down")?;
        let _ = std::fs::remove_file(&self.owner_file);
        if !out.status.success() {
            bail!(
                "ceph down ({}) failed: {}",
                self.state.display(),
                String::from_utf8_lossy(&out.stderr)
            );
        }
        Ok(())
    }
}

impl Drop for CephCluster {
    fn drop(&mut self) {
        if self.down.load(Ordering::SeqCst) {
            return;
        }
        // Not brought down by the test: it failed. Keep the logs for its report.
        match self.bring_down(true) {
            Ok(()) => eprintln!(
                "ceph cluster {} (mon port {}) brought down; its logs: {}",
                self.state.display(),
                self.mon_port,
                self.log_dir().display()
            ),
            Err(e) => eprintln!("ceph cluster {}: {e:#}", self.state.display()),
        }
    }
}

pub(crate) fn script_command(
    state: &Path,
    mon_port: u16,
    args: &[&str],
) -> tokio::process::Command {
    let mut command = tokio::process::Command::new(script_path());
    command
        .args(args)
        .env("CEPH_STATE", state)
        .env("CEPH_MON_PORT", mon_port.to_string())
        .stdin(std::process::Stdio::null())
        .kill_on_drop(true);
    command
}

async fn run_script(
    state: &Path,
    mon_port: u16,
    args: &[&str],
    timeout: Duration,
) -> anyhow::Result<String> {
    let child = script_command(state, mon_port, args).output();
    let out = tokio::time::timeout(timeout, child)
        .await
        .map_err(|_| anyhow!("ceph {args:?} did not finish in {timeout:?}"))?
        .with_context(|| format!("running {}", script_path().display()))?;
    if !out.status.success() {
        bail!(
            "ceph {args:?} failed ({}): {}{}",
            out.status,
            String::from_utf8_lossy(&out.stderr),
            String::from_utf8_lossy(&out.stdout)
        );
    }
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}

/// A mon port no other harness process holds and nothing listens on; its lock, held.
fn pick_mon_port() -> anyhow::Result<(u16, File)> {
    let span = u64::from(MON_PORTS.end - MON_PORTS.start);
    for _ in 0..200 {
        let random = u64::from_str_radix(&random_suffix(), 16).unwrap_or(0);
        let Ok(port) = u16::try_from(u64::from(MON_PORTS.start) + random % span) else {
            continue;
        };
        let path = std::env::temp_dir().join(format!("ceph-osd-operator-mon-{port}.lock"));
        let file = OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .open(&path)
            .with_context(|| format!("opening {}", path.display()))?;
        if file.try_lock().is_err() {
            continue;
        }
        if std::net::TcpListener::bind(("127.0.0.1", port)).is_ok() {
            return Ok((port, file));
        }
    }
    bail!("no free mon port in {MON_PORTS:?}")
}

fn owner_file(state: &Path) -> PathBuf {
    let mut name = state.file_name().unwrap_or_default().to_os_string();
    name.push(".owner");
    state.with_file_name(name)
}

/// A process as `<pid> <start time>` (a recycled pid is another process).
fn owner_id(pid: u32) -> anyhow::Result<String> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat"))?;
    let after_name = stat
        .rsplit_once(") ")
        .map(|(_, rest)| rest)
        .ok_or_else(|| anyhow!("unreadable /proc/{pid}/stat"))?;
    // Field 22 (starttime); fields 3.. follow the name.
    let start = after_name
        .split_whitespace()
        .nth(19)
        .ok_or_else(|| anyhow!("no start time in /proc/{pid}/stat"))?;
    Ok(format!("{pid} {start}"))
}

/// Brings down the clusters under `<target>/molecule-like-tests/*/ceph` whose owner process is
/// gone (killed without dropping them).
fn reap_orphans() {
    let root = output_dir().join("molecule-like-tests");
    let Ok(dirs) = std::fs::read_dir(&root) else {
        return;
    };
    for dir in dirs.flatten() {
        let owner = dir.path().join("ceph.owner");
        let Ok(text) = std::fs::read_to_string(&owner) else {
            continue;
        };
        let alive = text
            .split_whitespace()
            .next()
            .and_then(|pid| pid.parse().ok())
            .and_then(|pid| owner_id(pid).ok())
            .is_some_and(|now| now == text.trim());
        if alive {
            continue;
        }
        // Claimed by renaming: of two processes reaping at once, one brings it down.
        let claimed = owner.with_extension(format!("owner.reaping-{}", std::process::id()));
        if std::fs::rename(&owner, &claimed).is_err() {
            continue;
        }
        let state = dir.path().join("ceph");
        let status = std::process::Command::new(script_path())
            .args(["down", "--keep-logs"])
            .env("CEPH_STATE", &state)
            .stdin(std::process::Stdio::null())
            .stdout(std::process::Stdio::null())
            .status();
        eprintln!(
            "ceph cluster {} outlived its test process: brought down ({status:?})",
            state.display()
        );
        let _ = std::fs::remove_file(&claimed);
    }
}

mod disks;
mod restarts;
#[cfg(test)]
mod tests;
