//! The pod recorder: every pod event of a namespace, from before the CR exists, on one clock,
//! and the invariants checked on it (never two pods on one disk, at most `maxUnavailable`
//! update domains down, a rollout in its order and pace: [`super::invariants`]). It resumes
//! a watch that ends and relists when its resourceVersion is gone ([`super::watch`]).

use std::collections::{BTreeMap, BTreeSet};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use anyhow::{anyhow, bail};
use ceph_osd_operator::OsdKey;
use futures::StreamExt;
use k8s_openapi::api::core::v1::Pod;
use kube::api::{Api, ListParams, WatchParams};
use kube::ResourceExt;

use super::domains::Domains;
pub use super::invariants::{check_one_pod_per_key, PodHistory, Timeline};
use super::invariants::{render_events, FirstSeen};
pub use super::pod_events::{EventKind, PodEvent};
use super::watch::spawn_watch;
pub use super::watch::{WatchRecorder, Watched};
use crate::kubernetes::pods::is_ready;

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

    /// Number of events recorded so far (what the watch delivered: it may trail the API;
    /// a starting point for checks is [`Self::caught_up_seq`]).
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

    /// The `seq` the next event will get, once the recording has caught up with `api`'s
    /// current list ([`Self::catch_up`]): every change made before this call is before it.
    /// [`Self::len`] right after something was observed elsewhere (a status, Ceph) may still
    /// miss pod events that came before it: they would count as after it.
    pub async fn caught_up_seq(&self, api: &Api<Pod>) -> anyhow::Result<usize> {
        self.catch_up(api).await?;
        Ok(self.len())
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
    /// (`OSD`: the key; `Host`: the host; buckets: the host's bucket) with an OSD of `want`
    /// that has no live Ready pod (each pod counted for the OSD it was first seen with).
    pub fn unavailable_domains(
        &self,
        want: &BTreeSet<OsdKey>,
        domains: impl Into<Domains>,
        from: usize,
    ) -> Vec<(usize, BTreeSet<String>)> {
        let domains: Domains = domains.into();
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
            let down = want.difference(&available).map(|k| domains.id(k)).collect();
            out.push((e.seq, down));
        }
        out
    }

    /// The rollout invariant: from event `from` on, never more than `max` update domains with
    /// an OSD of `want` lacking a live Ready pod.
    pub fn assert_unavailable_domains_at_most(
        &self,
        want: &BTreeSet<OsdKey>,
        domains: impl Into<Domains>,
        max: usize,
        from: usize,
    ) -> anyhow::Result<()> {
        if let Some((seq, down)) = self
            .unavailable_domains(want, domains, from)
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
