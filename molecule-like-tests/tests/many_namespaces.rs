//! One operator watching every namespace, as a cluster deployment does: 50 CephOSDs in 10
//! namespaces at once, some of them broken. Every valid one converges on its own; a broken one
//! is reported and neither stalls nor touches the others. A test binary of its own: the
//! operator acts on every CephOSD of the control plane.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::time::Duration;

use ceph_osd_operator::crd::{CephOsd, CephOsdStatus, Phase};
use ceph_osd_operator::labels;
use kube::api::{Api, ListParams, PostParams};
use kube::ResourceExt;
use molecule_like_tests::journeys::scenario::{cleanup, create_namespace, Scenario};
use molecule_like_tests::kubernetes::manifests::{
    cephosd, fast_sample_template, random_suffix, storage, tagged_host,
};
use molecule_like_tests::kubernetes::nodes::{ensure_nodes, hosts_of};
use molecule_like_tests::kubernetes::operator::OperatorOptions;
use serde_json::Value;

/// What each CephOSD is meant to end as.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Kind {
    Valid,
    /// One OSD listed twice with different db: `InvalidSpec`, no pod.
    Ambiguous,
    /// A template the pods API rejects: `ReconcileFailed`, no pod.
    Rejected,
}

fn manifest(name: &str, host: &str, kind: Kind) -> anyhow::Result<Value> {
    let mut template = fast_sample_template()?;
    let storage = match kind {
        Kind::Ambiguous => serde_json::json!([
            {"hosts": [host], "osds": [{"data": "/dev/sdb", "db": "/dev/nvme0n1p1"}]},
            {"hosts": [host], "osds": [{"data": "/dev/sdb", "db": "/dev/nvme0n1p2"}]}
        ]),
        _ => storage(&[host], &["/dev/sdb", "/dev/sdc"]),
    };
    if kind == Kind::Rejected {
        if let Some(container) = template
            .pointer_mut("/spec/containers/0")
            .and_then(Value::as_object_mut)
        {
            container.remove("image");
        }
    }
    Ok(cephosd(name, storage, "Host", template))
}

fn settled(status: &CephOsdStatus, kind: Kind) -> bool {
    let condition = |type_: &str| {
        status
            .conditions
            .iter()
            .any(|c| c.type_ == type_ && c.status == "True")
    };
    match kind {
        Kind::Valid => status.phase == Some(Phase::Ready) && status.ready == 2,
        Kind::Ambiguous => condition("InvalidSpec"),
        Kind::Rejected => condition("ReconcileFailed"),
    }
}

#[tokio::test]
async fn fifty_cephosds_in_ten_namespaces_converge_independently() -> anyhow::Result<()> {
    let s = Scenario::create("many").await?;
    let run = random_suffix();
    let mut crs = Vec::new();
    for n in 0..10 {
        let namespace = format!("mlt-many-{run}-{n}");
        create_namespace(&s.client, &namespace).await?;
        for c in 0..5 {
            let index = n * 5 + c;
            let kind = match index % 10 {
                3 => Kind::Ambiguous,
                7 => Kind::Rejected,
                _ => Kind::Valid,
            };
            crs.push((
                namespace.clone(),
                format!("osds-{c}"),
                tagged_host(&format!("many-{index}"), &run),
                kind,
            ));
        }
    }
    let operator = s.spawn_cluster_wide_operator("all", &OperatorOptions::default())?;
    for (namespace, name, host, kind) in &crs {
        let mut manifest = manifest(name, host, *kind)?;
        manifest["metadata"]["namespace"] = Value::String(namespace.clone());
        ensure_nodes(&s.client, &hosts_of(&manifest)).await?;
        let cr: CephOsd = serde_json::from_value(manifest)?;
        Api::<CephOsd>::namespaced(s.client.clone(), namespace)
            .create(&PostParams::default(), &cr)
            .await?;
    }
    let result = async {
        s.wait_until("every CephOSD settles", Duration::from_mins(3), || async {
            operator.check_alive()?;
            let mut waiting = Vec::new();
            for (namespace, name, _, kind) in &crs {
                let api: Api<CephOsd> = Api::namespaced(s.client.clone(), namespace);
                let status = api.get(name).await?.status.unwrap_or_default();
                if !settled(&status, *kind) {
                    waiting.push(format!("{namespace}/{name} ({kind:?})"));
                }
            }
            Ok(waiting.is_empty().then_some(()))
        })
        .await?;
        // Each namespace holds exactly the pods of its own valid CephOSDs.
        for n in 0..10 {
            let namespace = format!("mlt-many-{run}-{n}");
            let pods: Api<k8s_openapi::api::core::v1::Pod> =
                Api::namespaced(s.client.clone(), &namespace);
            let pods = pods.list(&ListParams::default()).await?.items;
            let valid: Vec<&String> = crs
                .iter()
                .filter(|(ns, _, _, kind)| *ns == namespace && *kind == Kind::Valid)
                .map(|(_, name, _, _)| name)
                .collect();
            anyhow::ensure!(
                pods.len() == 2 * valid.len(),
                "{namespace}: {} pods for {} valid CephOSDs",
                pods.len(),
                valid.len()
            );
            for pod in &pods {
                let owner = pod.labels().get(labels::OWNER).cloned().unwrap_or_default();
                anyhow::ensure!(
                    valid.iter().any(|name| owner == format!("CephOSD-{name}")),
                    "{namespace}: pod {} with owner {owner:?}",
                    pod.name_any()
                );
            }
        }
        anyhow::Ok(())
    }
    .await;
    drop(operator);
    for n in 0..10 {
        cleanup(&s.client, &format!("mlt-many-{run}-{n}")).await?;
    }
    result?;
    eprintln!(
        "many namespaces: {} CephOSDs in 10 namespaces settled",
        crs.len()
    );
    s.destroy().await
}
