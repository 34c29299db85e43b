//! The Ceph gate's inputs for the unit tests, built as `CephOsdBuilder` builds CephOSDs: the
//! keys a step would take down (`GateSubjectBuilder`), a look at Ceph (`CephFactsBuilder`),
//! Ceph's answer (`GateAnswerBuilder`), the view and the input the gate is given
//! (`CephViewBuilder`, `GateInputBuilder`) and the step a status records (`CephStepBuilder`).

use crate::ceph::test_data::{fixture, ids};
use crate::ceph::{
    parse_osd_dump, parse_pg_stat, parse_status, CephFacts, IdSource, KeyIds, MappedKey, OkToStop,
    OsdId,
};
use crate::crd::osd::OsdKey;
use crate::crd::{CephStep, StepDrain, StepOsd};
use crate::plan::gate::conversation::{Answered, Asking, Turn};
use crate::plan::gate::{
    CephInput, CephView, GateAnswer, GateDecision, GateInput, GateSubject, RefusedWhole,
    StepProgress,
};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use k8s_openapi::jiff::{SignedDuration, Timestamp};
use std::collections::{BTreeMap, BTreeSet};

/// No key withheld for a disk replacement.
static NO_KEYS: BTreeSet<String> = BTreeSet::new();

/// The instant `seconds` after the epoch.
pub(crate) fn at(seconds: i64) -> Timestamp {
    Timestamp::from_second(seconds).expect("time")
}

/// A key whose pods a step would take down: its own update domain (its host), no pod, not
/// leaving.
#[derive(Clone, Debug)]
pub(crate) struct GateSubjectBuilder {
    subject: GateSubject,
}

impl GateSubjectBuilder {
    pub(crate) fn new(host: &str, data: &str) -> Self {
        Self {
            subject: GateSubject {
                key: OsdKey::new(host, data),
                pod: None,
                domain: host.into(),
                leaving: false,
            },
        }
    }

    /// `host:/dev/sdb`, its pod `osd-<host>-sdb` running.
    pub(crate) fn host(host: &str) -> Self {
        Self::new(host, "/dev/sdb").pod(format!("osd-{host}-sdb"))
    }

    #[must_use]
    pub(crate) fn pod(mut self, pod: impl Into<String>) -> Self {
        self.subject.pod = Some(pod.into());
        self
    }

    #[must_use]
    pub(crate) fn domain(mut self, domain: &str) -> Self {
        self.subject.domain = domain.into();
        self
    }

    #[must_use]
    pub(crate) fn leaving(mut self, leaving: bool) -> Self {
        self.subject.leaving = leaving;
        self
    }

    pub(crate) fn build(self) -> GateSubject {
        self.subject
    }
}

/// A key whose ids Ceph's metadata gave.
pub(crate) fn known(key: &str, of: &[u32]) -> MappedKey {
    MappedKey {
        key: key.into(),
        pod: None,
        ids: KeyIds::Known {
            ids: ids(of),
            source: IdSource::Metadata,
        },
    }
}

/// One look at Ceph, from the answers recorded from the test cluster.
#[derive(Clone, Debug)]
pub(crate) struct CephFactsBuilder {
    facts: CephFacts,
}

impl CephFactsBuilder {
    /// The real 3-OSD cluster, healthy: quorum, a mgr, every OSD up and in, every PG clean.
    pub(crate) fn healthy() -> Self {
        Self {
            facts: CephFacts {
                status: parse_status(&fixture("status_healthy")).expect("status"),
                osds: parse_osd_dump(&fixture("osd_dump_all_up")).expect("osd dump"),
                pgs: Some(parse_pg_stat(&fixture("pg_stat_clean")).expect("pg stat")),
                pgs_trail_placement: None,
            },
        }
    }

    /// The osdmap of the recorded answer `name`.
    #[must_use]
    pub(crate) fn osds(mut self, name: &str) -> Self {
        self.facts.osds = parse_osd_dump(&fixture(name)).expect("osd dump");
        self
    }

    /// The PG states of the recorded answer `name`.
    #[must_use]
    pub(crate) fn pgs(mut self, name: &str) -> Self {
        self.facts.pgs = Some(parse_pg_stat(&fixture(name)).expect("pg stat"));
        self
    }

    /// The OSDs `down` down and out.
    #[must_use]
    pub(crate) fn down(mut self, down: &[u32]) -> Self {
        for id in down {
            if let Some(osd) = self.facts.osds.osds.get_mut(&OsdId(*id)) {
                osd.up = false;
                osd.is_in = false;
            }
        }
        self
    }

    /// `noout` set on the OSDs `flagged` (each in the osdmap).
    #[must_use]
    pub(crate) fn noout(mut self, flagged: &[u32]) -> Self {
        for id in flagged {
            self.facts
                .osds
                .osds
                .get_mut(&OsdId(*id))
                .expect("in the osdmap")
                .noout = true;
        }
        self
    }

    pub(crate) fn build(self) -> CephFacts {
        self.facts
    }
}

/// Ceph's answer about a proposal: `decision` for no key yet.
#[derive(Clone, Debug)]
pub(crate) struct GateAnswerBuilder {
    answer: GateAnswer,
}

impl GateAnswerBuilder {
    pub(crate) fn new(decision: GateDecision) -> Self {
        Self {
            answer: GateAnswer {
                decision,
                ..GateAnswer::default()
            },
        }
    }

    /// `Proceed` for `of`.
    pub(crate) fn proceed(of: &[u32]) -> Self {
        Self::new(GateDecision::Proceed { ids: ids(of) })
    }

    /// The key `host:data` was asked about, mapped to `of` (empty: unknown).
    #[must_use]
    pub(crate) fn key(mut self, host: &str, data: &str, of: &[u32]) -> Self {
        self.answer.keys.insert(OsdKey::new(host, data), ids(of));
        self
    }

    /// The key `key` was asked about, mapped to `of`.
    #[must_use]
    pub(crate) fn mapped(mut self, key: OsdKey, of: &[u32]) -> Self {
        self.answer.keys.insert(key, ids(of));
        self
    }

    /// Each id's `up_from` before the stop.
    #[must_use]
    pub(crate) fn up_from(mut self, up_from: &[(u32, u64)]) -> Self {
        self.answer
            .up_from
            .extend(up_from.iter().map(|&(id, epoch)| (OsdId(id), epoch)));
        self
    }

    /// The ids whose `noout` was set already when Ceph was asked.
    #[must_use]
    pub(crate) fn noout_before(mut self, before: &[u32]) -> Self {
        self.answer.noout_before = ids(before);
        self
    }

    /// Ceph refused the whole update domain `domain` with `decision`.
    #[must_use]
    pub(crate) fn refused_whole(mut self, domain: &str, decision: GateDecision) -> Self {
        self.answer.refused_whole = Some(Box::new(RefusedWhole {
            domain: domain.into(),
            decision,
        }));
        self
    }

    pub(crate) fn build(self) -> GateAnswer {
        self.answer
    }
}

/// The planner's view of Ceph: the gate on, Ceph not asked, no step looked at.
#[derive(Clone, Debug)]
pub(crate) struct CephViewBuilder {
    view: CephView,
}

impl CephViewBuilder {
    pub(crate) fn on() -> Self {
        Self {
            view: CephView {
                input: CephInput::NotAsked,
                ..CephView::default()
            },
        }
    }

    /// The gate off, as when no Ceph is configured.
    pub(crate) fn off() -> Self {
        Self {
            view: CephView::default(),
        }
    }

    /// Where the open step stands (None: not looked at).
    #[must_use]
    pub(crate) fn step(mut self, progress: impl Into<Option<StepProgress>>) -> Self {
        self.view.step = progress.into();
        self
    }

    /// Ceph's answer for the proposal.
    #[must_use]
    pub(crate) fn answered(mut self, answer: GateAnswer) -> Self {
        self.view.input = CephInput::Answered(answer);
        self
    }

    /// Ceph's new crash reports, as read while a rollout is under way.
    #[must_use]
    pub(crate) fn crashes(mut self, crashes: Vec<crate::ceph::CrashReport>) -> Self {
        self.view.crashes = Some(crashes);
        self
    }

    #[must_use]
    pub(crate) fn look_every(mut self, every: SignedDuration) -> Self {
        self.view.look_every = every;
        self
    }

    pub(crate) fn build(self) -> CephView {
        self.view
    }
}

/// What the gate is given: `view`, nothing open, nothing proposed, at 1010 s.
pub(crate) struct GateInputBuilder<'a> {
    input: GateInput<'a>,
}

impl<'a> GateInputBuilder<'a> {
    pub(crate) fn new(view: &'a CephView) -> Self {
        Self {
            input: GateInput {
                view,
                skipped: false,
                open: None,
                proposed: &[],
                settled: false,
                untouched: false,
                returned: BTreeSet::new(),
                crashed: None,
                replacing: &NO_KEYS,
                now: at(1010),
            },
        }
    }

    #[must_use]
    pub(crate) fn open(mut self, open: &'a CephStep) -> Self {
        self.input.open = Some(open);
        self
    }

    #[must_use]
    pub(crate) fn proposed(mut self, proposed: &'a [GateSubject]) -> Self {
        self.input.proposed = proposed;
        self
    }

    /// `spec.cephGate: Skipped`.
    #[must_use]
    pub(crate) fn skipped(mut self) -> Self {
        self.input.skipped = true;
        self
    }

    /// The open step's keys all have their replacements Ready.
    #[must_use]
    pub(crate) fn settled(mut self) -> Self {
        self.input.settled = true;
        self
    }

    /// None of the open step's pods was taken down.
    #[must_use]
    pub(crate) fn untouched(mut self) -> Self {
        self.input.untouched = true;
        self
    }

    /// The open step's keys the spec lists again.
    #[must_use]
    pub(crate) fn returned(mut self, keys: &[&str]) -> Self {
        self.input.returned = keys.iter().map(|k| (*k).to_owned()).collect();
        self
    }

    #[must_use]
    pub(crate) fn now(mut self, now: Timestamp) -> Self {
        self.input.now = now;
        self
    }

    pub(crate) fn build(self) -> GateInput<'a> {
        self.input
    }
}

/// The step a status records: a rollout step on `h:/dev/sdb` started at 1000 s, no OSD.
#[derive(Clone, Debug)]
pub(crate) struct CephStepBuilder {
    step: CephStep,
}

impl CephStepBuilder {
    pub(crate) fn new() -> Self {
        Self {
            step: CephStep {
                keys: vec!["h:/dev/sdb".into()],
                osds: Vec::new(),
                noout: Vec::new(),
                started: Time(at(1000)),
                drain: None,
                domains: BTreeMap::new(),
            },
        }
    }

    #[must_use]
    pub(crate) fn keys(mut self, keys: &[&str]) -> Self {
        self.step.keys = keys.iter().map(|k| (*k).to_owned()).collect();
        self
    }

    /// The OSDs it stopped, each with its `up_from` before the stop.
    #[must_use]
    pub(crate) fn osds(mut self, osds: &[(u32, u64)]) -> Self {
        self.step.osds = osds
            .iter()
            .map(|&(id, up_from)| StepOsd { id, up_from })
            .collect();
        self
    }

    /// The `noout` it set.
    #[must_use]
    pub(crate) fn noout(mut self, noout: &[u32]) -> Self {
        self.step.noout = noout.to_vec();
        self
    }

    /// A drain of these keys' ids, of which `marked_out` the operator marked out.
    #[must_use]
    pub(crate) fn drain(mut self, ids: &[(&str, &[u32])], marked_out: &[u32]) -> Self {
        self.step.drain = Some(StepDrain {
            ids: ids
                .iter()
                .map(|(key, of)| ((*key).to_owned(), of.to_vec()))
                .collect(),
            marked_out: marked_out.to_vec(),
        });
        self
    }

    pub(crate) fn build(self) -> CephStep {
        self.step
    }
}

/// Ceph's `ok-to-stop` reply about `of`: yes, or no with 8 PGs not ok.
pub(crate) fn ok_to_stop(ok: bool, of: &[u32]) -> OkToStop {
    OkToStop {
        ok_to_stop: ok,
        osds: ids(of),
        num_not_ok_pgs: if ok { 0 } else { 8 },
        ..OkToStop::default()
    }
}

/// The question a conversation asks next (a panic when it answered instead).
pub(crate) fn asked(turn: Turn) -> Asking {
    match turn {
        Turn::Ask(asking) => asking,
        Turn::Answered(answered) => panic!("answered without asking: {answered:?}"),
    }
}

/// The answer a conversation reached (a panic when it asks again instead).
pub(crate) fn answered(turn: Turn) -> Answered {
    match turn {
        Turn::Answered(answered) => *answered,
        Turn::Ask(asking) => panic!("asks again: {:?}", asking.ids()),
    }
}
