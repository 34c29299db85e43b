//! PG states read for availability (see the parent module's docs): a state flag by flag,
//! `stale` set aside, and a PG whose acting set lacks `min_size` up OSDs unavailable.

use std::collections::{BTreeMap, BTreeSet};

use crate::ceph::{OsdMap, PgBrief, PgStat};

/// What a PG state says about availability (see the module docs).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum PgClass {
    Active,
    Unknown,
    Inactive,
    Unavailable,
}

/// The class of one PG state string.
pub fn classify(state: &str) -> PgClass {
    let flags: BTreeSet<&str> = state.split('+').filter(|f| *f != "stale").collect();
    if ["peered", "down", "incomplete"]
        .iter()
        .any(|f| flags.contains(f))
    {
        PgClass::Unavailable
    } else if flags.contains("active") {
        PgClass::Active
    } else if flags.contains("unknown") {
        PgClass::Unknown
    } else {
        PgClass::Inactive
    }
}

/// The class of one PG given the osdmap of the moment: its state's, or unavailable when fewer
/// than its pool's `min_size` OSDs of its acting set are up.
pub fn pg_class(pg: &PgBrief, map: Option<&OsdMap>) -> PgClass {
    let class = classify(&pg.state);
    if matches!(class, PgClass::Unavailable | PgClass::Unknown) || pg.acting.is_empty() {
        return class;
    }
    let min_size = map.and_then(|m| Some((m, m.pools.get(&pg.pool()?)?.min_size)));
    let Some((map, min_size)) = min_size else {
        return class;
    };
    let up = pg
        .acting
        .iter()
        .filter(|id| map.osd(**id).is_some_and(|o| o.up))
        .count();
    if (up as u64) < min_size {
        PgClass::Unavailable
    } else {
        class
    }
}

/// PGs of a sample per class (by each PG when the sample has them, else by state).
pub(super) fn count_classes(pgs: &PgStat, map: Option<&OsdMap>) -> BTreeMap<PgClass, u64> {
    let mut out = BTreeMap::new();
    if pgs.pgs.is_empty() {
        for (state, n) in &pgs.by_state {
            *out.entry(classify(state)).or_default() += n;
        }
    } else {
        for pg in &pgs.pgs {
            *out.entry(pg_class(pg, map)).or_default() += 1;
        }
    }
    out
}
