//! What the demo prints while the rollout runs: each change, as it is seen, of Ceph's own view
//! (`ceph osd dump`, `ceph pg stat` through the recorder), of the CephOSD's gate status
//! (`status.cephStep`, the `CephGate` condition), of its Events, and the `ceph` commands the
//! operator ran that change or ask about a step (`ok-to-stop`, `add-noout`, `rm-noout`, from
//! its log). Only differences are printed; nothing is expected or made up.

use std::collections::{BTreeMap, BTreeSet};

use ceph_osd_operator::crd::CephOsdStatus;
use k8s_openapi::api::events::v1::Event as K8sEvent;
use molecule_like_tests::ceph::{OsdMap, PgStat};

/// Who said it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Source {
    /// Ceph's own view.
    Ceph,
    /// The CephOSD's status, written by the operator.
    Status,
    /// An Event on the CephOSD.
    Event,
    /// A `ceph` command the operator ran, from its log.
    Asked,
}

impl Source {
    pub(crate) const fn label(self) -> &'static str {
        match self {
            Self::Ceph => "Ceph",
            Self::Status => "status",
            Self::Event => "event",
            Self::Asked => "operator→Ceph",
        }
    }
}

/// One thing that changed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Line {
    pub source: Source,
    pub text: String,
}

fn line(source: Source, text: impl Into<String>) -> Line {
    Line {
        source,
        text: text.into(),
    }
}

/// The gate's part of a CephOSD's status.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
struct GateStatus {
    /// `cephStep`: its keys, its OSD ids, the ids it holds `noout` on.
    step: Option<(Vec<String>, Vec<u32>, Vec<u32>)>,
    /// `CephGate`: status, reason, message.
    condition: Option<(String, String, String)>,
}

impl GateStatus {
    fn of(status: &CephOsdStatus) -> Self {
        Self {
            step: status.ceph_step.as_ref().map(|s| {
                (
                    s.keys.clone(),
                    s.osds.iter().map(|o| o.id).collect(),
                    s.noout.clone(),
                )
            }),
            condition: status
                .conditions
                .iter()
                .find(|c| c.type_ == "CephGate")
                .map(|c| (c.status.clone(), c.reason.clone(), c.message.clone())),
        }
    }
}

/// What was shown so far.
#[derive(Default)]
pub(crate) struct Narrator {
    osdmap: Option<OsdMap>,
    pgs: Option<BTreeMap<String, u64>>,
    gate: GateStatus,
    events: BTreeSet<String>,
    /// Bytes of the operator's log read so far (complete lines only).
    log_read: usize,
}

fn osds(ids: &[u32]) -> String {
    ids.iter()
        .map(|id| format!("osd.{id}"))
        .collect::<Vec<_>>()
        .join(", ")
}

impl Narrator {
    /// The changes of Ceph's osdmap: OSDs down, up with a new daemon (a newer `up_from`),
    /// `noout` set or cleared.
    pub(crate) fn osdmap(&mut self, now: &OsdMap) -> Vec<Line> {
        let mut out = Vec::new();
        let before = self.osdmap.replace(now.clone());
        let Some(before) = before else {
            return out;
        };
        let cluster_noout = |m: &OsdMap| m.flags.split(',').any(|f| f == "noout");
        if cluster_noout(&before) != cluster_noout(now) {
            let verb = if cluster_noout(now) { "set" } else { "cleared" };
            out.push(line(Source::Ceph, format!("cluster-wide noout {verb}")));
        }
        for osd in &now.osds {
            let host = now
                .host_of(osd.id)
                .map(|h| format!(" (CRUSH host {h})"))
                .unwrap_or_default();
            let Some(old) = before.osd(osd.id) else {
                out.push(line(Source::Ceph, format!("osd.{} appeared{host}", osd.id)));
                continue;
            };
            if old.noout != osd.noout {
                let verb = if osd.noout { "set on" } else { "cleared on" };
                out.push(line(Source::Ceph, format!("noout {verb} osd.{}", osd.id)));
            }
            if old.up && !osd.up {
                out.push(line(Source::Ceph, format!("osd.{} down{host}", osd.id)));
            } else if osd.up && (!old.up || old.up_from != osd.up_from) {
                out.push(line(
                    Source::Ceph,
                    format!(
                        "osd.{} up: a new daemon booted (up_from {} → {}){host}",
                        osd.id, old.up_from, osd.up_from
                    ),
                ));
            }
        }
        out
    }

    /// The PG states when their counts changed; "every PG active+clean" when they all are.
    pub(crate) fn pgs(&mut self, now: &PgStat) -> Vec<Line> {
        if self.pgs.as_ref() == Some(&now.by_state) {
            return Vec::new();
        }
        self.pgs = Some(now.by_state.clone());
        let text = if now.all_clean() {
            format!("every PG active+clean ({} of {})", now.num_pgs, now.num_pgs)
        } else {
            let states: Vec<String> = now
                .by_state
                .iter()
                .map(|(state, n)| format!("{n} {state}"))
                .collect();
            format!(
                "PGs: {}{}",
                states.join(", "),
                if now.ready {
                    ""
                } else {
                    " (the mgr's PG states are not ready)"
                }
            )
        };
        vec![line(Source::Ceph, text)]
    }

    /// The gate's status: a step opened or closed, its `noout`, the `CephGate` condition.
    pub(crate) fn status(&mut self, status: &CephOsdStatus) -> Vec<Line> {
        let now = GateStatus::of(status);
        let before = std::mem::replace(&mut self.gate, now.clone());
        let mut out = Vec::new();
        if before.step != now.step {
            match (&before.step, &now.step) {
                (_, Some((keys, ids, noout))) => out.push(line(
                    Source::Status,
                    format!(
                        "cephStep: {} ({}), noout held on [{}]",
                        keys.join(", "),
                        osds(ids),
                        osds(noout)
                    ),
                )),
                (Some((keys, _, _)), None) => out.push(line(
                    Source::Status,
                    format!("cephStep closed: {} done", keys.join(", ")),
                )),
                (None, None) => {}
            }
        }
        if before.condition != now.condition {
            if let Some((status, reason, message)) = &now.condition {
                out.push(line(
                    Source::Status,
                    format!("CephGate {status} {reason}: {message}"),
                ));
            }
        }
        out
    }

    /// Events not shown yet, in the order given.
    pub(crate) fn events(&mut self, events: &[K8sEvent]) -> Vec<Line> {
        let mut out = Vec::new();
        for e in events {
            let id = e
                .metadata
                .uid
                .clone()
                .or_else(|| e.metadata.name.clone())
                .unwrap_or_default();
            if !self.events.insert(id) {
                continue;
            }
            out.push(line(
                Source::Event,
                format!(
                    "{}{}: {}",
                    e.reason.as_deref().unwrap_or("-"),
                    if e.type_.as_deref() == Some("Warning") {
                        " (Warning)"
                    } else {
                        ""
                    },
                    e.note.as_deref().unwrap_or("")
                ),
            ));
        }
        out
    }

    /// The `ceph` commands in the operator's log since the last call that ask whether a step
    /// may start or set / clear `noout`, with their exit code and time.
    pub(crate) fn log(&mut self, log: &str) -> Vec<Line> {
        let Some(unread) = log.get(self.log_read..) else {
            return Vec::new();
        };
        let Some(end) = unread.rfind('\n') else {
            return Vec::new();
        };
        self.log_read += end + 1;
        unread[..end]
            .lines()
            .filter_map(ceph_call)
            .filter(|c| STEP_COMMANDS.iter().any(|s| c.command.contains(s)))
            .map(|c| {
                line(
                    Source::Asked,
                    format!(
                        "ceph {}: exit code {} in {}",
                        c.command, c.exit_code, c.elapsed
                    ),
                )
            })
            .collect()
    }
}

/// How many times the operator's log says it ran `ceph osd ok-to-stop`.
pub(crate) fn ok_to_stop_calls(log: &str) -> usize {
    log.lines()
        .filter_map(ceph_call)
        .filter(|c| c.command.contains("osd ok-to-stop"))
        .count()
}

/// The commands of a step: whether it may start, its `noout`.
const STEP_COMMANDS: [&str; 3] = ["osd ok-to-stop", "osd add-noout", "osd rm-noout"];

/// One `ceph call` line of the operator's log.
#[derive(Debug, PartialEq, Eq)]
struct CephCall {
    command: String,
    elapsed: String,
    exit_code: String,
}

/// Reads `... ceph call command=<command> elapsed=<elapsed> exit_code=Some(<rc>)` (the
/// operator's debug line for each `ceph` command it ran).
fn ceph_call(log_line: &str) -> Option<CephCall> {
    let (_, rest) = log_line.split_once(" ceph call command=")?;
    let (command, rest) = rest.split_once(" elapsed=")?;
    let (elapsed, rest) = rest.split_once(" exit_code=")?;
    let exit_code = rest.trim();
    let exit_code = exit_code
        .strip_prefix("Some(")
        .and_then(|c| c.strip_suffix(')'))
        .unwrap_or(exit_code);
    Some(CephCall {
        command: command.to_owned(),
        elapsed: rounded(elapsed),
        exit_code: exit_code.to_owned(),
    })
}

/// A logged `Duration` (`1.613124ms`, `1.01s`, `983.2µs`) to 3 significant digits at most
/// (`1.61 ms`, `1.01 s`, `983 µs`); as logged when it is not one.
fn rounded(logged: &str) -> String {
    let split = logged
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(logged.len());
    let (number, unit) = logged.split_at(split);
    let Ok(value) = number.parse::<f64>() else {
        return logged.to_owned();
    };
    let decimals = if value >= 100.0 {
        0
    } else if value >= 10.0 {
        1
    } else {
        2
    };
    format!("{value:.decimals$} {unit}")
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use molecule_like_tests::ceph::OsdInfo;

    fn map(osds: &[(u32, bool, u64, bool)]) -> OsdMap {
        OsdMap {
            epoch: 1,
            osds: osds
                .iter()
                .map(|&(id, up, up_from, noout)| OsdInfo {
                    id,
                    up,
                    in_: true,
                    up_from,
                    noout,
                })
                .collect(),
            hosts: BTreeMap::from([
                ("ceph-a".to_owned(), vec![0]),
                ("ceph-b".to_owned(), vec![1]),
            ]),
            ..OsdMap::default()
        }
    }

    fn texts(lines: &[Line]) -> Vec<&str> {
        lines.iter().map(|l| l.text.as_str()).collect()
    }

    #[test]
    fn the_first_osdmap_is_the_baseline_then_only_changes_are_told() {
        let mut n = Narrator::default();
        assert!(n
            .osdmap(&map(&[(0, true, 5, false), (1, true, 6, false)]))
            .is_empty());
        let noout = n.osdmap(&map(&[(0, true, 5, true), (1, true, 6, false)]));
        assert_eq!(texts(&noout), ["noout set on osd.0"]);
        let down = n.osdmap(&map(&[(0, false, 5, true), (1, true, 6, false)]));
        assert_eq!(texts(&down), ["osd.0 down (CRUSH host ceph-a)"]);
        let booted = n.osdmap(&map(&[(0, true, 12, true), (1, true, 6, false)]));
        assert_eq!(
            texts(&booted),
            ["osd.0 up: a new daemon booted (up_from 5 → 12) (CRUSH host ceph-a)"]
        );
        let cleared = n.osdmap(&map(&[(0, true, 12, false), (1, true, 6, false)]));
        assert_eq!(texts(&cleared), ["noout cleared on osd.0"]);
        assert!(n
            .osdmap(&map(&[(0, true, 12, false), (1, true, 6, false)]))
            .is_empty());
    }

    #[test]
    fn a_restart_between_two_samples_shows_as_a_new_daemon() {
        let mut n = Narrator::default();
        let _ = n.osdmap(&map(&[(1, true, 6, false)]));
        let lines = n.osdmap(&map(&[(1, true, 9, false)]));
        assert_eq!(
            texts(&lines),
            ["osd.1 up: a new daemon booted (up_from 6 → 9) (CRUSH host ceph-b)"]
        );
    }

    fn pgs(states: &[(&str, u64)]) -> PgStat {
        PgStat {
            ready: true,
            num_pgs: states.iter().map(|(_, n)| n).sum(),
            by_state: states.iter().map(|(s, n)| ((*s).to_owned(), *n)).collect(),
            pgs: Vec::new(),
        }
    }

    #[test]
    fn pg_states_are_told_when_their_counts_change() {
        let mut n = Narrator::default();
        assert_eq!(
            texts(&n.pgs(&pgs(&[("active+clean", 33)]))),
            ["every PG active+clean (33 of 33)"]
        );
        assert!(n.pgs(&pgs(&[("active+clean", 33)])).is_empty());
        assert_eq!(
            texts(&n.pgs(&pgs(&[("active+clean", 21), ("peering", 12)]))),
            ["PGs: 21 active+clean, 12 peering"]
        );
    }

    #[test]
    fn the_operators_step_commands_are_read_from_its_log() {
        let log = "\
2026-11-26T14:11:25.1Z DEBUG ceph_osd_operator::ceph::cli: ceph call command=osd dump -f json elapsed=20ms exit_code=Some(0)
2026-11-26T14:11:25.2Z DEBUG ceph_osd_operator::ceph::cli: ceph call command=osd ok-to-stop 0 -f json elapsed=212.5ms exit_code=Some(0)
2026-11-26T14:11:25.3Z DEBUG ceph_osd_operator::ceph::cli: ceph call command=osd add-noout osd.0 elapsed=1.01s exit_code=Some(0)
2026-11-26T14:11:25.4Z DEBUG ceph_osd_operator::ceph::cli: ceph call command=osd rm-noout os";
        let mut n = Narrator::default();
        assert_eq!(
            texts(&n.log(log)),
            [
                "ceph osd ok-to-stop 0 -f json: exit code 0 in 212 ms",
                "ceph osd add-noout osd.0: exit code 0 in 1.01 s"
            ]
        );
        // The cut line is read once complete, and nothing twice.
        let more = format!("{log}d.0 elapsed=0.9s exit_code=Some(0)\n");
        assert_eq!(
            texts(&n.log(&more)),
            ["ceph osd rm-noout osd.0: exit code 0 in 0.90 s"]
        );
        assert!(n.log(&more).is_empty());
        assert_eq!(rounded("1.613124ms"), "1.61 ms");
        assert_eq!(rounded("983.2µs"), "983 µs");
        assert_eq!(rounded("soon"), "soon");
    }

    #[test]
    fn a_step_is_told_when_it_opens_and_when_it_closes() {
        let mut n = Narrator::default();
        let mut status: CephOsdStatus = serde_json::from_value(serde_json::json!({
            "cephStep": {
                "keys": ["ceph-a:/dev/sdb"],
                "osds": [{"id": 0, "upFrom": 5}],
                "noout": [0],
                "started": "2026-11-26T14:00:00Z"
            }
        }))
        .unwrap();
        assert_eq!(
            texts(&n.status(&status)),
            ["cephStep: ceph-a:/dev/sdb (osd.0), noout held on [osd.0]"]
        );
        assert!(n.status(&status).is_empty());
        status.ceph_step = None;
        assert_eq!(
            texts(&n.status(&status)),
            ["cephStep closed: ceph-a:/dev/sdb done"]
        );
    }
}
