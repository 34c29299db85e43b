//! `ceph versions`, parsed: which releases each kind of daemon runs, and how many of each.

use super::answers::{parse, ParseError};
use super::release::Release;
use serde::Deserialize;
use std::collections::BTreeMap;

/// `ceph versions` (answered by the mon): for each kind of daemon, how many of those that
/// reported run each release.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct DaemonReleases {
    pub mon: BTreeMap<Release, u32>,
    pub mgr: BTreeMap<Release, u32>,
    pub osd: BTreeMap<Release, u32>,
}

#[derive(Deserialize)]
struct RawVersions {
    #[serde(default)]
    mon: BTreeMap<String, u32>,
    #[serde(default)]
    mgr: BTreeMap<String, u32>,
    #[serde(default)]
    osd: BTreeMap<String, u32>,
}

/// Parses `ceph versions -f json`; a version string whose release cannot be read is an error
/// naming it (a release is never guessed).
pub fn parse_versions(json: &[u8]) -> Result<DaemonReleases, ParseError> {
    let raw: RawVersions = parse(json)?;
    let releases = |kind: &str, versions: BTreeMap<String, u32>| {
        let mut out = BTreeMap::new();
        for (version, count) in versions {
            let release = Release::of_version(&version).ok_or_else(|| ParseError {
                path: kind.to_owned(),
                message: format!("no Ceph release in the version {version:?}"),
            })?;
            *out.entry(release).or_insert(0) += count;
        }
        Ok::<_, ParseError>(out)
    };
    Ok(DaemonReleases {
        mon: releases("mon", raw.mon)?,
        mgr: releases("mgr", raw.mgr)?,
        osd: releases("osd", raw.osd)?,
    })
}

#[cfg(test)]
mod tests;
