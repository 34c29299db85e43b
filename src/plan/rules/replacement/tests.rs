use super::*;
use crate::ceph::{OsdInfo, PgBrief, PgStateCount, SafeToDestroy};
use crate::crd::replacement::SWAPPED;
use proptest::prelude::*;
use ReplacementPhase as P;

const KEY: &str = "node-a:/dev/sdb";

fn key() -> OsdKey {
    OsdKey::new("node-a", "/dev/sdb")
}

fn at(seconds: i64) -> Timestamp {
    Timestamp::from_second(1_700_000_000 + seconds).expect("time")
}

/// Ceph's view of osd.3 and osd.4 (up, in, destroyed) at epoch `epoch`.
#[derive(Clone, Copy)]
struct Osd3 {
    up: bool,
    is_in: bool,
    destroyed: bool,
}

fn dump(osd3: Osd3, epoch: u64) -> OsdDump {
    let info = |id: u32, o: Osd3| {
        let mut state = vec!["exists".to_owned()];
        if o.up {
            state.push("up".to_owned());
        }
        if o.destroyed {
            state.push("destroyed".to_owned());
        }
        (
            OsdId(id),
            OsdInfo {
                id: OsdId(id),
                up: o.up,
                is_in: o.is_in,
                up_from: 5,
                noout: false,
                state,
            },
        )
    };
    let healthy = Osd3 {
        up: true,
        is_in: true,
        destroyed: false,
    };
    OsdDump {
        epoch,
        osds: [info(3, osd3), info(4, healthy)].into_iter().collect(),
        ..OsdDump::default()
    }
}

fn pgs(clean: u64, degraded: u64) -> PgStates {
    let mut by_state = vec![PgStateCount {
        state: "active+clean".to_owned(),
        count: clean,
    }];
    if degraded > 0 {
        by_state.push(PgStateCount {
            state: "active+undersized+degraded".to_owned(),
            count: degraded,
        });
    }
    PgStates {
        ready: true,
        num_pgs: clean + degraded,
        by_state,
    }
}

fn safe(ids: &[u32], epoch: u64) -> DestroyLook {
    DestroyLook {
        epoch,
        answer: Ok(SafeToDestroy {
            safe_to_destroy: ids.iter().copied().map(OsdId).collect(),
            ..SafeToDestroy::default()
        }),
    }
}

/// osd.3's PGs as `pg ls-by-osd` lists them: (state, the epoch each was reported in).
fn on_osd3(pgs: &[(&str, u64)]) -> BackfillLook {
    BackfillLook {
        id: OsdId(3),
        pgs: Ok(pgs
            .iter()
            .enumerate()
            .map(|(i, (state, epoch))| PgBrief {
                pgid: format!("1.{i}"),
                state: (*state).to_owned(),
                reported_epoch: *epoch,
            })
            .collect()),
    }
}

fn request(swapped: Option<&str>) -> ReplaceRequest {
    ReplaceRequest {
        key: key(),
        swapped: swapped.map(str::to_owned),
    }
}

fn record(phase: ReplacementPhase, swapped: Option<&str>) -> Replacement {
    Replacement {
        key: KEY.to_owned(),
        id: 3,
        phase,
        started: Time(at(0)),
        since: Time(at(0)),
        message: String::new(),
        pgs_remaining: None,
        pgs_at_most: None,
        eta: None,
        disk_swapped: swapped.map(str::to_owned),
    }
}

/// A world to judge: everything a test does not set is a healthy cluster with osd.3 up and
/// in on KEY, its pod there.
#[derive(Clone)]
struct World {
    previous: Vec<Replacement>,
    requests: Vec<ReplaceRequest>,
    osd3: Osd3,
    epoch: u64,
    pod: Option<KeyPods>,
    pgs: PgStates,
    look: Option<DestroyLook>,
    backfill: Option<BackfillLook>,
    gate_off: Option<&'static str>,
    known: BTreeMap<String, Vec<u32>>,
    step: Option<CephStep>,
}

impl Default for World {
    fn default() -> Self {
        Self {
            previous: Vec::new(),
            requests: vec![request(None)],
            osd3: Osd3 {
                up: true,
                is_in: true,
                destroyed: false,
            },
            epoch: 20,
            pod: Some(KeyPods {
                any: true,
                failed: None,
            }),
            pgs: pgs(64, 0),
            look: None,
            backfill: None,
            gate_off: None,
            known: [
                (KEY.to_owned(), vec![3]),
                ("node-b:/dev/sdb".to_owned(), vec![4]),
            ]
            .into_iter()
            .collect(),
            step: None,
        }
    }
}

impl World {
    fn judge(&self) -> ReplaceOutcome {
        let spec_keys: BTreeSet<OsdKey> = [key(), OsdKey::new("node-b", "/dev/sdb")]
            .into_iter()
            .collect();
        let pods: BTreeMap<OsdKey, KeyPods> =
            self.pod.clone().map(|p| (key(), p)).into_iter().collect();
        let osds = dump(self.osd3, self.epoch);
        replacements(&ReplaceInput {
            previous: &self.previous,
            requests: &self.requests,
            spec_keys: &spec_keys,
            blocked: &BTreeSet::new(),
            known_ids: &self.known,
            pods: &pods,
            gate_off: self.gate_off,
            osds: Some(&osds),
            pgs: Some(&self.pgs),
            destroy_look: self.look.as_ref(),
            backfill_look: self.backfill.as_ref(),
            step: self.step.as_ref(),
            now: at(60),
        })
    }
}

fn only(out: &ReplaceOutcome) -> &Replacement {
    assert_eq!(out.records.len(), 1, "{:?}", out.records);
    &out.records[0]
}

fn destroys(out: &ReplaceOutcome) -> Vec<(u32, u64)> {
    (out.actions.iter())
        .filter_map(|a| match a {
            Action::DestroyOsd { id, epoch } => Some((id.0, *epoch)),
            _ => None,
        })
        .collect()
}

#[test]
fn a_request_for_an_up_osd_drains_it_through_the_removal_of_its_pod() {
    let out = World::default().judge();
    let r = only(&out);
    assert_eq!((r.phase, r.id), (P::Draining, 3));
    assert!(
        out.withheld.contains(&key()),
        "its pod leaves as a removal's"
    );
    // An up OSD is marked out by the drain in its domain's turn, not here.
    assert!(out.actions.is_empty(), "{:?}", out.actions);
    assert!(out
        .under_way
        .as_deref()
        .is_some_and(|u| u.contains("osd.3")));
    assert!(out
        .events
        .iter()
        .any(|e| e.note.contains("replacement asked for")));
}

#[test]
fn a_dead_osd_is_marked_out_at_once() {
    let world = World {
        previous: vec![record(P::Draining, None)],
        osd3: Osd3 {
            up: false,
            is_in: true,
            destroyed: false,
        },
        ..World::default()
    };
    let out = world.judge();
    assert!(matches!(&out.actions[..], [Action::MarkOut { ids }] if ids == &[OsdId(3)]));
    assert!(only(&out).message.contains("down and marked out"));
}

#[test]
fn the_destroy_waits_for_the_pod_to_go_and_the_daemon_to_be_down() {
    let world = World {
        previous: vec![record(P::Draining, None)],
        osd3: Osd3 {
            up: false,
            is_in: false,
            destroyed: false,
        },
        ..World::default()
    };
    assert_eq!(
        only(&world.judge()).phase,
        P::Draining,
        "its pod is still there"
    );
    let gone = World {
        pod: None,
        osd3: Osd3 {
            up: true,
            is_in: false,
            destroyed: false,
        },
        ..world
    };
    let out = gone.judge();
    assert_eq!(only(&out).phase, P::Destroying);
    assert!(destroys(&out).is_empty(), "never while the OSD is up");
    assert!(only(&out).message.contains("still up"));
}

#[test]
fn the_destroy_is_made_at_the_epoch_its_safe_to_destroy_passed_at_and_only_then() {
    let down = Osd3 {
        up: false,
        is_in: false,
        destroyed: false,
    };
    let world = World {
        previous: vec![record(P::Destroying, None)],
        osd3: down,
        pod: None,
        look: Some(safe(&[3], 20)),
        ..World::default()
    };
    assert_eq!(destroys(&world.judge()), vec![(3, 20)]);
    // Not safe, no answer, or no look: no destroy.
    for look in [
        Some(safe(&[], 20)),
        Some(DestroyLook {
            epoch: 20,
            answer: Err("EAGAIN".to_owned()),
        }),
        None,
    ] {
        let out = World {
            look,
            previous: vec![record(P::Destroying, None)],
            osd3: down,
            pod: None,
            ..World::default()
        }
        .judge();
        assert!(destroys(&out).is_empty(), "{:?}", out.actions);
        assert_eq!(only(&out).phase, P::Destroying);
    }
}

#[test]
fn a_destroyed_id_waits_for_a_confirmation_given_after_the_destroy() {
    let destroyed = Osd3 {
        up: false,
        is_in: false,
        destroyed: true,
    };
    // A confirmation already there while it drained is spent: not taken.
    let early = World {
        previous: vec![record(P::Destroying, None)],
        requests: vec![request(Some(SWAPPED))],
        osd3: destroyed,
        pod: None,
        ..World::default()
    };
    let out = early.judge();
    let awaiting = only(&out).clone();
    assert_eq!(awaiting.phase, P::AwaitingDisk);
    assert!(out.withheld.contains(&key()), "no pod on the old disk");
    let still = World {
        previous: vec![awaiting.clone()],
        requests: vec![request(Some(SWAPPED))],
        osd3: destroyed,
        pod: None,
        ..World::default()
    };
    assert_eq!(only(&still.judge()).phase, P::AwaitingDisk);
    let confirmed = World {
        requests: vec![request(Some("swapped-1"))],
        ..still
    };
    let out = confirmed.judge();
    assert_eq!(only(&out).phase, P::Preparing);
    assert_eq!(out.preparing.get(&key()), Some(&3));
    assert!(!out.withheld.contains(&key()));
}

#[test]
fn a_failed_prepare_keeps_the_id_destroyed_until_another_confirmation() {
    let destroyed = Osd3 {
        up: false,
        is_in: false,
        destroyed: true,
    };
    let world = World {
        previous: vec![record(P::Preparing, Some(SWAPPED))],
        requests: vec![request(Some(SWAPPED))],
        osd3: destroyed,
        pod: Some(KeyPods {
            any: true,
            failed: Some("container prepare exited with code 1".to_owned()),
        }),
        ..World::default()
    };
    let out = world.judge();
    let failed = only(&out).clone();
    assert_eq!(failed.phase, P::PrepareFailed);
    assert!(
        failed.message.contains("exited with code 1"),
        "{}",
        failed.message
    );
    assert!(out.withheld.contains(&key()), "no retry on its own");
    assert!(out.events.iter().any(|e| e.warning));
    let same = World {
        previous: vec![failed.clone()],
        pod: None,
        ..world
    };
    assert_eq!(only(&same.judge()).phase, P::PrepareFailed);
    let again = World {
        requests: vec![request(Some("swapped-2"))],
        ..same
    };
    assert_eq!(only(&again.judge()).phase, P::Preparing);
}

#[test]
fn the_new_daemon_up_is_marked_in_and_the_replacement_ends_once_pgs_are_clean() {
    let up_out = Osd3 {
        up: true,
        is_in: false,
        destroyed: false,
    };
    let world = World {
        previous: vec![record(P::Preparing, Some(SWAPPED))],
        requests: vec![request(Some(SWAPPED))],
        osd3: up_out,
        pgs: pgs(40, 24),
        ..World::default()
    };
    let out = world.judge();
    assert_eq!(only(&out).phase, P::Backfilling);
    assert!(matches!(&out.actions[..], [Action::MarkIn { ids }] if ids == &[OsdId(3)]));
    let moving = World {
        previous: vec![only(&out).clone()],
        osd3: Osd3 {
            is_in: true,
            ..up_out
        },
        ..world
    };
    let out = moving.judge();
    assert_eq!(only(&out).phase, P::Backfilling);
    assert_eq!(only(&out).pgs_remaining, Some(24));
    // Every PG clean, but the mgr's states do not count the new daemon yet: no PG on it, or
    // reports from before its boot (up_from 5).
    for stale in [
        Some(on_osd3(&[])),
        Some(on_osd3(&[("active+clean", 4)])),
        None,
    ] {
        let early = World {
            pgs: pgs(64, 0),
            backfill: stale,
            ..moving.clone()
        };
        let out = early.judge();
        assert_eq!(only(&out).phase, P::Backfilling, "{:?}", only(&out).message);
    }
    let clean = World {
        pgs: pgs(64, 0),
        backfill: Some(on_osd3(&[("active+clean", 6), ("active+clean", 5)])),
        ..moving
    };
    let out = clean.judge();
    assert_eq!(only(&out).phase, P::Done);
    assert!(
        only(&out).message.contains("(2 PGs)"),
        "{}",
        only(&out).message
    );
    assert_eq!(out.under_way, None);
    // Done stays done while the annotation names the key.
    let later = World {
        previous: vec![only(&out).clone()],
        ..clean
    };
    let out = later.judge();
    assert_eq!(only(&out).phase, P::Done);
    assert!(out.actions.is_empty() && out.withheld.is_empty());
}

#[test]
fn refusals_name_why_and_do_nothing() {
    let cases: Vec<(World, &str)> = vec![
        (
            World {
                gate_off: Some("the operator has no Ceph configured"),
                ..World::default()
            },
            "needs Ceph",
        ),
        (
            World {
                requests: vec![ReplaceRequest {
                    key: OsdKey::new("node-z", "/dev/sdb"),
                    swapped: None,
                }],
                ..World::default()
            },
            "not in the spec",
        ),
        (
            World {
                known: BTreeMap::new(),
                ..World::default()
            },
            "not known yet",
        ),
        (
            World {
                known: [
                    (KEY.to_owned(), vec![3]),
                    ("node-b:/dev/sdb".to_owned(), vec![3]),
                ]
                .into_iter()
                .collect(),
                ..World::default()
            },
            "also claimed by node-b:/dev/sdb",
        ),
        (
            World {
                step: Some(CephStep {
                    keys: vec![KEY.to_owned()],
                    osds: Vec::new(),
                    noout: Vec::new(),
                    started: Time(at(0)),
                    drain: None,
                    domains: BTreeMap::new(),
                }),
                ..World::default()
            },
            "being rolled",
        ),
    ];
    for (world, why) in cases {
        let out = world.judge();
        let r = only(&out);
        assert_eq!(r.phase, P::Refused, "{why}");
        assert!(r.message.contains(why), "{why}: {}", r.message);
        assert!(out.actions.is_empty() && out.withheld.is_empty(), "{why}");
        assert!(out.events.iter().any(|e| e.warning), "{why}");
    }
}

#[test]
fn one_replacement_at_a_time_the_next_waits_and_starts_after() {
    let other = ReplaceRequest {
        key: OsdKey::new("node-b", "/dev/sdb"),
        swapped: None,
    };
    let world = World {
        previous: vec![record(P::Draining, None)],
        requests: vec![request(None), other.clone()],
        ..World::default()
    };
    let out = world.judge();
    assert_eq!(out.records.len(), 2);
    assert_eq!(out.records[0].phase, P::Draining);
    assert_eq!(out.records[1].phase, P::Refused);
    assert!(out.records[1].message.contains("one at a time"));
    let mut done = record(P::Done, Some(SWAPPED));
    done.message = "done".to_owned();
    let after = World {
        previous: vec![done, out.records[1].clone()],
        requests: vec![request(Some(SWAPPED)), other],
        ..World::default()
    };
    let out = after.judge();
    assert_eq!(out.records[1].phase, P::Draining, "{:?}", out.records[1]);
}

#[test]
fn a_withdrawn_request_gives_the_osd_back_before_the_destroy_and_goes_on_after_it() {
    let before = World {
        previous: vec![record(P::Draining, None)],
        requests: Vec::new(),
        ..World::default()
    };
    let out = before.judge();
    assert!(out.records.is_empty() && out.withheld.is_empty());
    assert!(out.events.iter().any(|e| e.note.contains("called off")));
    let after = World {
        previous: vec![record(P::AwaitingDisk, None)],
        requests: Vec::new(),
        osd3: Osd3 {
            up: false,
            is_in: false,
            destroyed: true,
        },
        pod: None,
        ..World::default()
    };
    let out = after.judge();
    assert_eq!(only(&out).phase, P::AwaitingDisk);
    assert!(only(&out).message.contains("withdrawn"));
    assert!(out.withheld.contains(&key()));
}

proptest! {
    /// Whatever the records, requests and Ceph say: a destroy is only ever planned at the
    /// epoch of a passing `safe-to-destroy` for that id, of a down OSD, with no pod of its key;
    /// and a key is never both withheld and prepared.
    #[test]
    fn a_destroy_needs_a_passing_look_at_its_epoch_a_down_osd_and_no_pod(
        phase in prop::sample::select(vec![P::Draining, P::Destroying, P::AwaitingDisk, P::Preparing, P::PrepareFailed, P::Backfilling, P::Done, P::Refused]),
        has_record in any::<bool>(),
        swapped in prop::option::of(prop::sample::select(vec!["swapped", "swapped-1"])),
        recorded_swap in prop::option::of(prop::sample::select(vec!["swapped", "swapped-1"])),
        up in any::<bool>(), is_in in any::<bool>(), destroyed in any::<bool>(),
        pod in prop::option::of(any::<bool>()),
        look in prop::option::of((prop::sample::select(vec![19u64, 20]), any::<bool>())),
        requested in any::<bool>(),
    ) {
        let world = World {
            previous: if has_record { vec![record(phase, recorded_swap)] } else { Vec::new() },
            requests: if requested { vec![request(swapped)] } else { Vec::new() },
            osd3: Osd3 { up, is_in, destroyed },
            pod: pod.map(|failed| KeyPods { any: true, failed: failed.then(|| "exit 1".to_owned()) }),
            look: look.map(|(epoch, ok)| safe(if ok { &[3] } else { &[] }, epoch)),
            ..World::default()
        };
        let out = world.judge();
        for (id, epoch) in destroys(&out) {
            prop_assert_eq!(id, 3);
            prop_assert_eq!(epoch, world.look.as_ref().map(|l| l.epoch).unwrap());
            prop_assert!(look.is_some_and(|(_, ok)| ok));
            prop_assert!(!up && !destroyed && pod.is_none());
        }
        for key in out.preparing.keys() {
            prop_assert!(!out.withheld.contains(key));
        }
        prop_assert!(out.records.len() <= 1);
    }
}

#[test]
fn the_eta_follows_the_pace_since_the_phase_began() {
    let mut r = record(P::Backfilling, Some(SWAPPED));
    r.since = Time(at(0));
    moving(&mut r, Some(30), at(10));
    assert_eq!(
        (r.pgs_at_most, r.eta.clone()),
        (Some(30), None),
        "no progress yet"
    );
    moving(&mut r, Some(20), at(20));
    assert_eq!(r.eta, Some(Time(at(60))), "10 PGs in 20 s: 20 more in 40 s");
    moving(&mut r, Some(40), at(30));
    assert_eq!(
        r.pgs_at_most,
        Some(40),
        "the count grows as the out takes effect"
    );
    moving(&mut r, Some(0), at(40));
    assert_eq!(r.eta, None, "nothing left");
}

#[test]
fn destroying_or_preparing_holds_every_rollout_step() {
    let destroyed = Osd3 {
        up: false,
        is_in: false,
        destroyed: true,
    };
    let preparing = World {
        previous: vec![record(P::Preparing, Some(SWAPPED))],
        requests: vec![request(Some(SWAPPED))],
        osd3: destroyed,
        pod: None,
        ..World::default()
    };
    let hold = preparing.judge().holds_rollout.expect("a hold");
    assert!(
        hold.contains("osd.3") && hold.contains("Preparing"),
        "{hold}"
    );
    let awaiting = World {
        previous: vec![record(P::AwaitingDisk, None)],
        requests: vec![request(None)],
        ..preparing
    };
    assert_eq!(awaiting.judge().holds_rollout, None, "a disk may take days");
}

#[test]
fn a_withdrawn_request_says_so_once_however_many_plans_follow() {
    let destroyed = Osd3 {
        up: false,
        is_in: false,
        destroyed: true,
    };
    let mut world = World {
        previous: vec![record(P::PrepareFailed, Some(SWAPPED))],
        requests: Vec::new(),
        osd3: destroyed,
        pod: None,
        ..World::default()
    };
    world.previous[0].message = "the prepare failed (exit 1)".to_owned();
    let first = only(&world.judge()).message.clone();
    world.previous = vec![only(&world.judge()).clone()];
    let second = only(&world.judge()).message.clone();
    assert_eq!(first, second);
    assert_eq!(first.matches("withdrawn").count(), 1, "{first}");
    assert!(first.ends_with("the prepare failed (exit 1)"), "{first}");
}

#[test]
fn only_a_request_that_cannot_start_for_want_of_its_id_asks_for_ids() {
    let unknown = World {
        known: BTreeMap::new(),
        ..World::default()
    };
    assert!(unknown.judge().wants_osd_ids);
    let under_way = World {
        previous: vec![record(P::Draining, None)],
        known: BTreeMap::new(),
        ..World::default()
    };
    assert!(!under_way.judge().wants_osd_ids, "the record keeps its id");
    assert!(!World::default().judge().wants_osd_ids);
}
