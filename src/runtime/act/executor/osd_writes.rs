//! The executor's writes to Ceph's osdmap: `noout` set (a step's opening, checked against
//! the flags its question covered) or cleared, OSDs marked out or in; each read back from
//! `osd dump` (Ceph exits 0 for ids that do not exist, so only the dump proves it).

use super::execute_error::ExecuteError;
use crate::ceph::{osd_list, CephClient, OsdDump, OsdId, OsdInfo, Release};
use crate::crd::CephOsd;
use tracing::{info, warn};

/// Where the writes go: the operator's Ceph (none configured: each write fails saying so), and
/// the CephOSD they are for.
pub(super) type Writer<'a> = (Option<&'a dyn CephClient>, &'a CephOsd);

/// Opens a step: sets `noout` on `ids` and reads `osd dump` back (`noout`); a flag there on an
/// OSD outside `covered` (what the step's question covered) is another step that opened
/// meanwhile: the `noout` just set is cleared again and the plan fails before any pod goes.
///
/// Why two steps never overlap (each step's `noout` stands from before its pods go until it
/// ends; the mon orders osdmap epochs totally): of two steps, the one whose `noout` commits
/// later reads back a map holding the other's flag. Either its question covered that OSD
/// (Ceph's yes was for both down at once), or it aborts here. Both may abort (each read
/// the other's): the step lock orders the next turns, and each asks again with the union.
pub(super) async fn open_noout(
    (ceph, cr): Writer<'_>,
    ids: &[OsdId],
    covered: &[OsdId],
) -> Result<(), ExecuteError> {
    let dump = noout((ceph, cr), ids, true).await?;
    let others: Vec<OsdId> = (dump.osds.values())
        .filter(|o| o.noout && !ids.contains(&o.id) && !covered.contains(&o.id))
        .map(|o| o.id)
        .collect();
    if others.is_empty() {
        return Ok(());
    }
    warn!(cephosd = %cr.object_key(), set = %osd_list(ids), others = %osd_list(&others), "another step opened on the Ceph cluster meanwhile: clearing the noout just set");
    noout((ceph, cr), ids, false).await?;
    Err(ExecuteError::StepsCrossed {
        set: ids.to_vec(),
        others,
    })
}

/// Sets (`set`) or clears `noout` on `ids`, then reads `osd dump` back (returned): Ceph exits
/// 0 for ids that do not exist, so only the dump proves it.
pub(super) async fn noout(
    (ceph, cr): Writer<'_>,
    ids: &[OsdId],
    set: bool,
) -> Result<OsdDump, ExecuteError> {
    let what = if set { "set noout" } else { "clear noout" };
    let ceph = ceph.ok_or(ExecuteError::NoCeph { what })?;
    let changed = if set {
        ceph.add_noout(ids).await
    } else {
        ceph.rm_noout(ids).await
    };
    let ceph_error = |what, source| ExecuteError::Ceph {
        what,
        ids: ids.to_vec(),
        source,
    };
    changed.map_err(|source| ceph_error(what, source))?;
    let dump = ceph
        .osd_dump()
        .await
        .map_err(|source| ceph_error("read noout back", source))?;
    if set {
        let missing = dump.without_noout(ids);
        if !missing.is_empty() {
            return Err(ExecuteError::NooutNotSet {
                asked: ids.to_vec(),
                missing,
            });
        }
    } else {
        let left = dump.with_noout(ids);
        if !left.is_empty() {
            return Err(ExecuteError::NooutNotCleared {
                asked: ids.to_vec(),
                left,
            });
        }
    }
    info!(cephosd = %cr.object_key(), osds = %osd_list(ids), "{what}: confirmed by osd dump");
    Ok(dump)
}

/// Marks `ids` out (`out`) or in, then reads `osd dump` back: Ceph exits 0 for ids that do
/// not exist, so only the dump proves it.
pub(super) async fn mark(
    (ceph, cr): Writer<'_>,
    ids: &[OsdId],
    out: bool,
) -> Result<(), ExecuteError> {
    let what = if out { "mark out" } else { "mark in" };
    let ceph = ceph.ok_or(ExecuteError::NoCeph { what })?;
    let ceph_error = |what, source| ExecuteError::Ceph {
        what,
        ids: ids.to_vec(),
        source,
    };
    let marked = if out {
        ceph.osd_out(ids).await
    } else {
        ceph.osd_in(ids).await
    };
    marked.map_err(|source| ceph_error(what, source))?;
    let dump = ceph
        .osd_dump()
        .await
        .map_err(|source| ceph_error("read out/in back", source))?;
    let left: Vec<OsdId> = (ids.iter())
        .filter(|id| dump.osds.get(id).is_none_or(|o| o.is_in == out))
        .copied()
        .collect();
    if !left.is_empty() {
        return Err(ExecuteError::MarkNotConfirmed {
            out,
            asked: ids.to_vec(),
            left,
        });
    }
    info!(cephosd = %cr.object_key(), osds = %osd_list(ids), "{what}: confirmed by osd dump");
    Ok(())
}

/// Destroys `id` only while the OSD map is at `epoch` (where its `safe-to-destroy` passed),
/// confirmed by `osd dump`. An id destroyed already is left as it is.
pub(super) async fn destroy(
    (ceph, cr): Writer<'_>,
    id: OsdId,
    epoch: u64,
) -> Result<(), ExecuteError> {
    let what = "destroy";
    let ceph = ceph.ok_or(ExecuteError::NoCeph { what })?;
    let ceph_error = |what, source| ExecuteError::Ceph {
        what,
        ids: vec![id],
        source,
    };
    let before = (ceph.osd_dump().await)
        .map_err(|source| ceph_error("read the OSD map before destroying", source))?;
    if is_destroyed(&before, id) {
        return Ok(());
    }
    if before.epoch != epoch {
        return Err(ExecuteError::EpochMoved {
            id,
            asked_at: epoch,
            now: before.epoch,
        });
    }
    (ceph.osd_destroy(id).await).map_err(|source| ceph_error(what, source))?;
    let after =
        (ceph.osd_dump().await).map_err(|source| ceph_error("read the destroy back", source))?;
    if !is_destroyed(&after, id) {
        return Err(ExecuteError::DestroyNotConfirmed { id });
    }
    info!(cephosd = %cr.object_key(), osd = id.0, epoch, "destroyed for a disk replacement: confirmed by osd dump");
    Ok(())
}

fn is_destroyed(dump: &OsdDump, id: OsdId) -> bool {
    (dump.osds.get(&id)).is_some_and(OsdInfo::is_destroyed)
}

/// Raises `require_osd_release` to `release`, confirmed by `osd dump`.
pub(super) async fn raise_release(
    (ceph, cr): Writer<'_>,
    release: Release,
) -> Result<(), ExecuteError> {
    let what = "raise require_osd_release";
    let ceph = ceph.ok_or(ExecuteError::NoCeph { what })?;
    let ceph_error = |what, source| ExecuteError::Ceph {
        what,
        ids: Vec::new(),
        source,
    };
    (ceph.require_osd_release(release).await).map_err(|source| ceph_error(what, source))?;
    let dump = ceph
        .osd_dump()
        .await
        .map_err(|source| ceph_error("read require_osd_release back", source))?;
    if dump.require_osd_release.is_none_or(|now| now < release) {
        return Err(ExecuteError::ReleaseNotRaised {
            release,
            now: dump.require_osd_release,
        });
    }
    info!(cephosd = %cr.object_key(), %release, "raised require_osd_release: confirmed by osd dump");
    Ok(())
}
