//! The CRD on the real API server: defaulting, pruning and int-or-string inside
//! `spec.podTemplate`, and that `ceph-osd-operator render` hashes what the operator hashes.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::time::Duration;

use ceph_osd_operator::crd::apply_server_defaults;
use ceph_osd_operator::TemplateHash;
use molecule_like_tests::scenario::{cephosd, with_kubelet_knobs, Scenario};
use serde_json::{json, Value};

fn tricky_template() -> Value {
    with_kubelet_knobs(
        json!({
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"labels": {"role": "osd"}, "unknownMetadataField": "pruned"},
            "spec": {
                "containers": [{
                    "name": "osd",
                    "image": "ceph/daemon",
                    "ports": [{"containerPort": 6800}, {"containerPort": 6801, "protocol": "UDP"}],
                    "resources": {"requests": {"cpu": 1, "memory": "4Gi"}, "limits": {"cpu": "2.5"}},
                    "readinessProbe": {"httpGet": {"port": 8080, "path": "/"}},
                    "livenessProbe": {"tcpSocket": {"port": "metrics"}},
                    "notAPodField": "pruned",
                }],
                "initContainers": [{"name": "init", "image": "busybox", "ports": [{"containerPort": 1}]}],
            }
        }),
        1,
        false,
        10,
    )
}

#[tokio::test]
async fn pod_template_is_defaulted_pruned_and_accepts_numbers() -> anyhow::Result<()> {
    let s = Scenario::converge("crdschema").await?;
    let template = tricky_template();
    let manifest = cephosd(
        "ceph-osds",
        json!([{"hosts": [s.host("node-a")], "osds": [{"data": "/dev/sdb"}]}]),
        "OSD",
        template.clone(),
    );
    let stored = s.create_cr(&manifest).await?.spec.pod_template;

    let container = &stored["spec"]["containers"][0];
    anyhow::ensure!(
        container["ports"][0]["protocol"] == "TCP",
        "protocol defaulted: {container}"
    );
    anyhow::ensure!(
        container["ports"][1]["protocol"] == "UDP",
        "explicit protocol kept"
    );
    anyhow::ensure!(
        stored["spec"]["initContainers"][0]["ports"][0]["protocol"] == "TCP",
        "initContainers defaulted too"
    );
    anyhow::ensure!(
        container["resources"]["requests"]["cpu"] == json!(1),
        "cpu: 1 accepted as a number"
    );
    anyhow::ensure!(
        container["resources"]["limits"]["cpu"] == json!("2.5"),
        "cpu: \"2.5\" kept"
    );
    anyhow::ensure!(container["readinessProbe"]["httpGet"]["port"] == json!(8080));
    anyhow::ensure!(container["livenessProbe"]["tcpSocket"]["port"] == json!("metrics"));
    anyhow::ensure!(
        container.get("notAPodField").is_none(),
        "unknown fields pruned"
    );
    anyhow::ensure!(stored["metadata"].get("unknownMetadataField").is_none());

    // What `render` computes offline equals what the server stores, and what the operator hashes.
    let mut offline = template;
    apply_server_defaults(&mut offline)?;
    anyhow::ensure!(offline == stored, "offline {offline}\n!= stored {stored}");
    let expected = TemplateHash::of(&stored).to_string();
    let reported = s
        .wait_until(
            "the operator reports the template hash",
            Duration::from_mins(1),
            || async {
                let cr = s.crs.get("ceph-osds").await?;
                Ok(cr.status.and_then(|st| st.template_hash))
            },
        )
        .await?;
    anyhow::ensure!(
        reported == expected,
        "operator hash {reported} != {expected}"
    );

    // A fractional number is not an int-or-string: rejected with the field named (write "0.5").
    let mut fractional = manifest.clone();
    fractional["metadata"]["name"] = json!("fractional");
    fractional["spec"]["podTemplate"]["spec"]["containers"][0]["resources"]["limits"]["cpu"] =
        json!(0.5);
    let Err(kube::Error::Api(status)) = s.create_cr(&fractional).await.map_err(|e| {
        e.downcast::<kube::Error>()
            .unwrap_or_else(|e| kube::Error::Service(e.into()))
    }) else {
        anyhow::bail!("cpu: 0.5 was accepted or failed oddly");
    };
    anyhow::ensure!(status.code == 422);
    anyhow::ensure!(
        status
            .message
            .contains("spec.podTemplate.spec.containers[0].resources.limits.cpu"),
        "{}",
        status.message
    );
    s.destroy().await
}

/// The API server's answer to creating `manifest`: the rejection message (422), or an error
/// when it was accepted.
async fn rejection(s: &Scenario, manifest: &Value) -> anyhow::Result<String> {
    match s.create_cr(manifest).await {
        Ok(_) => anyhow::bail!("accepted: {}", manifest["spec"]),
        Err(error) => match error.downcast::<kube::Error>() {
            Ok(kube::Error::Api(status)) if status.code == 422 => Ok(status.message),
            Ok(other) => anyhow::bail!("failed oddly: {other}"),
            Err(other) => anyhow::bail!("failed oddly: {other}"),
        },
    }
}

#[tokio::test]
async fn ambiguous_devices_and_operator_owned_template_fields_are_rejected_by_name(
) -> anyhow::Result<()> {
    let s = Scenario::converge("crdrules").await?;
    let base = cephosd(
        "rules",
        json!([{"hosts": [s.host("node-a")], "osds": [{"data": "/dev/sdb"}]}]),
        "OSD",
        tricky_template(),
    );
    let edit = |f: &dyn Fn(&mut Value)| {
        let mut manifest = base.clone();
        f(&mut manifest);
        manifest
    };
    let osd = "/spec/storage/0/osds/0";
    let set = |pointer: String, value: Value| {
        move |m: &mut Value| {
            if let Some(slot) = m.pointer_mut(&pointer) {
                *slot = value.clone();
            }
        }
    };
    let cases: Vec<(Value, &[&str])> = vec![
        (edit(&set(format!("{osd}/data"), json!("/dev/sdb/"))), &["spec.storage[0].osds[0].data"]),
        (edit(&set(format!("{osd}/data"), json!("/dev//sdb"))), &["spec.storage[0].osds[0].data"]),
        (edit(&set(format!("{osd}/data"), json!("/dev/./sdb"))), &["spec.storage[0].osds[0].data"]),
        (edit(&set(format!("{osd}/data"), json!("sdb"))), &["spec.storage[0].osds[0].data"]),
        (
            edit(&|m: &mut Value| m["spec"]["storage"][0]["osds"][0]["db"] = json!("/dev/../nvme0n1")),
            &["spec.storage[0].osds[0].db"],
        ),
        (
            edit(&set("/spec/storage/0/hosts/0".into(), json!("A76-H1"))),
            &["spec.storage[0].hosts[0]"],
        ),
        (
            edit(&|m: &mut Value| {
                m["spec"]["podTemplate"]["metadata"]["annotations"] =
                    json!({"ceph.elemental.net/db": "/dev/evil-db"});
            }),
            &["spec.podTemplate.metadata.annotations", "ceph.elemental.net/db", "set by the operator"],
        ),
        (
            edit(&|m: &mut Value| {
                m["spec"]["podTemplate"]["metadata"]["labels"]["ceph.elemental.net/owner"] =
                    json!("CephOSD-other");
            }),
            &["spec.podTemplate.metadata.labels", "ceph.elemental.net/owner"],
        ),
        (
            edit(&|m: &mut Value| {
                m["spec"]["podTemplate"]["metadata"]["finalizers"] = json!(["example.com/hold"]);
            }),
            &["spec.podTemplate.metadata.finalizers"],
        ),
        (
            edit(&|m: &mut Value| m["spec"]["podTemplate"]["spec"]["nodeName"] = json!("node-b")),
            &["spec.podTemplate.spec.nodeName"],
        ),
        (
            edit(&|m: &mut Value| {
                m["spec"]["podTemplate"]["spec"]["nodeSelector"] =
                    json!({"kubernetes.io/hostname": "node-b"});
            }),
            &["spec.podTemplate.spec.nodeSelector", "kubernetes.io/hostname"],
        ),
        (
            edit(&|m: &mut Value| {
                m["spec"]["podTemplate"]["spec"]["affinity"] = json!({"nodeAffinity": {
                    "requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
                        {"matchExpressions": [{"key": "zone", "operator": "In", "values": ["a"]}]}]}}});
            }),
            &["spec.podTemplate.spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution"],
        ),
    ];
    for (manifest, expected) in &cases {
        let message = rejection(&s, manifest).await?;
        for part in *expected {
            anyhow::ensure!(message.contains(part), "{part:?} not in {message}");
        }
    }
    // What the rules leave alone is accepted: other node selectors, preferred affinity, an
    // empty finalizer list, other annotations.
    let allowed = edit(&|m: &mut Value| {
        let t = &mut m["spec"]["podTemplate"];
        t["metadata"]["finalizers"] = json!([]);
        t["metadata"]["annotations"] = json!({"example.com/note": "kept"});
        t["spec"]["nodeSelector"] = json!({"disktype": "hdd"});
        t["spec"]["affinity"] = json!({"nodeAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [
            {"weight": 1, "preference": {"matchExpressions": [{"key": "zone", "operator": "In", "values": ["a"]}]}}]}});
    });
    s.create_cr(&allowed).await?;
    s.destroy().await
}
