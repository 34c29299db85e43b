//! What Ceph answers, parsed: the JSON of `status`, `pg stat`, `pg ls-by-osd`, `osd dump`,
//! `osd metadata`, `osd ok-to-stop` and `osd safe-to-destroy` (`-f json`) into the few facts the
//! rollout gate reads (`ceph versions` in `versions`). Pure: bytes in,
//! typed facts or an error naming the field out; never a panic, whatever the bytes.

use super::osd_devices::ReportedDevices;
use super::osd_id::OsdId;
use super::release::Release;
use serde::de::DeserializeOwned;
use serde::Deserialize;
use std::collections::{BTreeMap, BTreeSet};

/// An answer that is not the JSON expected: where (`osds[2].up_from`, `.` for the whole
/// answer) and what serde said.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("at `{path}`: {message}")]
pub struct ParseError {
    pub path: String,
    pub message: String,
}

pub(super) fn parse<T: DeserializeOwned>(json: &[u8]) -> Result<T, ParseError> {
    let mut de = serde_json::Deserializer::from_slice(json);
    let value: T = serde_path_to_error::deserialize(&mut de).map_err(|e| ParseError {
        path: e.path().to_string(),
        message: e.inner().to_string(),
    })?;
    de.end().map_err(|e| ParseError {
        path: ".".to_owned(),
        message: e.to_string(),
    })?;
    Ok(value)
}

/// `items` by their OSD id; an id listed twice is an error at `path_of(its index)`.
fn by_id<T>(
    items: impl IntoIterator<Item = T>,
    id_of: impl Fn(&T) -> OsdId,
    path_of: impl Fn(usize) -> String,
) -> Result<BTreeMap<OsdId, T>, ParseError> {
    let mut out = BTreeMap::new();
    for (i, item) in items.into_iter().enumerate() {
        let id = id_of(&item);
        if out.insert(id, item).is_some() {
            return Err(ParseError {
                path: path_of(i),
                message: format!("{id} is listed twice"),
            });
        }
    }
    Ok(out)
}

// ---------------------------------------------------------------------------------------------
// ceph status

/// `ceph status` (answered by the mon): quorum and whether a mgr is available. Its PG digest
/// is not kept: it is the mon's copy of the mgr's, stale while the mgr is down and later than
/// `pg stat` otherwise.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ClusterStatus {
    /// The cluster's identity (a UUID): the key of its step lock.
    pub fsid: String,
    /// Ranks of the mons in quorum.
    pub quorum: Vec<u32>,
    pub quorum_names: Vec<String>,
    /// `mgrmap.available`: without a mgr, PG states and ok-to-stop are not answered.
    pub mgr_available: bool,
    /// `HEALTH_OK`, `HEALTH_WARN`, `HEALTH_ERR`.
    pub health: String,
    /// Health check name → its summary (`MGR_DOWN` → `no active mgr`).
    pub health_checks: BTreeMap<String, String>,
}

#[derive(Deserialize)]
struct RawStatus {
    #[serde(default)]
    fsid: String,
    quorum: Vec<u32>,
    #[serde(default)]
    quorum_names: Vec<String>,
    mgrmap: RawMgrMap,
    health: RawHealth,
}

#[derive(Deserialize)]
struct RawMgrMap {
    available: bool,
}

#[derive(Deserialize)]
struct RawHealth {
    status: String,
    #[serde(default)]
    checks: BTreeMap<String, RawHealthCheck>,
}

#[derive(Deserialize)]
struct RawHealthCheck {
    #[serde(default)]
    summary: RawHealthSummary,
}

#[derive(Deserialize, Default)]
struct RawHealthSummary {
    #[serde(default)]
    message: String,
}

pub fn parse_status(json: &[u8]) -> Result<ClusterStatus, ParseError> {
    let raw: RawStatus = parse(json)?;
    Ok(ClusterStatus {
        fsid: raw.fsid,
        quorum: raw.quorum,
        quorum_names: raw.quorum_names,
        mgr_available: raw.mgrmap.available,
        health: raw.health.status,
        health_checks: raw
            .health
            .checks
            .into_iter()
            .map(|(name, check)| (name, check.summary.message))
            .collect(),
    })
}

// ---------------------------------------------------------------------------------------------
// ceph pg stat

/// `ceph pg stat` (answered by the mgr): how many PGs are in each state.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PgStates {
    /// `pg_ready`: false right after a mgr start, before it has heard from the OSDs.
    pub ready: bool,
    pub num_pgs: u64,
    /// In Ceph's order; state names as Ceph writes them (`active+undersized+degraded`).
    pub by_state: Vec<PgStateCount>,
}

#[derive(Clone, Debug, PartialEq, Eq, Deserialize)]
pub struct PgStateCount {
    #[serde(rename = "name")]
    pub state: String,
    #[serde(rename = "num")]
    pub count: u64,
}

#[derive(Deserialize)]
struct RawPgStat {
    pg_ready: bool,
    pg_summary: RawPgSummary,
}

#[derive(Deserialize)]
struct RawPgSummary {
    num_pg_by_state: Vec<PgStateCount>,
    /// Absent when there are no PGs.
    #[serde(default)]
    num_pgs: u64,
}

pub fn parse_pg_stat(json: &[u8]) -> Result<PgStates, ParseError> {
    let raw: RawPgStat = parse(json)?;
    Ok(PgStates {
        ready: raw.pg_ready,
        num_pgs: raw.pg_summary.num_pgs,
        by_state: raw.pg_summary.num_pg_by_state,
    })
}

// ---------------------------------------------------------------------------------------------
// ceph pg ls-by-osd

/// One PG of `ceph pg ls-by-osd osd.N` (answered by the mgr from the OSDs' reports).
#[derive(Clone, Debug, PartialEq, Eq, Deserialize)]
pub struct PgBrief {
    pub pgid: String,
    pub state: String,
    /// The osdmap epoch of the OSD that reported this state: a report older than an OSD's
    /// `up_from` predates that OSD's boot.
    pub reported_epoch: u64,
}

/// Pacific and later print an object; earlier releases a bare list.
#[derive(Deserialize)]
#[serde(untagged)]
enum RawPgLs {
    Object { pg_stats: Vec<PgBrief> },
    List(Vec<PgBrief>),
}

pub fn parse_pgs_on_osd(json: &[u8]) -> Result<Vec<PgBrief>, ParseError> {
    Ok(match parse(json)? {
        RawPgLs::Object { pg_stats } => pg_stats,
        RawPgLs::List(pgs) => pgs,
    })
}

// ---------------------------------------------------------------------------------------------
// ceph osd dump

/// `ceph osd dump` (answered by the mon): the osdmap's epoch and every OSD that exists.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct OsdDump {
    pub epoch: u64,
    pub osds: BTreeMap<OsdId, OsdInfo>,
    /// `require_osd_release`: every OSD runs at least this release; it only moves forward, and
    /// an OSD more than two releases past it does not boot (None: not in the answer).
    pub require_osd_release: Option<Release>,
    /// What places PGs on OSDs, beside which OSDs are up.
    pub placement: Placement,
}

/// What in the osdmap places PGs on OSDs, beside which OSDs are up: the CRUSH map's version,
/// each OSD's `in` and reweight, and the upmap exceptions. A change of it remaps PGs, and the
/// PG states the mgr reports trail it by up to its stats period.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Placement {
    pub crush_version: u64,
    /// Each OSD's `in` and reweight (as Ceph prints it).
    pub weights: BTreeMap<OsdId, (bool, String)>,
    /// `pg_upmap` and `pg_upmap_items`, as Ceph prints them.
    pub upmaps: String,
}

impl Placement {
    /// Whether `other` is this placement under another CRUSH version.
    pub fn differs_only_in_crush_version(&self, other: &Self) -> bool {
        self.crush_version != other.crush_version
            && self.weights == other.weights
            && self.upmaps == other.upmaps
    }
}

/// One OSD in the osdmap.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct OsdInfo {
    pub id: OsdId,
    pub up: bool,
    /// `in`: holds data (an OSD down longer than the down-out interval is marked out).
    pub is_in: bool,
    /// The epoch the OSD's current (or last) daemon booted in: a restarted daemon gets a newer one.
    pub up_from: u64,
    /// `noout` in the OSD's `state` (its own flag, `osd add-noout`).
    pub noout: bool,
    /// Ceph's `state` words (`exists`, `up`, `noout`, `destroyed`, ...).
    pub state: Vec<String>,
}

#[derive(Deserialize)]
struct RawOsdDump {
    epoch: u64,
    osds: Vec<RawOsd>,
    #[serde(default)]
    require_osd_release: Option<String>,
    #[serde(default)]
    crush_version: u64,
    #[serde(default)]
    pg_upmap: serde_json::Value,
    #[serde(default)]
    pg_upmap_items: serde_json::Value,
}

#[derive(Deserialize)]
struct RawOsd {
    osd: u32,
    up: u8,
    #[serde(rename = "in")]
    is_in: u8,
    #[serde(default)]
    weight: serde_json::Value,
    up_from: u64,
    state: Vec<String>,
}

pub fn parse_osd_dump(json: &[u8]) -> Result<OsdDump, ParseError> {
    let raw: RawOsdDump = parse(json)?;
    let placement = Placement {
        crush_version: raw.crush_version,
        weights: (raw.osds.iter())
            .map(|o| (OsdId(o.osd), (o.is_in != 0, o.weight.to_string())))
            .collect(),
        upmaps: format!("{} {}", raw.pg_upmap, raw.pg_upmap_items),
    };
    let osds = by_id(
        raw.osds.into_iter().map(|osd| OsdInfo {
            id: OsdId(osd.osd),
            up: osd.up != 0,
            is_in: osd.is_in != 0,
            up_from: osd.up_from,
            noout: osd.state.iter().any(|s| s == "noout"),
            state: osd.state,
        }),
        |o| o.id,
        |i| format!("osds[{i}].osd"),
    )?;
    let require_osd_release = (raw.require_osd_release.as_deref())
        .map(|name| {
            Release::from_name(name).ok_or_else(|| ParseError {
                path: "require_osd_release".to_owned(),
                message: format!("{name:?} is no Ceph release"),
            })
        })
        .transpose()?;
    Ok(OsdDump {
        epoch: raw.epoch,
        osds,
        require_osd_release,
        placement,
    })
}

impl OsdInfo {
    /// `destroyed` in its `state`: its id kept for a new disk, its keys gone.
    pub fn is_destroyed(&self) -> bool {
        self.state.iter().any(|s| s == "destroyed")
    }
}

impl OsdDump {
    /// Of `ids`, those without their own `noout` flag (or not in the osdmap at all).
    pub fn without_noout<'a>(&self, ids: impl IntoIterator<Item = &'a OsdId>) -> Vec<OsdId> {
        ids.into_iter()
            .filter(|id| !self.osds.get(id).is_some_and(|o| o.noout))
            .copied()
            .collect()
    }

    /// Of `ids`, those that still carry their own `noout` flag.
    pub fn with_noout<'a>(&self, ids: impl IntoIterator<Item = &'a OsdId>) -> Vec<OsdId> {
        ids.into_iter()
            .filter(|id| self.osds.get(id).is_some_and(|o| o.noout))
            .copied()
            .collect()
    }
}

// ---------------------------------------------------------------------------------------------
// ceph osd metadata

/// What an OSD's daemon reported about itself when it last booted (`ceph osd metadata`). It
/// outlives the daemon: trust it only while the OSD is up. With `POD_NAME` in its env the daemon
/// reports `pod_name` and `pod_namespace`, and `hostname` is then `NODE_NAME`.
#[derive(Clone, Debug, PartialEq, Eq, Deserialize)]
pub struct OsdMetadata {
    pub id: OsdId,
    #[serde(default)]
    pub hostname: Option<String>,
    #[serde(default)]
    pub pod_name: Option<String>,
    #[serde(default)]
    pub pod_namespace: Option<String>,
    /// The version its daemon ran (`ceph version 18.2.7 (…) reef (stable)`).
    #[serde(default)]
    pub ceph_version: Option<String>,
    /// Its data device and the others behind it.
    #[serde(flatten)]
    pub devices: ReportedDevices,
}

impl OsdMetadata {
    /// The release its daemon ran, when it reported a version that names one.
    pub fn release(&self) -> Option<super::release::Release> {
        super::release::Release::of_version(self.ceph_version.as_deref()?)
    }
}

/// Every OSD that exists; one that never booted has only its `id`.
pub fn parse_osd_metadata(json: &[u8]) -> Result<BTreeMap<OsdId, OsdMetadata>, ParseError> {
    let raw: Vec<OsdMetadata> = parse(json)?;
    by_id(raw, |m| m.id, |i| format!("[{i}].id"))
}

// ---------------------------------------------------------------------------------------------
// ceph osd ok-to-stop

/// `ceph osd ok-to-stop <ids>` (answered by the mgr): whether stopping exactly those OSDs keeps
/// every PG at or above `min_size`. PG lists hold PG ids (`1.a`); Ceph leaves empty ones out.
#[derive(Clone, Debug, Default, PartialEq, Eq, Deserialize)]
pub struct OkToStop {
    pub ok_to_stop: bool,
    /// The OSDs the answer is about (the ones asked, without `--max`).
    pub osds: BTreeSet<OsdId>,
    pub num_ok_pgs: u64,
    pub num_not_ok_pgs: u64,
    /// PGs whose state the mgr does not know yet (right after a mgr start; rc 11).
    #[serde(default)]
    pub unknown_pgs: Vec<String>,
    #[serde(default, rename = "bad_no_pool_pgs")]
    pub bad_no_pool: Vec<String>,
    #[serde(default)]
    pub bad_already_inactive: Vec<String>,
    #[serde(default)]
    pub bad_become_inactive: Vec<String>,
    #[serde(default)]
    pub ok_become_degraded: Vec<String>,
    #[serde(default)]
    pub ok_become_more_degraded: Vec<String>,
}

pub fn parse_ok_to_stop(json: &[u8]) -> Result<OkToStop, ParseError> {
    parse(json)
}

// ---------------------------------------------------------------------------------------------
// ceph osd safe-to-destroy

/// `ceph osd safe-to-destroy <ids>` (answered by the mgr): which of those OSDs no PG needs any
/// more. With `-f json` Ceph exits 0 whatever it says, except "PG states unknown" (rc 11,
/// EAGAIN, no JSON). An id that does not exist is "safe".
#[derive(Clone, Debug, Default, PartialEq, Eq, Deserialize)]
pub struct SafeToDestroy {
    pub safe_to_destroy: BTreeSet<OsdId>,
    /// PGs are still mapped to these (up or acting).
    pub active: BTreeSet<OsdId>,
    /// Down or without stats while not every PG is active+clean: Ceph cannot tell.
    pub missing_stats: BTreeSet<OsdId>,
    /// They last reported storing PG data while not every PG is active+clean.
    pub stored_pgs: BTreeSet<OsdId>,
}

/// A `safe-to-destroy` asked after the OSD map of epoch `epoch` was read (Err: why Ceph did
/// not answer): a destroy on it is made only at that epoch.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DestroyLook {
    pub epoch: u64,
    pub answer: Result<SafeToDestroy, String>,
}

/// The PGs on a replaced disk's new daemon (`pg ls-by-osd`; Err: why Ceph did not answer).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BackfillLook {
    pub id: OsdId,
    pub pgs: Result<Vec<PgBrief>, String>,
}

pub fn parse_safe_to_destroy(json: &[u8]) -> Result<SafeToDestroy, ParseError> {
    parse(json)
}

#[cfg(test)]
mod tests;
