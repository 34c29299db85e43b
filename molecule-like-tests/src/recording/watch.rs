//! Watch recorders: a watch resumed from the last resourceVersion seen whenever it ends, and
//! relisted (the difference recorded as events) when that resourceVersion is gone, so a check
//! never passes on a recording with a gap. [`WatchRecorder`] records any kind.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use anyhow::bail;
use futures::stream::BoxStream;
use futures::StreamExt;
use kube::api::{Api, ListParams, WatchEvent, WatchParams};

use super::pod_events::EventKind;

/// Watches `api` from `rv` (starting with the open stream `first`), resuming from the last
/// seen resourceVersion whenever a watch ends. When that resourceVersion is gone (`410`, e.g.
/// after kube-apiserver restarted), it relists as an informer does and records the difference
/// to what it knew (`initial` plus every event since) as Added / Modified / Deleted events.
#[allow(clippy::too_many_arguments)]
pub(super) fn spawn_watch<K, R, F>(
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
    let key = object_key::<K>;
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

/// `namespace/name` of an object.
fn object_key<K: kube::Resource>(o: &K) -> String {
    let meta = o.meta();
    format!(
        "{}/{}",
        meta.namespace.as_deref().unwrap_or(""),
        meta.name.as_deref().unwrap_or("")
    )
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
    api: Api<K>,
    list: ListParams,
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
        let recorded_api = api.clone();
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
            api: recorded_api,
            list,
            events,
            task,
        })
    }

    /// Every event recorded once the recording has caught up with a list made now (each
    /// listed object's resourceVersion recorded, or listed at the start): a change observed
    /// elsewhere (a GET, a poll) before this call is in it.
    pub async fn caught_up_events(&self) -> anyhow::Result<Vec<Watched<K>>> {
        let deadline = Instant::now() + Duration::from_secs(10);
        let listed = self.api.list(&self.list).await?;
        let want: BTreeMap<String, Option<String>> = (listed.items.iter())
            .map(|o| (object_key(o), o.meta().resource_version.clone()))
            .collect();
        loop {
            let events = self.events()?;
            let mut seen: BTreeMap<String, Option<String>> = (self.initial.iter())
                .map(|o| (object_key(o), o.meta().resource_version.clone()))
                .collect();
            for e in &events {
                seen.insert(
                    object_key(&e.object),
                    e.object.meta().resource_version.clone(),
                );
            }
            if want.iter().all(|(key, rv)| seen.get(key) == Some(rv)) {
                return Ok(events);
            }
            if Instant::now() > deadline {
                bail!(
                    "watch recorder did not catch up in 10 s: listed {want:?}, recorded {seen:?}"
                );
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
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
