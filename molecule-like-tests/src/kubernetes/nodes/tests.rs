use super::*;

#[test]
fn hosts_of_reads_every_storage_entry() {
    let cr = json!({"spec": {"storage": [
        {"hosts": ["b", "a"], "osds": []},
        {"hosts": ["a", "c"], "osds": []},
        {"osds": []},
    ]}});
    let expected: BTreeSet<String> = ["a", "b", "c"].map(String::from).into();
    assert_eq!(hosts_of(&cr), expected);
    assert_eq!(hosts_of(&cr["spec"]), expected);
    assert!(hosts_of(&json!({"spec": {"paused": true}})).is_empty());
}
