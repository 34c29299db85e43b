//! Read-your-own-writes for the CephOSD status: a reconcile triggered by a pod event may get
//! the CephOSD from the watch cache before the cache has seen the status the previous
//! reconcile wrote. Planning from that older status would forget, for example, which update
//! domain is being replaced. So the last status written is remembered with the
//! resourceVersion it was planned from, and used while the cache still shows that version.

use crate::crd::{CephOsd, CephOsdStatus};
use crate::runtime::locked::locked;
use kube::ResourceExt;
use std::collections::HashMap;
use std::sync::{Arc, Mutex};

/// The last status written per CephOSD (by uid), with the resourceVersion it was based on.
#[derive(Default)]
pub(crate) struct WrittenStatuses {
    by_uid: Mutex<HashMap<String, (String, CephOsdStatus)>>,
}

impl WrittenStatuses {
    /// `cr` as of our last status write: the remembered status replaces the cached one while
    /// the cache still holds the version that write was planned from.
    pub(crate) fn latest(&self, cr: Arc<CephOsd>) -> Arc<CephOsd> {
        let (Some(uid), Some(version)) = (cr.uid(), cr.resource_version()) else {
            return cr;
        };
        let mut by_uid = locked(&self.by_uid);
        match by_uid.get(&uid) {
            Some((planned_from, status)) if *planned_from == version => {
                let mut newer = (*cr).clone();
                newer.status = Some(status.clone());
                Arc::new(newer)
            }
            Some(_) => {
                // The cache has moved on: it holds our write or something newer.
                by_uid.remove(&uid);
                cr
            }
            None => cr,
        }
    }

    /// Records that `status` was written over `cr` (as planned from).
    pub(crate) fn remember(&self, cr: &CephOsd, status: &CephOsdStatus) {
        if let (Some(uid), Some(version)) = (cr.uid(), cr.resource_version()) {
            let mut by_uid = locked(&self.by_uid);
            by_uid.insert(uid, (version, status.clone()));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn cr(version: &str, updating: &[&str]) -> Arc<CephOsd> {
        Arc::new(
            serde_json::from_value(json!({
                "apiVersion": "ceph.elemental.net/v1alpha1", "kind": "CephOSD",
                "metadata": {"name": "c", "namespace": "n", "uid": "u", "resourceVersion": version},
                "spec": {"storage": [], "updateDomain": "OSD", "podTemplate": {}},
                "status": {"currentUpdate": updating},
            }))
            .expect("a CephOSD"),
        )
    }

    fn updating(cr: &CephOsd) -> Vec<String> {
        cr.status.clone().unwrap_or_default().current_update
    }

    #[test]
    fn the_written_status_stands_in_until_the_cache_moves_on() {
        let written = WrittenStatuses::default();
        let planned_from = cr("7", &[]);
        let mut status = planned_from.status.clone().unwrap_or_default();
        status.current_update = vec!["w1".into()];
        written.remember(&planned_from, &status);

        // The cache still shows version 7: our write replaces its status.
        assert_eq!(updating(&written.latest(cr("7", &[]))), ["w1"]);
        assert_eq!(updating(&written.latest(cr("7", &[]))), ["w1"]);
        // The cache has seen a newer version: it is used as it is, and the memory dropped.
        assert_eq!(updating(&written.latest(cr("8", &["w2"]))), ["w2"]);
        assert!(updating(&written.latest(cr("7", &[]))).is_empty());
    }

    #[test]
    fn nothing_remembered_changes_nothing() {
        let written = WrittenStatuses::default();
        assert!(updating(&written.latest(cr("7", &[]))).is_empty());
    }
}
