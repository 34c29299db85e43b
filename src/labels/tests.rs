use super::*;

#[test]
fn update_domain_label_values_are_short_valid_and_distinct() {
    let a = update_domain_label_value("node-a:/dev/sdb");
    assert_eq!(a.len(), 16);
    assert!(a.chars().all(|c| c.is_ascii_hexdigit()));
    assert_ne!(a, update_domain_label_value("node-a:/dev/sdc"));
    assert_eq!(a, update_domain_label_value("node-a:/dev/sdb"));
}

#[test]
fn owner_label_value_and_owner_named_by_are_inverse() {
    for name in ["ceph-osds", "a", "x-CephOSD-y"] {
        assert_eq!(owner_named_by(&owner_label_value(name)), Some(name));
    }
    for value in ["", "CephOSD-", "cephosd-a", "ReplicaSet-a", "a"] {
        assert_eq!(owner_named_by(value), None, "{value:?}");
    }
}
