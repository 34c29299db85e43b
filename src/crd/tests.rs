use super::*;

fn schema() -> Value {
    serde_json::to_value(custom_resource_definition().expect("crd"))
        .expect("crd serialises")
        .pointer(SCHEMA_POINTER)
        .cloned()
        .expect("schema present")
}

#[test]
fn names_match_the_reference_crd() {
    let crd = custom_resource_definition().expect("crd");
    assert_eq!(
        crd.metadata.name.as_deref(),
        Some("cephosds.ceph.elemental.net")
    );
    assert_eq!(crd.spec.group, "ceph.elemental.net");
    assert_eq!(crd.spec.names.kind, "CephOSD");
    assert_eq!(crd.spec.names.list_kind.as_deref(), Some("CephOSDList"));
    assert_eq!(crd.spec.names.singular.as_deref(), Some("cephosd"));
    assert_eq!(crd.spec.scope, "Namespaced");
    let version = &crd.spec.versions[0];
    assert_eq!(version.name, "v1alpha1");
    assert!(version.served && version.storage);
    assert!(version
        .subresources
        .as_ref()
        .and_then(|s| s.status.as_ref())
        .is_some());
}

#[test]
fn spec_requires_storage_update_domain_and_pod_template() {
    let schema = schema();
    let required = schema
        .pointer("/properties/spec/required")
        .expect("required");
    for field in ["storage", "updateDomain", "podTemplate"] {
        assert!(
            required.as_array().expect("array").contains(&json!(field)),
            "{field}"
        );
    }
    assert_eq!(
        schema.pointer("/properties/spec/properties/updateDomain/enum"),
        Some(&json!(["OSD", "Host", "Topology"]))
    );
    let storage = schema
        .pointer("/properties/spec/properties/storage/items/properties")
        .expect("storage items");
    assert_eq!(storage.pointer("/hosts/minItems"), Some(&json!(1)));
    assert_eq!(storage.pointer("/hosts/items/minLength"), Some(&json!(1)));
    assert_eq!(storage.pointer("/osds/minItems"), Some(&json!(1)));
    for device in ["data", "db", "wal"] {
        assert_eq!(
            storage.pointer(&format!("/osds/items/properties/{device}/minLength")),
            Some(&json!(1)),
            "{device}"
        );
    }
    assert_eq!(
        storage.pointer("/osds/items/required"),
        Some(&json!(["data"]))
    );
}

#[test]
fn name_length_rule_is_present() {
    let rules = schema()["x-kubernetes-validations"].clone();
    assert_eq!(rules[0]["rule"], json!("self.metadata.name.size() <= 55"));
    assert!(rules[0]["message"]
        .as_str()
        .is_some_and(|m| m.contains("63")));
}

#[test]
fn pod_template_defaults_port_protocol_and_has_no_inner_descriptions() {
    let pod = pod_schema().expect("pod schema");
    for containers in ["containers", "initContainers"] {
        let pointer = format!("/properties/spec/properties/{containers}/items/properties/ports/items/properties/protocol/default");
        assert_eq!(pod.pointer(&pointer), Some(&json!("TCP")), "{containers}");
    }
    let mut inner = pod.clone();
    inner.as_object_mut().expect("object").remove("description");
    assert!(!inner.to_string().contains("\"description\":\""));
}

#[test]
fn server_defaults_prune_unknown_fields_and_fill_port_protocols_only_where_missing() {
    let mut template = json!({"spec": {
            "containers": [{"name": "a", "ports": [{"containerPort": 1}, {"containerPort": 2, "protocol": "UDP"}]}],
            "initContainers": [{"name": "b", "ports": [{"containerPort": 3}]}]}});
    apply_server_defaults(&mut template).expect("pod schema");
    assert_eq!(
        template.pointer("/spec/containers/0/ports/0/protocol"),
        Some(&json!("TCP"))
    );
    assert_eq!(
        template.pointer("/spec/containers/0/ports/1/protocol"),
        Some(&json!("UDP"))
    );
    assert_eq!(
        template.pointer("/spec/initContainers/0/ports/0/protocol"),
        Some(&json!("TCP"))
    );
}

#[test]
fn server_defaults_write_numbers_as_the_server_stores_them() {
    let mut template: Value = serde_json::from_str(
            r#"{"spec": {"terminationGracePeriodSeconds": 1e1, "containers": [{"name": "a",
                "ports": [{"containerPort": 6800.0}],
                "resources": {"limits": {"cpu": 1.0, "memory": 1e3}, "requests": {"cpu": 0.5}}}]}}"#,
        )
        .expect("json");
    apply_server_defaults(&mut template).expect("pod schema");
    let container = &template["spec"]["containers"][0];
    assert_eq!(
        template["spec"]["terminationGracePeriodSeconds"].to_string(),
        "10"
    );
    assert_eq!(container["ports"][0]["containerPort"].to_string(), "6800");
    assert_eq!(
        container["resources"]["limits"].to_string(),
        r#"{"cpu":1,"memory":1000}"#
    );
    // Not an integer: kept as it is (the schema check rejects it first).
    assert_eq!(container["resources"]["requests"]["cpu"].to_string(), "0.5");
}

#[test]
fn quantities_and_ports_accept_numbers() {
    let text = pod_schema().expect("pod schema").to_string();
    assert!(text.contains("x-kubernetes-int-or-string"));
}

#[test]
fn crd_stays_below_the_client_side_apply_annotation_limit() {
    let bytes = serde_json::to_vec(&custom_resource_definition().expect("crd")).expect("json");
    assert!(
        bytes.len() < 256 * 1024 - 4096,
        "CRD is {} bytes",
        bytes.len()
    );
}

#[test]
fn checked_in_crd_matches_the_generated_one() {
    let checked_in = include_str!("../../crds/cephosds.ceph.elemental.net.yaml");
    assert!(
            checked_in == custom_resource_definition_yaml().expect("crd"),
            "crds/cephosds.ceph.elemental.net.yaml is stale: run `cargo run -- crd > crds/cephosds.ceph.elemental.net.yaml`"
        );
}
