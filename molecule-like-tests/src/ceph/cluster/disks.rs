//! A disk that fails and its replacement keeping the OSD id: `osd-wipe` (the daemon killed, its
//! data gone) and `osd-prepare` (what `ceph-volume lvm prepare --osd-id N` does on the new disk).

use std::time::Duration;

use super::CephCluster;

impl CephCluster {
    /// OSD `id`'s disk fails (`osd-wipe`): its daemon is killed (SIGKILL; none running is
    /// fine) and its data dir wiped (a `--loop` OSD's device zeroed at its head). Its
    /// `osd-start` fails until [`Self::osd_prepare`]. Ceph marks the OSD down once a peer
    /// reports it (within a second on loopback: its connections are refused); a lone OSD
    /// only after `mon osd report timeout` (15 min).
    pub async fn osd_wipe(&self, id: u32) -> anyhow::Result<()> {
        let id = id.to_string();
        self.run(&["osd-wipe", &id], Duration::from_mins(1))
            .await
            .map(drop)
    }

    /// Prepares id `id` on a new (blank) disk as `ceph-volume lvm prepare --osd-id ID` does
    /// (`osd-prepare`): `ceph osd new <uuid> ID` with a fresh cephx secret, then mkfs of a
    /// blank data dir with CRUSH host `host`; not started ([`Self::osd_start`] boots it with
    /// that id). Ceph accepts the id only when it is destroyed or absent; its refusal is the
    /// error, with Ceph's own message (the data dir then left as it was).
    pub async fn osd_prepare(&self, id: u32, host: &str) -> anyhow::Result<()> {
        let id_arg = id.to_string();
        let args = ["osd-prepare", id_arg.as_str(), "--host", host];
        match self.run(&args, Duration::from_mins(2)).await {
            Ok(_) => Ok(()),
            Err(e) => Err(match script_error(&format!("{e:#}")) {
                Some(why) => anyhow::anyhow!("osd-prepare {id}: {why}"),
                None => e,
            }),
        }
    }
}

/// What the script said when it gave up (the text of its `[ceph] ERROR: ` line), from a
/// failed run's error.
pub(crate) fn script_error(error: &str) -> Option<String> {
    let (_, after) = error.rsplit_once("[ceph] ERROR: ")?;
    let line = after.lines().next()?.trim();
    (!line.is_empty()).then(|| line.to_owned())
}

#[cfg(test)]
mod tests;
