use super::*;
use proptest::prelude::*;
use serde_json::Value;

/// Kubernetes' DNS-1123 subdomain rule (pod names): the rule node names follow too.
pub(crate) fn is_dns1123_subdomain(name: &str) -> bool {
    crate::crd::storage_rules::host_problem(name).is_none()
}

#[test]
fn prefixes_match_the_vectors() {
    let vectors: Value =
        serde_json::from_str(include_str!("../../../tests/data/hash-vectors.json")).expect("json");
    let names = vectors["names"].as_array().expect("names");
    assert!(names.len() >= 7);
    for v in names {
        let (host, data) = (
            v["host"].as_str().expect("h"),
            v["data"].as_str().expect("d"),
        );
        assert_eq!(
            reference_name_prefix(host, data),
            v["reference_prefix"],
            "{host} {data}"
        );
        assert_eq!(
            OsdKey::new(host, data).name_prefix(),
            v["prefix"],
            "{host} {data}"
        );
    }
}

#[test]
fn odd_hosts_and_devices() {
    let cases = [
        (".host", "/dev/sdb", "osd--host-sdb-"),
        ("host.", "/dev/sdb", "osd-host--sdb-"),
        ("a..b", "/dev/sdb", "osd-a-sdb-"),
        (
            "Node_1",
            "/dev/disk/by-id/wwn-0x5000:c500",
            "osd-node-1-wwn-0x5000-c500-",
        ),
        ("köln", "/dev/sdé", "osd-k-ln-sd--"),
    ];
    for (host, data, expected) in cases {
        assert_eq!(
            OsdKey::new(host, data).name_prefix(),
            expected,
            "{host} {data}"
        );
    }
}

#[test]
fn keys_sort_case_insensitively() {
    let mut keys = [
        OsdKey::new("b", "/dev/sda"),
        OsdKey::new("A", "/dev/sdb"),
        OsdKey::new("a", "/dev/sdc"),
    ];
    keys.sort();
    let shown: Vec<String> = keys.iter().map(ToString::to_string).collect();
    assert_eq!(shown, ["A:/dev/sdb", "a:/dev/sdc", "b:/dev/sda"]);
}

#[test]
fn random_suffixes_use_the_alphabet() {
    let mut source = RandomSuffix;
    for _ in 0..200 {
        let s = source.next_suffix();
        assert_eq!(s.len(), SUFFIX_LEN);
        assert!(s.bytes().all(|b| SUFFIX_ALPHABET.contains(&b)));
    }
}

proptest! {
    #[test]
    fn every_pod_name_is_a_valid_dns1123_subdomain(host in any::<String>(), data in any::<String>()) {
        let name = OsdKey::new(host, data).name_prefix() + &RandomSuffix.next_suffix();
        prop_assert!(is_dns1123_subdomain(&name), "{}", name);
        prop_assert!(name.len() <= 63);
    }

    #[test]
    fn key_order_is_case_folded_then_exact(
        a in ("[a-zA-Z0-9:._-]{0,6}", "[a-zA-Z0-9/:ΣσÄä\\x{212A}-]{0,6}"),
        b in ("[a-zA-Z0-9:._-]{0,6}", "[a-zA-Z0-9/:ΣσÄä\\x{212A}-]{0,6}"),
    ) {
        let (a, b) = (OsdKey::new(a.0, a.1), OsdKey::new(b.0, b.1));
        let folded = |k: &OsdKey| -> String { k.to_string().chars().flat_map(char::to_lowercase).collect() };
        let expected = folded(&a).cmp(&folded(&b)).then_with(|| a.to_string().cmp(&b.to_string()));
        prop_assert_eq!(a.cmp(&b), expected);
    }

    #[test]
    fn the_prefix_is_the_reference_prefix_sanitised(host in any::<String>(), data in any::<String>()) {
        let expected: String = reference_name_prefix(&host, &data).chars().map(sanitised).collect();
        prop_assert_eq!(OsdKey::new(host, data).name_prefix(), expected);
    }

    #[test]
    fn prefixes_is_starts_with_the_prefix(
        host in "[a-zA-Z0-9._-]{0,8}",
        data in "[/a-zA-Z0-9_ä-]{0,8}",
        name in "[a-z0-9-]{0,12}",
        cut in 0usize..70,
    ) {
        let key = OsdKey::new(host, data);
        let prefix = key.name_prefix();
        let own = prefix.clone() + &name;
        let short: String = prefix.chars().take(cut).collect();
        for candidate in [own.as_str(), name.as_str(), short.as_str(), ""] {
            prop_assert_eq!(key.prefixes(candidate), candidate.starts_with(&prefix), "{:?}", candidate);
        }
    }

    #[test]
    fn valid_reference_prefixes_are_kept(host in "[a-z0-9][a-z0-9.-]{0,40}", data in "(/[a-z0-9:._-]{1,20}){1,4}") {
        let reference = reference_name_prefix(&host, &data);
        if reference.bytes().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-') {
            prop_assert_eq!(OsdKey::new(host, data).name_prefix(), reference);
        }
    }
}
