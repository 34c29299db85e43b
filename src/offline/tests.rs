//! Golden tests of what `kubectl ceph-osd status` and `plan` print, for a small CephOSD in the
//! middle of a canary rollout and for 1,000 OSDs (folded): the planner drives a copy of the
//! pods, the text is compared with `tests/data/golden/`. `UPDATE_GOLDEN=1` rewrites them.

use super::eta::StepEstimate;
use super::plan_text::plan_text;
use super::rollout_preview::{apply, preview_rollout, set_ready};
use super::status_text::{status_text, TextOptions};
use super::status_view::{status_view, HostState, StatusView};
use crate::crd::osd::CountingSuffix;
use crate::crd::CephOsd;
use crate::plan::topology::TopologyView;
use crate::plan::{plan, Observed};
use crate::testing::CephOsdBuilder;
use k8s_openapi::api::core::v1::Pod;
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;
use k8s_openapi::jiff::{SignedDuration, Timestamp};
use serde_json::json;
use std::path::PathBuf;

fn at(seconds: i64) -> Timestamp {
    Timestamp::from_second(1_800_000_000 + seconds).expect("time")
}

fn cephosd(hosts: usize, disks: usize, marker: &str) -> CephOsd {
    let hosts: Vec<String> = (1..=hosts).map(|h| format!("node{h:03}")).collect();
    let disks: Vec<String> = (0..disks)
        .map(|d| {
            format!(
                "/dev/sd{}",
                char::from(b'b' + u8::try_from(d).expect("few"))
            )
        })
        .collect();
    CephOsdBuilder::new("osds")
        .storage(&hosts, &disks)
        .update_domain("Host")
        .template(json!({"apiVersion": "v1", "kind": "Pod",
            "metadata": {"labels": {"rev": marker}},
            "spec": {"terminationGracePeriodSeconds": 30,
                     "containers": [{"name": "osd", "image": "ceph"}]}}))
        .namespace("ceph")
        .uid("uid")
        .generation(1)
        .build()
        .expect("cephosd")
}

/// A cluster the planner drives: each round's actions are carried out, and every pod is
/// Ready after the round unless `hold_unready` says otherwise.
struct Driven {
    cr: CephOsd,
    pods: Vec<Pod>,
    /// What the operator learns of the hosts' failure domains.
    topology: TopologyView,
    suffixes: CountingSuffix,
    clock: i64,
}

impl Driven {
    fn converged(cr: CephOsd) -> Self {
        Self::converged_in(cr, TopologyView::default())
    }

    fn converged_in(cr: CephOsd, topology: TopologyView) -> Self {
        let mut driven = Self {
            cr,
            pods: Vec::new(),
            topology,
            suffixes: CountingSuffix::default(),
            clock: 0,
        };
        while driven.round(true) {}
        driven
    }

    /// One reconcile; pods created in it become Ready when `ready`. Whether it acted.
    fn round(&mut self, ready: bool) -> bool {
        self.clock += 60;
        let now = at(self.clock);
        let observed = Observed {
            topology: self.topology.clone(),
            ..Observed::pods(&self.pods)
        };
        let planned = plan(&self.cr, &observed, &mut self.suffixes, now);
        let acted = !planned.actions.is_empty();
        apply(&planned.actions, &mut self.pods, &mut Vec::new(), now);
        for pod in &mut self.pods {
            if ready {
                set_ready(pod, now - SignedDuration::from_secs(1));
            } else if pod
                .metadata
                .creation_timestamp
                .as_ref()
                .is_some_and(|t| t.0 == now)
            {
                pod.status = None;
            }
        }
        self.cr.status = Some(planned.status);
        acted
    }

    fn with_template(&mut self, next: &CephOsd) {
        self.cr.spec = next.spec.clone();
        self.cr.metadata.generation = Some(self.cr.metadata.generation.unwrap_or(1) + 1);
    }

    fn view(&self) -> (StatusView, super::rollout_preview::RolloutPreview) {
        let now = at(self.clock + 30);
        let preview = preview_rollout(&self.cr, &self.pods, &[], now);
        (status_view(&self.cr, &self.pods, &preview, now), preview)
    }
}

/// Compares `text` with the golden file `name` (or rewrites it under `UPDATE_GOLDEN=1`).
fn golden(name: &str, text: &str) {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/data/golden")
        .join(name);
    if std::env::var_os("UPDATE_GOLDEN").is_some() {
        std::fs::write(&path, text).expect("write golden");
        return;
    }
    let expected = std::fs::read_to_string(&path).unwrap_or_default();
    assert!(
        expected == text,
        "{name} differs (UPDATE_GOLDEN=1 rewrites it):\n--- expected\n{expected}\n--- got\n{text}"
    );
}

/// Five hosts of two OSDs, canary 2: the first host done, the second replacing.
fn small_rollout() -> Driven {
    let mut driven = Driven::converged(cephosd(5, 2, "a"));
    let mut next = cephosd(5, 2, "b");
    next.spec.canary = Some(IntOrString::Int(2));
    next.spec.partition = Some(IntOrString::Int(1));
    driven.with_template(&next);
    // node001: deleted, recreated, Ready; node002: deleted, recreated, not Ready yet.
    while driven
        .cr
        .status
        .as_ref()
        .is_none_or(|s| s.current_update != ["node002"])
    {
        driven.round(true);
    }
    driven.round(false);
    driven
}

#[test]
fn status_of_a_small_rollout_shows_every_host_in_order() {
    let driven = small_rollout();
    let (view, _) = driven.view();
    let states: Vec<HostState> = view.hosts.iter().map(|h| h.state).collect();
    assert_eq!(
        states,
        [
            HostState::Updated,
            HostState::Replacing,
            HostState::Held,
            HostState::Held,
            HostState::Held
        ]
    );
    golden(
        "status-small.txt",
        &status_text(&view, &TextOptions::default()),
    );
    golden(
        "status-small-host.txt",
        &status_text(
            &view,
            &TextOptions {
                all: false,
                host: Some("node001".into()),
            },
        ),
    );
    // -o json round-trips into the same view (and the status types).
    let json = serde_json::to_string(&view).expect("json");
    let back: StatusView = serde_json::from_str(&json).expect("round trip");
    assert_eq!(back, view);
}

#[test]
fn plan_of_a_small_rollout_lists_the_steps_and_the_cut() {
    let mut driven = Driven::converged(cephosd(5, 2, "a"));
    let mut next = cephosd(5, 2, "b");
    next.spec.partition = Some(IntOrString::Int(1));
    driven.with_template(&next);
    let (_, preview) = driven.view();
    let hash = crate::hash::TemplateHash::of(&next.spec.pod_template).to_string();
    let step = StepEstimate::of(&driven.cr, &hash);
    assert_eq!(preview.batches.len(), 4);
    golden(
        "plan-small.txt",
        &plan_text("ceph/osds", &hash, &preview, &step),
    );
}

#[test]
fn a_thousand_osds_fold_into_a_screenful() {
    let mut driven = Driven::converged(cephosd(100, 10, "a"));
    let mut next = cephosd(100, 10, "b");
    next.spec.max_unavailable = Some(2);
    next.spec.partition = Some(IntOrString::String("10%".into()));
    driven.with_template(&next);
    for _ in 0..40 {
        driven.round(true);
    }
    driven.round(false);
    let (view, preview) = driven.view();
    let text = status_text(&view, &TextOptions::default());
    assert!(text.lines().count() < 60, "{text}");
    golden("status-1000.txt", &text);
    let all = status_text(
        &view,
        &TextOptions {
            all: true,
            host: None,
        },
    );
    assert!(all.lines().count() > 1000, "every host with its pods");
    let hash = crate::hash::TemplateHash::of(&next.spec.pod_template).to_string();
    let step = StepEstimate::of(&driven.cr, &hash);
    golden(
        "plan-1000.txt",
        &plan_text("ceph/osds", &hash, &preview, &step),
    );
}

#[test]
fn an_open_ceph_step_is_shown_with_what_it_waits_for() {
    let driven = small_rollout();
    let (mut view, _) = driven.view();
    let without = status_text(&view, &TextOptions::default());
    assert!(!without.contains("\nceph "), "{without}");
    view.status.ceph_step = Some(crate::crd::CephStep {
        keys: vec!["node002:/dev/sdb".into()],
        osds: vec![crate::crd::StepOsd { id: 4, up_from: 9 }],
        noout: Vec::new(),
        started: k8s_openapi::apimachinery::pkg::apis::meta::v1::Time(at(0)),
        drain: None,
        domains: std::collections::BTreeMap::new(),
    });
    view.status.conditions.retain(|c| c.type_ != "CephGate");
    view.status
        .conditions
        .push(k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition {
            type_: "CephGate".into(),
            status: "True".into(),
            reason: "StepInProgress".into(),
            message:
                "a step is under way on node002:/dev/sdb: the new daemon of osd.4 is not up yet"
                    .into(),
            last_transition_time: k8s_openapi::apimachinery::pkg::apis::meta::v1::Time(at(0)),
            observed_generation: None,
        });
    let text = status_text(&view, &TextOptions::default());
    assert!(
        text.contains(
            "\nceph      step open on node002:/dev/sdb · stops osd.4 · noout none · a step is \
             under way on node002:/dev/sdb: the new daemon of osd.4 is not up yet\n"
        ),
        "{text}"
    );
}

#[test]
fn status_says_a_release_refusal_and_where_finalize_stands() {
    let driven = small_rollout();
    let (mut view, _) = driven.view();
    let without = status_text(&view, &TextOptions::default());
    assert!(!without.contains("\nrelease ") && !without.contains("\nfinalize "));
    for (type_, reason, message) in [
        ("CephGate", "MonitorsOlder", "the template runs reef (18) but monitors run older releases (1 on pacific (16)): upgrade the monitors first"),
        ("Finalized", "OsdsOlder", "not every OSD of the Ceph cluster runs reef (18): osd.1 last ran pacific (16)"),
    ] {
        view.status.conditions.retain(|c| c.type_ != type_);
        view.status
            .conditions
            .push(k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition {
                type_: type_.into(),
                status: "False".into(),
                reason: reason.into(),
                message: message.into(),
                last_transition_time: k8s_openapi::apimachinery::pkg::apis::meta::v1::Time(at(0)),
                observed_generation: None,
            });
    }
    let text = status_text(&view, &TextOptions::default());
    assert!(
        text.contains("\nrelease   the template runs reef (18) but monitors run older releases (1 on pacific (16)): upgrade the monitors first (MonitorsOlder)\n"),
        "{text}"
    );
    assert!(
        text.contains("\nfinalize  not every OSD of the Ceph cluster runs reef (18): osd.1 last ran pacific (16) (OsdsOlder)\n"),
        "{text}"
    );
}

#[test]
fn status_says_the_releases_as_ceph_last_said_them() {
    let driven = small_rollout();
    let (mut view, _) = driven.view();
    assert!(!status_text(&view, &TextOptions::default()).contains("\nreleases "));
    view.status.releases = Some(crate::crd::ReleasesStatus {
        running: [("pacific".to_owned(), 1), ("reef".to_owned(), 2)].into(),
        target: Some("reef".into()),
        target_template_hash: Some("h".into()),
        require_osd_release: Some("pacific".into()),
        rollback_possible: Some(false),
        upgraded_since: None,
    });
    let text = status_text(&view, &TextOptions::default());
    assert!(
        text.contains(
            "\nreleases  running pacific 1, reef 2 · target reef · require_osd_release pacific · \
             no rollback\n"
        ),
        "{text}"
    );
}

/// `hosts` hosts of two OSDs by rack (three hosts a rack, read from the zone label), rolled to
/// `marker`.
fn by_rack(hosts: usize, marker: &str) -> CephOsd {
    let mut cr = cephosd(hosts, 2, marker);
    cr.spec.update_domain = crate::crd::UpdateDomain::Topology;
    cr.spec.topology = Some(crate::crd::topology::TopologySpec {
        bucket_type: "rack".into(),
        topology_key: Some("topology.kubernetes.io/zone".into()),
    });
    cr
}

/// Each host's zone label: `rack1` for node001-node003, `rack2` for the next three, …
fn rack_labels(hosts: usize) -> TopologyView {
    TopologyView {
        crush: None,
        labels: (1..=hosts)
            .map(|h| {
                (
                    format!("node{h:03}"),
                    Some(format!("rack{}", (h - 1) / 3 + 1)),
                )
            })
            .collect(),
    }
}

#[test]
fn plan_by_rack_lists_each_rack_with_its_hosts() {
    let mut driven = Driven::converged_in(by_rack(12, "a"), rack_labels(12));
    driven.with_template(&by_rack(12, "b"));
    let (view, preview) = driven.view();
    assert_eq!(
        preview.batches,
        [["rack1"], ["rack2"], ["rack3"], ["rack4"]].map(|b| b.map(String::from).to_vec())
    );
    assert_eq!(
        preview.failure_domains["rack2"],
        ["node004", "node005", "node006"]
    );
    assert_eq!(view.bucket_type.as_deref(), Some("rack"));
    let hash = crate::hash::TemplateHash::of(&driven.cr.spec.pod_template).to_string();
    let step = StepEstimate::of(&driven.cr, &hash);
    golden(
        "plan-racks.txt",
        &plan_text("ceph/osds", &hash, &preview, &step),
    );
}

#[test]
fn status_by_rack_groups_hosts_under_their_rack() {
    let mut driven = Driven::converged_in(by_rack(12, "a"), rack_labels(12));
    driven.with_template(&by_rack(12, "b"));
    while driven
        .cr
        .status
        .as_ref()
        .is_none_or(|s| s.current_update != ["rack2"])
    {
        driven.round(true);
    }
    driven.round(false);
    let (view, _) = driven.view();
    let racks: Vec<(&str, HostState)> = (view.hosts.iter())
        .map(|h| (h.bucket.as_deref().unwrap_or("-"), h.state))
        .collect();
    assert_eq!(racks[0], ("rack1", HostState::Updated));
    assert_eq!(racks[3], ("rack2", HostState::Replacing));
    assert_eq!(racks[6], ("rack3", HostState::Next));
    assert_eq!(racks[11], ("rack4", HostState::Waiting));
    golden(
        "status-racks.txt",
        &status_text(&view, &TextOptions::default()),
    );
}

#[test]
fn a_host_in_no_known_rack_is_listed_with_why_and_nothing_starts() {
    let mut labels = rack_labels(12);
    labels.labels.insert("node005".into(), None);
    let mut driven = Driven::converged_in(by_rack(12, "a"), labels);
    driven.with_template(&by_rack(12, "b"));
    driven.round(true);
    let (view, preview) = driven.view();
    let why = "its Node has no label topology.kubernetes.io/zone";
    assert!(preview.batches.is_empty(), "{preview:?}");
    assert_eq!(
        preview.stops.as_deref(),
        Some(format!("host node005 is in no known failure domain: {why}").as_str())
    );
    let last = view.hosts.last().expect("hosts");
    assert_eq!(
        (
            last.host.as_str(),
            last.bucket.as_deref(),
            last.why.as_deref()
        ),
        ("node005", None, Some(why))
    );
    let text = status_text(&view, &TextOptions::default());
    golden("status-racks-unplaced.txt", &text);
    let hash = crate::hash::TemplateHash::of(&driven.cr.spec.pod_template).to_string();
    let step = StepEstimate::of(&driven.cr, &hash);
    golden(
        "plan-racks-unplaced.txt",
        &plan_text("ceph/osds", &hash, &preview, &step),
    );
}

/// Three hosts converged; Ceph has osd.1 out (an admin's) and osd.2 out (the operator's
/// drain of node003, whose key is back and whose daemon is not up yet): the header names
/// both, the pods mark them, the CephOSD is not complete.
#[test]
fn out_osds_are_named_in_the_header_and_marked_on_their_pods() {
    use crate::ceph::{OsdDump, OsdId, OsdInfo};
    use crate::crd::{MarkedBy, OsdOut};
    use crate::plan::gate::{CephInput, CephView};
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
    let mut driven = Driven::converged(cephosd(3, 1, "a"));
    let status = driven.cr.status.as_mut().expect("status");
    status.osd_ids = (1..=3)
        .map(|h| (format!("node{h:03}:/dev/sdb"), vec![h - 1]))
        .collect();
    status.osds_out = vec![OsdOut {
        id: 2,
        key: "node003:/dev/sdb".into(),
        marked_by: MarkedBy::Operator,
        since: Time(at(0)),
    }];
    let osd = |id: u32, up: bool, is_in: bool| {
        let info = OsdInfo {
            id: OsdId(id),
            up,
            is_in,
            up_from: 3,
            noout: false,
            state: vec!["exists".into()],
        };
        (OsdId(id), info)
    };
    let osds = OsdDump {
        epoch: 9,
        osds: [
            osd(0, true, true),
            osd(1, true, false),
            osd(2, false, false),
        ]
        .into_iter()
        .collect(),
        require_osd_release: None,
        placement: crate::ceph::Placement::default(),
    };
    let observed = Observed {
        ceph: CephView {
            input: CephInput::NotAsked,
            osds: Some(osds),
            ..CephView::default()
        },
        ..Observed::pods(&driven.pods)
    };
    let planned = plan(
        &driven.cr,
        &observed,
        &mut driven.suffixes,
        at(driven.clock + 60),
    );
    assert!(planned.actions.is_empty(), "{:?}", planned.actions);
    driven.cr.status = Some(planned.status);
    let (view, _) = driven.view();
    let text = status_text(
        &view,
        &TextOptions {
            all: true,
            host: None,
        },
    );
    golden("status-out.txt", &text);
    assert!(
        text.contains("osd.1(out)") && text.contains("osd.2(out)"),
        "{text}"
    );
    assert_ne!(view.status.phase, Some(crate::crd::Phase::Ready), "{text}");
}

#[test]
fn each_replacement_is_shown_with_its_phase_how_long_and_what_it_waits_for() {
    use crate::crd::replacement::{Replacement, ReplacementPhase};
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
    let driven = small_rollout();
    let (mut view, _) = driven.view();
    assert!(!status_text(&view, &TextOptions::default()).contains("\nreplace "));
    view.now = Some(at(900));
    view.status.replacements = vec![Replacement {
        key: "node002:/dev/sdb".into(),
        id: 4,
        phase: ReplacementPhase::Backfilling,
        started: Time(at(0)),
        since: Time(at(660)),
        message: "data moves back: 3 PGs active+remapped+backfilling".into(),
        pgs_remaining: Some(3),
        pgs_at_most: None,
        eta: None,
        disk_swapped: Some("swapped".into()),
    }];
    let text = status_text(&view, &TextOptions::default());
    assert!(
        text.contains(
            "\nreplace   osd.4 node002:/dev/sdb Backfilling for 4m00s (started 15m00s ago) · 3 PGs to \
             move: data moves back: 3 PGs active+remapped+backfilling\n"
        ),
        "{text}"
    );
}
