//! Ceph's own view, recorded: [`CephRecorder`] reads `ceph watch` (the osdmap and each PG's
//! state and acting set, each every 0.25 s over librados, no process per sample) and keeps
//! every sample, on a clock shared with the pod recorder. The checks replay the samples:
//!
//! - **hosts down** ([`CephRecording::check_hosts_down_at_most`]): a CRUSH host is down while
//!   one of its OSDs is down in the osdmap (an OSD in no CRUSH host yet counts as a host of its
//!   own, `osd.N`).
//! - **PG states** ([`classify`]): a state is read flag by flag (`+`), with `stale` set aside:
//!   `stale` says only that the PG's primary has not reported since the osdmap changed, so the
//!   rest is its last reported state (`stale+active+clean` right after a stop is active per
//!   its last report; `stale+peering` is not). Then:
//!   - `peered`, `down` or `incomplete`: **unavailable** (fewer than `min_size` copies up, or
//!     none: I/O blocks until an OSD returns);
//!   - any other state while fewer than its pool's `min_size` OSDs of its last reported acting
//!     set are up in the latest osdmap: **unavailable** too. PG stats trail the osdmap: with
//!     every copy down no OSD reports the PG, which keeps its last state (`stale+peering`, even
//!     `peering`) and never shows `peered`;
//!   - `active`: active;
//!   - `unknown`: not known (a mgr that just started);
//!   - anything else (`peering`, `activating`, …): **inactive**. Every OSD stop and start
//!     re-peers the PGs it serves: `peering` shows for 1-2 s even when one host restarts
//!     alone, so a check bounds inactive spans by a duration
//!     ([`CephRecording::check_pgs_inactive_at_most`]) and forbids unavailable ones
//!     ([`CephRecording::check_pgs_never_unavailable`]).
//! - **buckets** (`bucket_checks.rs`): CRUSH buckets of a type with an OSD down at once, copies
//!   of one PG down at once (its pool's size less its acting set's OSDs up), and a step's
//!   first stop only after every OSD is up and every PG clean again;
//! - **noout** ([`CephRecording::check_no_noout_at_end`]): in the last osdmap, no `noout` on
//!   the cluster, an OSD or a CRUSH node.

mod bucket_checks;
mod checks;
mod liveness;
mod pg_states;
mod recorder;
mod samples;

pub use bucket_checks::buckets_down;
pub use checks::{hosts_down, CephRecording, PgSpan, Span};
pub use pg_states::{classify, pg_class, PgClass};
pub use recorder::{CephRecorder, CephState, SAMPLE_INTERVAL};
pub use samples::{CephEvent, Observed};
