use super::*;
use proptest::prelude::*;

#[test]
fn device_paths() {
    for good in [
        "/dev/sdb",
        "/dev/disk/by-id/ata-Samsung_SSD_860",
        "/dev/disk/by-slot/pci-0000:5c:00.0-encl-0:7:0-slot-1",
        "/.hidden",
        "/...",
        "/dev/..x",
        "/a",
    ] {
        assert_eq!(device_path_problem(good), None, "{good}");
    }
    for bad in [
        "",
        "/",
        "sdb",
        "dev/sdb",
        "/dev/sdb/",
        "/dev//sdb",
        "/dev/./sdb",
        "/dev/../sdb",
        "/.",
        "/..",
        "//dev/sdb",
    ] {
        assert!(device_path_problem(bad).is_some(), "{bad:?}");
    }
    assert!(device_path_problem(&format!("/{}", "a".repeat(4096))).is_some());
}

#[test]
fn hosts() {
    for good in ["node1", "worker041.example.com", "a", "0-a.b-1", "a76-h1"] {
        assert_eq!(host_problem(good), None, "{good}");
    }
    for bad in [
        "", "A76-H1", "node_1", "-a", "a-", "a..b", ".a", "a.", "köln", "a b", "a:b",
    ] {
        assert!(host_problem(bad).is_some(), "{bad:?}");
    }
    assert!(host_problem(&"a".repeat(254)).is_some());
}

#[test]
fn aliases_normalise_alike() {
    for alias in [
        "/dev/sdb",
        "/dev/sdb/",
        "/dev//sdb",
        "/dev/./sdb",
        "/dev/x/../sdb",
        "dev/sdb",
    ] {
        assert_eq!(normalise_device_path(alias), "/dev/sdb", "{alias}");
    }
    assert_eq!(normalise_host("A76-H1"), normalise_host("a76-h1"));
}

fn anchored(pattern: &str) -> regex::Regex {
    regex::Regex::new(pattern).expect("the schema pattern compiles")
}

proptest! {
    /// The schema's patterns and the Rust checks accept exactly the same strings.
    #[test]
    fn device_pattern_agrees_with_the_check(path in "[/a.b]{0,12}") {
        prop_assert_eq!(
            anchored(DEVICE_PATH_PATTERN).is_match(&path),
            device_path_problem(&path).is_none(),
            "{:?}", path
        );
    }

    #[test]
    fn host_pattern_agrees_with_the_check(host in "[aZ0.\\-_]{0,10}") {
        prop_assert_eq!(
            anchored(HOST_PATTERN).is_match(&host),
            host_problem(&host).is_none(),
            "{:?}", host
        );
    }

    /// The components but empty ones and `.`, each `..` dropping the one before.
    #[test]
    fn normalising_follows_the_definition(path in "[/a.é]{0,14}") {
        let mut parts: Vec<&str> = Vec::new();
        for component in path.split('/') {
            match component {
                "" | "." => {}
                ".." => {
                    parts.pop();
                }
                other => parts.push(other),
            }
        }
        prop_assert_eq!(normalise_device_path(&path), format!("/{}", parts.join("/")));
    }

    /// A normalised path is valid and normalises to itself.
    #[test]
    fn normalising_is_idempotent(path in "/[/a.b]{0,12}") {
        let once = normalise_device_path(&path);
        prop_assert_eq!(normalise_device_path(&once), once.clone());
        if once != "/" {
            prop_assert_eq!(device_path_problem(&once), None, "{:?}", once);
        }
    }
}
