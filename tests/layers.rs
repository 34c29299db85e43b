//! The layout's rule, checked on the sources: no module of `src/` imports a module that imports
//! it back, and the layers (the top-level modules: `crd`, `pod`, `plan`, `runtime`, `offline`, `kubectl`,
//! and the files beside them) form no circle either: each uses only those before it in
//! [`LAYERS`].
//!
//! A module is a file (`mod.rs` names its folder; `lib.rs` and `main.rs` are left out). Its
//! imports are every `crate::`, `super::` and `self::` path in its code outside comments,
//! strings and `#[cfg(test)]` items, `use` trees expanded; a path names the longest module it
//! starts with. Test modules (declared under `#[cfg(test)]`) are left out with everything in
//! them: tests may reach anywhere.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

#[test]
fn no_module_imports_a_module_that_imports_it_back() {
    let graph = Graph::of(&read_sources(
        &Path::new(env!("CARGO_MANIFEST_DIR")).join("src"),
    ));
    assert!(graph.modules.len() > 20, "read {:?}", graph.modules);
    // The check reads what it should: paths in `use` trees and in code alike.
    for (from, to) in [
        ("runtime::controller::plan_inputs", "plan"),
        ("plan::phases::seen", "pod::osd_pod"),
        ("runtime::observe::owned_objects", "pod::identity"),
        ("runtime::controller::watches", "pod::owner_reference"),
    ] {
        assert!(
            graph.edges[from].contains(to),
            "{from} -> {to}: {:?}",
            graph.edges
        );
    }
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

#[test]
fn a_part_using_a_later_one_or_an_unlisted_one_is_found() {
    let sources = sources(&[
        ("plan/mod.rs", ""),
        ("plan/says/mod.rs", "use crate::plan::rules::budget::B;"),
        ("plan/rules/mod.rs", ""),
        ("plan/rules/budget.rs", "use crate::plan::says::events::E;"),
        ("plan/says/events.rs", ""),
        ("plan/extra.rs", "use crate::plan::says::events::E;"),
    ]);
    let parts = Graph::of(&sources).parts_of("plan");
    assert_eq!(
        parts.against_order("plan", &[&["says"], &["rules"]]),
        [
            "plan::extra is not in the order: [[\"says\"], [\"rules\"]]",
            "plan::says uses plan::rules, which comes after it: [[\"says\"], [\"rules\"]]",
        ]
    );
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
    for (from, to) in [
        ("journeys::scenario", "recording::pods"),
        ("kubernetes::client", "paths"),
        ("recording::ceph::recorder", "ceph"),
        ("journeys::bridge::kubelet", "journeys::bridge::readiness"),
    ] {
        assert!(
            graph.edges[from].contains(to),
            "{from} -> {to}: {:?}",
            graph.edges
        );
    }
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

#[test]
fn a_harness_part_using_a_later_part_or_the_root_is_found() {
    let sources = sources(&[
        ("lib.rs", "pub mod paths;\npub fn state_dir() {}"),
        ("paths.rs", "fn kubectl() { crate::state_dir(); }"),
        ("kubernetes/mod.rs", "pub mod scenario;"),
        (
            "kubernetes/scenario.rs",
            "use crate::recording::pods::PodRecorder;",
        ),
        ("recording/mod.rs", "mod pods;"),
        (
            "recording/pods.rs",
            "use crate::kubernetes::scenario::S;\nfn f() { super::super::paths::kubectl() }",
        ),
    ]);
    let graph = Graph::of(&sources);
    assert_eq!(
        graph.circles(),
        [vec!["kubernetes::scenario", "recording::pods"]]
    );
    assert_eq!(
        graph.layers().against_order("crate", &HARNESS_PARTS),
        [format!(
            "crate::kubernetes uses crate::recording, which comes after it: {HARNESS_PARTS:?}"
        )]
    );
    assert_eq!(uses_of_the_root(&sources), ["paths uses crate::state_dir"]);
}

/// The harness's sources; the binaries under `bin/` are crates of their own.
fn harness_sources() -> Vec<(PathBuf, String)> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("molecule-like-tests/src");
    let mut sources = read_sources(&dir);
    sources.retain(|(path, _)| !path.starts_with("bin"));
    sources
}

/// The paths a module names that lead to no module, each as `<module> uses crate::<path>`:
/// items of the crate root (`lib.rs`, which is no module of the graph).
fn uses_of_the_root(sources: &[(PathBuf, String)]) -> Vec<String> {
    let modules = Graph::of(sources).modules;
    let mut uses = Vec::new();
    for (path, text) in sources {
        let Some(module) = module_of(path).filter(|m| modules.contains(m)) else {
            continue;
        };
        let (kept, _) = without_tests(&blank_comments_and_strings(text));
        for named in imported_paths(&kept) {
            let Some(target) = absolute(&module, &named, &modules) else {
                continue;
            };
            if !target.is_empty() && longest_module(&target, &modules).is_none() {
                uses.push(format!("{module} uses crate::{}", target.join("::")));
            }
        }
    }
    uses
}

#[test]
fn a_circle_is_found_through_any_kind_of_path() {
    let sources = sources(&[
        ("a.rs", "use crate::b::{self, Thing};\nfn f() {}"),
        ("b.rs", "fn g() { crate::c::h() }"),
        ("c.rs", "use super::a::f;"),
        ("d.rs", "use crate::a::f;"),
    ]);
    assert_eq!(Graph::of(&sources).circles(), [vec!["a", "b", "c"]]);
}

#[test]
fn a_parent_and_its_child_importing_each_other_are_a_circle() {
    let sources = sources(&[
        (
            "plan/mod.rs",
            "mod status;\nuse crate::plan::phases::report::status::Summary;",
        ),
        ("plan/phases/report/status.rs", "use crate::plan::Plan;"),
    ]);
    assert_eq!(
        Graph::of(&sources).circles(),
        [vec!["plan", "plan::phases::report::status"]]
    );
}

#[test]
fn tests_comments_and_strings_import_nothing() {
    let sources = sources(&[
        (
            "a.rs",
            "// use crate::b::X;\n/* crate::b::Y */ const S: &str = \"crate::b::Z\";\n\
             fn lifetime<'a>(c: char) -> bool { c == '\"' }\n\
             #[cfg(test)]\nfn helper() { crate::b::W }\n\
             #[cfg(test)]\nmod tests { use crate::b::V; }\n#[cfg(test)]\nmod more;",
        ),
        ("a/more.rs", "use crate::b::U;"),
        ("b.rs", "use crate::a::T;"),
    ]);
    let graph = Graph::of(&sources);
    assert_eq!(graph.modules, BTreeSet::from(["a".into(), "b".into()]));
    assert!(graph.circles().is_empty(), "{:?}", graph.edges);
}

#[test]
fn a_visibility_imports_nothing() {
    let sources = sources(&[
        ("a/mod.rs", "mod b;\nuse crate::a::b::f;"),
        (
            "a/b.rs",
            "pub(in crate::a) fn f() {}\npub(in crate::a) struct S;",
        ),
    ]);
    let graph = Graph::of(&sources);
    assert!(graph.edges["a::b"].is_empty(), "{:?}", graph.edges);
    assert!(graph.circles().is_empty());
}

#[test]
fn layers_are_the_top_level_modules() {
    let sources = sources(&[
        ("plan/mod.rs", "use crate::runtime::memory::M;"),
        ("runtime/mod.rs", ""),
        ("runtime/memory.rs", "use crate::plan::expanded::E;"),
        ("plan/expanded.rs", ""),
    ]);
    let graph = Graph::of(&sources);
    assert!(graph.circles().is_empty());
    assert_eq!(graph.layers().circles(), [vec!["plan", "runtime"]]);
}

#[test]
fn parts_are_the_children_of_a_module() {
    let sources = sources(&[
        ("runtime/mod.rs", "use crate::runtime::act::run;"),
        ("runtime/act/mod.rs", ""),
        (
            "runtime/act/run.rs",
            "use crate::runtime::memory::M;\nuse crate::plan::P;",
        ),
        ("runtime/memory/mod.rs", "use crate::runtime::act::run;"),
        (
            "runtime/memory/expected.rs",
            "use crate::runtime::memory::M;",
        ),
        ("plan/mod.rs", ""),
    ]);
    let parts = Graph::of(&sources).parts_of("runtime");
    assert_eq!(
        parts.modules,
        BTreeSet::from(["act".into(), "memory".into()])
    );
    assert_eq!(parts.circles(), [vec!["act", "memory"]]);
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

#[test]
fn inline_test_modules_and_path_attributes_are_found() {
    let text =
        "fn a() {}\n#[cfg(test)]\nmod tests {\n}\n#[cfg(test)]\n#[path = \"x.rs\"]\nmod x;\n";
    assert_eq!(misplaced_tests(text), [3, 6]);
    assert!(misplaced_tests("#[cfg(test)]\nmod tests;\n").is_empty());
}

/// The lines (from 1) of `text` that open an inline test module or carry `#[path]`.
fn misplaced_tests(text: &str) -> Vec<usize> {
    let lines: Vec<&str> = text.lines().map(str::trim).collect();
    let mut found = Vec::new();
    for (i, line) in lines.iter().enumerate() {
        let after_cfg_test = lines[..i]
            .iter()
            .rev()
            .take_while(|l| l.starts_with("#["))
            .any(|l| *l == "#[cfg(test)]");
        let inline_module = line.starts_with("mod ") && line.ends_with('{');
        if line.starts_with("#[path") || (inline_module && after_cfg_test) {
            found.push(i + 1);
        }
    }
    found
}

/// `(path under src/, text)` pairs as read from disk.
fn sources(files: &[(&str, &str)]) -> Vec<(PathBuf, String)> {
    files
        .iter()
        .map(|(path, text)| (PathBuf::from(path), (*text).to_owned()))
        .collect()
}

/// Every `.rs` file under `dir`, by its path relative to `dir`.
fn read_sources(dir: &Path) -> Vec<(PathBuf, String)> {
    let mut out = Vec::new();
    let mut folders = vec![dir.to_path_buf()];
    while let Some(folder) = folders.pop() {
        for entry in std::fs::read_dir(&folder).expect("a source folder") {
            let path = entry.expect("an entry").path();
            if path.is_dir() {
                folders.push(path);
            } else if path.extension().is_some_and(|e| e == "rs") {
                let text = std::fs::read_to_string(&path).expect("a readable source");
                out.push((
                    path.strip_prefix(dir).expect("under src").to_path_buf(),
                    text,
                ));
            }
        }
    }
    out.sort();
    out
}

fn describe(circles: &[Vec<String>]) -> String {
    circles
        .iter()
        .map(|c| c.join(" <-> "))
        .collect::<Vec<_>>()
        .join("; ")
}

/// Modules and which modules each one imports.
#[derive(Debug, Default)]
struct Graph {
    modules: BTreeSet<String>,
    edges: BTreeMap<String, BTreeSet<String>>,
}

impl Graph {
    fn of(sources: &[(PathBuf, String)]) -> Self {
        let mut code: BTreeMap<String, String> = BTreeMap::new();
        let mut test_modules = BTreeSet::new();
        for (path, text) in sources {
            let Some(module) = module_of(path) else {
                continue;
            };
            let (kept, tests) = without_tests(&blank_comments_and_strings(text));
            test_modules.extend(tests.into_iter().map(|t| join(&module, &t)));
            code.insert(module, kept);
        }
        code.retain(|module, _| {
            !test_modules
                .iter()
                .any(|t| module == t || module.starts_with(&format!("{t}::")))
        });
        let modules: BTreeSet<String> = code.keys().cloned().collect();
        let mut edges = BTreeMap::new();
        for (module, text) in &code {
            let targets: BTreeSet<String> = imported_paths(text)
                .into_iter()
                .filter_map(|path| absolute(module, &path, &modules))
                .filter_map(|path| longest_module(&path, &modules))
                .filter(|target| target != module)
                .collect();
            edges.insert(module.clone(), targets);
        }
        Self { modules, edges }
    }

    /// The graph of the top-level modules (a module's layer is its first name).
    fn layers(&self) -> Self {
        let layer = |m: &str| m.split("::").next().unwrap_or(m).to_owned();
        let mut layers = Self::default();
        for (from, targets) in &self.edges {
            let entry = layers.edges.entry(layer(from)).or_default();
            entry.extend(
                targets
                    .iter()
                    .map(|t| layer(t))
                    .filter(|t| *t != layer(from)),
            );
        }
        layers.modules = layers.edges.keys().cloned().collect();
        layers
    }

    /// The graph of the children of `parent` (a module's part is its first name below
    /// `parent`), without `parent` itself and without what lies outside it.
    fn parts_of(&self, parent: &str) -> Self {
        let prefix = format!("{parent}::");
        let part = |m: &str| {
            m.strip_prefix(&prefix)
                .map(|rest| rest.split("::").next().unwrap_or(rest).to_owned())
        };
        let mut parts = Self::default();
        for (from, targets) in &self.edges {
            let Some(from) = part(from) else {
                continue;
            };
            let entry = parts.edges.entry(from.clone()).or_default();
            entry.extend(
                targets
                    .iter()
                    .filter_map(|t| part(t))
                    .filter(|t| *t != from),
            );
        }
        parts.modules = parts.edges.keys().cloned().collect();
        parts
    }

    /// Each edge of this graph of `parent`'s parts that goes against `order` (a part may use
    /// only those before it), and each part `order` does not list, described.
    fn against_order(&self, parent: &str, order: &[&[&str]]) -> Vec<String> {
        let rank = |part: &str| order.iter().position(|l| l.contains(&part));
        let mut found = Vec::new();
        for (from, targets) in &self.edges {
            let Some(from_rank) = rank(from) else {
                found.push(format!("{parent}::{from} is not in the order: {order:?}"));
                continue;
            };
            for to in targets {
                if rank(to).is_none_or(|to_rank| to_rank >= from_rank) {
                    found.push(format!(
                        "{parent}::{from} uses {parent}::{to}, which comes after it: {order:?}"
                    ));
                }
            }
        }
        found
    }

    /// The strongly connected components of two or more modules, each sorted.
    fn circles(&self) -> Vec<Vec<String>> {
        let mut tarjan = Tarjan {
            graph: self,
            index: BTreeMap::new(),
            low: BTreeMap::new(),
            stack: Vec::new(),
            on_stack: BTreeSet::new(),
            next: 0,
            circles: Vec::new(),
        };
        for module in &self.modules {
            if !tarjan.index.contains_key(module.as_str()) {
                tarjan.visit(module);
            }
        }
        let mut circles = tarjan.circles;
        circles.sort();
        circles
    }
}

struct Tarjan<'a> {
    graph: &'a Graph,
    index: BTreeMap<&'a str, usize>,
    low: BTreeMap<&'a str, usize>,
    stack: Vec<&'a str>,
    on_stack: BTreeSet<&'a str>,
    next: usize,
    circles: Vec<Vec<String>>,
}

impl<'a> Tarjan<'a> {
    fn visit(&mut self, module: &'a str) {
        self.index.insert(module, self.next);
        self.low.insert(module, self.next);
        self.next += 1;
        self.stack.push(module);
        self.on_stack.insert(module);
        for target in self.graph.edges.get(module).into_iter().flatten() {
            let target = target.as_str();
            if !self.index.contains_key(target) {
                self.visit(target);
                let low = self.low[module].min(self.low[target]);
                self.low.insert(module, low);
            } else if self.on_stack.contains(target) {
                let low = self.low[module].min(self.index[target]);
                self.low.insert(module, low);
            }
        }
        if self.low[module] == self.index[module] {
            let mut component = Vec::new();
            while let Some(member) = self.stack.pop() {
                self.on_stack.remove(member);
                component.push(member.to_owned());
                if member == module {
                    break;
                }
            }
            if component.len() > 1 {
                component.sort();
                self.circles.push(component);
            }
        }
    }
}

/// `plan/phases/report/status.rs` → `plan::phases::report::status`, `plan/mod.rs` → `plan`; None for the crate roots.
fn module_of(path: &Path) -> Option<String> {
    let mut parts: Vec<String> = path
        .with_extension("")
        .components()
        .map(|c| c.as_os_str().to_string_lossy().into_owned())
        .collect();
    if parts.last().is_some_and(|p| p == "mod") {
        parts.pop();
    }
    if parts.len() == 1 && (parts[0] == "lib" || parts[0] == "main") {
        return None;
    }
    Some(parts.join("::"))
}

fn join(module: &str, child: &str) -> String {
    if module.is_empty() {
        child.to_owned()
    } else {
        format!("{module}::{child}")
    }
}

/// `text` with comments, string and character literals blanked out (lines kept).
fn blank_comments_and_strings(text: &str) -> String {
    let chars: Vec<char> = text.chars().collect();
    let mut out = String::with_capacity(text.len());
    let blank = |c: char| if c == '\n' { '\n' } else { ' ' };
    let mut i = 0;
    while i < chars.len() {
        let peek = |i: usize, n: usize| chars.get(i + n).copied();
        match chars[i] {
            '/' if peek(i, 1) == Some('/') => {
                while i < chars.len() && chars[i] != '\n' {
                    i += 1;
                }
            }
            '/' if peek(i, 1) == Some('*') => {
                let mut depth = 0;
                while i < chars.len() {
                    if chars[i] == '/' && peek(i, 1) == Some('*') {
                        depth += 1;
                        i += 2;
                    } else if chars[i] == '*' && peek(i, 1) == Some('/') {
                        depth -= 1;
                        i += 2;
                        if depth == 0 {
                            break;
                        }
                    } else {
                        out.push(blank(chars[i]));
                        i += 1;
                    }
                }
            }
            'r' if matches!(peek(i, 1), Some('"' | '#'))
                && (i == 0 || !(chars[i - 1].is_alphanumeric() || chars[i - 1] == '_')) =>
            {
                let hashes = chars[i + 1..].iter().take_while(|c| **c == '#').count();
                if peek(i, 1 + hashes) != Some('"') {
                    out.push('r');
                    i += 1;
                    continue;
                }
                i += 2 + hashes;
                while i < chars.len() {
                    let closes =
                        chars[i] == '"' && (1..=hashes).all(|n| chars.get(i + n) == Some(&'#'));
                    if closes {
                        i += 1 + hashes;
                        break;
                    }
                    out.push(blank(chars[i]));
                    i += 1;
                }
                out.push_str("\"\"");
            }
            '"' => {
                i += 1;
                while i < chars.len() && chars[i] != '"' {
                    if chars[i] == '\\' {
                        i += 1;
                    }
                    if let Some(&c) = chars.get(i) {
                        out.push(blank(c));
                    }
                    i += 1;
                }
                i += 1;
                out.push_str("\"\"");
            }
            // A character literal ('x', '\n', '\''), not a lifetime ('a).
            '\'' if peek(i, 1) == Some('\\') => {
                i += 2;
                while i < chars.len() && chars[i] != '\'' {
                    i += 1;
                }
                i += 1;
                out.push_str("' '");
            }
            '\'' if peek(i, 2) == Some('\'') => {
                i += 3;
                out.push_str("' '");
            }
            c => {
                out.push(c);
                i += 1;
            }
        }
    }
    out
}

/// `code` without its `#[cfg(test)]` items, and the names of the test modules it declares
/// in files of their own (`#[cfg(test)] mod name;`).
fn without_tests(code: &str) -> (String, Vec<String>) {
    const MARK: &str = "#[cfg(test)]";
    let mut kept = String::new();
    let mut test_modules = Vec::new();
    let mut rest = code;
    while let Some(at) = rest.find(MARK) {
        kept.push_str(&rest[..at]);
        let item = &rest[at + MARK.len()..];
        let end = item_end(item);
        let words: Vec<&str> = item[..end]
            .split(|c: char| !(c.is_alphanumeric() || c == '_'))
            .filter(|w| !w.is_empty())
            .collect();
        if item[..end].trim_end().ends_with(';') {
            if let Some(name) = words
                .iter()
                .position(|w| *w == "mod")
                .and_then(|i| words.get(i + 1))
            {
                test_modules.push((*name).to_owned());
            }
        }
        kept.extend(item[..end].chars().filter(|c| *c == '\n'));
        rest = &item[end..];
    }
    kept.push_str(rest);
    (kept, test_modules)
}

/// Where the item at the start of `code` ends: after its first `;` outside brackets, or after
/// the `}` closing its first `{`.
fn item_end(code: &str) -> usize {
    let mut depth = 0usize;
    for (i, c) in code.char_indices() {
        match c {
            '{' | '(' | '[' => depth += 1,
            '}' | ')' | ']' => {
                depth = depth.saturating_sub(1);
                if depth == 0 && c == '}' {
                    return i + 1;
                }
            }
            ';' if depth == 0 => return i + 1,
            _ => {}
        }
    }
    code.len()
}

/// Every path `code` names that starts with `crate`, `super` or `self`, or with a word a
/// `use` names first (a child module: `use child::x`), as its segments; `use` trees expanded.
fn imported_paths(code: &str) -> Vec<Vec<String>> {
    let mut paths = Vec::new();
    let mut rest = code.to_owned();
    // The `use` items first, each replaced by blanks so its words are not read twice.
    let mut search = 0;
    while let Some(found) = find_word(&rest[search..], "use") {
        let start = search + found;
        let Some(length) = rest[start..].find(';') else {
            break;
        };
        let tree = rest[start + 3..start + length].to_owned();
        let tree = tokens(&tree);
        let mut at = 0;
        while at < tree.len() {
            use_tree(&[], &tree, &mut at, &mut paths);
        }
        rest.replace_range(start..start + length, &" ".repeat(length));
        search = start + length;
    }
    // Then paths in code: `crate::a::b(...)`, `super::c::D`; a visibility (`pub(in crate::a)`)
    // imports nothing.
    let tokens = tokens(&rest);
    let mut i = 0;
    while i < tokens.len() {
        if matches!(tokens[i].as_str(), "crate" | "super" | "self")
            && tokens.get(i + 1).map(String::as_str) == Some("::")
            && (i == 0 || tokens[i - 1] != "::")
            && !(i >= 2 && tokens[i - 1] == "in" && tokens[i - 2] == "(")
        {
            let mut path = vec![tokens[i].clone()];
            let mut j = i + 1;
            while tokens.get(j).map(String::as_str) == Some("::")
                && tokens.get(j + 1).is_some_and(|t| is_word(t))
            {
                path.push(tokens[j + 1].clone());
                j += 2;
            }
            paths.push(path);
            i = j;
        } else {
            i += 1;
        }
    }
    paths
}

/// Expands the use tree at `tokens[*at..]` under `prefix` into `out`.
fn use_tree(prefix: &[String], tokens: &[String], at: &mut usize, out: &mut Vec<Vec<String>>) {
    let token = |at: usize| tokens.get(at).map(String::as_str);
    let mut path = prefix.to_vec();
    loop {
        match token(*at) {
            Some("{") => {
                *at += 1;
                while let Some(next) = token(*at) {
                    if next == "}" {
                        *at += 1;
                        break;
                    }
                    use_tree(&path, tokens, at, out);
                    if token(*at) == Some(",") {
                        *at += 1;
                    }
                }
                return;
            }
            Some("::") => *at += 1,
            Some("*") => {
                *at += 1;
                out.push(path);
                return;
            }
            Some(word) if is_word(word) => {
                // `a::{self}` names `a` itself.
                if word != "self" || path.is_empty() {
                    path.push(word.to_owned());
                }
                *at += 1;
                if token(*at) == Some("::") {
                    continue;
                }
                if token(*at) == Some("as") {
                    *at += 2;
                }
                out.push(path);
                return;
            }
            _ => {
                *at += 1;
                return;
            }
        }
    }
}

/// Words, `::` and single punctuation characters.
fn tokens(code: &str) -> Vec<String> {
    let chars: Vec<char> = code.chars().collect();
    let mut out = Vec::new();
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        if c.is_alphanumeric() || c == '_' {
            let start = i;
            while i < chars.len() && (chars[i].is_alphanumeric() || chars[i] == '_') {
                i += 1;
            }
            out.push(chars[start..i].iter().collect());
        } else if c == ':' && chars.get(i + 1) == Some(&':') {
            out.push("::".to_owned());
            i += 2;
        } else {
            if !c.is_whitespace() {
                out.push(c.to_string());
            }
            i += 1;
        }
    }
    out
}

fn is_word(token: &str) -> bool {
    token
        .chars()
        .next()
        .is_some_and(|c| c.is_alphabetic() || c == '_')
}

/// Where `word` first stands alone in `text`.
fn find_word(text: &str, word: &str) -> Option<usize> {
    let bytes = text.as_bytes();
    let is_ident = |b: u8| b.is_ascii_alphanumeric() || b == b'_';
    let mut from = 0;
    while let Some(found) = text[from..].find(word) {
        let at = from + found;
        let before = at == 0 || !is_ident(bytes[at - 1]);
        let after = bytes.get(at + word.len()).is_none_or(|b| !is_ident(*b));
        if before && after {
            return Some(at);
        }
        from = at + word.len();
    }
    None
}

/// `path` as named from `module`, made absolute (None for paths outside the crate).
fn absolute(module: &str, path: &[String], modules: &BTreeSet<String>) -> Option<Vec<String>> {
    let mut base: Vec<String> = module.split("::").map(str::to_owned).collect();
    let mut segments = path.iter().peekable();
    match segments.peek().map(|s| s.as_str()) {
        Some("crate") => {
            segments.next();
            base.clear();
        }
        Some("super") => {
            while segments.peek().map(|s| s.as_str()) == Some("super") {
                segments.next();
                base.pop();
            }
        }
        Some("self") => {
            segments.next();
        }
        // A child module named first (`use child::x` in a folder's `mod.rs`).
        Some(first) if modules.contains(&join(module, first)) => {}
        _ => return None,
    }
    base.extend(segments.cloned());
    Some(base)
}

/// The longest module `path` starts with.
fn longest_module(path: &[String], modules: &BTreeSet<String>) -> Option<String> {
    (1..=path.len())
        .rev()
        .map(|n| path[..n].join("::"))
        .find(|candidate| modules.contains(candidate))
}
