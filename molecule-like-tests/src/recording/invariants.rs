//! The invariants checked on a pod watch's recording: never two pods on one disk (each pod
//! keyed by the disk it held when first seen), and a rollout in its order and pace
//! ([`Timeline::check_rollout`]).

use std::collections::{BTreeMap, BTreeSet};

use anyhow::{anyhow, bail};
use ceph_osd_operator::{labels, OsdKey};
use k8s_openapi::api::core::v1::Pod;
use kube::ResourceExt;

use super::domains::Domains;
use super::pod_events::{EventKind, PodEvent};
use crate::kubernetes::pods::{annotation, is_ready, pod_key, rollout_order};

/// The disk each pod held when it was first seen (its annotations then, as the operator
/// wrote them): an annotation edited later does not move a running daemon.
#[derive(Default)]
pub(super) struct FirstSeen(BTreeMap<String, Option<OsdKey>>);

impl FirstSeen {
    /// The key `pod` was first seen with (learning it now if this is its first event).
    pub(super) fn key(&mut self, pod: &Pod) -> Option<OsdKey> {
        let first = self.0.entry(pod.name_any()).or_insert_with(|| pod_key(pod));
        if first.is_none() {
            *first = pod_key(pod);
        }
        first.clone()
    }
}

/// The invariant: replaying `events`, never two existing pods (terminating ones included) on
/// one disk, each pod keyed by the disk it held when first seen.
pub fn check_one_pod_per_key(events: &[PodEvent]) -> Result<(), String> {
    let mut first_seen = FirstSeen::default();
    let mut alive: BTreeMap<String, Option<OsdKey>> = BTreeMap::new();
    for e in events {
        let name = e.pod.name_any();
        let key = first_seen.key(&e.pod);
        if e.kind == EventKind::Deleted {
            alive.remove(&name);
            continue;
        }
        alive.insert(name, key);
        let mut by_disk: BTreeMap<String, Vec<&str>> = BTreeMap::new();
        for (name, key) in &alive {
            if let Some(key) = key {
                by_disk
                    .entry(key.device_id().to_string())
                    .or_default()
                    .push(name);
            }
        }
        if let Some((disk, names)) = by_disk.iter().find(|(_, names)| names.len() > 1) {
            return Err(format!(
                "after event #{} ({:?} {}) disk {disk} had {} pods at once: {names:?}",
                e.seq,
                e.kind,
                e.pod.name_any(),
                names.len()
            ));
        }
    }
    Ok(())
}

pub(super) fn render_events(events: &[PodEvent]) -> String {
    let mut out = String::from("recorded pod events:\n");
    for e in events {
        out.push_str(&format!(
            "  #{:<3} {:>7.3}s {:<8} {} ready={} deleting={} state={}\n",
            e.seq,
            e.at.as_secs_f64(),
            format!("{:?}", e.kind),
            e.pod.name_any(),
            is_ready(&e.pod),
            e.pod.metadata.deletion_timestamp.is_some(),
            annotation(&e.pod, labels::POD_STATE).unwrap_or("-"),
        ));
    }
    out
}

/// What happened to one pod, by event sequence numbers.
#[derive(Clone, Debug, Default)]
pub struct PodHistory {
    pub name: String,
    pub key: Option<OsdKey>,
    pub created: Option<usize>,
    pub ready: Option<usize>,
    pub deletion_started: Option<usize>,
    pub gone: Option<usize>,
}

/// Every pod's history, from a recording.
#[derive(Clone, Debug, Default)]
pub struct Timeline {
    pub pods: BTreeMap<String, PodHistory>,
    /// Deletion starts in order: (seq, pod name).
    pub deletions: Vec<(usize, String)>,
    /// Creations in order: (seq, pod name).
    pub creations: Vec<(usize, String)>,
}

impl Timeline {
    pub fn from_events(events: &[PodEvent]) -> Self {
        let mut t = Timeline::default();
        for e in events {
            let name = e.pod.name_any();
            let h = t.pods.entry(name.clone()).or_insert_with(|| PodHistory {
                name: name.clone(),
                key: pod_key(&e.pod),
                ..PodHistory::default()
            });
            if h.created.is_none() {
                h.created = Some(e.seq);
                t.creations.push((e.seq, name.clone()));
            }
            if h.ready.is_none() && is_ready(&e.pod) {
                h.ready = Some(e.seq);
            }
            if h.deletion_started.is_none()
                && (e.pod.metadata.deletion_timestamp.is_some() || e.kind == EventKind::Deleted)
            {
                h.deletion_started = Some(e.seq);
                t.deletions.push((e.seq, name.clone()));
            }
            if e.kind == EventKind::Deleted {
                h.gone = Some(e.seq);
            }
        }
        t
    }

    pub fn get(&self, name: &str) -> anyhow::Result<&PodHistory> {
        self.pods
            .get(name)
            .ok_or_else(|| anyhow!("pod {name} was never recorded"))
    }

    /// The pods created for `key` after event `after`, in order.
    pub fn created_after(&self, key: &OsdKey, after: usize) -> Vec<&PodHistory> {
        let mut v: Vec<&PodHistory> = self
            .pods
            .values()
            .filter(|h| h.key.as_ref() == Some(key) && h.created.is_some_and(|c| c > after))
            .collect();
        v.sort_by_key(|h| h.created);
        v
    }

    /// Checks a completed rollout of `old` pods (name → key) against the update domain:
    /// - old pods were deleted in case-insensitive key order, one update domain at a time
    ///   (`OSD`: one key; `Host`: every key of a host before its first replacement is Ready;
    ///   buckets: every key of a bucket so, the buckets in the order of their first key);
    /// - each key's replacement was created only after its old pod was gone;
    /// - each domain's replacements were Ready before the next domain's first deletion.
    pub fn check_rollout(
        &self,
        old: &BTreeMap<String, OsdKey>,
        domains: impl Into<Domains>,
    ) -> anyhow::Result<()> {
        let grouping: Domains = domains.into();
        // Old pods by key, keys in rollout order (computed here, not by the operator's Ord).
        let by_key: BTreeMap<OsdKey, &String> = old.iter().map(|(n, k)| (k.clone(), n)).collect();
        let mut ordered: Vec<OsdKey> = by_key.keys().cloned().collect();
        ordered.sort_by_key(rollout_order);
        let domains = grouping.group(&ordered);
        // The order in which old pods started terminating.
        let old_names: BTreeSet<&String> = old.keys().collect();
        let deleted: Vec<OsdKey> = self
            .deletions
            .iter()
            .filter(|(_, n)| old_names.contains(n))
            .filter_map(|(_, n)| old.get(n).cloned())
            .collect();
        let expected: Vec<OsdKey> = domains.iter().flatten().cloned().collect();
        let same_domains = domains.iter().map(Vec::len).try_fold(0usize, |at, len| {
            let mut want: Vec<&OsdKey> = expected[at..at + len].iter().collect();
            let mut got: Vec<&OsdKey> = deleted.get(at..at + len)?.iter().collect();
            want.sort();
            got.sort();
            (want == got).then_some(at + len)
        });
        if same_domains.is_none() || deleted.len() != expected.len() {
            bail!(
                "old pods were deleted in the order {deleted:?}; expected the domains {domains:?}"
            );
        }
        let mut previous_ready: Option<(usize, String)> = None;
        for keys in &domains {
            let mut first_deletion = usize::MAX;
            let mut last_deletion = 0;
            let mut first_ready = usize::MAX;
            let mut last_ready = 0;
            for key in keys {
                let name = by_key
                    .get(key)
                    .ok_or_else(|| anyhow!("no old pod for {key}"))?;
                let h = self.get(name)?;
                let (Some(started), Some(gone)) = (h.deletion_started, h.gone) else {
                    bail!("old pod {name} ({key}) was not deleted: {h:?}");
                };
                first_deletion = first_deletion.min(started);
                last_deletion = last_deletion.max(started);
                let successors = self.created_after(key, started);
                let Some(new) = successors.first() else {
                    bail!("no replacement was created for {key} after #{started}");
                };
                let created = new.created.unwrap_or(0);
                if created < gone {
                    bail!(
                        "replacement {} of {key} created at #{created} before old pod {name} \
                         was gone at #{gone}",
                        new.name
                    );
                }
                let Some(ready) = new.ready else {
                    bail!("replacement {} of {key} never became Ready", new.name);
                };
                first_ready = first_ready.min(ready);
                last_ready = last_ready.max(ready);
            }
            if let Some((ready, what)) = &previous_ready {
                if first_deletion < *ready {
                    bail!(
                        "domain {keys:?} started at #{first_deletion} before the previous \
                         domain's replacements were Ready ({what} at #{ready})"
                    );
                }
            }
            if grouping.all_at_once() && last_deletion > first_ready {
                bail!(
                    "domain {keys:?}: a replacement was Ready at #{first_ready} before the \
                     last old pod of the domain was deleted at #{last_deletion} (not all at once)"
                );
            }
            previous_ready = Some((last_ready, format!("{keys:?}")));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests;
