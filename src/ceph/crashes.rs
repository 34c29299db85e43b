//! `ceph crash ls-new`, parsed: the crash reports Ceph keeps that no one has archived yet,
//! each with the daemon that crashed and when. Pure: bytes in, reports or an error naming the
//! field out.

use super::answers::{parse, ParseError};
use super::osd_id::OsdId;
use k8s_openapi::jiff::civil::DateTime;
use k8s_openapi::jiff::tz::TimeZone;
use k8s_openapi::jiff::Timestamp;
use serde::Deserialize;

/// One crash report (answered by the mgr's crash module, posted by the host's `ceph-crash`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CrashReport {
    /// `2026-11-29T18:40:01.123456Z_<uuid>`: what `ceph crash info` and `archive` take.
    pub id: String,
    /// The daemon that crashed (`osd.3`, `mon.a`).
    pub entity: String,
    /// When it crashed, by the clock of its host.
    pub at: Timestamp,
}

impl CrashReport {
    /// The OSD that crashed; None for another kind of daemon.
    pub fn osd(&self) -> Option<OsdId> {
        let number = self.entity.strip_prefix("osd.")?;
        number.parse().ok().map(OsdId)
    }
}

#[derive(Deserialize)]
struct RawCrash {
    crash_id: String,
    entity_name: String,
    timestamp: String,
}

/// Parses `ceph crash ls-new -f json` (a list of crash reports, oldest first).
pub fn parse_new_crashes(json: &[u8]) -> Result<Vec<CrashReport>, ParseError> {
    let raw: Vec<RawCrash> = parse(json)?;
    raw.into_iter()
        .enumerate()
        .map(|(i, crash)| {
            let at = crash_time(&crash.timestamp).ok_or_else(|| ParseError {
                path: format!("[{i}].timestamp"),
                message: format!("{:?} is not a time", crash.timestamp),
            })?;
            Ok(CrashReport {
                id: crash.crash_id,
                entity: crash.entity_name,
                at,
            })
        })
        .collect()
}

/// A crash report's time: `2026-11-29T18:40:01.123456Z`, or as older releases wrote it,
/// `2026-11-29 18:40:01.123456Z`; UTC when no zone is given.
fn crash_time(text: &str) -> Option<Timestamp> {
    let text = text.trim().replacen(' ', "T", 1);
    let local = text.strip_suffix('Z').unwrap_or(&text);
    if let Ok(at) = text.parse::<Timestamp>() {
        return Some(at);
    }
    let civil: DateTime = local.parse().ok()?;
    civil.to_zoned(TimeZone::UTC).ok().map(|z| z.timestamp())
}

#[cfg(test)]
mod tests;
