//! Who holds each OSD id (one daemon per id, held by the pod it runs for from its start to its
//! stop), and the operations on daemons that ended.

use std::collections::{BTreeMap, BTreeSet};

use super::table::Disk;
use crate::ceph::Release;

/// Who holds an OSD id: the pod whose daemon starts, runs or stops.
#[derive(Clone, Debug)]
pub(super) struct Holder {
    pub(super) uid: String,
    pub(super) pod: String,
    pub(super) phase: Phase,
    /// The release its daemon runs.
    pub(super) release: Release,
    pub(super) up_from_before: u64,
    pub(super) booted: bool,
    pub(super) marked: bool,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Phase {
    Starting,
    Running,
    Stopping,
    /// Killed, its disk wiped ([`super::CephBridge::fail_disk`]).
    Failing,
}

/// Who holds each OSD id (one daemon per id), and the pods whose daemon ran and stopped.
pub(super) struct Slots {
    holders: BTreeMap<u32, Option<Holder>>,
    /// Pods (uid) whose daemon ran and stopped: never started again.
    finished: BTreeSet<String>,
}

impl Slots {
    pub(super) fn new(ids: impl IntoIterator<Item = u32>) -> Self {
        Self {
            holders: ids.into_iter().map(|id| (id, None)).collect(),
            finished: BTreeSet::new(),
        }
    }

    /// Every OSD id of the table.
    pub(super) fn ids(&self) -> Vec<u32> {
        self.holders.keys().copied().collect()
    }

    /// Who holds `id`, if anyone.
    pub(super) fn holder(&self, id: u32) -> Option<&Holder> {
        self.holders.get(&id).and_then(Option::as_ref)
    }

    pub(super) fn holder_mut(&mut self, id: u32) -> Option<&mut Holder> {
        self.holders.get_mut(&id).and_then(Option::as_mut)
    }

    /// Every id held, with its holder.
    pub(super) fn held_mut(&mut self) -> impl Iterator<Item = (u32, &mut Holder)> {
        (self.holders.iter_mut()).filter_map(|(id, h)| h.as_mut().map(|h| (*id, h)))
    }

    /// The ids pod `uid`'s daemon holds (one at most).
    pub(super) fn held_by<'a>(&'a self, uid: &'a str) -> impl Iterator<Item = (u32, &'a Holder)> {
        (self.holders.iter())
            .filter_map(|(id, h)| h.as_ref().map(|h| (*id, h)))
            .filter(move |(_, h)| h.uid == uid)
    }

    /// Whether pod `uid`'s daemon starts, runs or stops.
    pub(super) fn holds(&self, uid: &str) -> bool {
        self.held_by(uid).next().is_some()
    }

    /// `id` is an OSD id of the table (free unless held already).
    pub(super) fn add(&mut self, id: u32) {
        self.holders.entry(id).or_insert(None);
    }

    pub(super) fn hold(&mut self, id: u32, holder: Holder) {
        self.holders.insert(id, Some(holder));
    }

    /// `id` is free again; returns who held it.
    pub(super) fn free(&mut self, id: u32) -> Option<Holder> {
        self.holders.get_mut(&id).and_then(Option::take)
    }

    /// Frees every id; returns who held them.
    pub(super) fn free_all(&mut self) -> Vec<(u32, Holder)> {
        (self.holders.iter_mut())
            .filter_map(|(id, h)| h.take().map(|h| (*id, h)))
            .collect()
    }

    /// Pod `uid`'s daemon ran (or failed to start): it gets none again.
    pub(super) fn finish(&mut self, uid: &str) {
        self.finished.insert(uid.to_owned());
    }

    pub(super) fn is_finished(&self, uid: &str) -> bool {
        self.finished.contains(uid)
    }
}

/// An operation that ended.
pub(super) enum Done {
    Started {
        osd: u32,
        result: Result<u64, String>,
    },
    Stopped {
        osd: u32,
        result: Result<(), String>,
        remove: bool,
    },
    /// `osd-wipe` of a failed disk.
    Wiped {
        disk: Disk,
        osd: u32,
        result: Result<(), String>,
    },
    /// `osd-prepare` of a blank disk's next pod.
    Prepared {
        disk: Disk,
        uid: String,
        pod: String,
        osd: u32,
        result: Result<(), String>,
    },
    Other,
}
