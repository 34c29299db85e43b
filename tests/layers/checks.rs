//! The checks of `main.rs` shown able to fail: each on made-up sources with the fault it finds.

use super::graph::{misplaced_tests, sources, uses_of_the_root, Graph};
use super::HARNESS_PARTS;
use std::collections::BTreeSet;

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

#[test]
fn inline_test_modules_and_path_attributes_are_found() {
    let text =
        "fn a() {}\n#[cfg(test)]\nmod tests {\n}\n#[cfg(test)]\n#[path = \"x.rs\"]\nmod x;\n";
    assert_eq!(misplaced_tests(text), [3, 6]);
    assert!(misplaced_tests("#[cfg(test)]\nmod tests;\n").is_empty());
}
