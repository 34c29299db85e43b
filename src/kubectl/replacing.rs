//! `replace`: asks the operator to replace an OSD's disk keeping its id (the CephOSD's
//! `replace` annotation), confirms the new disk (`--disk-swapped`), or calls it off
//! (`--cancel`). `--dry-run` writes nothing and says what the replacement would do; given
//! Ceph (`--ceph-conf`), also what must move and how long that takes at the current rate.

use crate::ceph::{CephClient, CephUser, CliClient, CliSettings, OsdId};
use crate::crd::desired::desired_osds;
use crate::crd::osd::OsdKey;
use crate::crd::replacement::{
    replace_annotation, replace_requests, ReplaceRequest, Replacement, ReplacementPhase, SWAPPED,
};
use crate::crd::CephOsd;
use crate::kubectl::cluster::Cluster;
use crate::kubectl::failed::Failed;
use crate::labels;
use k8s_openapi::api::core::v1::Pod;
use k8s_openapi::jiff::Timestamp;
use kube::ResourceExt;
use serde_json::json;
use std::path::PathBuf;

/// What the command is asked to do.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum ReplaceVerb {
    Start,
    DiskSwapped,
    Cancel,
}

/// Where to ask Ceph for `--dry-run`'s figures (an admin's key: `osd df`, `status`).
#[derive(Clone, Debug, Default)]
pub(crate) struct CephAccess {
    pub conf: Option<PathBuf>,
    pub keyring: Option<PathBuf>,
    pub id: Option<String>,
}

pub(crate) async fn replace(
    cluster: &Cluster,
    name: &str,
    key_text: &str,
    verb: ReplaceVerb,
    dry_run: bool,
    ceph: &CephAccess,
) -> Result<(), Failed> {
    let key = key_of(key_text)?;
    let snapshot = cluster.snapshot(name).await?;
    let cr = &snapshot.cr;
    let (mut requests, _) = replace_requests(annotation(cr));
    let record = (cr.status.iter())
        .flat_map(|s| &s.replacements)
        .find(|r| r.key == key.to_string());
    let next = next_requests(cr, &key, verb, record, &mut requests)?;
    let Some(next) = next else {
        println!("{}", already(name, &key, record));
        return Ok(());
    };
    if dry_run {
        print!(
            "{}",
            dry_run_text(name, cr, &snapshot.pods, &key, verb, ceph).await?
        );
        return Ok(());
    }
    let value = replace_annotation(&next);
    let value = if value.is_empty() {
        json!(null)
    } else {
        json!(value)
    };
    let patch = json!({"metadata": {"annotations": {labels::REPLACE: value}}});
    cluster.patch_cephosd(name, &patch).await?;
    println!("{}", done_text(name, &key, verb, id_of(cr, &key).ok()));
    Ok(())
}

fn annotation(cr: &CephOsd) -> &str {
    cr.annotations()
        .get(labels::REPLACE)
        .map_or("", String::as_str)
}

/// `HOST:DATA`, or a usage error.
fn key_of(text: &str) -> Result<OsdKey, Failed> {
    match replace_requests(text) {
        (requests, problems) if problems.is_empty() && requests.len() == 1 => {
            let request = &requests[0];
            if request.swapped.is_some() {
                return Err(Failed::usage(format!(
                    "{text:?}: give the OSD key alone (HOST:DATA) and --disk-swapped"
                )));
            }
            Ok(request.key.clone())
        }
        (_, problems) => Err(Failed::usage(format!(
            "{text:?} is not one OSD key (HOST:DATA, e.g. node-a:/dev/sdb){}",
            problems
                .first()
                .map_or_else(String::new, |p| format!(": {p}"))
        ))),
    }
}

/// The single OSD id the status knows for `key`.
fn id_of(cr: &CephOsd, key: &OsdKey) -> Result<u32, Failed> {
    let ids = (cr.status.iter())
        .find_map(|s| s.osd_ids.get(&key.to_string()))
        .cloned()
        .unwrap_or_default();
    match ids.as_slice() {
        [id] => Ok(*id),
        [] => Err(Failed::usage(format!(
            "{key}: its OSD id is not known yet (the operator learns it from `ceph osd \
             metadata` while its daemon is up)"
        ))),
        ids => Err(Failed::usage(format!(
            "{key} runs several OSDs ({ids:?}): only a disk of one OSD is replaced"
        ))),
    }
}

/// The annotation's entries after `verb`, None when they already say it; or why not.
fn next_requests(
    cr: &CephOsd,
    key: &OsdKey,
    verb: ReplaceVerb,
    record: Option<&Replacement>,
    requests: &mut Vec<ReplaceRequest>,
) -> Result<Option<Vec<ReplaceRequest>>, Failed> {
    let name = cr.name_any();
    let listed = requests.iter().position(|r| r.key == *key);
    match verb {
        ReplaceVerb::Start => {
            if !desired_osds(&cr.spec).osds.contains_key(key) {
                return Err(Failed::usage(format!(
                    "{key} is not in the spec of cephosd {name}"
                )));
            }
            if let Some(busy) = (cr.status.iter())
                .flat_map(|s| &s.replacements)
                .find(|r| r.key != key.to_string() && !r.phase.is_over())
            {
                return Err(Failed::usage(format!(
                    "the replacement of {} (osd.{}) is under way ({}): one at a time",
                    busy.key, busy.id, busy.phase
                )));
            }
            if record.is_some_and(|r| r.phase == ReplacementPhase::Done) && listed.is_some() {
                return Err(Failed::usage(format!(
                    "the last replacement of {key} is done and still listed: `--cancel` it \
                     first, then ask again"
                )));
            }
            if listed.is_some() {
                return Ok(None);
            }
            requests.push(ReplaceRequest {
                key: key.clone(),
                swapped: None,
            });
        }
        ReplaceVerb::DiskSwapped => {
            let Some(i) = listed else {
                return Err(Failed::usage(format!(
                    "no replacement of {key} is asked for in cephosd {name}"
                )));
            };
            let phase = record.map(|r| r.phase);
            if !matches!(
                phase,
                Some(ReplacementPhase::AwaitingDisk | ReplacementPhase::PrepareFailed)
            ) {
                return Err(Failed::usage(format!(
                    "the replacement of {key} is {}: confirm the new disk once it is \
                     AwaitingDisk (its old id destroyed)",
                    phase.map_or_else(|| "not started yet".to_owned(), |p| p.to_string())
                )));
            }
            let spent = record.and_then(|r| r.disk_swapped.clone());
            requests[i].swapped = Some(match spent {
                None => SWAPPED.to_owned(),
                Some(_) => format!("{SWAPPED}-{}", Timestamp::now().as_second()),
            });
        }
        ReplaceVerb::Cancel => {
            let Some(i) = listed else {
                return Ok(None);
            };
            let destroyed = record.is_some_and(|r| r.phase.id_destroyed());
            if destroyed {
                return Err(Failed::usage(format!(
                    "the replacement of {key} cannot be called off: its id is destroyed; swap \
                     the disk and confirm it (--disk-swapped)"
                )));
            }
            requests.remove(i);
        }
    }
    Ok(Some(std::mem::take(requests)))
}

fn already(name: &str, key: &OsdKey, record: Option<&Replacement>) -> String {
    match record {
        Some(r) => format!(
            "cephosd {name}: the replacement of {key} (osd.{}) is {}: {}",
            r.id, r.phase, r.message
        ),
        None => format!("cephosd {name}: nothing to change for {key}"),
    }
}

fn done_text(name: &str, key: &OsdKey, verb: ReplaceVerb, id: Option<u32>) -> String {
    let osd = id.map_or_else(|| "its OSD".to_owned(), |id| format!("osd.{id}"));
    match verb {
        ReplaceVerb::Start => format!(
            "cephosd {name}: replacing the disk of {osd} ({key}): it is drained (out, its data \
             moved), stopped and destroyed keeping its id; once `kubectl ceph-osd status \
             {name}` shows it AwaitingDisk, swap the disk and run `kubectl ceph-osd replace \
             {name} {key} --disk-swapped`"
        ),
        ReplaceVerb::DiskSwapped => format!(
            "cephosd {name}: new disk of {osd} ({key}) confirmed: its pod prepares it with the \
             same id, then data moves back"
        ),
        ReplaceVerb::Cancel => format!(
            "cephosd {name}: the replacement of {key} is called off (an OSD not destroyed is \
             marked in again)"
        ),
    }
}

/// What the replacement would do, with Ceph's figures when it can be asked.
async fn dry_run_text(
    name: &str,
    cr: &CephOsd,
    pods: &[Pod],
    key: &OsdKey,
    verb: ReplaceVerb,
    ceph: &CephAccess,
) -> Result<String, Failed> {
    let known = id_of(cr, key);
    let client = ceph.conf.as_ref().map(|conf| {
        CliClient::new(CliSettings {
            conf: Some(conf.clone()),
            keyring: ceph.keyring.clone(),
            user: ceph.id.clone().map(CephUser::Id),
            keep_connected: false,
            ..CliSettings::default()
        })
    });
    let id = match (known, &client) {
        (Ok(id), _) => id,
        (Err(_), Some(client)) => id_in_metadata(client, pods, key).await?,
        (Err(unknown), None) => return Err(unknown),
    };
    let mut text = format!(
        "cephosd {name}: would {} the disk of osd.{id}\n  host:   {}\n  device: {}\n",
        match verb {
            ReplaceVerb::Start => "replace",
            ReplaceVerb::DiskSwapped => "confirm the new",
            ReplaceVerb::Cancel => "stop replacing",
        },
        key.host,
        key.data
    );
    if verb != ReplaceVerb::Start {
        return Ok(text);
    }
    text.push_str(
        "  phases: Draining (out, data moves) → Destroying (id kept) → AwaitingDisk (swap it) → \
         Preparing (OSD_ID) → Backfilling → Done\n",
    );
    let Some(client) = client else {
        text.push_str(
            "  moves:  not asked (give --ceph-conf, and --ceph-id/--ceph-keyring of a key \
             allowed `osd df` and `status`)\n",
        );
        return Ok(text);
    };
    let usage =
        (client.osd_df().await).map_err(|e| Failed::not_reached(format!("ceph osd df: {e}")))?;
    let Some(osd) = usage.get(&OsdId(id)) else {
        return Err(Failed::not_reached(format!(
            "ceph osd df lists no osd.{id}"
        )));
    };
    let rate = (client.recovery_rate().await)
        .map_err(|e| Failed::not_reached(format!("ceph status: {e}")))?;
    text.push_str(&format!(
        "  moves:  {} in {} PGs, out and back ({})\n",
        bytes_text(osd.bytes_used),
        osd.pgs,
        osd.status
    ));
    text.push_str(&format!("  time:   {}\n", eta_text(osd.bytes_used, rate)));
    Ok(text)
}

/// The id of the OSD whose daemon reports `key`'s pod in Ceph's metadata.
async fn id_in_metadata(client: &CliClient, pods: &[Pod], key: &OsdKey) -> Result<u32, Failed> {
    let pod = (pods.iter())
        .find(|p| {
            let a = p.annotations();
            a.get(labels::HOST) == Some(&key.host) && a.get(labels::DATA) == Some(&key.data)
        })
        .ok_or_else(|| Failed::usage(format!("{key}: no pod runs it, and the status has no id")))?;
    let metadata = (client.osd_metadata().await)
        .map_err(|e| Failed::not_reached(format!("ceph osd metadata: {e}")))?;
    (metadata.values())
        .find(|m| {
            m.pod_name.as_deref() == Some(&pod.name_any())
                && m.pod_namespace.as_deref() == pod.namespace().as_deref()
        })
        .map(|m| m.id.0)
        .ok_or_else(|| {
            Failed::usage(format!(
                "{key}: no OSD daemon reports its pod {} in `ceph osd metadata`",
                pod.name_any()
            ))
        })
}

/// `1.5 KiB`: one decimal, in the largest unit that keeps the number at least 1.
fn bytes_text(bytes: u64) -> String {
    const UNITS: [&str; 5] = ["B", "KiB", "MiB", "GiB", "TiB"];
    let mut unit = 0;
    while unit + 1 < UNITS.len() && bytes >> (10 * (unit + 1)) > 0 {
        unit += 1;
    }
    let whole = bytes >> (10 * unit);
    let tenths = ((bytes - (whole << (10 * unit))) * 10) >> (10 * unit);
    format!("{whole}.{tenths} {}", UNITS[unit])
}

/// The backfill time of `bytes` each way at `rate` bytes/s.
fn eta_text(bytes: u64, rate: u64) -> String {
    if rate == 0 {
        return "nothing is recovering now, so Ceph gives no rate to estimate from".to_owned();
    }
    let seconds = bytes.div_ceil(rate);
    format!(
        "about {}s each way at the current recovery rate of {}/s",
        seconds,
        bytes_text(rate)
    )
}

#[cfg(test)]
mod tests;
