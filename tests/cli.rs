//! The `ceph-osd-operator` command as an admin uses it: `crd` and `render`.

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
            ["TEST", "OSD_DEVICE", "OSD_DB_DEVICE", "OSD_WAL_DEVICE"]
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
fn crd_subcommand_prints_the_checked_in_crd() {
    let out = operator(&["crd"]);
    assert!(out.status.success());
    let checked_in = include_str!("../crds/cephosds.ceph.elemental.net.yaml");
    assert_eq!(String::from_utf8(out.stdout).expect("utf8"), checked_in);
}
