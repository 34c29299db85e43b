//! Hostile and malformed CephOSDs on the real API server: what the schema rejects is rejected
//! with a message naming the field; what it accepts converges with valid pods, or is reported
//! in the status, without crashing or spinning the operator or touching another CR's pods.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::collections::BTreeSet;
use std::time::Duration;

use ceph_osd_operator::crd::{CephOsdStatus, Phase};
use ceph_osd_operator::labels;
use k8s_openapi::api::core::v1::Pod;
use kube::api::{Api, DynamicObject, ListParams, PostParams};
use kube::ResourceExt;
use molecule_like_tests::journeys::scenario::{Scenario, CONVERGE};
use molecule_like_tests::kubernetes::manifests::{cephosd, cephosd_resource, fast_sample_template};
use molecule_like_tests::kubernetes::pods::annotation;
use serde_json::{json, Value};

/// A valid CephOSD of one OSD on `host`.
fn base(host: &str) -> anyhow::Result<Value> {
    Ok(cephosd(
        "hostile",
        json!([{"hosts": [host], "osds": [{"data": "/dev/sdb"}]}]),
        "OSD",
        fast_sample_template()?,
    ))
}

/// `base(host)` with the value at `pointer` replaced (or removed, for `Value::Null`).
fn with_on(host: &str, pointer: &str, value: Value) -> anyhow::Result<Value> {
    let mut manifest = base(host)?;
    let (parent, key) = pointer.rsplit_once('/').unwrap_or(("", pointer));
    let slot = manifest
        .pointer_mut(parent)
        .ok_or_else(|| anyhow::anyhow!("no {parent} in the base manifest"))?;
    match (slot, value) {
        (Value::Object(map), Value::Null) => {
            map.remove(key);
        }
        (Value::Object(map), value) => {
            map.insert(key.to_owned(), value);
        }
        (Value::Array(list), value) => {
            let index: usize = key.parse()?;
            list[index] = value;
        }
        _ => anyhow::bail!("{parent} is not a mapping or list"),
    }
    Ok(manifest)
}

#[tokio::test]
#[expect(
    clippy::too_many_lines,
    reason = "a table of malformed CephOSDs, one rejection each"
)]
async fn the_api_server_rejects_malformed_cephosds_naming_the_field() -> anyhow::Result<()> {
    let s = Scenario::create("hostile-rejected").await?;
    let api: Api<DynamicObject> =
        Api::namespaced_with(s.client.clone(), &s.namespace, &cephosd_resource());
    // Rejected manifests never exist; should one be accepted, it holds no other test's disk.
    let node_a = s.host("node-a");
    let with = |pointer: &str, value: Value| with_on(&node_a, pointer, value);
    let host = "/spec/storage/0/hosts/0";
    let data = "/spec/storage/0/osds/0/data";
    let long = "a".repeat(300);
    let template = "/spec/podTemplate";
    let cases: Vec<(&str, Value, &[&str])> = vec![
        (
            "updateDomain in lower case",
            with("/spec/updateDomain", json!("host"))?,
            &["spec.updateDomain", "Unsupported value"],
        ),
        (
            "unknown updateDomain",
            with("/spec/updateDomain", json!("Rack"))?,
            &["spec.updateDomain"],
        ),
        (
            "no updateDomain",
            with("/spec/updateDomain", Value::Null)?,
            &["spec.updateDomain", "Required"],
        ),
        (
            "no storage",
            with("/spec/storage", Value::Null)?,
            &["spec.storage", "Required"],
        ),
        (
            "no podTemplate",
            with(template, Value::Null)?,
            &["spec.podTemplate", "Required"],
        ),
        (
            "storage not a list",
            with("/spec/storage", json!({"hosts": ["a"]}))?,
            &["spec.storage"],
        ),
        (
            "no hosts",
            with("/spec/storage/0/hosts", json!([]))?,
            &["spec.storage[0].hosts"],
        ),
        (
            "hosts a string",
            with("/spec/storage/0/hosts", json!("node-a"))?,
            &["spec.storage[0].hosts"],
        ),
        (
            "no osds",
            with("/spec/storage/0/osds", json!([]))?,
            &["spec.storage[0].osds"],
        ),
        (
            "no data",
            with(data, Value::Null)?,
            &["spec.storage[0].osds[0].data", "Required"],
        ),
        (
            "data a number",
            with(data, json!(5))?,
            &["spec.storage[0].osds[0].data"],
        ),
        (
            "data empty",
            with(data, json!(""))?,
            &["spec.storage[0].osds[0].data"],
        ),
        (
            "data with ..",
            with(data, json!("/dev/../sdb"))?,
            &["spec.storage[0].osds[0].data"],
        ),
        (
            "data relative",
            with(data, json!("dev/sdb"))?,
            &["spec.storage[0].osds[0].data"],
        ),
        (
            "data of 5000 characters",
            with(data, json!(format!("/{}", "d".repeat(5000))))?,
            &["spec.storage[0].osds[0].data"],
        ),
        (
            "wal with a trailing /",
            with("/spec/storage/0/osds/0/wal", json!("/dev/nvme0n1/"))?,
            &["spec.storage[0].osds[0].wal"],
        ),
        (
            "host with a quote",
            with(host, json!("node\"a"))?,
            &["spec.storage[0].hosts[0]"],
        ),
        (
            "host with a newline",
            with(host, json!("node\na"))?,
            &["spec.storage[0].hosts[0]"],
        ),
        (
            "host with a space",
            with(host, json!("node a"))?,
            &["spec.storage[0].hosts[0]"],
        ),
        (
            "host with a template",
            with(host, json!("{{ node }}"))?,
            &["spec.storage[0].hosts[0]"],
        ),
        (
            "host with a statement",
            with(host, json!("{% if x %}a{% endif %}"))?,
            &["spec.storage[0].hosts[0]"],
        ),
        (
            "host in unicode",
            with(host, json!("nöde-a"))?,
            &["spec.storage[0].hosts[0]"],
        ),
        (
            "host in upper case",
            with(host, json!("Node-A"))?,
            &["spec.storage[0].hosts[0]"],
        ),
        (
            "host with an underscore",
            with(host, json!("node_a"))?,
            &["spec.storage[0].hosts[0]"],
        ),
        (
            "host of 300 characters",
            with(host, json!(long))?,
            &["spec.storage[0].hosts[0]"],
        ),
        (
            "host with ..",
            with(host, json!("node..a"))?,
            &["spec.storage[0].hosts[0]"],
        ),
        (
            "maxUnavailable 0",
            with("/spec/maxUnavailable", json!(0))?,
            &["spec.maxUnavailable"],
        ),
        (
            "maxUnavailable a string",
            with("/spec/maxUnavailable", json!("two"))?,
            &["spec.maxUnavailable"],
        ),
        (
            "minReadySeconds negative",
            with("/spec/minReadySeconds", json!(-1))?,
            &["spec.minReadySeconds"],
        ),
        (
            "progressDeadlineSeconds 0",
            with("/spec/progressDeadlineSeconds", json!(0))?,
            &["spec.progressDeadlineSeconds"],
        ),
        (
            "paused a string",
            with("/spec/paused", json!("yes"))?,
            &["spec.paused"],
        ),
        (
            "podTemplate a string",
            with(template, json!("pod"))?,
            &["spec.podTemplate"],
        ),
        (
            "podTemplate without metadata",
            with("/spec/podTemplate/metadata", Value::Null)?,
            &["spec.podTemplate.metadata", "Required"],
        ),
        (
            "podTemplate without containers",
            with("/spec/podTemplate/spec/containers", Value::Null)?,
            &["spec.podTemplate.spec.containers", "Required"],
        ),
        (
            "cpu: 0.5 as a number",
            with(
                "/spec/podTemplate/spec/containers/0/resources",
                json!({"limits": {"cpu": 0.5}}),
            )?,
            &["spec.podTemplate.spec.containers[0].resources.limits.cpu"],
        ),
        (
            "template pod-template-hash",
            with(
                "/spec/podTemplate/metadata/annotations",
                json!({"ceph.elemental.net/pod-template-hash": "x"}),
            )?,
            &[
                "ceph.elemental.net/pod-template-hash",
                "set by the operator",
            ],
        ),
        (
            "template pod-state",
            with(
                "/spec/podTemplate/metadata/annotations",
                json!({"ceph.elemental.net/pod-state": "up-to-date"}),
            )?,
            &["ceph.elemental.net/pod-state", "set by the operator"],
        ),
        (
            "template host annotation",
            with(
                "/spec/podTemplate/metadata/annotations",
                json!({"ceph.elemental.net/host": "node-b"}),
            )?,
            &["ceph.elemental.net/host", "set by the operator"],
        ),
        (
            "template wal annotation",
            with(
                "/spec/podTemplate/metadata/annotations",
                json!({"ceph.elemental.net/wal": "/dev/x"}),
            )?,
            &["ceph.elemental.net/wal", "set by the operator"],
        ),
    ];
    let named_too_long = {
        let mut manifest = base(&node_a)?;
        manifest["metadata"]["name"] = json!("n".repeat(56));
        manifest
    };
    let mut all = cases;
    all.push((
        "a name of 56 characters",
        named_too_long,
        &["metadata.name", "at most"],
    ));
    let count = all.len();
    for (what, manifest, expected) in all {
        let mut manifest = manifest;
        manifest["metadata"]["namespace"] = json!(s.namespace);
        let object: DynamicObject = serde_json::from_value(manifest)?;
        let message = match api.create(&PostParams::default(), &object).await {
            Ok(_) => anyhow::bail!("{what}: accepted"),
            Err(kube::Error::Api(status)) if status.code == 422 => status.message,
            Err(other) => anyhow::bail!("{what}: failed oddly: {other}"),
        };
        for part in expected {
            anyhow::ensure!(message.contains(part), "{what}: {part:?} not in {message}");
        }
    }
    eprintln!("hostile input: {count} malformed CephOSDs rejected by the API server");
    s.destroy().await
}

/// What becomes of an accepted CephOSD.
#[derive(Clone, Copy, Debug)]
enum Outcome {
    /// Its pods run and it is Ready.
    Converges,
    /// The status reports `InvalidSpec`; no pod.
    InvalidSpec,
    /// The API refuses its pods: a `ReconcileFailed` condition (reason, a word of the message)
    /// and a Warning event of that reason.
    Fails(&'static str, &'static str),
}

/// What a CephOSD's pods must be: valid names, the raw host and device in the annotations.
fn check_pods(cr: &str, pods: &[Pod], expected: &BTreeSet<(String, String)>) -> anyhow::Result<()> {
    let got: BTreeSet<(String, String)> = pods
        .iter()
        .filter_map(|p| {
            Some((
                annotation(p, labels::HOST)?.to_owned(),
                annotation(p, labels::DATA)?.to_owned(),
            ))
        })
        .collect();
    anyhow::ensure!(
        &got == expected,
        "{cr}: pods for {got:?}, expected {expected:?}"
    );
    for pod in pods {
        let name = pod.name_any();
        anyhow::ensure!(
            name.len() <= 63
                && name
                    .bytes()
                    .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-'),
            "{cr}: pod name {name:?}"
        );
    }
    Ok(())
}

#[tokio::test]
#[expect(
    clippy::too_many_lines,
    reason = "a table of odd but accepted CephOSDs, one outcome each"
)]
async fn odd_but_accepted_cephosds_converge_or_are_reported() -> anyhow::Result<()> {
    let s = Scenario::converge("hostile-accepted").await?;
    let host = |n: &str| s.host(&format!("odd-{n}"));
    let long_device = format!("/dev/disk/by-id/{}", "x".repeat(300));
    let odd_devices = [
        "/dev/disk/by-id/with space",
        "/dev/disk/by-id/quote\"d",
        "/dev/disk/by-id/{{ not-a-template }}",
        "/dev/disk/by-id/{% raw %}",
        "/dev/disk/by-id/ünïcode",
        "/dev/disk/by-id/new\nline",
        long_device.as_str(),
    ];
    let one = |h: &str| json!([{"hosts": [host(h)], "osds": [{"data": "/dev/sdb"}]}]);
    let cases: Vec<(&str, Value, Outcome)> = vec![
        (
            "odd-devices",
            json!([{"hosts": [host("d")], "osds": odd_devices.iter().map(|d| json!({"data": d})).collect::<Vec<_>>()}]),
            Outcome::Converges,
        ),
        (
            "prefix-collision",
            json!([{"hosts": [host("p")], "osds": [{"data": "/dev/disk/by-id/a"}, {"data": "/dev/disk/by-path/a"}]}]),
            Outcome::Converges,
        ),
        (
            "case-differs",
            json!([{"hosts": [host("c")], "osds": [{"data": "/dev/sdb"}, {"data": "/dev/sdB"}]}]),
            Outcome::Converges,
        ),
        (
            "same-twice",
            json!([{"hosts": [host("s")], "osds": [{"data": "/dev/sdb", "db": "/dev/nvme0n1p1"}]},
                              {"hosts": [host("s")], "osds": [{"data": "/dev/sdb", "db": "/dev/nvme0n1p1"}]}]),
            Outcome::Converges,
        ),
        ("empty-storage", json!([]), Outcome::Converges),
        (
            "conflicting-db",
            json!([{"hosts": [host("x")], "osds": [{"data": "/dev/sdb", "db": "/dev/nvme0n1p1"}]},
                                  {"hosts": [host("x")], "osds": [{"data": "/dev/sdb", "db": "/dev/nvme0n1p2"}]}]),
            Outcome::InvalidSpec,
        ),
        // The schema lets a container without an image through; the pods API does not.
        (
            "no-image",
            one("i"),
            Outcome::Fails("CreateFailed", "image"),
        ),
    ];
    let mut expected = Vec::new();
    for (name, storage, outcome) in &cases {
        let mut template = fast_sample_template()?;
        // Template fields the operator overrides: harmless.
        template["metadata"]["name"] = json!("template-name");
        if let Outcome::Fails(..) = outcome {
            if let Some(container) = template
                .pointer_mut("/spec/containers/0")
                .and_then(Value::as_object_mut)
            {
                container.remove("image");
            }
        }
        let manifest = cephosd(name, storage.clone(), "OSD", template);
        s.create_cr(&manifest).await?;
        let want: BTreeSet<(String, String)> = storage
            .as_array()
            .into_iter()
            .flatten()
            .flat_map(|entry| {
                let hosts: Vec<String> = entry["hosts"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .filter_map(|h| h.as_str().map(str::to_owned))
                    .collect();
                let datas: Vec<String> = entry["osds"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .filter_map(|o| o["data"].as_str().map(str::to_owned))
                    .collect();
                hosts
                    .into_iter()
                    .flat_map(move |h| datas.clone().into_iter().map(move |d| (h.clone(), d)))
            })
            .collect();
        expected.push((*name, want, *outcome));
    }
    for (name, want, outcome) in &expected {
        let status: CephOsdStatus = s
            .wait_until(&format!("{name} settles"), CONVERGE, || async {
                let status = s.cr_status(name).await?.unwrap_or_default();
                let condition = |type_: &str| {
                    status
                        .conditions
                        .iter()
                        .find(|c| c.type_ == type_ && c.status == "True")
                        .cloned()
                };
                let settled = match outcome {
                    Outcome::Converges => status.phase == Some(Phase::Ready),
                    Outcome::InvalidSpec => condition("InvalidSpec").is_some(),
                    Outcome::Fails(reason, word) => condition("ReconcileFailed")
                        .is_some_and(|c| c.reason == *reason && c.message.contains(word)),
                };
                Ok(settled.then_some(status))
            })
            .await?;
        let pods = s.owned_pods(name).await?;
        match outcome {
            Outcome::Converges => {
                check_pods(name, &pods, want)?;
                anyhow::ensure!(
                    usize::try_from(status.desired) == Ok(want.len()),
                    "{name}: {status:?}"
                );
            }
            Outcome::InvalidSpec | Outcome::Fails(..) => {
                anyhow::ensure!(pods.is_empty(), "{name}: has pods {pods:?}");
            }
        }
        if let Outcome::Fails(reason, _) = outcome {
            let events = s.cr_events(name).await?;
            anyhow::ensure!(
                events.iter().any(|e| e.reason.as_deref() == Some(*reason)
                    && e.type_.as_deref() == Some("Warning")),
                "{name}: no {reason} Warning event"
            );
        }
    }
    // Nothing spins: a minute of resyncs at most, no repeated writes.
    let before = s.operator_log().lines().count();
    tokio::time::sleep(Duration::from_secs(6)).await;
    s.check_operator_alive()?;
    let lines = s.operator_log().lines().count() - before;
    anyhow::ensure!(lines < 200, "{lines} log lines in 6 s of nothing to do");
    // Each CR's pods carry only its own owner label.
    let all: Api<Pod> = Api::namespaced(s.client.clone(), &s.namespace);
    let pods = all.list(&ListParams::default()).await?.items;
    anyhow::ensure!(
        pods.iter().all(|p| p.labels().contains_key(labels::OWNER)),
        "a pod without an owner label"
    );
    // The recorded pod watch: never two pods for one disk while they came up.
    s.assert_one_pod_per_key().await?;
    eprintln!(
        "hostile input: {} odd but accepted CephOSDs handled",
        cases.len()
    );
    s.destroy().await
}
