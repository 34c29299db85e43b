use super::*;
use proptest::prelude::*;

const GOOD: &str = r"
apiVersion: ceph.elemental.net/v1alpha1
kind: CephOSD
metadata: {name: ceph-osds}
spec:
  storage:
    - hosts: [h1]
      osds: [{data: /dev/sdb}]
  updateDomain: Host
  podTemplate: {apiVersion: v1, kind: Pod, metadata: {}, spec: {containers: [{name: c}]}}
";

fn error_of(text: &str) -> String {
    parse_cephosd(text).expect_err("rejected").to_string()
}

#[test]
fn a_manifest_file_is_read_within_bounds() {
    let dir = std::env::temp_dir().join(format!("validate-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("dir");
    let good = dir.join("good.yaml");
    std::fs::write(&good, GOOD).expect("write");
    assert_eq!(read_manifest(&good).as_deref(), Ok(GOOD));
    let huge = dir.join("huge.yaml");
    let size = usize::try_from(MAX_MANIFEST_BYTES).expect("fits") + 1;
    std::fs::write(&huge, "#".repeat(size)).expect("write");
    assert_eq!(read_manifest(&huge), Err(ManifestError::TooLarge));
    let binary = dir.join("binary");
    std::fs::write(&binary, [0xff, 0xfe, 0x00]).expect("write");
    assert_eq!(read_manifest(&binary), Err(ManifestError::NotText));
    assert_eq!(
        read_manifest(&dir),
        Err(ManifestError::Read("is a directory".to_owned()))
    );
    assert!(matches!(
        read_manifest(&dir.join("missing")),
        Err(ManifestError::Read(_))
    ));
    #[cfg(unix)]
    assert_eq!(
        read_manifest(Path::new("/dev/zero")),
        Err(ManifestError::TooLarge)
    );
    std::fs::remove_dir_all(&dir).expect("cleanup");
}

#[test]
fn accepts_a_good_manifest() {
    let cr = parse_cephosd(GOOD).expect("parses");
    assert_eq!(cr.spec.storage[0].hosts, ["h1"]);
}

#[test]
#[expect(
    clippy::too_many_lines,
    reason = "a table of manifests, one rejection each"
)]
fn rejections_name_the_field() {
    let cases = [
            (
                GOOD.replace("updateDomain: Host", "updateDomain: host"),
                "spec.updateDomain",
            ),
            (GOOD.replace("  updateDomain: Host\n", ""), "updateDomain"),
            (
                GOOD.replace("hosts: [h1]", "hosts: []"),
                "spec.storage[0].hosts",
            ),
            (
                GOOD.replace("hosts: [h1]", "hosts: [\"\"]"),
                "spec.storage[0].hosts[0]",
            ),
            (
                GOOD.replace("osds: [{data: /dev/sdb}]", "osds: []"),
                "spec.storage[0].osds",
            ),
            (
                GOOD.replace("{data: /dev/sdb}", "{data: /dev/sdb, db: \"\"}"),
                "spec.storage[0].osds[0].db",
            ),
            (GOOD.replace("{data: /dev/sdb}", "{db: /dev/sdc}"), "data"),
            (
                GOOD.replace("hosts: [h1]", "hosts: h1"),
                "spec.storage[0].hosts",
            ),
            (
                GOOD.replace("name: ceph-osds", &format!("name: {}", "x".repeat(56))),
                "metadata.name",
            ),
            (GOOD.replace("kind: CephOSD", "kind: Pod"), "CephOSD"),
            (
                GOOD.replace("hosts: [h1]", "hosts: [H1]"),
                "spec.storage[0].hosts[0]: must be a Kubernetes node name",
            ),
            (
                GOOD.replace("{data: /dev/sdb}", "{data: /dev/sdb/}"),
                "spec.storage[0].osds[0].data: must not contain repeated '/' or end with '/'",
            ),
            (
                GOOD.replace("{data: /dev/sdb}", "{data: /dev/sdb, wal: /dev/./nvme}"),
                "spec.storage[0].osds[0].wal: must not contain '.' or '..'",
            ),
            (
                GOOD.replace("{data: /dev/sdb}", "{data: sdb}"),
                "spec.storage[0].osds[0].data: must be an absolute path",
            ),
            (
                GOOD.replace(
                    "osds: [{data: /dev/sdb}]",
                    "osds: [{data: /dev/sdb, db: /dev/a}, {data: /dev/sdb, db: /dev/b}]",
                ),
                "spec.storage: OSD h1:/dev/sdb is listed more than once",
            ),
            (
                GOOD.replace("metadata: {}", "metadata: {annotations: {ceph.elemental.net/db: /dev/x}}"),
                "spec.podTemplate.metadata.annotations[ceph.elemental.net/db]: is set by the operator",
            ),
            (
                GOOD.replace("spec: {containers", "spec: {nodeName: h1, containers"),
                "spec.podTemplate.spec.nodeName: may not be set",
            ),
            ("storage: [".to_owned(), "YAML"),
            (format!("{GOOD}---\n{GOOD}"), "holds 2 YAML documents: one CephOSD per file"),
            (String::new(), "holds no YAML document"),
            (
                GOOD.replace("containers: [{name: c}]", "containers: [{name: c, resources: {limits: {cpu: 0.5}}}]"),
                "spec.podTemplate.spec.containers[0].resources.limits[cpu]: must be an integer or a string, found the number 0.5",
            ),
            (
                GOOD.replace("{name: c}", "{name: c, ports: [{containerPort: \"80\"}]}"),
                "spec.podTemplate.spec.containers[0].ports[0].containerPort: must be an integer",
            ),
            (
                GOOD.replace("  updateDomain: Host\n", "  updateDomain: Host\n  maxUnavailable: two\n"),
                "spec.maxUnavailable: must be an integer",
            ),
            (
                GOOD.replace("containers: [{name: c}]", "containers: [{name: c, resources: {limits: {cpu: 1.5}}}]"),
                "spec.podTemplate.spec.containers[0].resources.limits[cpu]: must be an integer or a string, found the number 1.5",
            ),
            (
                GOOD.replace("{name: c}", "{name: c, ports: [{containerPort: 6800.5}]}"),
                "spec.podTemplate.spec.containers[0].ports[0].containerPort: must be an integer, found the number 6800.5",
            ),
            (
                GOOD.replace("spec: {containers", "spec: {terminationGracePeriodSeconds: 9007199254740994.0, containers"),
                "spec.podTemplate.spec.terminationGracePeriodSeconds: must be an integer, found the number 9007199254740994.0",
            ),
            (
                GOOD.replace("{name: c}", "{name: c, ports: [{containerPort: 2147483648}]}"),
                "spec.podTemplate.spec.containers[0].ports[0].containerPort: must be an integer from -2147483648 to 2147483647 (int32)",
            ),
            (
                GOOD.replace("  updateDomain: Host\n", "  updateDomain: Host\n  maxUnavailable: 0.0\n"),
                "spec.maxUnavailable: must be at least 1, found the number 0.0",
            ),
        ];
    for (text, expected) in cases {
        let message = error_of(&text);
        assert!(
            message.contains(expected),
            "expected {expected:?} in {message:?}"
        );
    }
}

/// GOOD with a container carrying a port, a grace period and resources, spelled as given.
fn with_numbers(cpu: &str, port: &str, grace: &str, memory: &str) -> String {
    GOOD.replace(
            "spec: {containers: [{name: c}]}",
            &format!(
                "spec: {{terminationGracePeriodSeconds: {grace}, containers: [{{name: c, \
                 ports: [{{containerPort: {port}}}], resources: {{limits: {{cpu: {cpu}, memory: {memory}}}}}}}]}}"
            ),
        )
}

fn preview(text: &str) -> String {
    let cr = parse_cephosd(text).expect("accepted");
    crate::offline::preview::preview_pods(
        &cr,
        "ns",
        &mut crate::crd::osd::CountingSuffix::default(),
    )
    .expect("rendered")
}

#[test]
fn whole_numbers_written_as_floats_are_accepted_and_stored_as_integers() {
    let floats = with_numbers("1.0", "6800.0", "1e1", "1e3");
    let integers = with_numbers("1", "6800", "10", "1000");
    let cr = parse_cephosd(&floats).expect("accepted");
    let container = &cr.spec.pod_template["spec"]["containers"][0];
    assert_eq!(container["resources"]["limits"]["cpu"].to_string(), "1");
    assert_eq!(
        container["resources"]["limits"]["memory"].to_string(),
        "1000"
    );
    assert_eq!(container["ports"][0]["containerPort"].to_string(), "6800");
    assert_eq!(
        cr.spec.pod_template["spec"]["terminationGracePeriodSeconds"].to_string(),
        "10"
    );
    assert_eq!(preview(&floats), preview(&integers), "same pods, same hash");
    let negative_zero = with_numbers("-0.0", "-0.0", "-0.0", "-0.0");
    let zero = with_numbers("0", "0", "0", "0");
    assert_eq!(preview(&negative_zero), preview(&zero));
    // Typed fields too: `maxUnavailable: 2.0` is 2.
    let two = GOOD.replace(
        "  updateDomain: Host\n",
        "  updateDomain: Host\n  maxUnavailable: 2.0\n",
    );
    assert_eq!(
        parse_cephosd(&two).expect("accepted").spec.max_unavailable,
        Some(2)
    );
}

#[test]
fn a_quantity_within_the_servers_tolerance_is_kept_as_the_float_it_stores() {
    let text = with_numbers("1.0000000001", "6800", "10", "1000");
    let cr = parse_cephosd(&text).expect("accepted, as by the API server");
    assert_eq!(
        cr.spec.pod_template["spec"]["containers"][0]["resources"]["limits"]["cpu"].to_string(),
        "1.0000000001"
    );
    assert_ne!(
        preview(&text),
        preview(&with_numbers("1", "6800", "10", "1000"))
    );
}

/// A JSON value of any shape, a few levels deep.
fn any_json() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::from),
        any::<i64>().prop_map(Value::from),
        any::<f64>().prop_map(Value::from),
        ".{0,20}".prop_map(Value::from),
        "(/[a-zA-Z0-9._{}% -]{0,8}){0,4}".prop_map(Value::from),
    ];
    leaf.prop_recursive(3, 16, 4, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..4).prop_map(Value::from),
            prop::collection::btree_map("[a-zA-Z.]{1,10}", inner, 0..4)
                .prop_map(|m| Value::Object(m.into_iter().collect())),
        ]
    })
}

const PATHS: &[&str] = &[
    "/metadata/name",
    "/spec/storage",
    "/spec/storage/0",
    "/spec/storage/0/hosts",
    "/spec/storage/0/hosts/0",
    "/spec/storage/0/osds",
    "/spec/storage/0/osds/0",
    "/spec/storage/0/osds/0/data",
    "/spec/storage/0/osds/0/db",
    "/spec/updateDomain",
    "/spec/maxUnavailable",
    "/spec/podTemplate",
    "/spec/podTemplate/metadata",
    "/spec/podTemplate/metadata/labels",
    "/spec/podTemplate/metadata/annotations",
    "/spec/podTemplate/spec",
    "/spec/podTemplate/spec/containers",
    "/spec/podTemplate/spec/containers/0",
    "/spec/podTemplate/spec/containers/0/env",
];

proptest! {
    // 128 cases a run; `FUZZ_CASES=100000 cargo test --release fuzz` for a long run.
    #![proptest_config(ProptestConfig::with_cases(
        std::env::var("FUZZ_CASES").ok().and_then(|n| n.parse().ok()).unwrap_or(128)
    ))]

    /// Any whole float64 within ±(2^53 − 1) is read as the integer written directly: same
    /// template hash.
    #[test]
    fn a_whole_float_hashes_like_the_integer_written_directly(
        i in -9_007_199_254_740_991_i64..=9_007_199_254_740_991,
        exponent in any::<bool>(),
    ) {
        #[allow(clippy::cast_precision_loss)] // exact within ±(2^53 − 1)
        let f = i as f64;
        let spelled = if exponent { format!("{f:e}") } else { format!("{f:?}") };
        let hash = |grace: &str| {
            let cr = parse_cephosd(&with_numbers("1", "6800", grace, "1")).expect("accepted");
            crate::hash::TemplateHash::of(&cr.spec.pod_template)
        };
        prop_assert_eq!(hash(&spelled), hash(&i.to_string()));
    }

    /// Any text: an answer, never a panic.
    #[test]
    fn fuzz_any_text_is_answered_without_panic(text in "(?s).{0,300}") {
        let _ = parse_cephosd(&text);
    }

    /// A good manifest with any value anywhere: either rejected, or rendered into pods
    /// (or a render error), never a panic.
    #[test]
    fn fuzz_any_value_anywhere_is_checked_and_rendered_without_panic(
        path in prop::sample::select(PATHS),
        value in any_json(),
    ) {
        let mut manifest: Value = serde_saphyr::from_str(GOOD).expect("good parses");
        if let Some(slot) = manifest.pointer_mut(path) {
            *slot = value;
        }
        let text = serde_json::to_string(&manifest).expect("json");
        if let Ok(cr) = parse_cephosd(&text) {
            let _ = crate::offline::preview::preview_pods(&cr, "ns", &mut crate::crd::osd::RandomSuffix);
        }
    }
}
