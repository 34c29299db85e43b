//! The ids an admin states on a pod (the `osd-ids` annotation, `"3,7"`), pure: a list of
//! numbers separated by commas, each trimmed; anything else is no statement at all (a typo
//! never maps a pod) and is handed back as written, to be said.

use crate::ceph::OsdId;
use std::collections::BTreeSet;

/// The ids `text` states, or `text` itself when it is not a list of numbers.
pub(crate) fn read_stated_ids(text: &str) -> Result<BTreeSet<OsdId>, String> {
    let ids: Option<BTreeSet<OsdId>> = text
        .split(',')
        .map(|id| id.trim().parse().map(OsdId).ok())
        .collect();
    ids.ok_or_else(|| text.to_owned())
}

#[cfg(test)]
mod tests;
