//! The layout's rule, checked on the sources: no module of `src/` imports a module that imports
//! it back; the layers (the top-level modules and the files beside them) each use only those
//! before them in [`LAYERS`]; inside `plan` and `runtime`, and in the harness
//! (`molecule-like-tests/src`), the parts keep an order of their own; tests live in their
//! module's folder. How sources are read into a graph: `graph.rs`; each check shown able to
//! fail: `checks.rs`.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod checks;
mod graph;

use graph::{describe, misplaced_tests, read_sources, uses_of_the_root, Graph};
use std::path::{Path, PathBuf};

#[test]
fn no_module_imports_a_module_that_imports_it_back() {
    let graph = Graph::of(&read_sources(
        &Path::new(env!("CARGO_MANIFEST_DIR")).join("src"),
    ));
    assert!(graph.modules.len() > 20, "read {:?}", graph.modules);
    // The check reads what it should: paths in `use` trees and in code alike.
    graph.assert_edges(&[
        ("runtime::controller::plan_inputs", "plan"),
        ("plan::phases::seen", "pod::osd_pod"),
        ("runtime::observe::owned_objects", "pod::identity"),
        ("runtime::controller::watches", "pod::owner_reference"),
    ]);
    let circles = graph.circles();
    assert!(circles.is_empty(), "import circles: {}", describe(&circles));
}

#[test]
fn the_layers_form_no_circle() {
    let graph = Graph::of(&read_sources(
        &Path::new(env!("CARGO_MANIFEST_DIR")).join("src"),
    ));
    let layers = graph.layers();
    let circles = layers.circles();
    assert!(
        circles.is_empty(),
        "circles between layers: {}",
        describe(&circles)
    );
}

/// The layers in order: each uses only those before it.
const LAYERS: [&[&str]; 7] = [
    &["labels", "hash"],
    &["ceph"],
    &["crd"],
    &["pod", "testing"],
    &["plan"],
    &["runtime", "offline"],
    &["kubectl"],
];

#[test]
fn each_layer_uses_only_those_before_it() {
    let graph = Graph::of(&read_sources(
        &Path::new(env!("CARGO_MANIFEST_DIR")).join("src"),
    ));
    let against = graph.layers().against_order("crate", &LAYERS);
    assert!(against.is_empty(), "{}", against.join("; "));
}

/// The planner's parts in order: each uses only those before it. What was observed, what a
/// plan says (its vocabulary), the gate and the topology, the rules, then the phases that apply
/// them; `plan` itself (`plan_expanded`) runs the phases.
const PLAN_PARTS: [&[&str]; 5] = [
    &["observed"],
    &["says"],
    &["gate", "topology"],
    &["rules"],
    &["phases"],
];

/// The runtime's parts (its folders and the files beside them) in order: each uses only those
/// before it. What it remembers and the process's services come first; the controller ties
/// observing, asking Ceph and acting together; the operator runs it.
const RUNTIME_PARTS: [&[&str]; 6] = [
    &["backoff", "memory"],
    &["serve"],
    &["observe", "ceph"],
    &["act"],
    &["controller"],
    &["operator"],
];

#[test]
fn each_part_of_the_planner_uses_only_those_before_it() {
    let graph = Graph::of(&read_sources(
        &Path::new(env!("CARGO_MANIFEST_DIR")).join("src"),
    ));
    let parts = graph.parts_of("plan");
    assert!(parts.modules.len() >= 6, "read {:?}", parts.modules);
    let against = parts.against_order("plan", &PLAN_PARTS);
    assert!(against.is_empty(), "{}", against.join("; "));
}

#[test]
fn each_part_of_the_runtime_uses_only_those_before_it() {
    let graph = Graph::of(&read_sources(
        &Path::new(env!("CARGO_MANIFEST_DIR")).join("src"),
    ));
    let parts = graph.parts_of("runtime");
    assert!(parts.modules.len() >= 8, "read {:?}", parts.modules);
    let against = parts.against_order("runtime", &RUNTIME_PARTS);
    assert!(against.is_empty(), "{}", against.join("; "));
}

/// The harness's parts (the top-level modules of `molecule-like-tests/src`) in order: each uses
/// only those before it. Where things are, the Kubernetes side, the Ceph side, what is recorded
/// and checked, then the journeys that tie them together. The crate root only declares them.
const HARNESS_PARTS: [&[&str]; 5] = [
    &["paths"],
    &["kubernetes"],
    &["ceph"],
    &["recording"],
    &["journeys"],
];

#[test]
fn each_part_of_the_harness_uses_only_those_before_it() {
    let sources = harness_sources();
    let graph = Graph::of(&sources);
    assert!(graph.modules.len() > 20, "read {:?}", graph.modules);
    // The check reads what it should: paths from `crate::`, `super::` and a sibling part.
    graph.assert_edges(&[
        ("journeys::scenario", "recording::pods"),
        ("kubernetes::client", "paths"),
        ("recording::ceph::recorder", "ceph"),
        ("journeys::bridge::kubelet", "journeys::bridge::readiness"),
    ]);
    let circles = graph.circles();
    assert!(circles.is_empty(), "import circles: {}", describe(&circles));
    let parts = graph.layers();
    assert_eq!(
        parts.modules,
        HARNESS_PARTS
            .iter()
            .flat_map(|p| p.iter().map(|&p| p.to_owned()))
            .collect(),
        "the harness's parts"
    );
    let against = parts.against_order("crate", &HARNESS_PARTS);
    assert!(against.is_empty(), "{}", against.join("; "));
    let root = uses_of_the_root(&sources);
    assert!(root.is_empty(), "parts using the crate root: {root:?}");
}

/// The harness's sources; the binaries under `bin/` are crates of their own.
fn harness_sources() -> Vec<(PathBuf, String)> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("molecule-like-tests/src");
    let mut sources = read_sources(&dir);
    sources.retain(|(path, _)| !path.starts_with("bin"));
    sources
}

/// Tests of a module live in its own folder (`foo.rs` + `foo/tests.rs`, `foo/mod.rs` +
/// `foo/tests.rs`), in the operator and in the harness alike: no inline test module, no
/// `#[path]`.
#[test]
fn tests_live_in_their_modules_folder() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut misplaced = Vec::new();
    for dir in ["src", "molecule-like-tests/src"] {
        for (path, text) in read_sources(&root.join(dir)) {
            misplaced.extend(
                misplaced_tests(&text)
                    .into_iter()
                    .map(|line| format!("{dir}/{}:{line}", path.display())),
            );
        }
    }
    assert!(
        misplaced.is_empty(),
        "tests outside their module's folder: {misplaced:?}"
    );
}
