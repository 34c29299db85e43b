//! Talking to Ceph: the questions (`CephClient`) and their CLI implementation (a long-lived
//! session or a process per call), the answers parsed (with the releases they name), the facts
//! of one look, and which OSD ids a pod runs. Only `cli` and `session` run processes;
//! everything else is pure. This module judges nothing: what Ceph's answers mean for a rollout
//! step is the planner's (`plan::gate`).

mod answers;
mod by_node;
mod clean;
mod cli;
mod client;
mod crashes;
mod crush;
mod facts;
#[cfg(test)]
pub(crate) mod fake;
mod finished;
mod key_ids;
mod node_names;
mod osd_devices;
mod osd_df;
mod osd_id;
mod pod_map;
mod release;
mod session;
mod stated_ids;
#[cfg(test)]
pub(crate) mod test_data;
mod versions;

pub use answers::{
    parse_ok_to_stop, parse_osd_dump, parse_osd_metadata, parse_pg_stat, parse_pgs_on_osd,
    parse_safe_to_destroy, parse_status, BackfillLook, ClusterStatus, DestroyLook, OkToStop,
    OsdDump, OsdInfo, OsdMetadata, ParseError, PgBrief, PgStateCount, PgStates, Placement,
    SafeToDestroy,
};
pub use by_node::OtherCephOsds;
pub use clean::is_clean_state;
pub use cli::{CephUser, CliClient, CliSettings, DEFAULT_CALL_TIMEOUT};
pub use client::{CephClient, CephError};
pub use crashes::{parse_new_crashes, CrashReport};
pub use crush::{
    parse_crush_rules, parse_crush_tree, parse_pool_rules, CrushBucket, CrushRule, CrushTree,
    PoolRule, RuleStep, HOST_TYPE,
};
pub use facts::{gather_facts, gather_step_facts, CephFacts, PgsOnOsds};
pub use key_ids::{
    IdSource, KeyIds, KeyToMap, MappedKey, NodeEvidence, NotExact, PodRef, StatedRefusal,
    UnknownReason,
};
pub use osd_devices::ReportedDevices;
pub use osd_df::{parse_osd_df, parse_recovery_rate, OsdUsage};
pub(crate) use osd_id::list as osd_list;
pub use osd_id::OsdId;
pub use pod_map::{ids_learnt, map_osd_ids, reported_by_down_daemon};
pub use release::Release;
pub use versions::{parse_versions, DaemonReleases};
