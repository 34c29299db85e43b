//! An OSD's number in Ceph (`osd.N`).

use serde::{Deserialize, Serialize};
use std::fmt;

/// The id Ceph gives an OSD (`ceph osd new`); shown as `osd.N`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(transparent)]
pub struct OsdId(pub u32);

impl fmt::Display for OsdId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "osd.{}", self.0)
    }
}

/// `osd.0, osd.3`: ids for messages.
pub(crate) fn list<'a>(ids: impl IntoIterator<Item = &'a OsdId>) -> String {
    ids.into_iter()
        .map(ToString::to_string)
        .collect::<Vec<_>>()
        .join(", ")
}

#[cfg(test)]
mod tests;
