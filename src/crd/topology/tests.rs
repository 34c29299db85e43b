use super::*;
use crate::crd::{CephOsdSpec, UpdateDomain};
use regex::Regex;

fn spec_schema() -> Value {
    let crd =
        serde_json::to_value(crate::crd::custom_resource_definition().expect("crd")).expect("json");
    crd.pointer("/spec/versions/0/schema/openAPIV3Schema/properties/spec")
        .expect("spec schema")
        .clone()
}

#[test]
fn an_existing_spec_reads_and_writes_unchanged() {
    let written = json!({"storage": [], "updateDomain": "Host", "podTemplate": {}});
    let spec: CephOsdSpec = serde_json::from_value(written.clone()).expect("spec");
    assert_eq!(spec.topology, None);
    assert_eq!(spec.pre_pull, None);
    assert_eq!(serde_json::to_value(&spec).expect("json"), written);
}

#[test]
fn a_topology_spec_reads_as_written() {
    let spec: CephOsdSpec = serde_json::from_value(json!({
        "storage": [], "podTemplate": {}, "updateDomain": "Topology",
        "topology": {"bucketType": "rack", "topologyKey": "topology.kubernetes.io/zone"},
        "prePull": {"command": ["ceph-osd", "--version"], "deadlineSeconds": 60},
    }))
    .expect("spec");
    assert_eq!(spec.update_domain, UpdateDomain::Topology);
    let topology = spec.topology.expect("topology");
    assert!(!topology.is_auto());
    assert_eq!(
        topology.topology_key.as_deref(),
        Some("topology.kubernetes.io/zone")
    );
    let pre_pull = spec.pre_pull.expect("prePull");
    assert_eq!(
        pre_pull.command(),
        (vec!["ceph-osd".into(), "--version".into()], true)
    );
    assert_eq!(pre_pull.deadline().as_secs(), 60);
    assert_eq!(pre_pull.domains_ahead(), 1);
}

#[test]
fn pre_pull_defaults_run_true_within_five_minutes() {
    let defaults = PrePullSpec::default();
    assert_eq!(defaults.command(), (vec!["true".to_owned()], false));
    assert_eq!(defaults.deadline().as_secs(), 300);
    let empty = PrePullSpec {
        command: Some(Vec::new()),
        ..PrePullSpec::default()
    };
    assert!(!empty.command().1, "an empty command is the default");
}

#[test]
fn a_deadline_above_an_hour_is_rejected_by_the_schema_and_read_as_an_hour() {
    let schema = spec_schema();
    let field = schema
        .pointer("/properties/prePull/properties/deadlineSeconds")
        .expect("deadlineSeconds");
    assert_eq!(
        field["maximum"].as_f64(),
        Some(f64::from(MAX_PRE_PULL_DEADLINE_SECONDS))
    );
    assert_eq!(field["minimum"].as_f64(), Some(1.0));
    let read = |seconds: i32| {
        let spec = PrePullSpec {
            deadline_seconds: Some(seconds),
            ..PrePullSpec::default()
        };
        spec.deadline().as_secs()
    };
    assert_eq!(read(3600), 3600);
    assert_eq!(read(3601), 3600);
    assert_eq!(read(i32::MAX), 3600);
    assert_eq!(read(0), 1);
}

#[test]
fn the_schema_ties_topology_to_its_update_domain_naming_the_field() {
    let spec = spec_schema();
    let rules = spec["x-kubernetes-validations"].as_array().expect("rules");
    let rule = rules
        .iter()
        .find(|r| {
            r["rule"]
                .as_str()
                .is_some_and(|r| r.contains("has(self.topology)"))
        })
        .expect("topology rule");
    assert!(rule["message"]
        .as_str()
        .is_some_and(|m| m.starts_with("spec.topology is required")));
    let misspelt = rules
        .iter()
        .find(|r| r["fieldPath"] == ".topology.bucketType")
        .expect("bucketType rule");
    assert!(misspelt["rule"]
        .as_str()
        .is_some_and(|r| r.contains(AUTO_MISSPELT_PATTERN) && r.contains("== 'Auto'")));
    assert_eq!(
        misspelt["message"],
        "spec.topology.bucketType must be spelled Auto (capital A) to let Ceph choose the \
         bucket type: no CRUSH bucket type is called auto"
    );
    let domains = &spec["properties"]["updateDomain"]["enum"];
    assert_eq!(domains, &json!(["OSD", "Host", "Topology"]));
}

#[test]
fn bucket_types_and_label_keys_are_checked_by_pattern() {
    let bucket = Regex::new(BUCKET_TYPE_PATTERN).expect("regex");
    for good in [
        "Auto",
        "rack",
        "row",
        "room",
        "datacenter",
        "zone",
        "pdu",
        "my_rack-2",
    ] {
        assert!(bucket.is_match(good), "{good}");
    }
    for bad in ["", "Rack", "1rack", "rack type", "rack/"] {
        assert!(!bucket.is_match(bad), "{bad}");
    }
    let key = Regex::new(LABEL_KEY_PATTERN).expect("regex");
    for good in ["topology.kubernetes.io/zone", "rack", "example.com/Rack_1"] {
        assert!(key.is_match(good), "{good}");
    }
    for bad in ["", "/zone", "Example.com/zone", "zone/", "-zone"] {
        assert!(!key.is_match(bad), "{bad}");
    }
}
