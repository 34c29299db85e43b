//! What the scenarios share: pod uids by key and the reference sample on a
//! scenario's own hosts.

use molecule_like_tests::journeys::scenario::Scenario;
use molecule_like_tests::kubernetes::manifests::{cephosd, fast_sample_template, CR};
use serde_json::Value;

/// Sample hosts (each scenario uses its own: `s.hosts(SAMPLE_HOSTS)`, as `s.own_sample()` does)
/// and devices.
pub(crate) const SAMPLE_HOSTS: [&str; 2] = ["worker041.example.com", "worker042.example.com"];
pub(crate) const SAMPLE_DATA: [&str; 2] = [
    "/dev/disk/by-slot/pci-0000:5c:00.0-encl-0:7:0-slot-1",
    "/dev/disk/by-slot/pci-0000:5c:00.0-encl-0:7:0-slot-2",
];

pub(crate) fn sample_db(data: &str) -> &'static str {
    if data.ends_with("slot-1") {
        "/dev/disk/by-slot/pci-0000:5c:00.0-encl-0:7:0-slot-10-part1"
    } else {
        "/dev/disk/by-slot/pci-0000:5c:00.0-encl-0:7:0-slot-10-part2"
    }
}

/// The sample CR on the scenario's own hosts, with the kubelet knobs (ready after 1 s, grace
/// 1 s).
pub(crate) fn sample_cr(s: &Scenario, update_domain: &str) -> anyhow::Result<Value> {
    let sample = s.own_sample()?;
    Ok(cephosd(
        CR,
        sample["spec"]["storage"].clone(),
        update_domain,
        fast_sample_template()?,
    ))
}
