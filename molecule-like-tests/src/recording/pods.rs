//! Recorders of watch events, from before the CR exists, and the invariants checked on what
//! they recorded: never two pods on one disk, at most `maxUnavailable` update domains down, a
//! rollout in its order and pace. A recorder resumes a watch that ends and relists when its
//! resourceVersion is gone, so a check never passes on a recording with a gap.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use anyhow::{anyhow, bail};
use ceph_osd_operator::crd::UpdateDomain;
use ceph_osd_operator::{labels, OsdKey};
use futures::stream::BoxStream;
use futures::StreamExt;
use k8s_openapi::api::core::v1::Pod;
use kube::api::{Api, ListParams, WatchEvent, WatchParams};
use kube::ResourceExt;

use crate::kubernetes::pods::{annotation, is_ready, pod_key, rollout_order};

/// What a watch event said about a pod.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum EventKind {
    Added,
    Modified,
    Deleted,
}

/// One recorded watch event.
#[derive(Clone, Debug)]
pub struct PodEvent {
    /// Position in the recording (0, 1, 2, …).
    pub seq: usize,
    /// Time since the recorder started.
    pub at: Duration,
    pub kind: EventKind,
    pub pod: Pod,
}

#[derive(Default)]
struct Recording {
    events: Vec<PodEvent>,
    /// Set when the watch could not resume (events may be missing): every check fails.
    gap: Option<String>,
}

/// Records every watch event of the pods of one namespace, from before the CR exists.
pub struct PodRecorder {
    recording: Arc<Mutex<Recording>>,
    started: Instant,
    task: tokio::task::JoinHandle<()>,
}

impl Drop for PodRecorder {
    fn drop(&mut self) {
        self.task.abort();
    }
}

fn lock(recording: &Mutex<Recording>) -> std::sync::MutexGuard<'_, Recording> {
    recording
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

impl PodRecorder {
    /// Lists the namespace's pods and watches from that list's resourceVersion on, resuming
    /// from the last seen resourceVersion whenever a watch ends (relisting when it is gone).
    /// Returns once the watch is open, so nothing that happens afterwards can be missed.
    pub async fn start(api: Api<Pod>) -> anyhow::Result<Self> {
        let list = api.list(&ListParams::default()).await?;
        let recording = Arc::new(Mutex::new(Recording::default()));
        let started = Instant::now();
        {
            let mut r = lock(&recording);
            for pod in list.items.iter().cloned() {
                let seq = r.events.len();
                r.events.push(PodEvent {
                    seq,
                    at: Duration::ZERO,
                    kind: EventKind::Added,
                    pod,
                });
            }
        }
        let rv = list.metadata.resource_version.unwrap_or_default();
        let params = WatchParams::default().timeout(290);
        let first = api.watch(&params, &rv).await?.boxed();
        let (rec, gap) = (Arc::clone(&recording), Arc::clone(&recording));
        let task = spawn_watch(
            api,
            params,
            rv,
            first,
            &list.items,
            "recorder",
            move |kind, pod| {
                let mut r = lock(&rec);
                let seq = r.events.len();
                r.events.push(PodEvent {
                    seq,
                    at: started.elapsed(),
                    kind,
                    pod,
                });
            },
            move |why| lock(&gap).gap = Some(why),
        );
        Ok(Self {
            recording,
            started,
            task,
        })
    }

    /// Now on the clock of [`PodEvent::at`].
    pub fn elapsed(&self) -> Duration {
        self.started.elapsed()
    }

    /// A copy of every event recorded so far.
    pub fn events(&self) -> Vec<PodEvent> {
        lock(&self.recording).events.clone()
    }

    /// Number of events recorded so far.
    pub fn len(&self) -> usize {
        lock(&self.recording).events.len()
    }

    /// Whether nothing was recorded yet.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The pods alive after replaying every event: name → (resourceVersion).
    fn replayed_state(&self) -> BTreeMap<String, String> {
        let mut state = BTreeMap::new();
        for e in &lock(&self.recording).events {
            let name = e.pod.name_any();
            if e.kind == EventKind::Deleted {
                state.remove(&name);
            } else {
                state.insert(
                    name,
                    e.pod.metadata.resource_version.clone().unwrap_or_default(),
                );
            }
        }
        state
    }

    /// Waits until the recording has caught up with `api`'s current list (same pods, same
    /// resourceVersions), so checks see everything that happened so far.
    pub async fn catch_up(&self, api: &Api<Pod>) -> anyhow::Result<()> {
        let deadline = Instant::now() + Duration::from_secs(10);
        loop {
            let list = api.list(&ListParams::default()).await?;
            let now: BTreeMap<String, String> = list
                .items
                .iter()
                .map(|p| {
                    (
                        p.name_any(),
                        p.metadata.resource_version.clone().unwrap_or_default(),
                    )
                })
                .collect();
            if let Some(gap) = &lock(&self.recording).gap {
                bail!("pod recorder: {gap}");
            }
            let seen = self.replayed_state();
            if seen == now {
                return Ok(());
            }
            if Instant::now() > deadline {
                bail!("pod recorder did not catch up in 10 s: recorded {seen:?}, listed {now:?}");
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }

    /// Replays the events and checks that at no moment two pods (terminating ones included)
    /// existed for one disk (each pod keyed by the disk it held when first seen).
    pub fn assert_one_pod_per_key(&self) -> anyhow::Result<()> {
        let r = lock(&self.recording);
        if let Some(gap) = &r.gap {
            bail!("pod recorder: {gap}");
        }
        check_one_pod_per_key(&r.events).map_err(|e| anyhow!("{e}\n{}", render_events(&r.events)))
    }

    /// [`Self::assert_one_pod_per_key`] among the pods a CephOSD controls: for scenarios that
    /// put pods of their own (strays, another controller's) on an OSD's disk on purpose.
    pub fn assert_one_controlled_pod_per_key(&self) -> anyhow::Result<()> {
        let r = lock(&self.recording);
        if let Some(gap) = &r.gap {
            bail!("pod recorder: {gap}");
        }
        let controlled: Vec<PodEvent> = r
            .events
            .iter()
            .filter(|e| {
                e.pod
                    .metadata
                    .owner_references
                    .iter()
                    .flatten()
                    .any(|o| o.controller == Some(true) && o.kind == "CephOSD")
            })
            .cloned()
            .collect();
        check_one_pod_per_key(&controlled).map_err(|e| anyhow!("{e}\n{}", render_events(&r.events)))
    }

    /// Replays the events and returns, after each one from event `from` on, the update domains
    /// (`OSD`: the key; `Host`: the host) with an OSD of `want` that has no live Ready pod
    /// (each pod counted for the OSD it was first seen with).
    pub fn unavailable_domains(
        &self,
        want: &BTreeSet<OsdKey>,
        domain: UpdateDomain,
        from: usize,
    ) -> Vec<(usize, BTreeSet<String>)> {
        let r = lock(&self.recording);
        let mut first_seen = FirstSeen::default();
        let mut pods: BTreeMap<String, (&Pod, Option<OsdKey>)> = BTreeMap::new();
        let mut out = Vec::new();
        for e in &r.events {
            let name = e.pod.name_any();
            let key = first_seen.key(&e.pod);
            if e.kind == EventKind::Deleted {
                pods.remove(&name);
            } else {
                pods.insert(name, (&e.pod, key));
            }
            if e.seq < from {
                continue;
            }
            let available: BTreeSet<OsdKey> = pods
                .values()
                .filter(|(p, _)| p.metadata.deletion_timestamp.is_none() && is_ready(p))
                .filter_map(|(_, key)| key.clone())
                .collect();
            let down = want
                .difference(&available)
                .map(|k| match domain {
                    UpdateDomain::Osd => k.to_string(),
                    UpdateDomain::Host => k.host.clone(),
                })
                .collect();
            out.push((e.seq, down));
        }
        out
    }

    /// The rollout invariant: from event `from` on, never more than `max` update domains with
    /// an OSD of `want` lacking a live Ready pod.
    pub fn assert_unavailable_domains_at_most(
        &self,
        want: &BTreeSet<OsdKey>,
        domain: UpdateDomain,
        max: usize,
        from: usize,
    ) -> anyhow::Result<()> {
        if let Some((seq, down)) = self
            .unavailable_domains(want, domain, from)
            .into_iter()
            .find(|(_, down)| down.len() > max)
        {
            bail!(
                "{} update domains unavailable at once after event #{seq} (at most {max}): \
                 {down:?}\n{}",
                down.len(),
                self.render()
            );
        }
        Ok(())
    }

    /// The recorded history as facts (created, Ready, deletion started, gone) per pod.
    pub fn timeline(&self) -> Timeline {
        Timeline::from_events(&lock(&self.recording).events)
    }

    /// The recording, one line per event (for failure messages).
    pub fn render(&self) -> String {
        render_events(&lock(&self.recording).events)
    }
}

/// The disk each pod held when it was first seen (its annotations then, as the operator
/// wrote them): an annotation edited later does not move a running daemon.
#[derive(Default)]
struct FirstSeen(BTreeMap<String, Option<OsdKey>>);

impl FirstSeen {
    /// The key `pod` was first seen with (learning it now if this is its first event).
    fn key(&mut self, pod: &Pod) -> Option<OsdKey> {
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

fn render_events(events: &[PodEvent]) -> String {
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
    ///   (`OSD`: one key; `Host`: every key of a host before its first replacement is Ready);
    /// - each key's replacement was created only after its old pod was gone;
    /// - each domain's replacements were Ready before the next domain's first deletion.
    pub fn check_rollout(
        &self,
        old: &BTreeMap<String, OsdKey>,
        domain: UpdateDomain,
    ) -> anyhow::Result<()> {
        // Old pods by key, keys in rollout order (computed here, not by the operator's Ord).
        let by_key: BTreeMap<OsdKey, &String> = old.iter().map(|(n, k)| (k.clone(), n)).collect();
        let mut ordered: Vec<OsdKey> = by_key.keys().cloned().collect();
        ordered.sort_by_key(rollout_order);
        let domains: Vec<Vec<OsdKey>> = match domain {
            UpdateDomain::Osd => ordered.iter().map(|k| vec![k.clone()]).collect(),
            UpdateDomain::Host => {
                let mut hosts: Vec<&str> = ordered.iter().map(|k| k.host.as_str()).collect();
                hosts.sort_by_key(|h| (h.to_lowercase(), h.to_string()));
                hosts.dedup();
                hosts
                    .iter()
                    .map(|h| ordered.iter().filter(|k| k.host == *h).cloned().collect())
                    .collect()
            }
        };
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
            if domain == UpdateDomain::Host && last_deletion > first_ready {
                bail!(
                    "host domain {keys:?}: a replacement was Ready at #{first_ready} before the \
                     last old pod of the host was deleted at #{last_deletion} (not all at once)"
                );
            }
            previous_ready = Some((last_ready, format!("{keys:?}")));
        }
        Ok(())
    }
}

/// Watches `api` from `rv` (starting with the open stream `first`), resuming from the last
/// seen resourceVersion whenever a watch ends. When that resourceVersion is gone (`410`, e.g.
/// after kube-apiserver restarted), it relists as an informer does and records the difference
/// to what it knew (`initial` plus every event since) as Added / Modified / Deleted events.
#[allow(clippy::too_many_arguments)]
fn spawn_watch<K, R, F>(
    api: Api<K>,
    params: WatchParams,
    mut rv: String,
    first: BoxStream<'static, kube::Result<WatchEvent<K>>>,
    initial: &[K],
    label: &'static str,
    mut record: R,
    fail: F,
) -> tokio::task::JoinHandle<()>
where
    K: kube::Resource + Clone + serde::de::DeserializeOwned + std::fmt::Debug + Send + 'static,
    R: FnMut(EventKind, K) + Send + 'static,
    F: FnOnce(String) + Send + 'static,
{
    let key = |o: &K| {
        let meta = o.meta();
        format!(
            "{}/{}",
            meta.namespace.as_deref().unwrap_or(""),
            meta.name.as_deref().unwrap_or("")
        )
    };
    let mut known: BTreeMap<String, K> = initial.iter().map(|o| (key(o), o.clone())).collect();
    let list_params = ListParams {
        label_selector: params.label_selector.clone(),
        field_selector: params.field_selector.clone(),
        ..ListParams::default()
    };
    tokio::spawn(async move {
        let mut stream = Some(first);
        let mut relist = false;
        loop {
            if relist {
                let list = match api.list(&list_params).await {
                    Ok(list) => list,
                    Err(e) => {
                        tracing::warn!(error = %e, "{label}: relist failed; retrying");
                        tokio::time::sleep(Duration::from_millis(200)).await;
                        continue;
                    }
                };
                let listed: BTreeMap<String, K> =
                    list.items.into_iter().map(|o| (key(&o), o)).collect();
                for (name, old) in &known {
                    if !listed.contains_key(name) {
                        record(EventKind::Deleted, old.clone());
                    }
                }
                for (name, object) in &listed {
                    let changed = known
                        .get(name)
                        .map(|old| old.meta().resource_version != object.meta().resource_version);
                    match changed {
                        None => record(EventKind::Added, object.clone()),
                        Some(true) => record(EventKind::Modified, object.clone()),
                        Some(false) => {}
                    }
                }
                tracing::info!("{label}: resourceVersion {rv} is gone; relisted");
                known = listed;
                rv = list.metadata.resource_version.unwrap_or_default();
                relist = false;
            }
            let mut s = match stream.take() {
                Some(s) => s,
                None => match api.watch(&params, &rv).await {
                    Ok(s) => s.boxed(),
                    Err(kube::Error::Api(status)) if status.code == 410 => {
                        relist = true;
                        continue;
                    }
                    Err(e) => {
                        tracing::warn!(error = %e, "{label}: re-watch failed; retrying");
                        tokio::time::sleep(Duration::from_millis(200)).await;
                        continue;
                    }
                },
            };
            while let Some(item) = s.next().await {
                let (kind, object) = match item {
                    Ok(WatchEvent::Added(o)) => (EventKind::Added, o),
                    Ok(WatchEvent::Modified(o)) => (EventKind::Modified, o),
                    Ok(WatchEvent::Deleted(o)) => (EventKind::Deleted, o),
                    Ok(WatchEvent::Bookmark(b)) => {
                        rv = b.metadata.resource_version;
                        continue;
                    }
                    Ok(WatchEvent::Error(status)) if status.code == 410 => {
                        relist = true;
                        break;
                    }
                    Ok(WatchEvent::Error(status)) => {
                        fail(format!(
                            "the watch failed at resourceVersion {rv}: {status:?}"
                        ));
                        return;
                    }
                    Err(e) => {
                        tracing::warn!(error = %e, "{label}: watch stream error");
                        break;
                    }
                };
                if let Some(v) = object.meta().resource_version.as_ref() {
                    rv.clone_from(v);
                }
                if kind == EventKind::Deleted {
                    known.remove(&key(&object));
                } else {
                    known.insert(key(&object), object.clone());
                }
                record(kind, object);
            }
        }
    })
}

/// What a [`WatchRecorder`] saw: one watch event.
#[derive(Clone, Debug)]
pub struct Watched<K> {
    /// Time since the recorder started.
    pub at: Duration,
    pub kind: EventKind,
    pub object: K,
}

/// A [`WatchRecorder`]'s events and, when the watch could not resume, why.
type WatchLog<K> = Arc<Mutex<(Vec<Watched<K>>, Option<String>)>>;

/// Records every watch event of one kind of object (any `Api<K>`) from a list on: the objects
/// listed at the start are in [`WatchRecorder::initial`], everything afterwards in
/// [`WatchRecorder::events`]. Resumes from the last resourceVersion when a watch ends.
pub struct WatchRecorder<K> {
    pub initial: Vec<K>,
    events: WatchLog<K>,
    task: tokio::task::JoinHandle<()>,
}

impl<K> Drop for WatchRecorder<K> {
    fn drop(&mut self) {
        self.task.abort();
    }
}

impl<K> WatchRecorder<K>
where
    K: kube::Resource
        + Clone
        + serde::de::DeserializeOwned
        + std::fmt::Debug
        + Send
        + Sync
        + 'static,
{
    /// Lists `api` (with `list`'s selectors) and watches from that list's resourceVersion
    /// (with `watch`'s); returns once the watch is open.
    pub async fn start(api: Api<K>, list: ListParams, watch: WatchParams) -> anyhow::Result<Self> {
        let listed = api.list(&list).await?;
        let rv = listed.metadata.resource_version.unwrap_or_default();
        let watch = watch.timeout(290);
        let first = api.watch(&watch, &rv).await?.boxed();
        let events: WatchLog<K> = Arc::new(Mutex::new((Vec::new(), None)));
        let (sink, gap) = (Arc::clone(&events), Arc::clone(&events));
        let started = Instant::now();
        let task = spawn_watch(
            api,
            watch,
            rv,
            first,
            &listed.items,
            "watch recorder",
            move |kind, object| {
                sink.lock()
                    .unwrap_or_else(std::sync::PoisonError::into_inner)
                    .0
                    .push(Watched {
                        at: started.elapsed(),
                        kind,
                        object,
                    });
            },
            move |why| {
                gap.lock()
                    .unwrap_or_else(std::sync::PoisonError::into_inner)
                    .1 = Some(why);
            },
        );
        Ok(Self {
            initial: listed.items,
            events,
            task,
        })
    }

    /// Every event recorded so far; fails when the watch could not resume (events missing).
    pub fn events(&self) -> anyhow::Result<Vec<Watched<K>>> {
        let g = self
            .events
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if let Some(gap) = &g.1 {
            bail!("watch recorder: {gap}");
        }
        Ok(g.0.clone())
    }
}

#[cfg(test)]
mod tests {
    //! The replay checks must be able to fail: synthetic recordings, no control plane.
    use super::*;
    use serde_json::json;

    #[test]
    fn a_pod_is_keyed_by_the_disk_it_held_when_first_seen() {
        use EventKind::{Added, Modified};
        // p1's host annotation is edited to h5; p2 then appears on p1's disk: two pods.
        let edited = events(&[
            (Added, "p1", "h1", "/dev/sdb", true, false),
            (Modified, "p1", "h5", "/dev/sdb", true, false),
            (Added, "p2", "h1", "/dev/sdb", false, false),
        ]);
        let error = check_one_pod_per_key(&edited).expect_err("two pods on h1:/dev/sdb");
        assert!(error.contains("h1:/dev/sdb"), "{error}");
        // And another spelling of one disk is that disk.
        let respelled = events(&[
            (Added, "p1", "h1", "/dev/sdb", true, false),
            (Added, "p2", "h1", "/dev//sdb", false, false),
        ]);
        assert!(check_one_pod_per_key(&respelled).is_err());
    }

    fn pod(name: &str, host: &str, data: &str, ready: bool, deleting: bool) -> Pod {
        let mut v = json!({
            "metadata": {"name": name, "annotations": {labels::HOST: host, labels::DATA: data}},
            "status": {"conditions": [{"type": "Ready", "status": if ready { "True" } else { "False" }}]},
        });
        if deleting {
            v["metadata"]["deletionTimestamp"] = json!("2026-01-01T00:00:00Z");
        }
        serde_json::from_value(v).expect("pod")
    }

    /// Events from (kind, name, host, data, ready, deleting).
    fn events(list: &[(EventKind, &str, &str, &str, bool, bool)]) -> Vec<PodEvent> {
        list.iter()
            .enumerate()
            .map(
                |(seq, (kind, name, host, data, ready, deleting))| PodEvent {
                    seq,
                    at: Duration::ZERO,
                    kind: *kind,
                    pod: pod(name, host, data, *ready, *deleting),
                },
            )
            .collect()
    }

    use EventKind::{Added as A, Deleted as D, Modified as M};

    /// Replace `old` (key h:d) by `new`: terminate, gone, create, Ready.
    fn replace<'a>(
        old: &'a str,
        new: &'a str,
        h: &'a str,
        d: &'a str,
    ) -> Vec<(EventKind, &'a str, &'a str, &'a str, bool, bool)> {
        vec![
            (M, old, h, d, true, true),
            (D, old, h, d, true, true),
            (A, new, h, d, false, false),
            (M, new, h, d, true, false),
        ]
    }

    fn initial() -> Vec<(
        EventKind,
        &'static str,
        &'static str,
        &'static str,
        bool,
        bool,
    )> {
        vec![
            (A, "p1", "h1", "/dev/B", true, false),
            (A, "p2", "h1", "/dev/c", true, false),
            (A, "p3", "H2", "/dev/a", true, false),
        ]
    }

    fn old() -> BTreeMap<String, OsdKey> {
        [
            ("p1", "h1", "/dev/B"),
            ("p2", "h1", "/dev/c"),
            ("p3", "H2", "/dev/a"),
        ]
        .iter()
        .map(|(n, h, d)| ((*n).to_owned(), OsdKey::new(*h, *d)))
        .collect()
    }

    #[test]
    fn two_pods_for_one_key_are_caught_even_while_terminating() {
        let ok = events(&[
            (A, "a", "h", "/dev/sdb", true, false),
            (M, "a", "h", "/dev/sdb", true, true),
            (D, "a", "h", "/dev/sdb", true, true),
            (A, "b", "h", "/dev/sdb", false, false),
        ]);
        assert!(check_one_pod_per_key(&ok).is_ok());
        let bad = events(&[
            (A, "a", "h", "/dev/sdb", true, false),
            (M, "a", "h", "/dev/sdb", true, true),
            (A, "b", "h", "/dev/sdb", false, false),
            (D, "a", "h", "/dev/sdb", true, true),
        ]);
        let err = check_one_pod_per_key(&bad).expect_err("overlap");
        assert!(
            err.contains("event #2") && err.contains("h:/dev/sdb"),
            "{err}"
        );
    }

    #[test]
    fn osd_rollout_in_case_insensitive_key_order_passes() {
        // Order: h1:/dev/B < h1:/dev/c < H2:/dev/a (bytewise H2 would come first).
        let mut list = initial();
        list.extend(replace("p1", "n1", "h1", "/dev/B"));
        list.extend(replace("p2", "n2", "h1", "/dev/c"));
        list.extend(replace("p3", "n3", "H2", "/dev/a"));
        let t = Timeline::from_events(&events(&list));
        t.check_rollout(&old(), UpdateDomain::Osd).expect("valid");
        // The same recording is not a Host rollout (h1's pods were not deleted together).
        assert!(t.check_rollout(&old(), UpdateDomain::Host).is_err());
    }

    #[test]
    fn osd_rollout_in_bytewise_order_fails() {
        let mut list = initial();
        list.extend(replace("p3", "n3", "H2", "/dev/a"));
        list.extend(replace("p1", "n1", "h1", "/dev/B"));
        list.extend(replace("p2", "n2", "h1", "/dev/c"));
        let t = Timeline::from_events(&events(&list));
        let err = t
            .check_rollout(&old(), UpdateDomain::Osd)
            .expect_err("order");
        assert!(err.to_string().contains("deleted in the order"), "{err}");
    }

    #[test]
    fn next_deletion_before_the_replacement_is_ready_fails() {
        let mut list = initial();
        list.extend([
            (M, "p1", "h1", "/dev/B", true, true),
            (D, "p1", "h1", "/dev/B", true, true),
            (A, "n1", "h1", "/dev/B", false, false),
            (M, "p2", "h1", "/dev/c", true, true), // too early: n1 is not Ready yet
            (M, "n1", "h1", "/dev/B", true, false),
        ]);
        list.extend([
            (D, "p2", "h1", "/dev/c", true, true),
            (A, "n2", "h1", "/dev/c", false, false),
            (M, "n2", "h1", "/dev/c", true, false),
        ]);
        list.extend(replace("p3", "n3", "H2", "/dev/a"));
        let t = Timeline::from_events(&events(&list));
        let err = t
            .check_rollout(&old(), UpdateDomain::Osd)
            .expect_err("gate");
        assert!(err.to_string().contains("before the previous"), "{err}");
    }

    #[test]
    fn host_rollout_deletes_all_pods_of_a_host_then_the_next_host() {
        let mut list = initial();
        list.extend([
            (M, "p1", "h1", "/dev/B", true, true),
            (M, "p2", "h1", "/dev/c", true, true),
            (D, "p1", "h1", "/dev/B", true, true),
            (D, "p2", "h1", "/dev/c", true, true),
            (A, "n1", "h1", "/dev/B", false, false),
            (A, "n2", "h1", "/dev/c", false, false),
            (M, "n1", "h1", "/dev/B", true, false),
            (M, "n2", "h1", "/dev/c", true, false),
        ]);
        list.extend(replace("p3", "n3", "H2", "/dev/a"));
        let t = Timeline::from_events(&events(&list));
        t.check_rollout(&old(), UpdateDomain::Host).expect("valid");
        // Replacement created before the old pod was gone: caught.
        let mut early = initial();
        early.extend([
            (M, "p1", "h1", "/dev/B", true, true),
            (A, "n1", "h1", "/dev/B", false, false),
            (D, "p1", "h1", "/dev/B", true, true),
        ]);
        let t = Timeline::from_events(&events(&early));
        assert!(t.check_rollout(&old(), UpdateDomain::Host).is_err());
    }
}
