//! The CRDs that give the apiextensions-apiserver what a cluster's built-in API would have:
//! Pods (served at `/api/v1` through the proxy), Leases and events.k8s.io Events.

use std::time::Duration;

use k8s_openapi::api::coordination::v1::Lease;
use k8s_openapi::api::events::v1::Event;
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::api::{Api, Patch, PatchParams};
use kube::runtime::wait::{await_condition, conditions};
use kube::Client;
use schemars::JsonSchema;
use serde_json::{json, Value};

use crate::rewrite::POD_GROUP;

/// Field manager used for everything the harness writes.
pub const FIELD_MANAGER: &str = "molecule-harness";

/// Annotation needed for CRDs in protected (`*.k8s.io`) groups.
const API_APPROVED: &str = "api-approved.kubernetes.io";

/// Makes a schema usable as the root of a CRD: `metadata` may only be `type: object` there,
/// and the root must be an object.
fn root_schema(mut schema: Value) -> Value {
    if let Some(obj) = schema.as_object_mut() {
        obj.insert("type".into(), json!("object"));
        obj.remove("description");
        if let Some(props) = obj.get_mut("properties").and_then(Value::as_object_mut) {
            props.insert("metadata".into(), json!({"type": "object"}));
        }
        if let Some(req) = obj.get_mut("required").and_then(Value::as_array_mut) {
            req.retain(|r| r.as_str() != Some("metadata"));
            if req.is_empty() {
                obj.remove("required");
            }
        }
    }
    schema
}

fn strip_descriptions(v: &mut Value) {
    match v {
        Value::Object(map) => {
            if map.get("description").is_some_and(Value::is_string) {
                map.remove("description");
            }
            for (_, child) in map.iter_mut() {
                strip_descriptions(child);
            }
        }
        Value::Array(items) => items.iter_mut().for_each(strip_descriptions),
        _ => {}
    }
}

/// The structural schema kube-derive would generate for a k8s-openapi type.
fn structural_schema_for<T: JsonSchema>() -> Value {
    let generator = schemars::generate::SchemaSettings::openapi3()
        .with(|s| {
            s.inline_subschemas = true;
            s.meta_schema = None;
        })
        .with_transform(schemars::transform::AddNullable::default())
        .with_transform(kube::core::schema::StructuralSchemaRewriter)
        .with_transform(kube::core::schema::OptionalEnum)
        .with_transform(kube::core::schema::OptionalIntOrString)
        .into_generator();
    let mut v = serde_json::to_value(generator.into_root_schema_for::<T>()).unwrap_or(Value::Null);
    strip_descriptions(&mut v);
    v
}

struct CrdSpec<'a> {
    group: &'a str,
    kind: &'a str,
    plural: &'a str,
    singular: &'a str,
    short_names: &'a [&'a str],
    status: bool,
    approved: bool,
    printer_columns: Value,
    schema: Value,
}

fn build(c: CrdSpec<'_>) -> anyhow::Result<CustomResourceDefinition> {
    let mut annotations = serde_json::Map::new();
    if c.approved {
        annotations.insert(API_APPROVED.into(), json!("unapproved, test-only"));
    }
    let mut version = json!({
        "name": "v1",
        "served": true,
        "storage": true,
        "schema": {"openAPIV3Schema": root_schema(c.schema)},
    });
    if c.status {
        version["subresources"] = json!({"status": {}});
    }
    if c.printer_columns.as_array().is_some_and(|a| !a.is_empty()) {
        version["additionalPrinterColumns"] = c.printer_columns;
    }
    let crd = json!({
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {
            "name": format!("{}.{}", c.plural, c.group),
            "annotations": annotations,
            "labels": {"app.kubernetes.io/managed-by": FIELD_MANAGER},
        },
        "spec": {
            "group": c.group,
            "scope": "Namespaced",
            "names": {
                "kind": c.kind,
                "listKind": format!("{}List", c.kind),
                "plural": c.plural,
                "singular": c.singular,
                "shortNames": c.short_names,
            },
            "versions": [version],
        }
    });
    Ok(serde_json::from_value(crd)?)
}

/// `pods.core.testing.local`: kind Pod, with the operator's own embedded Pod schema.
pub fn pods_crd() -> anyhow::Result<CustomResourceDefinition> {
    let schema = ceph_osd_operator::crd::pod_schema();
    anyhow::ensure!(
        schema.get("properties").is_some(),
        "ceph_osd_operator::crd::pod_schema() returned no properties"
    );
    build(CrdSpec {
        group: POD_GROUP,
        kind: "Pod",
        plural: "pods",
        singular: "pod",
        short_names: &["po"],
        status: true,
        approved: false,
        printer_columns: json!([
            {"name": "Ready", "type": "string", "jsonPath": ".status.conditions[?(@.type==\"Ready\")].status"},
            {"name": "Status", "type": "string", "jsonPath": ".status.phase"},
            {"name": "IP", "type": "string", "jsonPath": ".status.podIP", "priority": 1},
            {"name": "Node", "type": "string", "jsonPath": ".spec.nodeName", "priority": 1},
            {"name": "Age", "type": "date", "jsonPath": ".metadata.creationTimestamp"},
        ]),
        schema,
    })
}

/// `leases.coordination.k8s.io` (for leader election).
pub fn leases_crd() -> anyhow::Result<CustomResourceDefinition> {
    build(CrdSpec {
        group: "coordination.k8s.io",
        kind: "Lease",
        plural: "leases",
        singular: "lease",
        short_names: &[],
        status: false,
        approved: true,
        printer_columns: json!([
            {"name": "Holder", "type": "string", "jsonPath": ".spec.holderIdentity"},
            {"name": "Age", "type": "date", "jsonPath": ".metadata.creationTimestamp"},
        ]),
        schema: structural_schema_for::<Lease>(),
    })
}

/// `events.events.k8s.io` (kube-runtime's event Recorder writes these).
pub fn events_crd() -> anyhow::Result<CustomResourceDefinition> {
    build(CrdSpec {
        group: "events.k8s.io",
        kind: "Event",
        plural: "events",
        singular: "event",
        short_names: &["ev"],
        status: false,
        approved: true,
        printer_columns: json!([
            {"name": "Type", "type": "string", "jsonPath": ".type"},
            {"name": "Reason", "type": "string", "jsonPath": ".reason"},
            {"name": "Object", "type": "string", "jsonPath": ".regarding.name"},
            {"name": "Note", "type": "string", "jsonPath": ".note"},
        ]),
        schema: structural_schema_for::<Event>(),
    })
}

/// All harness CRDs.
pub fn all() -> anyhow::Result<Vec<CustomResourceDefinition>> {
    Ok(vec![pods_crd()?, leases_crd()?, events_crd()?])
}

/// Server-side applies the harness CRDs and waits until each is Established.
pub async fn install(client: &Client) -> anyhow::Result<()> {
    let api: Api<CustomResourceDefinition> = Api::all(client.clone());
    let pp = PatchParams::apply(FIELD_MANAGER).force();
    for crd in all()? {
        let name = crd.metadata.name.clone().unwrap_or_default();
        api.patch(&name, &pp, &Patch::Apply(&crd))
            .await
            .map_err(|e| anyhow::anyhow!("applying CRD {name}: {e}"))?;
        tokio::time::timeout(
            Duration::from_secs(30),
            await_condition(api.clone(), &name, conditions::is_crd_established()),
        )
        .await
        .map_err(|_| anyhow::anyhow!("CRD {name} not Established after 30s"))??;
        tracing::info!(crd = %name, "established");
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn crds_build() {
        let crds = all().expect("crds");
        let names: Vec<_> = crds
            .iter()
            .filter_map(|c| c.metadata.name.clone())
            .collect();
        assert_eq!(
            names,
            [
                "pods.core.testing.local",
                "leases.coordination.k8s.io",
                "events.events.k8s.io"
            ]
        );
        for crd in &crds {
            let v = serde_json::to_value(crd).expect("json");
            let root = &v["spec"]["versions"][0]["schema"]["openAPIV3Schema"];
            assert_eq!(root["type"], "object");
            assert_eq!(root["properties"]["metadata"], json!({"type": "object"}));
            let text = v.to_string();
            assert!(!text.contains("$ref"), "no refs in {:?}", crd.metadata.name);
            assert!(!text.contains("x-kubernetes-preserve-unknown-fields"));
        }
        let pods = serde_json::to_value(&crds[0]).expect("json");
        assert!(
            pods["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]
                ["properties"]["containers"]
                .is_object()
        );
        assert_eq!(
            pods["spec"]["versions"][0]["subresources"],
            json!({"status": {}})
        );
        let leases = serde_json::to_value(&crds[1]).expect("json");
        assert_eq!(
            leases["metadata"]["annotations"][API_APPROVED],
            "unapproved, test-only"
        );
    }

    #[test]
    fn pod_schema_is_the_operators() {
        let crd = pods_crd().expect("crd");
        let v = serde_json::to_value(&crd).expect("json");
        let root = &v["spec"]["versions"][0]["schema"]["openAPIV3Schema"];
        let op = ceph_osd_operator::crd::pod_schema();
        assert_eq!(root["properties"]["spec"], op["properties"]["spec"]);
        assert_eq!(root["properties"]["status"], op["properties"]["status"]);
    }
}
