//! The CRD on the real API server: defaulting, pruning and int-or-string inside
//! `spec.podTemplate`, numbers spelled as floats, and that `ceph-osd-operator render` accepts
//! what the server accepts and hashes what the operator hashes.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::collections::BTreeSet;
use std::process::Command;
use std::time::Duration;

use ceph_osd_operator::crd::apply_server_defaults;
use ceph_osd_operator::{labels, TemplateHash};
use molecule_like_tests::journeys::scenario::Scenario;
use molecule_like_tests::kubernetes::manifests::{cephosd, with_kubelet_knobs, Knobs};
use molecule_like_tests::kubernetes::nodes::ensure_nodes;
use molecule_like_tests::paths::{operator_binary, output_dir};
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
        Knobs {
            ready_after: 1,
            never_ready: false,
            grace: 10,
        },
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
async fn a_misspelt_auto_bucket_type_is_rejected_by_name() -> anyhow::Result<()> {
    let s = Scenario::converge("crdauto").await?;
    for spelling in ["auto", "AUTO"] {
        let mut manifest = cephosd(
            "auto",
            json!([{"hosts": [s.host("node-a")], "osds": [{"data": "/dev/sdb"}]}]),
            "Topology",
            tricky_template(),
        );
        manifest["spec"]["topology"] = json!({"bucketType": spelling});
        let message = rejection(&s, &manifest).await?;
        for part in ["spec.topology.bucketType", "must be spelled Auto"] {
            anyhow::ensure!(
                message.contains(part),
                "{spelling}: {part:?} not in {message}"
            );
        }
    }
    s.destroy().await
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
        (edit(&|m: &mut Value| m["spec"]["partition"] = json!("half")), &["spec.partition", "percentage"]),
        (edit(&|m: &mut Value| m["spec"]["partition"] = json!(-1)), &["spec.partition", "an integer from 0 to 2147483647"]),
        (edit(&|m: &mut Value| m["spec"]["canary"] = json!("150%")), &["spec.canary", "percentage"]),
        (edit(&|m: &mut Value| m["spec"]["canary"] = json!("10")), &["spec.canary"]),
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
        m["spec"]["partition"] = json!("25%");
        m["spec"]["canary"] = json!(2);
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

/// A number field of the test CephOSD: the JSON key, where the API server and `render` name
/// it, and its placeholder in the manifest before it is spelled out.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Field {
    Cpu,
    Port,
    Grace,
    Memory,
    MaxUnavailable,
}

impl Field {
    const ALL: [Field; 5] = [
        Field::Cpu,
        Field::Port,
        Field::Grace,
        Field::Memory,
        Field::MaxUnavailable,
    ];

    fn key(self) -> &'static str {
        match self {
            Field::Cpu => "cpu",
            Field::Port => "containerPort",
            Field::Grace => "terminationGracePeriodSeconds",
            Field::Memory => "memory",
            Field::MaxUnavailable => "maxUnavailable",
        }
    }

    /// The spelling when a case does not set it.
    fn integer(self) -> &'static str {
        match self {
            Field::Cpu => "2",
            Field::Port => "6800",
            Field::Grace => "10",
            Field::Memory => "1000",
            Field::MaxUnavailable => "1",
        }
    }

    fn placeholder(self) -> String {
        format!("NUMBER_{}", self.key().to_uppercase())
    }

    fn pointer(self) -> &'static str {
        match self {
            Field::Cpu => "/spec/podTemplate/spec/containers/0/resources/limits/cpu",
            Field::Port => "/spec/podTemplate/spec/containers/0/ports/0/containerPort",
            Field::Grace => "/spec/podTemplate/spec/terminationGracePeriodSeconds",
            Field::Memory => "/spec/podTemplate/spec/containers/0/resources/limits/memory",
            Field::MaxUnavailable => "/spec/maxUnavailable",
        }
    }

    /// How the API server names the field in a rejection.
    fn server_path(self) -> &'static str {
        match self {
            Field::Cpu => "spec.podTemplate.spec.containers[0].resources.limits.cpu",
            Field::Port => "spec.podTemplate.spec.containers[0].ports[0].containerPort",
            Field::Grace => "spec.podTemplate.spec.terminationGracePeriodSeconds",
            Field::Memory => "spec.podTemplate.spec.containers[0].resources.limits.memory",
            Field::MaxUnavailable => "spec.maxUnavailable",
        }
    }

    /// How `render` names the field in a rejection.
    fn render_path(self) -> &'static str {
        match self {
            Field::Cpu => "spec.podTemplate.spec.containers[0].resources.limits[cpu]",
            Field::Port => "spec.podTemplate.spec.containers[0].ports[0].containerPort",
            Field::Grace => "spec.podTemplate.spec.terminationGracePeriodSeconds",
            Field::Memory => "spec.podTemplate.spec.containers[0].resources.limits[memory]",
            Field::MaxUnavailable => "spec.maxUnavailable",
        }
    }
}

/// A CephOSD with the given number spellings (the others integers), as the raw JSON body of
/// a create request and as a YAML file: both carry each number exactly as spelled (`1.0`
/// stays `1.0`: the body is text, never a serialised f64).
fn numbers_manifest(
    host: &str,
    name: &str,
    spellings: &[(Field, &str)],
) -> anyhow::Result<(String, String)> {
    let mut template = with_kubelet_knobs(
        json!({
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"labels": {"role": "osd"}},
            "spec": {"containers": [{
                "name": "osd",
                "image": "ceph/daemon",
                "ports": [{"containerPort": Field::Port.placeholder()}],
                "resources": {"limits": {
                    "cpu": Field::Cpu.placeholder(),
                    "memory": Field::Memory.placeholder(),
                }},
            }]},
        }),
        Knobs {
            ready_after: 1,
            never_ready: false,
            grace: 0,
        },
    );
    template["spec"]["terminationGracePeriodSeconds"] = json!(Field::Grace.placeholder());
    let mut manifest = cephosd(
        name,
        json!([{"hosts": [host], "osds": [{"data": "/dev/sdb"}]}]),
        "OSD",
        template,
    );
    manifest["spec"]["maxUnavailable"] = json!(Field::MaxUnavailable.placeholder());
    let mut body = serde_json::to_string(&manifest)?;
    let mut yaml = serde_saphyr::to_string(&manifest)?;
    for field in Field::ALL {
        let spelled = spellings
            .iter()
            .find(|(f, _)| *f == field)
            .map_or(field.integer(), |(_, s)| *s);
        let placeholder = field.placeholder();
        body = body.replace(&format!("\"{placeholder}\""), spelled);
        for quoted in [
            format!("\"{placeholder}\""),
            format!("'{placeholder}'"),
            placeholder,
        ] {
            yaml = yaml.replace(&quoted, spelled);
        }
        let key = field.key();
        anyhow::ensure!(body.contains(&format!("\"{key}\":{spelled}")), "{body}");
        anyhow::ensure!(yaml.contains(&format!("{key}: {spelled}\n")), "{yaml}");
    }
    Ok((body, yaml))
}

/// What `ceph-osd-operator render` says of this YAML: the template hash on its pods, or its
/// error message (exit code 2).
fn render(s: &Scenario, name: &str, yaml: &str) -> anyhow::Result<Result<String, String>> {
    let path = output_dir()
        .join("molecule-like-tests")
        .join(&s.namespace)
        .join(format!("{name}.yaml"));
    std::fs::write(&path, yaml)?;
    let out = Command::new(operator_binary()?)
        .args(["render", "--file"])
        .arg(&path)
        .output()?;
    if out.status.code() == Some(2) {
        return Ok(Err(String::from_utf8_lossy(&out.stderr).into_owned()));
    }
    anyhow::ensure!(
        out.status.success(),
        "render failed oddly: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let pods: Vec<Value> = serde_saphyr::from_multiple(&String::from_utf8(out.stdout)?)?;
    let hashes: BTreeSet<&str> = pods
        .iter()
        .filter_map(|p| p["metadata"]["annotations"][labels::TEMPLATE_HASH].as_str())
        .collect();
    match (
        pods.len(),
        hashes.into_iter().collect::<Vec<_>>().as_slice(),
    ) {
        (1, [hash]) => Ok(Ok((*hash).to_owned())),
        _ => anyhow::bail!("render printed {} pods: {pods:?}", pods.len()),
    }
}

/// The four numbers of the probe, spelled as floats in one CephOSD: the API server accepts
/// it and stores integers, the operator runs its pod, and `render` prints the hash of what is
/// stored (which the operator reports). A fractional `cpu: 0.5` is rejected by both, naming
/// the field.
#[tokio::test]
async fn render_hashes_whole_floats_as_the_api_server_stores_them() -> anyhow::Result<()> {
    let s = Scenario::converge("numbers").await?;
    let host = s.host("node-a");
    ensure_nodes(&s.client, &[host.clone()].into()).await?;
    let floats = [
        (Field::Cpu, "1.0"),
        (Field::Port, "6800.0"),
        (Field::Grace, "1e1"),
        (Field::Memory, "1e3"),
    ];
    let (body, yaml) = numbers_manifest(&host, "floats", &floats)?;
    let created = s
        .create_cr_raw(body)
        .await?
        .map_err(|message| anyhow::anyhow!("rejected: {message}"))?;
    let stored = s.crs.get("floats").await?;
    let template = &stored.spec.pod_template;
    for (field, integer) in [
        (Field::Cpu, "1"),
        (Field::Port, "6800"),
        (Field::Grace, "10"),
        (Field::Memory, "1000"),
    ] {
        let pointer = field.pointer().trim_start_matches("/spec/podTemplate");
        let value = template.pointer(pointer);
        anyhow::ensure!(
            value.map(Value::to_string).as_deref() == Some(integer),
            "{} stored as {value:?}, not {integer}",
            field.key()
        );
        anyhow::ensure!(created.pointer(field.pointer()) == value, "create answer");
    }
    let expected = TemplateHash::of(template).to_string();
    let rendered = render(&s, "floats", &yaml)?.map_err(|e| anyhow::anyhow!("render: {e}"))?;
    anyhow::ensure!(
        rendered == expected,
        "render printed {rendered}, the stored template hashes to {expected}"
    );
    let reported = s
        .wait_until(
            "the operator runs a pod of the stored template",
            Duration::from_mins(1),
            || async {
                let cr = s.crs.get("floats").await?;
                let pods = s.list_pods().await?;
                let running = pods.iter().any(|p| {
                    p.metadata
                        .annotations
                        .as_ref()
                        .and_then(|a| a.get(labels::TEMPLATE_HASH))
                        == Some(&expected)
                });
                Ok(cr
                    .status
                    .and_then(|st| st.template_hash)
                    .filter(|_| running))
            },
        )
        .await?;
    anyhow::ensure!(
        reported == rendered,
        "operator {reported} != render {rendered}"
    );
    let rec = s.recorder()?;
    rec.catch_up(&s.pods).await?;
    rec.assert_one_pod_per_key()?;

    let (body, yaml) = numbers_manifest(&host, "fractional", &[(Field::Cpu, "0.5")])?;
    let Err(message) = s.create_cr_raw(body).await? else {
        anyhow::bail!("the API server accepted cpu: 0.5");
    };
    anyhow::ensure!(message.contains(Field::Cpu.server_path()), "{message}");
    let Err(message) = render(&s, "fractional", &yaml)? else {
        anyhow::bail!("render accepted cpu: 0.5");
    };
    anyhow::ensure!(message.contains(Field::Cpu.render_path()), "{message}");
    s.destroy().await
}

/// Number spellings at the edges of what the API server takes for an integer: `render`
/// accepts exactly what the server accepts (the stored value is pinned as observed) and
/// prints the hash of what the server stores; it rejects what the server rejects, naming the
/// field.
#[tokio::test]
async fn render_and_the_api_server_agree_on_every_number_spelling() -> anyhow::Result<()> {
    let s = Scenario::create("numberedges").await?;
    // (field, spelling, what the server stores; None: rejected)
    let cases: &[(Field, &str, Option<&str>)] = &[
        (Field::Cpu, "1.0", Some("1")),
        (Field::Cpu, "-0.0", Some("0")),
        (Field::Cpu, "0.5", None),
        (Field::Cpu, "1.5", None),
        // The server's tolerance for an int-or-string just above a whole number.
        (Field::Cpu, "1.0000000001", Some("1.0000000001")),
        (Field::Cpu, "0.9999999999", None),
        (Field::Cpu, "-1.0000000001", None),
        (Field::Cpu, "9007199254740992.0", None),
        (Field::Memory, "1e3", Some("1000")),
        (Field::Port, "6800.0", Some("6800")),
        (Field::Port, "-0.0", Some("0")),
        (Field::Port, "2147483647.0", Some("2147483647")),
        (Field::Port, "2147483648", None),
        (Field::Port, "6800.000001", None),
        (Field::Grace, "1e1", Some("10")),
        (Field::Grace, "10.0", Some("10")),
        (Field::Grace, "9007199254740991.0", Some("9007199254740991")),
        (Field::Grace, "9007199254740992.0", None),
        (Field::Grace, "9007199254740994.0", None),
        (
            Field::Grace,
            "9223372036854775807",
            Some("9223372036854775807"),
        ),
        (Field::Grace, "9223372036854775808", None),
        (Field::Grace, "1e19", None),
        (Field::MaxUnavailable, "2.0", Some("2")),
        (Field::MaxUnavailable, "0.0", None),
    ];
    for (index, (field, spelled, expected)) in cases.iter().enumerate() {
        let case = format!("{}: {spelled}", field.key());
        let name = format!("case-{index}");
        let (body, yaml) = numbers_manifest(&s.host("node-a"), &name, &[(*field, spelled)])?;
        let server = s.create_cr_raw(body).await?;
        let rendered = render(&s, &name, &yaml)?;
        match (expected, server, rendered) {
            (Some(stored), Ok(_), Ok(rendered)) => {
                let cr = s.crs.get(&name).await?;
                let raw = s.raw_crs.get(&name).await?;
                let value = raw.data.pointer(field.pointer()).map(Value::to_string);
                anyhow::ensure!(
                    value.as_deref() == Some(*stored),
                    "{case}: stored {value:?}"
                );
                let hash = TemplateHash::of(&cr.spec.pod_template).to_string();
                anyhow::ensure!(
                    rendered == hash,
                    "{case}: render {rendered} != stored {hash}"
                );
            }
            (None, Err(server), Err(rendered)) => {
                anyhow::ensure!(server.contains(field.server_path()), "{case}: {server}");
                anyhow::ensure!(rendered.contains(field.render_path()), "{case}: {rendered}");
            }
            (expected, server, rendered) => anyhow::bail!(
                "{case}: expected {expected:?}; the API server: {server:?}; render: {rendered:?}"
            ),
        }
    }
    s.destroy().await
}

/// Number spellings at and past the bounds of every integer type, and values of other types.
const BOUNDARY_SPELLINGS: [&str; 19] = [
    "0",
    "1",
    "-1",
    "2147483647",
    "2147483648",
    "-2147483649",
    "4294967295",
    "4294967296",
    "9007199254740993",
    "9223372036854775807",
    "1.5",
    "1e3",
    "\"3\"",
    "\"10%\"",
    "\"100%\"",
    "\"101%\"",
    "\"x\"",
    "true",
    "null",
];

/// Whether the operator's type reads `stored` (as the API server returned it), and reads the
/// object back through the typed API.
async fn operator_reads(s: &Scenario, stored: &Value) -> anyhow::Result<()> {
    let name = stored["metadata"]["name"].as_str().unwrap_or_default();
    serde_json::from_value::<ceph_osd_operator::crd::CephOsd>(stored.clone())
        .map_err(|e| anyhow::anyhow!("the operator cannot read what the server stored: {e}"))?;
    s.crs
        .get(name)
        .await
        .map_err(|e| anyhow::anyhow!("the typed GET of {name} failed: {e}"))?;
    Ok(())
}

/// Any CephOSD the API server accepts is one the operator reads: each number field of the
/// spec set, one at a time, to each value at and past the bounds of every integer type (and
/// `partition` × `canary` together), then each number field of the status written so; what
/// the server stores must decode as the operator's type. (A CephOSD the operator could not
/// read once failed its LIST of every CephOSD.)
#[tokio::test]
#[expect(
    clippy::too_many_lines,
    reason = "one table: spec fields, the pair, status fields"
)]
async fn every_cephosd_the_api_server_accepts_the_operator_reads() -> anyhow::Result<()> {
    let s = Scenario::create("crdbounds").await?;
    let host = s.host("bounds");
    let base = cephosd(
        "base",
        json!([{"hosts": [host], "osds": [{"data": "/dev/sdb"}]}]),
        "OSD",
        json!({"metadata": {"labels": {"role": "osd"}}, "spec": {"containers": [{"name": "osd", "image": "x"}]}}),
    );
    let mut cases: Vec<Vec<(&str, &str)>> = Vec::new();
    for field in [
        "maxUnavailable",
        "minReadySeconds",
        "progressDeadlineSeconds",
        "partition",
        "canary",
    ] {
        cases.extend(BOUNDARY_SPELLINGS.iter().map(|v| vec![(field, *v)]));
    }
    for partition in ["2147483647", "\"50%\""] {
        for canary in ["2147483647", "0", "\"100%\""] {
            cases.push(vec![("partition", partition), ("canary", canary)]);
        }
    }
    let (mut accepted, mut rejected) = (0, 0);
    for (n, case) in cases.iter().enumerate() {
        let mut manifest = base.clone();
        manifest["metadata"]["name"] = json!(format!("bounds-{n}"));
        manifest["metadata"]["namespace"] = json!(s.namespace);
        for (field, spelling) in case {
            manifest["spec"][*field] = serde_json::from_str(spelling)?;
        }
        match s.create_cr_raw(serde_json::to_string(&manifest)?).await? {
            Ok(stored) => {
                accepted += 1;
                operator_reads(&s, &stored)
                    .await
                    .map_err(|e| anyhow::anyhow!("spec {case:?}: {e}"))?;
            }
            Err(message) => {
                rejected += 1;
                // A rejection names the field.
                anyhow::ensure!(
                    case.iter().any(|(field, _)| message.contains(field)),
                    "spec {case:?} rejected without naming the field: {message}"
                );
            }
        }
    }
    // The status, as any writer with the status subresource could leave it.
    let mut manifest = base.clone();
    manifest["metadata"]["namespace"] = json!(s.namespace);
    s.create_cr_raw(serde_json::to_string(&manifest)?)
        .await?
        .map_err(|m| anyhow::anyhow!("the base CephOSD was rejected: {m}"))?;
    let api: kube::Api<kube::api::DynamicObject> = kube::Api::namespaced_with(
        s.client.clone(),
        &s.namespace,
        &kube::api::ApiResource::erase::<ceph_osd_operator::crd::CephOsd>(&()),
    );
    let status_of = |v: &Value| -> Vec<Value> {
        vec![
            json!({"desired": v, "observedGeneration": v}),
            json!({"osdIds": {"h:/dev/sdb": [v]}}),
            json!({"cephStep": {"keys": ["h:/dev/sdb"], "osds": [{"id": v, "upFrom": 1}],
                                "noout": [v], "started": "2026-01-01T00:00:00Z"}}),
            json!({"cephStep": {"keys": ["h:/dev/sdb"], "osds": [{"id": 1, "upFrom": v}],
                                "started": "2026-01-01T00:00:00Z"}}),
        ]
    };
    let (mut status_accepted, mut status_rejected) = (0, 0);
    for spelling in BOUNDARY_SPELLINGS {
        let value: Value = serde_json::from_str(spelling)?;
        for status in status_of(&value) {
            let patch = json!({"status": status});
            match api
                .patch_status(
                    "base",
                    &kube::api::PatchParams::default(),
                    &kube::api::Patch::Merge(&patch),
                )
                .await
            {
                Ok(stored) => {
                    status_accepted += 1;
                    operator_reads(&s, &serde_json::to_value(&stored)?)
                        .await
                        .map_err(|e| anyhow::anyhow!("status {status}: {e}"))?;
                }
                Err(kube::Error::Api(e)) if e.code == 422 => status_rejected += 1,
                Err(other) => return Err(other.into()),
            }
            // Back to an empty status for the next case.
            let clear = json!({"status": null});
            api.patch_status(
                "base",
                &kube::api::PatchParams::default(),
                &kube::api::Patch::Merge(&clear),
            )
            .await?;
        }
    }
    println!(
        "spec cases: {accepted} accepted (each read by the operator), {rejected} rejected \
         naming the field; status cases: {status_accepted} accepted and read, \
         {status_rejected} rejected"
    );
    anyhow::ensure!(accepted > 20 && rejected > 20 && status_accepted > 10);
    s.destroy().await
}
