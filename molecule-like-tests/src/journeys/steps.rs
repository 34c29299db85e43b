//! A rollout's steps as Ceph and the bridge saw them, whatever the operator says: a step is
//! the OSDs whose daemons were stopped while no earlier stopped OSD's new daemon had yet to
//! boot; it starts at its first stop, its daemons are back at its last boot, and it ends at
//! the first PG sample after that with every PG clean.

use std::collections::BTreeMap;
use std::time::Duration;

use crate::journeys::bridge::Daemon;
use crate::recording::ceph::{CephRecording, Observed};

/// One step of a rollout (see the module docs).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CephStep {
    /// The OSDs stopped in it.
    pub osds: Vec<u32>,
    /// Its first stop request.
    pub start: Duration,
    /// Its last new daemon booted (None: one never did).
    pub booted: Option<Duration>,
    /// The first PG sample after `booted` with every PG clean.
    pub clean: Option<Duration>,
}

/// The steps of the daemons stopped from `from` on, in order (see the module docs).
pub fn steps_from(
    daemons: &BTreeMap<u32, Vec<Daemon>>,
    recording: &CephRecording,
    from: Duration,
) -> Vec<CephStep> {
    // Each stop from `from` on, with the boot of the daemon that followed it.
    let mut stops: Vec<(Duration, u32, Option<Duration>)> = Vec::new();
    for (id, list) in daemons {
        for (i, d) in list.iter().enumerate() {
            let Some(stopping) = d.stopping.filter(|s| *s >= from) else {
                continue;
            };
            let next_boot = list.get(i + 1).and_then(|n| n.booted).map(|(at, _)| at);
            stops.push((stopping, *id, next_boot));
        }
    }
    stops.sort();
    let mut steps: Vec<CephStep> = Vec::new();
    for (at, id, boot) in stops {
        let joins = steps
            .last()
            .is_some_and(|s| s.booted.is_none_or(|b| b > at));
        if joins {
            let step = steps.last_mut().expect("checked above");
            step.osds.push(id);
            step.booted = step.booted.zip(boot).map(|(a, b)| a.max(b));
        } else {
            steps.push(CephStep {
                osds: vec![id],
                start: at,
                booted: boot,
                clean: None,
            });
        }
    }
    for step in &mut steps {
        step.clean = step.booted.and_then(|b| clean_after(recording, b));
    }
    steps
}

/// The first PG sample after `after` with every PG clean.
pub fn clean_after(recording: &CephRecording, after: Duration) -> Option<Duration> {
    recording.events.iter().find_map(|e| match &e.observed {
        Observed::Pgs(p) if e.at > after && p.all_clean() => Some(e.at),
        _ => None,
    })
}

#[cfg(test)]
mod tests;
