//! The `ceph-osd-operator` command as an admin uses it: `crd` and `render`.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use serde_json::Value;
use std::process::Command;

fn operator(args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_ceph-osd-operator"))
        .args(args)
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .expect("runs")
}

fn vectors() -> Value {
    serde_json::from_str(include_str!("data/hash-vectors.json")).expect("vectors")
}

#[test]
fn render_prints_the_samples_pods_with_the_reference_hash() {
    let out = operator(&["render", "--file", "deploy/samples/ceph-osds.yaml"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8(out.stdout).expect("utf8");
    let pods: Vec<Value> = serde_saphyr::from_multiple(&text).expect("yaml stream");
    assert_eq!(pods.len(), 4);
    let expected_hash = vectors()["hash"][0]["pod_template_hash"].clone();
    let prefixes = [
        "osd-worker041-pci-0000-5c-00-0-encl-0-7-0-slot-1-",
        "osd-worker041-pci-0000-5c-00-0-encl-0-7-0-slot-2-",
        "osd-worker042-pci-0000-5c-00-0-encl-0-7-0-slot-1-",
        "osd-worker042-pci-0000-5c-00-0-encl-0-7-0-slot-2-",
    ];
    for (pod, prefix) in pods.iter().zip(prefixes) {
        let annotations = &pod["metadata"]["annotations"];
        assert_eq!(
            annotations["ceph.elemental.net/pod-template-hash"],
            expected_hash
        );
        let name = pod["metadata"]["name"].as_str().expect("name");
        assert!(
            name.starts_with(prefix) && name.len() == prefix.len() + 5,
            "{name}"
        );
        let env: Vec<&str> = pod["spec"]["containers"][0]["env"]
            .as_array()
            .expect("env")
            .iter()
            .filter_map(|e| e["name"].as_str())
            .collect();
        assert_eq!(
            env,
            [
                "TEST",
                "OSD_DEVICE",
                "OSD_DB_DEVICE",
                "OSD_WAL_DEVICE",
                "POD_NAME",
                "POD_NAMESPACE",
                "NODE_NAME"
            ]
        );
        let host = annotations["ceph.elemental.net/host"].clone();
        assert_eq!(
            pod.pointer("/spec/affinity/nodeAffinity/requiredDuringSchedulingIgnoredDuringExecution/nodeSelectorTerms/0/matchExpressions/0/values/0"),
            Some(&host)
        );
    }
}

#[test]
fn render_rejects_bad_files_with_exit_code_2_naming_file_and_field() {
    let dir = std::env::temp_dir().join(format!("ceph-osd-cli-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("tmp");
    let sample = std::fs::read_to_string(
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("deploy/samples/ceph-osds.yaml"),
    )
    .expect("sample");
    let bad = dir.join("bad.yaml");
    std::fs::write(
        &bad,
        sample.replace("updateDomain: Host", "updateDomain: Rack"),
    )
    .expect("write");
    let out = operator(&["render", "--file", bad.to_str().expect("path")]);
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("bad.yaml") && stderr.contains("spec.updateDomain"),
        "{stderr}"
    );

    let out = operator(&[
        "render",
        "--file",
        dir.join("missing.yaml").to_str().expect("path"),
    ]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("missing.yaml"));
}

#[test]
fn render_refuses_hostile_files_with_exit_code_2_and_a_clear_reason() {
    let dir = std::env::temp_dir().join(format!("ceph-osd-cli-hostile-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("tmp");
    let sample = std::fs::read_to_string(
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("deploy/samples/ceph-osds.yaml"),
    )
    .expect("sample");
    let mut bomb = String::from("a: &a [x, x, x, x, x, x, x, x, x, x]\n");
    for level in 1..12 {
        let previous = level - 1;
        bomb.push_str(&format!(
            "l{level}: &l{level} [*{p}, *{p}, *{p}, *{p}, *{p}, *{p}, *{p}, *{p}, *{p}, *{p}]\n",
            p = if previous == 0 {
                "a".to_owned()
            } else {
                format!("l{previous}")
            }
        ));
    }
    let cases: Vec<(&str, Vec<u8>, &str)> = vec![
        ("empty.yaml", Vec::new(), "holds no YAML document"),
        ("garbage.yaml", b"{{{ not: [yaml".to_vec(), "not valid YAML"),
        ("binary.bin", vec![0x00, 0xff, 0xfe, 0x80], "not UTF-8 text"),
        ("huge.yaml", vec![b'#'; 50 << 20], "larger than 3 MiB"),
        ("bomb.yaml", bomb.into_bytes(), "not valid YAML"),
        (
            "two.yaml",
            format!("{sample}---\n{sample}").into_bytes(),
            "holds 2 YAML documents: one CephOSD per file",
        ),
        (
            "pod.json",
            br#"{"apiVersion": "v1", "kind": "Pod"}"#.to_vec(),
            "expected kind CephOSD",
        ),
        (
            "cpu.yaml",
            sample
                .replace("name: busybox\n", "name: busybox\n        resources: {limits: {cpu: 0.5}}\n")
                .into_bytes(),
            "spec.podTemplate.spec.containers[0].resources.limits[cpu]: must be an integer or a string",
        ),
    ];
    for (name, content, expected) in cases {
        let path = dir.join(name);
        std::fs::write(&path, content).expect("write");
        let out = operator(&["render", "--file", path.to_str().expect("path")]);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{name}: {stderr}");
        assert!(
            stderr.contains(name) && stderr.contains(expected),
            "{name}: expected {expected:?} in {stderr}"
        );
    }
    for (path, expected) in [
        (dir.clone(), "is a directory"),
        ("/dev/zero".into(), "larger than 3 MiB"),
    ] {
        let out = operator(&["render", "--file", path.to_str().expect("path")]);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{stderr}");
        assert!(stderr.contains(expected), "{expected:?} in {stderr}");
    }
    std::fs::remove_dir_all(&dir).expect("cleanup");
}

#[test]
fn render_hashes_whole_numbers_written_as_floats_as_the_integers_the_api_server_stores() {
    let sample = std::fs::read_to_string(
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("deploy/samples/ceph-osds.yaml"),
    )
    .expect("sample");
    let floats = sample
        .replace("initialDelaySeconds: 2\n", "initialDelaySeconds: 2.0\n")
        .replace("periodSeconds: 5\n", "periodSeconds: 5e0\n");
    assert_ne!(floats, sample);
    let path =
        std::env::temp_dir().join(format!("ceph-osd-cli-floats-{}.yaml", std::process::id()));
    std::fs::write(&path, floats).expect("write");
    let out = operator(&["render", "--file", path.to_str().expect("path")]);
    std::fs::remove_file(&path).expect("cleanup");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let pods: Vec<Value> =
        serde_saphyr::from_multiple(&String::from_utf8(out.stdout).expect("utf8")).expect("yaml");
    assert_eq!(pods.len(), 4);
    for pod in &pods {
        assert_eq!(
            pod["metadata"]["annotations"]["ceph.elemental.net/pod-template-hash"],
            vectors()["hash"][0]["pod_template_hash"],
            "the reference hash of the sample, whose numbers are integers"
        );
        let probe = &pod["spec"]["containers"][0]["readinessProbe"];
        assert!(probe["initialDelaySeconds"].is_u64(), "{probe}");
        assert!(probe["periodSeconds"].is_u64(), "{probe}");
    }
}

#[test]
fn render_takes_json_too() {
    let sample = std::fs::read_to_string(
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("deploy/samples/ceph-osds.yaml"),
    )
    .expect("sample");
    let value: serde_json::Value = serde_saphyr::from_str(&sample).expect("yaml");
    let path = std::env::temp_dir().join(format!("ceph-osd-cli-{}.json", std::process::id()));
    std::fs::write(&path, serde_json::to_string(&value).expect("json")).expect("write");
    let out = operator(&["render", "--file", path.to_str().expect("path")]);
    std::fs::remove_file(&path).expect("cleanup");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(
        String::from_utf8_lossy(&out.stdout)
            .matches("kind: Pod")
            .count(),
        4
    );
}

#[test]
fn crd_subcommand_prints_the_checked_in_crd() {
    let out = operator(&["crd"]);
    assert!(out.status.success());
    let checked_in = include_str!("../crds/cephosds.ceph.elemental.net.yaml");
    assert_eq!(String::from_utf8(out.stdout).expect("utf8"), checked_in);
}

/// Leader election is on unless turned off, and its Lease is never put in a guessed
/// namespace: with no --lease-namespace, $POD_NAMESPACE or watched namespace, `run` refuses
/// to start (before connecting), naming the flag to set.
#[test]
fn run_without_a_lease_namespace_refuses_to_start_and_says_which_flag_to_set() {
    let out = Command::new(env!("CARGO_BIN_EXE_ceph-osd-operator"))
        .args(["run", "--kubeconfig", "/nonexistent"])
        .env_remove("POD_NAMESPACE")
        .env_remove("WATCH_NAMESPACE")
        .output()
        .expect("runs");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("--lease-namespace") && stderr.contains("--leader-elect=false"),
        "{stderr}"
    );
    // Turned off, it needs no Lease: it gets as far as reading the kubeconfig.
    let out = Command::new(env!("CARGO_BIN_EXE_ceph-osd-operator"))
        .args([
            "run",
            "--kubeconfig",
            "/nonexistent",
            "--leader-elect=false",
        ])
        .env_remove("POD_NAMESPACE")
        .env_remove("WATCH_NAMESPACE")
        .output()
        .expect("runs");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains("cannot read kubeconfig /nonexistent"),
        "{stderr}"
    );
}

#[test]
fn run_takes_the_gates_pg_stats_lag_in_whole_seconds() {
    let help = operator(&["run", "--help"]);
    let text = String::from_utf8_lossy(&help.stdout);
    assert!(
        text.contains("--ceph-pg-stats-lag-seconds") && text.contains("[default: 6]"),
        "{text}"
    );
    let out = operator(&["run", "--ceph-pg-stats-lag-seconds", "0.5"]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("--ceph-pg-stats-lag-seconds"), "{stderr}");
}

/// With the Ceph gate on, the step lock of the Ceph cluster is never put in a guessed
/// namespace: with no --ceph-lock-namespace, --lease-namespace, $POD_NAMESPACE or watched
/// namespace, `run` refuses to start, naming the flag to set.
#[test]
fn run_with_the_gate_and_no_lock_namespace_refuses_to_start_and_says_which_flag_to_set() {
    let run = |extra: &[&str]| {
        let mut args = vec![
            "run",
            "--kubeconfig",
            "/nonexistent",
            "--leader-elect=false",
            "--ceph-conf",
            "/nonexistent/ceph.conf",
        ];
        args.extend_from_slice(extra);
        Command::new(env!("CARGO_BIN_EXE_ceph-osd-operator"))
            .args(&args)
            .env_remove("POD_NAMESPACE")
            .env_remove("WATCH_NAMESPACE")
            .env_remove("CEPH_LOCK_NAMESPACE")
            .output()
            .expect("runs")
    };
    let out = run(&[]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("--ceph-lock-namespace"), "{stderr}");
    // Given (or following the watched namespace), it gets as far as reading the kubeconfig.
    for extra in [
        &["--ceph-lock-namespace", "locks"][..],
        &["--namespace", "ceph"],
    ] {
        let out = run(extra);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{extra:?}: {stderr}");
        assert!(
            stderr.contains("cannot read kubeconfig /nonexistent"),
            "{stderr}"
        );
    }
}
