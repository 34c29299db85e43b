//! What the deploy tests share: running helm and kubectl, rendering the chart and the
//! kustomizations, finding objects in what they render.

use std::collections::BTreeSet;
use std::path::PathBuf;
use std::process::Command;

use anyhow::{ensure, Context};
use molecule_like_tests::kubernetes::manifests::random_suffix;
use molecule_like_tests::paths::kubeconfig_path;
use molecule_like_tests::paths::{helm, kubectl, workspace_root};
use serde_json::{json, Value};

pub(crate) const CHART: &str = "deploy/helm/ceph-osd-operator";
pub(crate) const OPERATOR_NAMESPACE: &str = "ceph-osd-operator";

/// `program args` as the cluster admin (KUBECONFIG), from the repository root, finished.
pub(crate) fn output(program: &str, args: &[&str]) -> anyhow::Result<std::process::Output> {
    Command::new(program)
        .args(args)
        .current_dir(workspace_root())
        .env("KUBECONFIG", kubeconfig_path())
        // Helm keeps its caches and repositories here, not in the user's home.
        .env("HELM_CACHE_HOME", scratch().join("helm-cache"))
        .env("HELM_CONFIG_HOME", scratch().join("helm-config"))
        .env("HELM_DATA_HOME", scratch().join("helm-data"))
        .output()
        .with_context(|| format!("running {program}"))
}

/// [`output`] of a run that must succeed: its stdout, or an error with its stderr.
pub(crate) fn run(program: &str, args: &[&str]) -> anyhow::Result<String> {
    let out = output(program, args)?;
    let shown = format!("{program} {}", args.join(" "));
    ensure!(
        out.status.success(),
        "`{shown}` failed ({}): {}{}",
        out.status,
        String::from_utf8_lossy(&out.stderr).trim(),
        String::from_utf8_lossy(&out.stdout).trim()
    );
    eprintln!("[deploy] {shown}: ok");
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}

pub(crate) fn scratch() -> PathBuf {
    workspace_root().join("target").join("deploy-as-users-do")
}

pub(crate) fn helm_bin() -> anyhow::Result<String> {
    helm().context("no helm: `molecule-like-tests/control-plane install` builds it, `up` links it")
}

pub(crate) fn kubectl_bin() -> anyhow::Result<String> {
    kubectl().context("no kubectl: `molecule-like-tests/control-plane install` fetches it")
}

/// The objects of a multi-document YAML text (empty documents dropped).
pub(crate) fn objects(text: &str) -> anyhow::Result<Vec<Value>> {
    let docs: Vec<Value> =
        serde_saphyr::from_multiple(text).map_err(|e| anyhow::anyhow!("invalid YAML: {e}"))?;
    Ok(docs.into_iter().filter(|d| !d.is_null()).collect())
}

/// `kubectl kustomize` of deploy/ with `components` (paths under deploy/), from a
/// kustomization of its own outside deploy/ as the components' comments say.
pub(crate) fn kustomize(components: &[&str]) -> anyhow::Result<Vec<Value>> {
    let dir = scratch().join(format!("kustomize-{}", random_suffix()));
    std::fs::create_dir_all(&dir)?;
    // kustomize takes only relative roots: from target/deploy-as-users-do/<dir>/.
    let relative = |p: &str| format!("../../../{p}");
    let components: Vec<String> = components.iter().map(|c| relative(c)).collect();
    let kustomization = json!({
        "apiVersion": "kustomize.config.k8s.io/v1beta1",
        "kind": "Kustomization",
        "resources": [relative("deploy")],
        "components": components,
    });
    std::fs::write(dir.join("kustomization.yaml"), kustomization.to_string())?;
    let out = run(
        &kubectl_bin()?,
        &[
            "kustomize",
            "--load-restrictor",
            "LoadRestrictionsNone",
            dir.to_str().context("path")?,
        ],
    )?;
    std::fs::remove_dir_all(&dir)?;
    objects(&out)
}

pub(crate) fn only<'a>(objects: &'a [Value], kind: &str) -> anyhow::Result<&'a Value> {
    let mut of_kind = objects.iter().filter(|o| o["kind"] == kind);
    let first = of_kind.next().with_context(|| format!("no {kind}"))?;
    ensure!(of_kind.next().is_none(), "more than one {kind}");
    Ok(first)
}

pub(crate) fn container(deployment: &Value) -> &Value {
    &deployment["spec"]["template"]["spec"]["containers"][0]
}

pub(crate) fn args(deployment: &Value) -> BTreeSet<String> {
    container(deployment)["args"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|a| a.as_str().map(str::to_owned))
        .collect()
}
