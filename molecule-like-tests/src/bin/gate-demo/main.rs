//! `gate-demo`: the Ceph gate shown on a real tiny Ceph (the Ceph part of
//! `molecule-like-tests/demo`). On the control plane of `$CEPH_OSD_OPERATOR_STATE` it starts,
//! with the end-to-end harness, a Ceph of its own (mon, mgr, one BlueStore OSD on each of 3
//! CRUSH hosts, a pool of size 3 / min_size 2; its own state dir and mon port), a bridge that
//! runs a real `ceph-osd` for each OSD pod KWOK runs, and the operator asking that Ceph
//! before each rollout step. Then it changes the pod template and prints, as it happens, what
//! the operator asked Ceph, what it wrote in the CephOSD's status and Events, and what Ceph
//! itself shows (OSDs down and booted, `noout`, PG states). It fails (exit 1) when the rollout
//! did not go through the gate (see `verdict`). Last, it previews the image going to a new
//! Ceph release (`kubectl ceph-osd plan -f`): the releases and what is checked before the
//! first stop.
//!
//!   gate-demo [--once]    --once: stop everything once the rollout is done (else at Ctrl-C)

mod narrator;
mod verdict;

use std::collections::{BTreeMap, BTreeSet};

use k8s_openapi::api::core::v1::Node;
use std::process::ExitCode;
use std::time::{Duration, Instant};

use molecule_like_tests::journeys::gated::Gated;
use molecule_like_tests::journeys::plugin::kubectl_ceph_osd;
use molecule_like_tests::journeys::scenario::{cr_events, ROLLOUT};
use molecule_like_tests::kubernetes::manifests::CR;
use narrator::{Line, Narrator};

/// The image a preview rolls to: Reef.
const REEF_IMAGE: &str = "quay.io/ceph/ceph:v18.2.7";

/// How often the demo looks for changes (Ceph's view is sampled every 0.25 s).
const LOOK_EVERY: Duration = Duration::from_millis(250);

fn say(what: &str) {
    println!("\n\x1b[1m== {what}\x1b[0m");
}

#[tokio::main]
async fn main() -> ExitCode {
    let mut once = false;
    for arg in std::env::args().skip(1) {
        match arg.as_str() {
            "--once" => once = true,
            other => {
                eprintln!("gate-demo: unknown argument {other:?}; usage: gate-demo [--once]");
                return ExitCode::from(2);
            }
        }
    }
    match Box::pin(run(once)).await {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("\ngate-demo FAILED: {e:#}");
            ExitCode::FAILURE
        }
    }
}

async fn run(once: bool) -> anyhow::Result<()> {
    say(
        "a tiny real Ceph (mon, mgr, 3 OSDs on 3 CRUSH hosts), a ceph-osd daemon per OSD pod, \
         and the operator asking Ceph before each step",
    );
    let started = Instant::now();
    let g = tokio::select! {
        g = Gated::up("demo") => g?,
        _ = tokio::signal::ctrl_c() => anyhow::bail!("interrupted while starting"),
    };
    let up = started.elapsed();
    show_start(&g).await?;
    let rolling = Instant::now();
    let rolled = tokio::select! {
        r = roll(&g) => r,
        _ = tokio::signal::ctrl_c() => Err(anyhow::anyhow!("interrupted")),
    };
    let rollout = rolling.elapsed();
    let rolled = match rolled {
        Ok(()) => preview_release(&g).await,
        failed => failed,
    };
    if rolled.is_ok() && !once {
        look_around(&g);
        let _ = tokio::signal::ctrl_c().await;
    }
    say("stopping the operator, the OSD daemons and Ceph");
    let stopping = Instant::now();
    let (client, hosts) = (g.s.client.clone(), g.want.iter().map(|k| k.host.clone()));
    let hosts: BTreeSet<String> = hosts.collect();
    let down = g.down().await.and(remove_nodes(&client, &hosts).await);
    println!(
        "the Ceph part took {:.0} s: Ceph, bridge, operator and the CephOSD converged {:.0} s, \
         the rollout and its checks {:.0} s, stopping {:.0} s",
        started.elapsed().as_secs_f64(),
        up.as_secs_f64(),
        rollout.as_secs_f64(),
        stopping.elapsed().as_secs_f64()
    );
    rolled?;
    down
}

/// The image of the template to Reef, previewed (`kubectl ceph-osd plan -f`, nothing changes):
/// the releases involved and what the gate checks before the first stop.
async fn preview_release(g: &Gated) -> anyhow::Result<()> {
    say("the image to a new Ceph release, previewed: kubectl ceph-osd plan -f (nothing changes)");
    let mut next = g.s.crs.get(CR).await?;
    next.spec.pod_template["spec"]["containers"][0]["image"] = serde_json::json!(REEF_IMAGE);
    let manifest = g.s.log_path.with_file_name("reef.json");
    let cephosd = serde_json::json!({
        "apiVersion": "ceph.elemental.net/v1alpha1", "kind": "CephOSD",
        "metadata": {"name": CR}, "spec": next.spec,
    });
    std::fs::write(&manifest, serde_json::to_vec(&cephosd)?)?;
    let manifest = manifest.to_string_lossy().into_owned();
    let (code, preview, said) = kubectl_ceph_osd(&g.s, &["plan", "-f", &manifest]).await?;
    let note = (preview.lines()).find(|l| l.contains("the OSD image changes"));
    match note {
        Some(note) if code == 0 => {
            println!("  {}", note.trim());
            Ok(())
        }
        _ => anyhow::bail!("the preview names no release change (exit {code}): {preview}{said}"),
    }
}

/// What runs before the rollout: the operator's Ceph flags, each OSD pod with its daemon, and
/// Ceph's view.
async fn show_start(g: &Gated) -> anyhow::Result<()> {
    println!("namespace {}; the operator runs with", g.s.namespace);
    println!("  {}", g.operator_args.join(" "));
    println!("  (its log: {})", g.s.log_path.display());
    let map = g.cluster.osd_dump().await?;
    for (key, id) in &g.table {
        let pod = g
            .converged
            .pods
            .get(key)
            .map_or("-".into(), |p| p.metadata.name.clone().unwrap_or_default());
        let osd = map.osd(*id);
        println!(
            "  {key}: pod {pod} → osd.{id} {} (up_from {}), CRUSH host {}",
            if osd.is_some_and(|o| o.up) {
                "up"
            } else {
                "down"
            },
            osd.map_or(0, |o| o.up_from),
            map.host_of(*id).unwrap_or("-"),
        );
    }
    for (pool, p) in &map.pools {
        println!("  pool {pool}: size {}, min_size {}", p.size, p.min_size);
    }
    let pgs = g.cluster.pg_stat().await?;
    let states: Vec<String> = pgs
        .by_state
        .iter()
        .map(|(s, n)| format!("{n} {s}"))
        .collect();
    println!("  PGs: {}", states.join(", "));
    if let Some((status, reason, message)) = g.gate_condition().await? {
        println!("  CephGate {status} {reason}: {message}");
    }
    Ok(())
}

/// The template change, narrated until the pods converged and the gate is idle, then checked.
async fn roll(g: &Gated) -> anyhow::Result<()> {
    let before: BTreeMap<u32, u64> = {
        let map = g.cluster.osd_dump().await?;
        g.table
            .values()
            .map(|id| (*id, map.osd(*id).map_or(0, |o| o.up_from)))
            .collect()
    };
    let mut n = Narrator::default();
    let _ = look(g, &mut n).await?;

    say("changing the pod template (label rev=2): the operator asks Ceph before each host");
    println!(
        "  seconds from the change | who says it: Ceph (its own osdmap and PG states), status / \
         event (the CephOSD's, written by the operator), operator→Ceph (a ceph command in the \
         operator's log)"
    );
    let from = g.ceph.elapsed();
    let (_, hash) =
        g.s.patch_template_metadata(CR, serde_json::json!({"labels": {"rev": "2"}}))
            .await?;
    let done = async {
        g.s.wait_converged(CR, &g.want, &hash, ROLLOUT).await?;
        g.wait_gate_idle(Duration::from_mins(1)).await
    };
    tokio::pin!(done);
    let finished = loop {
        tokio::select! {
            r = &mut done => break r,
            () = tokio::time::sleep(LOOK_EVERY) => {}
        }
        print_lines(
            look(g, &mut n).await?,
            g.ceph.elapsed().saturating_sub(from),
        );
    };
    print_lines(
        look(g, &mut n).await?,
        g.ceph.elapsed().saturating_sub(from),
    );
    let report = || g.report(from);
    finished.map_err(|e| anyhow::anyhow!("{e:#}\n{}", report()))?;

    // The gate's record polls on its own: it may not hold the idle status just read yet.
    let _ =
        g.s.wait_until(
            "the gate's record idle too",
            Duration::from_secs(10),
            || async {
                let last = g.gate.samples().pop();
                Ok(last.is_some_and(|s| s.step.is_none()).then_some(()))
            },
        )
        .await;
    let recording = g.ceph.recording();
    let steps = verdict::steps(&g.gate.samples(), from);
    say("the steps (from the CephOSD's status) against Ceph's view");
    print!("{}", verdict::summary(&steps, &recording, from));
    let asked = narrator::ok_to_stop_calls(&std::fs::read_to_string(&g.s.log_path)?);
    verdict::check(&steps, &before, &recording, asked, from)
        .and_then(|()| g.bridge.check())
        .map_err(|e| anyhow::anyhow!("the gate did not show: {e:#}\n{}", report()))?;
    println!(
        "  checked: every OSD restarted in a step the operator opened after `ceph osd \
         ok-to-stop` ({asked} asked), one CRUSH host down at a time, no PG unavailable, no \
         noout left"
    );
    Ok(())
}

/// What changed since the last look, in the order: asked, status, events, Ceph.
async fn look(g: &Gated, n: &mut Narrator) -> anyhow::Result<Vec<Line>> {
    let mut lines = Vec::new();
    let log = std::fs::read_to_string(&g.s.log_path).unwrap_or_default();
    lines.extend(n.log(&log));
    let status = g.s.cr_status(CR).await?.unwrap_or_default();
    lines.extend(n.status(&status));
    lines.extend(n.events(&cr_events(&g.s.client, &g.s.namespace, CR).await?));
    let ceph = g.ceph.latest();
    if let Some((_, map)) = &ceph.osdmap {
        lines.extend(n.osdmap(map));
    }
    if let Some((_, pgs)) = &ceph.pgs {
        lines.extend(n.pgs(pgs));
    }
    Ok(lines)
}

fn print_lines(lines: Vec<Line>, at: Duration) {
    for l in lines {
        println!(
            "  {:>6.1}s  {:<13}  {}",
            at.as_secs_f64(),
            l.source.label(),
            l.text
        );
    }
}

/// Deletes the (KWOK) Nodes of the demo's own hosts: a control plane that stays up keeps no
/// Node of a finished demo.
async fn remove_nodes(client: &kube::Client, hosts: &BTreeSet<String>) -> anyhow::Result<()> {
    let nodes: kube::Api<Node> = kube::Api::all(client.clone());
    for host in hosts {
        match nodes
            .delete(host, &kube::api::DeleteParams::default())
            .await
        {
            Ok(_) => {}
            Err(kube::Error::Api(status)) if status.code == 404 => {}
            Err(e) => return Err(anyhow::anyhow!("deleting Node {host}: {e}")),
        }
    }
    Ok(())
}

/// Where to look while the demo waits for Ctrl-C.
fn look_around(g: &Gated) {
    say("all of it keeps running; in another shell:");
    println!(
        "  export KUBECONFIG={}",
        molecule_like_tests::paths::kubeconfig_path().display()
    );
    println!("  kubectl get cephosd,pods -n {}", g.s.namespace);
    println!(
        "  ceph -c {} -n client.admin -k {} -s",
        g.cluster.conf().display(),
        g.cluster.keyring("client.admin").display()
    );
    println!("Press Ctrl-C to stop the operator, the OSD daemons and Ceph.");
}
