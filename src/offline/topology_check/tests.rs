use super::*;
use crate::crd::topology::{AUTO_MISSPELT_PATTERN, BUCKET_TYPE_PATTERN, LABEL_KEY_PATTERN};
use crate::offline::manifest::parse_cephosd;
use proptest::prelude::*;
use regex::Regex;

/// A manifest whose spec ends with `extra` (YAML lines indented by two).
fn manifest(update_domain: &str, extra: &str) -> String {
    format!(
        r"
apiVersion: ceph.elemental.net/v1alpha1
kind: CephOSD
metadata: {{name: ceph-osds}}
spec:
  storage:
    - hosts: [h1, h2]
      osds: [{{data: /dev/sdb}}]
  updateDomain: {update_domain}
  podTemplate: {{apiVersion: v1, kind: Pod, metadata: {{}}, spec: {{containers: [{{name: c}}]}}}}
{extra}"
    )
}

fn error_of(text: &str) -> String {
    parse_cephosd(text).expect_err("rejected").to_string()
}

#[test]
fn a_topology_manifest_is_accepted() {
    let text = manifest(
        "Topology",
        "  topology: {bucketType: rack, topologyKey: topology.kubernetes.io/zone}\n  prePull: {command: [ceph-osd, --version], domainsAhead: 2}\n",
    );
    let cr = parse_cephosd(&text).expect("accepted");
    assert_eq!(
        cr.spec.topology.map(|t| t.bucket_type),
        Some("rack".to_owned())
    );
    let auto = manifest("Topology", "  topology: {bucketType: Auto}\n");
    assert!(parse_cephosd(&auto).is_ok());
}

#[test]
fn topology_and_update_domain_go_together() {
    assert_eq!(
        error_of(&manifest("Topology", "")),
        "spec.topology: is required when spec.updateDomain is Topology (bucketType, and \
         topologyKey without the Ceph gate)"
    );
    assert_eq!(
        error_of(&manifest("Host", "  topology: {bucketType: rack}\n")),
        "spec.topology: is allowed only when spec.updateDomain is Topology, found \"Host\""
    );
}

#[test]
fn a_bad_bucket_type_or_label_key_is_named() {
    let bucket = error_of(&manifest("Topology", "  topology: {bucketType: Rack}\n"));
    assert!(
        bucket.starts_with("spec.topology.bucketType: must be Auto or a CRUSH bucket type")
            && bucket.ends_with("found \"Rack\""),
        "{bucket}"
    );
    for auto in ["auto", "AUTO", "aUtO"] {
        let misspelt = error_of(&manifest(
            "Topology",
            &format!("  topology: {{bucketType: {auto}}}\n"),
        ));
        assert_eq!(
            misspelt,
            format!(
                "spec.topology.bucketType: must be spelled Auto (capital A) to let Ceph choose \
                 the bucket type: no CRUSH bucket type is called auto, found {auto:?}"
            )
        );
    }
    let key = error_of(&manifest(
        "Topology",
        "  topology: {bucketType: rack, topologyKey: \"zone/\"}\n",
    ));
    assert!(
        key.starts_with("spec.topology.topologyKey: must be a node label key")
            && key.ends_with("found \"zone/\""),
        "{key}"
    );
    assert_eq!(
        error_of(&manifest(
            "Topology",
            "  topology: {bucketType: rack}\n  prePull: {command: []}\n"
        )),
        "spec.prePull.command: must list at least one word (or be left out for the default \
         [\"true\"])"
    );
    let ahead = error_of(&manifest(
        "Topology",
        "  topology: {bucketType: rack}\n  prePull: {domainsAhead: 0}\n",
    ));
    assert!(
        ahead.starts_with("spec.prePull.domainsAhead: must be at least 1"),
        "{ahead}"
    );
}

proptest! {
    /// The hand-written checks accept exactly what the CRD's patterns (and lengths) and its
    /// CEL rule on a misspelt `Auto` accept.
    #[test]
    fn the_checks_agree_with_the_schema_patterns(
        text in "(Auto|[aA][uU][tT][oO]|[a-zA-Z0-9_./-]{0,70}|[a-z0-9.-]{1,260}/[a-zA-Z0-9_.-]{1,64})"
    ) {
        let bucket = Regex::new(BUCKET_TYPE_PATTERN).expect("pattern");
        let misspelt = Regex::new(AUTO_MISSPELT_PATTERN).expect("pattern");
        let checked = !misspells_auto(&text)
            && (text == AUTO_BUCKET_TYPE || is_bucket_type(&text));
        let cel = text == AUTO_BUCKET_TYPE || !misspelt.is_match(&text);
        prop_assert_eq!(
            checked,
            bucket.is_match(&text) && (1..=63).contains(&text.chars().count()) && cel,
            "bucket type {:?}", text
        );
        let key = Regex::new(LABEL_KEY_PATTERN).expect("pattern");
        prop_assert_eq!(
            is_label_key(&text),
            key.is_match(&text) && (1..=316).contains(&text.chars().count()),
            "label key {:?}", text
        );
    }
}
