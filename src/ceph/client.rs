//! The questions the rollout gate asks Ceph, one method each, and how asking can fail. The
//! trait knows no command line: the CLI implementation (`cli`) and the scripted fake of the
//! tests implement it.

use super::answers::{
    ClusterStatus, OkToStop, OsdDump, OsdMetadata, ParseError, PgBrief, PgStates, SafeToDestroy,
};
use super::crashes::CrashReport;
use super::crush::{CrushRule, CrushTree, PoolRule};
use super::osd_df::OsdUsage;
use super::osd_id::OsdId;
use super::release::Release;
use super::versions::DaemonReleases;
use futures::future::BoxFuture;
use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::Duration;

/// Asks Ceph. Every call is bounded in time; independent calls may run at once. Futures are
/// boxed so the operator can hold any implementation as `dyn CephClient`.
pub trait CephClient: Send + Sync {
    /// `status`: quorum, whether a mgr is available.
    fn status(&self) -> BoxFuture<'_, Result<ClusterStatus, CephError>>;

    /// `pg stat`: PGs by state. Hangs without a mgr: the call's bound ends it.
    fn pg_states(&self) -> BoxFuture<'_, Result<PgStates, CephError>>;

    /// `pg ls-by-osd osd.<id>`: the PGs on that OSD, each with its state and the epoch it was
    /// reported in. Refused (EAGAIN) while the OSD is down.
    fn pgs_on_osd(&self, id: OsdId) -> BoxFuture<'_, Result<Vec<PgBrief>, CephError>>;

    /// `osd dump`: each OSD's up, in, `up_from` and `noout`.
    fn osd_dump(&self) -> BoxFuture<'_, Result<OsdDump, CephError>>;

    /// `osd metadata`: each OSD's pod name, pod namespace and hostname as its daemon reported.
    fn osd_metadata(&self) -> BoxFuture<'_, Result<BTreeMap<OsdId, OsdMetadata>, CephError>>;

    /// `versions`: the releases each kind of daemon runs, with how many of each.
    fn versions(&self) -> BoxFuture<'_, Result<DaemonReleases, CephError>>;

    /// `osd require-osd-release <release>`: raises the release every OSD must run (it never
    /// goes back). Success proves nothing: read `osd dump` back.
    fn require_osd_release(&self, release: Release) -> BoxFuture<'_, Result<(), CephError>>;

    /// `osd ok-to-stop <ids>`: Ceph's answer, also when it is "no" (rc 16, EBUSY) or "PG states
    /// not known yet" (rc 11, EAGAIN); `ok_to_stop` is true only with rc 0. Ceph says yes for
    /// ids that do not exist: ask only about mapped, existing ids. `ids` must not be empty.
    fn ok_to_stop<'a>(&'a self, ids: &'a [OsdId]) -> BoxFuture<'a, Result<OkToStop, CephError>>;

    /// `osd add-noout <ids>`: idempotent. Success proves nothing (Ceph exits 0 for ids that do
    /// not exist): read `osd dump` back.
    fn add_noout<'a>(&'a self, ids: &'a [OsdId]) -> BoxFuture<'a, Result<(), CephError>>;

    /// `osd rm-noout <ids>`: idempotent; read `osd dump` back.
    fn rm_noout<'a>(&'a self, ids: &'a [OsdId]) -> BoxFuture<'a, Result<(), CephError>>;

    /// `osd out <ids>`: their data moves to other OSDs (a removal's drain); idempotent.
    /// Success proves nothing for ids that do not exist: read `osd dump` back.
    fn osd_out<'a>(&'a self, ids: &'a [OsdId]) -> BoxFuture<'a, Result<(), CephError>>;

    /// `osd in <ids>`: undoes `osd out`; idempotent; read `osd dump` back.
    fn osd_in<'a>(&'a self, ids: &'a [OsdId]) -> BoxFuture<'a, Result<(), CephError>>;

    /// `osd df`: each OSD's bytes and PGs (what a disk replacement moves).
    fn osd_df(&self) -> BoxFuture<'_, Result<BTreeMap<OsdId, OsdUsage>, CephError>>;

    /// The bytes per second Ceph recovers now (`status`'s pgmap; 0 while nothing moves).
    fn recovery_rate(&self) -> BoxFuture<'_, Result<u64, CephError>>;

    /// `osd destroy <id> --yes-i-really-mean-it`: the id, its CRUSH place and weight stay (for a
    /// new disk with the same id); its keys go. The flag skips the mgr's own check: ask
    /// `safe_to_destroy` right before. Ceph refuses while the OSD is up.
    fn osd_destroy(&self, id: OsdId) -> BoxFuture<'_, Result<(), CephError>>;

    /// `osd safe-to-destroy <ids>`: which of them no PG needs any more. Fails (rc 11, EAGAIN)
    /// while the mgr does not know every PG's state. Ceph says "safe" for ids that do not
    /// exist: ask only about mapped, existing ids. `ids` must not be empty.
    fn safe_to_destroy<'a>(
        &'a self,
        ids: &'a [OsdId],
    ) -> BoxFuture<'a, Result<SafeToDestroy, CephError>>;

    /// `crash ls-new`: the crash reports no one has archived yet (the mgr's crash module).
    fn new_crashes(&self) -> BoxFuture<'_, Result<Vec<CrashReport>, CephError>>;

    /// `osd crush tree`: the CRUSH buckets and which bucket each is in.
    fn crush_tree(&self) -> BoxFuture<'_, Result<CrushTree, CephError>>;

    /// `osd crush rule dump`: the CRUSH rules by id.
    fn crush_rules(&self) -> BoxFuture<'_, Result<BTreeMap<i64, CrushRule>, CephError>>;

    /// `osd pool ls detail`: each pool's CRUSH rule and size.
    fn pool_rules(&self) -> BoxFuture<'_, Result<Vec<PoolRule>, CephError>>;

    /// `config-key get <key>`: the value stored, None when there is none (ENOENT).
    fn config_key_get<'a>(
        &'a self,
        key: &'a str,
    ) -> BoxFuture<'a, Result<Option<String>, CephError>>;

    /// `config-key set <key> <value>`: stored on the mons (a write of the mon store).
    fn config_key_set<'a>(
        &'a self,
        key: &'a str,
        value: &'a str,
    ) -> BoxFuture<'a, Result<(), CephError>>;

    /// A question costs a round trip over a kept connection, not a process: Ceph may be
    /// looked at often.
    fn keeps_connected(&self) -> bool {
        false
    }
}

/// Why a question got no usable answer. `command` is the `ceph` arguments asked
/// (`osd ok-to-stop 0 1`).
#[derive(Debug, thiserror::Error)]
pub enum CephError {
    #[error("`ceph {command}` gave no answer within {}s; it was killed", timeout.as_secs_f32())]
    Timeout { command: String, timeout: Duration },

    #[error("cannot run `{}` for `ceph {command}`: {source}", program.display())]
    Spawn {
        program: PathBuf,
        command: String,
        #[source]
        source: std::io::Error,
    },

    /// Ceph refused or failed; `stderr` is what it said (`Error EACCES: access denied`).
    #[error("`ceph {command}` failed ({}): {stderr}", exit_description(*exit_code))]
    Failed {
        command: String,
        /// `None`: ended by a signal.
        exit_code: Option<i32>,
        stderr: String,
    },

    #[error("`ceph {command}` answered JSON that is not understood {source}")]
    NotUnderstood {
        command: String,
        #[source]
        source: ParseError,
    },
}

fn exit_description(code: Option<i32>) -> String {
    code.map_or_else(
        || "killed by a signal".to_owned(),
        |c| format!("exit code {c}"),
    )
}

/// Ceph's exit code for "permission denied" (EACCES): the key lacks a cap.
const EACCES: i32 = 13;

impl CephError {
    /// A short name for the condition reason, the Warning event and the metric label.
    pub const fn category(&self) -> &'static str {
        match self {
            Self::Timeout { .. } => "CephTimeout",
            Self::Spawn { .. } => "CephCliMissing",
            Self::Failed {
                exit_code: Some(EACCES),
                ..
            } => "CephAccessDenied",
            Self::Failed { .. } => "CephCommandFailed",
            Self::NotUnderstood { .. } => "CephAnswerNotUnderstood",
        }
    }

    /// The key lacks a cap this command needs (rc 13).
    pub const fn is_access_denied(&self) -> bool {
        matches!(
            self,
            Self::Failed {
                exit_code: Some(EACCES),
                ..
            }
        )
    }
}

#[cfg(test)]
mod tests;
