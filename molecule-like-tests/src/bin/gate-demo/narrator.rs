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
mod tests;
