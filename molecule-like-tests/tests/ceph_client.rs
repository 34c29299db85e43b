//! The operator's Ceph client against real Ceph daemons (Debian's 16.2.15, cephx on), with the
//! operator's own key and its minimal caps: every answer parsed (the CRUSH tree, rules and
//! pools too), ok-to-stop yes for one host and no (with Ceph's numbers) for all, noout set and
//! cleared on exactly the asked OSDs, a pod mapped to its OSD from the daemon's own report, a
//! key without the caps refused clearly, and with the mgr or the mon stopped an error within
//! the call's bound and no `ceph` child left.
//!
//! Needs only the Ceph packages (`molecule-like-tests/ceph install`), not the control plane:
//! no pod exists, so there is no pod watch to record here (the rollouts over real daemons,
//! with their recorded pod watches, are `ceph_bridge` and `ceph_gate`). Ceph's own view is
//! recorded (`ceph watch`) while the gate's calls, noout and an OSD's start and stop run, and
//! replayed: never more than one CRUSH host down, never a PG unavailable.
//! One cluster of 3 OSDs (one per CRUSH host, pool size 3, min_size 2) in a state dir and on a
//! mon port of its own, brought down at the end, also when the test fails.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::needless_pass_by_value
)]

use std::collections::BTreeSet;
use std::future::Future;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use molecule_like_tests::recording::ceph::CephRecorder;

use ceph_osd_operator::ceph::{
    gather_facts, map_osd_ids, CephClient, CephError, CephUser, CliClient, CliSettings, IdSource,
    KeyIds, KeyToMap, NodeEvidence, OsdId, OtherCephOsds, PgStates, PodRef, UnknownReason,
};
use ceph_osd_operator::gate::{confirm, precheck, GateDecision};

/// The operator's Ceph user, with the minimal caps `molecule-like-tests/ceph` gives it.
const OPERATOR_USER: &str = "client.ceph-osd-operator";
/// A user whose caps are too small for the operator (mon `allow r`).
const NOCAPS_USER: &str = "client.nocaps";

/// The bound of one call in this test: far above a healthy answer (~0.2 s, mon writes ~1 s),
/// short enough for the hanging cases.
const CALL_BOUND: Duration = Duration::from_secs(3);
/// The bound where a call is meant to hang: the CLI's answers take 0.2-1 s here.
const HANG_BOUND: Duration = Duration::from_secs(2);
/// Slack on top of the bound for the kill and the reap.
const KILL_SLACK: Duration = Duration::from_secs(1);

async fn timed<T>(what: &str, call: impl Future<Output = T>) -> (T, Duration) {
    let started = Instant::now();
    let out = call.await;
    let took = started.elapsed();
    eprintln!("[ceph_client] {what}: {} ms", took.as_millis());
    (out, took)
}

fn ids(ids: &[u32]) -> BTreeSet<OsdId> {
    ids.iter().copied().map(OsdId).collect()
}

/// A running cluster of `molecule-like-tests/ceph`; `down` on drop.
struct CephCluster {
    state: PathBuf,
    mon_port: u16,
}

impl CephCluster {
    /// `ceph up <osds>` in `<repo>/target/ceph-<name>-<tag>` on a free port; every PG is
    /// active+clean when it returns. The guard exists before `up`: a half-started cluster is
    /// brought down too.
    fn up(name: &str, osds: u32) -> Self {
        assert!(
            Command::new("ceph").arg("--version").output().is_ok(),
            "the ceph CLI is not installed; run molecule-like-tests/ceph install"
        );
        let repo = Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap();
        // Short: admin sockets under it must fit a unix socket path (107 bytes).
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .subsec_nanos();
        let tag = (std::process::id() ^ nanos) & 0xff_ffff;
        let cluster = Self {
            state: repo.join("target").join(format!("ceph-{name}-{tag:06x}")),
            mon_port: std::net::TcpListener::bind("127.0.0.1:0")
                .and_then(|l| l.local_addr())
                .unwrap()
                .port(),
        };
        cluster.run(&["up", &osds.to_string()]);
        cluster
    }

    /// `molecule-like-tests/ceph <args>` on this cluster: its stdout; panics with its stderr.
    fn run(&self, args: &[&str]) -> String {
        let started = Instant::now();
        let out = Command::new(Path::new(env!("CARGO_MANIFEST_DIR")).join("ceph"))
            .args(args)
            .env("CEPH_STATE", &self.state)
            .env("CEPH_MON_PORT", self.mon_port.to_string())
            .output()
            .unwrap();
        eprintln!(
            "[ceph_client] molecule-like-tests/ceph {}: {} ms",
            args.join(" "),
            started.elapsed().as_millis()
        );
        assert!(
            out.status.success(),
            "molecule-like-tests/ceph {} failed ({}): {}",
            args.join(" "),
            out.status,
            String::from_utf8_lossy(&out.stderr).trim()
        );
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    /// A CLI client as `user`, each call bounded by `timeout`, through one long-lived session.
    fn client(&self, user: &str, timeout: Duration) -> CliClient {
        let client = self.client_with(user, timeout, true);
        assert!(
            client.keeps_connected(),
            "the ceph CLI cannot host a session"
        );
        client
    }

    /// A CLI client as `user`, each call bounded by `timeout`, one `ceph` process per call.
    fn process_client(&self, user: &str, timeout: Duration) -> CliClient {
        self.client_with(user, timeout, false)
    }

    fn client_with(&self, user: &str, timeout: Duration, keep_connected: bool) -> CliClient {
        CliClient::new(CliSettings {
            conf: Some(self.state.join("ceph.conf")),
            keyring: Some(self.state.join(format!("{user}.keyring"))),
            user: Some(CephUser::Name(user.to_owned())),
            timeout,
            keep_connected,
            ..CliSettings::default()
        })
    }

    /// Ceph client processes of this cluster left running: `ceph` children (`--format`) and
    /// sessions (their helper names `get_command_descriptions`).
    fn clients_left(&self) -> Vec<u32> {
        let mut left = self.processes_with("--format");
        left.extend(self.processes_with("get_command_descriptions"));
        left
    }

    /// Pids of processes whose command line names this cluster's ceph.conf and `word`.
    fn processes_with(&self, word: &str) -> Vec<u32> {
        let conf = self.state.join("ceph.conf").to_string_lossy().into_owned();
        std::fs::read_dir("/proc")
            .unwrap()
            .filter_map(|e| {
                let pid: u32 = e.ok()?.file_name().to_str()?.parse().ok()?;
                let cmdline = std::fs::read(format!("/proc/{pid}/cmdline")).ok()?;
                let cmdline = String::from_utf8_lossy(&cmdline).replace('\0', " ");
                (cmdline.contains(&conf) && cmdline.contains(word)).then_some(pid)
            })
            .collect()
    }
}

impl Drop for CephCluster {
    /// Brings the cluster down; after a failure its logs are kept beside the state dir first.
    fn drop(&mut self) {
        if std::thread::panicking() {
            let kept = self.state.with_extension("logs");
            let copied = Command::new("cp")
                .arg("-a")
                .arg(self.state.join("logs"))
                .arg(&kept)
                .status();
            if copied.is_ok_and(|s| s.success()) {
                eprintln!("[ceph_client] Ceph's logs kept in {}", kept.display());
            }
        }
        let down = Command::new(Path::new(env!("CARGO_MANIFEST_DIR")).join("ceph"))
            .arg("down")
            .env("CEPH_STATE", &self.state)
            .env("CEPH_MON_PORT", self.mon_port.to_string())
            .status();
        if !down.as_ref().is_ok_and(std::process::ExitStatus::success) {
            eprintln!(
                "[ceph_client] bringing {} down failed: {down:?}",
                self.state.display()
            );
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_operators_key_against_a_real_ceph() {
    let started = Instant::now();
    let cluster = CephCluster::up("client", 3);
    let op = cluster.client(OPERATOR_USER, CALL_BOUND);
    let per_call = cluster.process_client(OPERATOR_USER, CALL_BOUND);
    let ceph = CephRecorder::start_at(
        cluster.state.clone(),
        cluster.mon_port,
        cluster.state.join("watch.stderr"),
        Instant::now(),
    )
    .await
    .unwrap();

    eprintln!("[ceph_client] one long-lived session:");
    answers_parse(&op).await;
    eprintln!("[ceph_client] a process per call:");
    answers_parse(&per_call).await;
    ok_to_stop_one_host_yes_all_no(&op).await;
    ok_to_stop_one_host_yes_all_no(&per_call).await;
    noout_on_exactly_the_asked_osds(&op).await;
    noout_on_exactly_the_asked_osds(&per_call).await;
    a_pod_maps_to_the_osd_it_runs(&cluster, &op).await;
    config_keys_under_the_operators_prefix_only(&op, "session").await;
    config_keys_under_the_operators_prefix_only(&per_call, "process").await;
    a_key_without_the_caps_is_refused_clearly(&cluster, true).await;
    a_key_without_the_caps_is_refused_clearly(&cluster, false).await;
    assert!(
        op.keeps_connected(),
        "the session fell back to a process per call"
    );
    // Before the mgr and the mon are stopped on purpose: one host down at most (host-0 while
    // its new OSD is created and after it is stopped), every PG available throughout.
    let recording = ceph.recording();
    drop(ceph);
    recording
        .check_hosts_down_at_most(1, Duration::ZERO)
        .unwrap();
    recording
        .check_pgs_never_unavailable(Duration::ZERO)
        .unwrap();
    without_a_mgr_mgr_calls_time_out_and_leave_no_child(&cluster, &op, true).await;
    without_a_mgr_mgr_calls_time_out_and_leave_no_child(&cluster, &per_call, false).await;
    drop(op);
    without_a_mon_every_call_fails_within_the_bound(&cluster, true).await;
    without_a_mon_every_call_fails_within_the_bound(&cluster, false).await;

    eprintln!(
        "[ceph_client] checks done after {:.1} s",
        started.elapsed().as_secs_f32()
    );
    drop(cluster);
    eprintln!(
        "[ceph_client] whole test with down: {:.1} s",
        started.elapsed().as_secs_f32()
    );
}

async fn answers_parse(op: &impl CephClient) {
    let (status, _) = timed("status", op.status()).await;
    let status = status.unwrap();
    assert_eq!(status.quorum_names, ["a"]);
    assert!(status.mgr_available);

    let (pgs, _) = timed("pg stat", op.pg_states()).await;
    let pgs = pgs.unwrap();
    assert!(pgs.all_clean(), "{pgs:?}");
    assert!(pgs.num_pgs >= 32, "{pgs:?}");

    let (dump, _) = timed("osd dump", op.osd_dump()).await;
    let dump = dump.unwrap();
    assert_eq!(
        dump.osds.keys().copied().collect::<BTreeSet<_>>(),
        ids(&[0, 1, 2])
    );
    assert!(dump
        .osds
        .values()
        .all(|o| o.up && o.is_in && !o.noout && o.up_from > 0));

    let (metadata, _) = timed("osd metadata", op.osd_metadata()).await;
    let metadata = metadata.unwrap();
    assert_eq!(metadata.len(), 3);
    // Started without POD_NAME: no pod in the report.
    assert!(
        metadata.values().all(|m| m.pod_name.is_none()),
        "{metadata:?}"
    );

    // Every PG on osd.0, each with the epoch of its report; osd.0's PGs peered with it after
    // it booted, so no report predates its up_from.
    let (on_0, _) = timed("pg ls-by-osd", op.pgs_on_osd(OsdId(0))).await;
    let on_0 = on_0.unwrap();
    assert!(!on_0.is_empty());
    let up_from = dump.osds[&OsdId(0)].up_from;
    assert!(
        on_0.iter()
            .all(|p| p.state == "active+clean" && p.reported_epoch >= up_from),
        "{on_0:?}"
    );

    let (facts, _) = timed("status + osd dump + pg stat in parallel", gather_facts(op)).await;
    let facts = facts.unwrap();
    assert!(facts.pgs.as_ref().is_some_and(PgStates::all_clean));

    // The failure domains: each host's CRUSH bucket under the root; the test pool's rule.
    let (tree, _) = timed("osd crush tree", op.crush_tree()).await;
    let placed = tree
        .unwrap()
        .ancestors_of_nodes(["host-0", "HOST-1", "host-2", "host-9"]);
    assert_eq!(placed.len(), 3, "{placed:?}");
    assert_eq!(placed["HOST-1"]["host"], "host-1");
    assert!(
        placed.values().all(|a| a["root"] == "default"),
        "{placed:?}"
    );
    let (rules, _) = timed("osd crush rule dump", op.crush_rules()).await;
    let rules = rules.unwrap();
    let (pools, _) = timed("osd pool ls detail", op.pool_rules()).await;
    let pools = pools.unwrap();
    let test = pools
        .iter()
        .find(|p| p.name == "test")
        .expect("the test pool");
    assert_eq!(test.size, 3);
    assert_eq!(rules[&test.crush_rule].name, "replicated_rule");
}

/// The step lock's place is a config-key: absent is None (not an error), a value is read back
/// as written (JSON with spaces and quotes intact), keys outside `ceph-osd-operator/` are
/// refused by the caps.
async fn config_keys_under_the_operators_prefix_only(op: &impl CephClient, how: &str) {
    let key = format!("ceph-osd-operator/test-{how}");
    assert_eq!(op.config_key_get(&key).await.unwrap(), None);
    let value = r#"{"place": {"namespace": "a b"}, "writer": "x/\"y\""}"#;
    let (set, _) = timed("config-key set", op.config_key_set(&key, value)).await;
    set.unwrap();
    let (got, _) = timed("config-key get", op.config_key_get(&key)).await;
    assert_eq!(got.unwrap().as_deref(), Some(value));
    let refused = op.config_key_get("other/key").await.unwrap_err();
    assert!(refused.is_access_denied(), "{refused}");
    let refused = op
        .config_key_set("ceph-osd-operator-x", "1")
        .await
        .unwrap_err();
    assert!(refused.is_access_denied(), "{refused}");
}

async fn ok_to_stop_one_host_yes_all_no(op: &impl CephClient) {
    let facts = gather_facts(op).await.unwrap();
    let domain = [KeyToMap {
        key: "host-1:/dev/sdb".into(),
        pod: None,
        recorded: ids(&[1]),
        stated: None,
        unreadable_statement: None,
        step_domain: None,
    }];
    let mapped = map_osd_ids(
        &domain,
        &op.osd_metadata().await.unwrap(),
        &facts.osds,
        &OtherCephOsds::default(),
    );
    let GateDecision::Proceed { ids: to_ask } = precheck(&facts, &mapped) else {
        panic!("{}", precheck(&facts, &mapped))
    };
    assert_eq!(to_ask, ids(&[1]));
    let asked: Vec<OsdId> = to_ask.iter().copied().collect();
    let (answer, _) = timed("osd ok-to-stop 1", op.ok_to_stop(&asked)).await;
    let answer = answer.unwrap();
    assert!(answer.ok_to_stop, "{answer:?}");
    assert_eq!(answer.osds, ids(&[1]));
    assert!(
        answer.num_ok_pgs > 0 && answer.num_not_ok_pgs == 0,
        "{answer:?}"
    );
    assert_eq!(
        confirm(&to_ask, &answer),
        GateDecision::Proceed { ids: ids(&[1]) }
    );

    // Two hosts and more: not ok (rc 16), with Ceph's numbers.
    let all = [OsdId(0), OsdId(1), OsdId(2)];
    let (answer, _) = timed("osd ok-to-stop 0 1 2 (rc 16)", op.ok_to_stop(&all)).await;
    let answer = answer.unwrap();
    assert!(!answer.ok_to_stop);
    assert_eq!(answer.osds, ids(&[0, 1, 2]));
    assert!(answer.num_not_ok_pgs > 0, "{answer:?}");
    assert!(!answer.bad_become_inactive.is_empty(), "{answer:?}");
    let decision = confirm(&ids(&[0, 1, 2]), &answer);
    assert!(matches!(decision, GateDecision::Wait { .. }), "{decision}");
    let message = decision.to_string();
    assert!(
        message.contains(&format!(
            "{} would become inactive",
            answer.bad_become_inactive.len()
        )),
        "{message}"
    );
    eprintln!("[ceph_client] gate: {message}");
    let answer = op.ok_to_stop(&[OsdId(0), OsdId(2)]).await.unwrap();
    assert!(!answer.ok_to_stop, "{answer:?}");

    // Ceph says yes for an OSD that does not exist; the gate never asks about it.
    let answer = op.ok_to_stop(&[OsdId(99)]).await.unwrap();
    assert!(answer.ok_to_stop);
    let unknown = map_osd_ids(
        &[KeyToMap {
            key: "host-9:/dev/sdz".into(),
            pod: None,
            recorded: ids(&[99]),
            stated: None,
            unreadable_statement: None,
            step_domain: None,
        }],
        &op.osd_metadata().await.unwrap(),
        &facts.osds,
        &OtherCephOsds::default(),
    );
    let decision = precheck(&facts, &unknown);
    assert!(matches!(decision, GateDecision::Halt { .. }), "{decision}");
    assert_eq!(
        decision.to_string(),
        "osd.99 (of host-9:/dev/sdz) is not in the osdmap"
    );

    // Ids Ceph cannot read: rc 22, its stderr quoted.
    let e = op.ok_to_stop(&[]).await.unwrap_err();
    assert!(
        matches!(
            &e,
            CephError::Failed {
                exit_code: Some(22),
                ..
            }
        ),
        "{e:?}"
    );
    eprintln!("[ceph_client] ok-to-stop without ids: {e}");
}

async fn noout_on_exactly_the_asked_osds(op: &impl CephClient) {
    let two = [OsdId(0), OsdId(2)];
    let (r, _) = timed("osd add-noout osd.0 osd.2", op.add_noout(&two)).await;
    r.unwrap();
    let dump = op.osd_dump().await.unwrap();
    assert!(dump.without_noout(&two).is_empty(), "{dump:?}");
    assert_eq!(dump.with_noout(&ids(&[0, 1, 2])), two);
    // Idempotent.
    let (r, _) = timed("osd add-noout again", op.add_noout(&two)).await;
    r.unwrap();
    let (r, _) = timed("osd rm-noout osd.0 osd.2", op.rm_noout(&two)).await;
    r.unwrap();
    let dump = op.osd_dump().await.unwrap();
    assert!(dump.with_noout(&ids(&[0, 1, 2])).is_empty(), "{dump:?}");
    op.rm_noout(&two).await.unwrap();

    // rc 0 for an OSD that does not exist: only the read-back tells.
    op.add_noout(&[OsdId(7)]).await.unwrap();
    let dump = op.osd_dump().await.unwrap();
    assert_eq!(dump.without_noout(&ids(&[7])), [OsdId(7)]);
}

async fn a_pod_maps_to_the_osd_it_runs(cluster: &CephCluster, op: &impl CephClient) {
    let id: u32 = cluster
        .run(&["osd-create", "--host", "host-0"])
        .trim()
        .parse()
        .unwrap();
    let metadata = op.osd_metadata().await.unwrap();
    // Created, never booted: only its id.
    let never_booted = &metadata[&OsdId(id)];
    assert!(never_booted.hostname.is_none() && never_booted.pod_name.is_none());

    let pod = PodRef {
        namespace: "ceph-client-test".into(),
        name: "osd-node-x-sdb-k2x7q".into(),
        node: "node-x".into(),
    };
    let started = Instant::now();
    cluster.run(&[
        "osd-start",
        &id.to_string(),
        "--host",
        "host-0",
        "--pod-name",
        &pod.name,
        "--pod-namespace",
        &pod.namespace,
        "--node-name",
        &pod.node,
        "--wait",
    ]);
    eprintln!(
        "[ceph_client] osd.{id} started and up in {} ms",
        started.elapsed().as_millis()
    );
    let key = |pod: Option<PodRef>| KeyToMap {
        key: "node-x:/dev/sdb".into(),
        pod,
        recorded: BTreeSet::new(),
        stated: None,
        unreadable_statement: None,
        step_domain: None,
    };
    let (metadata, dump) = tokio::join!(op.osd_metadata(), op.osd_dump());
    let (metadata, dump) = (metadata.unwrap(), dump.unwrap());
    let mapped = map_osd_ids(
        &[key(Some(pod.clone()))],
        &metadata,
        &dump,
        &OtherCephOsds::default(),
    );
    assert_eq!(
        mapped[0].ids,
        KeyIds::Known {
            ids: ids(&[id]),
            source: IdSource::Metadata
        }
    );

    // Stopped, its report is no longer trusted.
    cluster.run(&["osd-stop", &id.to_string()]);
    let dump = op.osd_dump().await.unwrap();
    assert!(!dump.osds[&OsdId(id)].up);
    let mapped = map_osd_ids(
        &[key(Some(pod.clone()))],
        &metadata,
        &dump,
        &OtherCephOsds::default(),
    );
    assert_eq!(
        mapped[0].ids,
        KeyIds::Unknown(UnknownReason::NoEvidence {
            pod: Some(pod),
            reported_by_down: vec![OsdId(id)],
            // The other daemons, started without NODE_NAME, report the machine's hostname.
            node: NodeEvidence::NoDaemon {
                node: "node-x".into()
            },
            unreadable_statement: None,
        })
    );
}

async fn a_key_without_the_caps_is_refused_clearly(cluster: &CephCluster, session: bool) {
    let nocaps = cluster.client_with(NOCAPS_USER, CALL_BOUND, session);
    nocaps.status().await.unwrap();
    for (what, result) in [
        ("ok-to-stop", nocaps.ok_to_stop(&[OsdId(0)]).await.err()),
        ("pg stat", nocaps.pg_states().await.err()),
        ("add-noout", nocaps.add_noout(&[OsdId(0)]).await.err()),
    ] {
        let e = result.unwrap_or_else(|| panic!("{what} succeeded without its caps"));
        assert!(e.is_access_denied(), "{what}: {e:?}");
        assert_eq!(e.category(), "CephAccessDenied");
        assert!(e.to_string().contains("Error EACCES: access denied"), "{e}");
        eprintln!("[ceph_client] {e}");
    }
}

async fn without_a_mgr_mgr_calls_time_out_and_leave_no_child(
    cluster: &CephCluster,
    op: &impl CephClient,
    session: bool,
) {
    if session {
        cluster.run(&["mgr-stop"]);
    }
    // The mon answers and says no mgr: the gate waits without waiting for `pg stat`.
    let (facts, took) = timed("gather without a mgr", gather_facts(op)).await;
    let facts = facts.unwrap();
    assert!(!facts.status.mgr_available && facts.pgs.is_none());
    assert!(took < CALL_BOUND, "{took:?}");
    let decision = precheck(&facts, &[]);
    assert!(matches!(decision, GateDecision::Wait { .. }), "{decision}");
    eprintln!("[ceph_client] gate: {decision}");

    let hang = cluster.client_with(OPERATOR_USER, HANG_BOUND, session);
    let ((ok_to_stop, pgs), took) = timed("ok-to-stop and pg stat without a mgr", async {
        tokio::join!(hang.ok_to_stop(&[OsdId(0)]), hang.pg_states())
    })
    .await;
    for e in [ok_to_stop.unwrap_err(), pgs.unwrap_err()] {
        assert!(
            matches!(e, CephError::Timeout { timeout, .. } if timeout == HANG_BOUND),
            "{e:?}"
        );
        eprintln!("[ceph_client] {e}");
    }
    assert!(took < HANG_BOUND + KILL_SLACK, "{took:?}");
    // The session that served the hung calls is ended; the next call starts another.
    if session {
        tokio::time::sleep(Duration::from_millis(200)).await;
        assert_eq!(cluster.processes_with("get_command_descriptions").len(), 1);
        drop(hang);
    }
    let left = cluster.processes_with("--format");
    assert!(left.is_empty(), "ceph children left: {left:?}");
}

async fn without_a_mon_every_call_fails_within_the_bound(cluster: &CephCluster, session: bool) {
    if session {
        cluster.run(&["mon-stop"]);
    }
    let hang = cluster.client_with(OPERATOR_USER, HANG_BOUND, session);
    let ((status, dump), took) = timed("status and osd dump without a mon", async {
        tokio::join!(hang.status(), hang.osd_dump())
    })
    .await;
    for e in [status.unwrap_err(), dump.unwrap_err()] {
        eprintln!("[ceph_client] {e}");
    }
    assert!(took < HANG_BOUND + KILL_SLACK, "{took:?}");
    tokio::time::sleep(Duration::from_millis(200)).await;
    let left = cluster.clients_left();
    assert!(left.is_empty(), "Ceph clients left: {left:?}");

    // Back: it answers again (and `down` stops the OSDs quickly with a mon to tell).
    if !session {
        cluster.run(&["mon-start"]);
        let (status, _) = timed("status after the mon is back", hang.status()).await;
        assert!(status.unwrap().quorum_names == ["a"]);
        let session = cluster.client(OPERATOR_USER, CALL_BOUND);
        let (status, _) = timed("a session after the mon is back", session.status()).await;
        assert!(status.unwrap().quorum_names == ["a"]);
    }
}
