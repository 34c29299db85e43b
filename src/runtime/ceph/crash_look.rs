//! Ceph's new crash reports for a CephOSD whose rollout is under way (`crashes_matter`): read
//! for each plan at most every `CRASH_LOOKS` (the last read stands in between), and afresh
//! with each answer that may start a step. Never asked without a mgr (the crash module's
//! command would hang until its bound and hold the plan: a step's replacement pod is never
//! held back), and given up after `CRASH_LOOK_TIMEOUT`: the last read stands then. Unreadable
//! (a key without the `crash ls-new` cap): none known, said in the log; the rollout then halts
//! on a crashed daemon only by its progress deadline.

use crate::ceph::{CephClient, CrashReport};
use crate::crd::CephOsd;
use crate::plan::gate::crashes::{crashes_matter, CRASH_LOOKS};
use crate::runtime::memory::Memory;
use std::time::{Duration, Instant};

/// How long one read of the crash reports may take.
const CRASH_LOOK_TIMEOUT: Duration = Duration::from_secs(2);

/// How a look at the crash reports may use the last read.
#[derive(Clone, Copy, Debug)]
pub(crate) enum CrashRead {
    /// The last read when it is recent (`CRASH_LOOKS`): for each plan.
    Recent,
    /// Read now: for an answer that may start a step.
    Now,
}

/// The new crash reports the plan of `cr` judges; None when they do not matter to it (or
/// none was ever read). `mgr_available`: the last look at Ceph showed a mgr.
pub(crate) async fn look_at_crashes(
    ceph: &dyn CephClient,
    memory: &Memory,
    cr: &CephOsd,
    read: CrashRead,
    mgr_available: bool,
) -> Option<Vec<CrashReport>> {
    if !crashes_matter(cr.status.as_ref()) {
        return None;
    }
    let key = cr.object_key();
    let now = Instant::now();
    let every = Duration::try_from(CRASH_LOOKS).unwrap_or(Duration::from_secs(10));
    if let (CrashRead::Recent, Some(known)) = (read, memory.recent_crashes(&key, now, every)) {
        return Some(known);
    }
    if !mgr_available {
        return memory.last_crashes(&key);
    }
    let crashes = match tokio::time::timeout(CRASH_LOOK_TIMEOUT, ceph.new_crashes()).await {
        Ok(Ok(crashes)) => crashes,
        Ok(Err(error)) => {
            tracing::warn!(
                cephosd = %key,
                %error,
                "Ceph's crash reports are not readable: a crashing daemon halts the rollout \
                 only by its progress deadline"
            );
            Vec::new()
        }
        Err(_) => return memory.last_crashes(&key),
    };
    memory.remember_crashes(&key, now, crashes.clone());
    Some(crashes)
}

#[cfg(test)]
mod tests;
