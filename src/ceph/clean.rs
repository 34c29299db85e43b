//! When PGs count as clean: Rook's definition, a state is `active` followed by one or more of
//! `clean`, `deep`, `scrubbing`, `snaptrim`, `snaptrim_wait` (so `stale+active+clean`,
//! `active+undersized` and a bare `active` are not).

use super::answers::{PgStateCount, PgStates};

const CLEAN_FLAGS: [&str; 5] = ["clean", "deep", "scrubbing", "snaptrim", "snaptrim_wait"];

/// Whether one PG state (`active+clean+scrubbing`) is clean.
pub fn is_clean_state(state: &str) -> bool {
    let mut words = state.split('+');
    words.next() == Some("active") && {
        let mut rest = words.peekable();
        rest.peek().is_some() && rest.all(|w| CLEAN_FLAGS.contains(&w))
    }
}

impl PgStates {
    /// The states that are not clean, with their counts, in Ceph's order.
    pub fn not_clean(&self) -> impl Iterator<Item = &PgStateCount> {
        self.by_state.iter().filter(|s| !is_clean_state(&s.state))
    }

    /// PGs in states that are not clean.
    pub fn not_clean_count(&self) -> u64 {
        self.not_clean()
            .fold(0, |sum, s| sum.saturating_add(s.count))
    }

    /// PGs counted by state (equals `num_pgs` in a consistent answer). Sums saturate: the
    /// counts come from outside.
    pub fn counted(&self) -> u64 {
        self.by_state
            .iter()
            .fold(0, |sum, s| sum.saturating_add(s.count))
    }

    /// Every PG clean by a mgr that knows their states: `pg_ready`, the counts add up to
    /// `num_pgs`, and every state with PGs in it is clean. No PGs at all is clean.
    pub fn all_clean(&self) -> bool {
        self.ready && self.counted() == self.num_pgs && self.not_clean_count() == 0
    }

    /// `3 active+undersized, 2 peering`: the not-clean states for messages.
    pub fn describe_not_clean(&self) -> String {
        self.not_clean()
            .filter(|s| s.count > 0)
            .map(|s| format!("{} {}", s.count, s.state))
            .collect::<Vec<_>>()
            .join(", ")
    }
}

#[cfg(test)]
mod tests;
