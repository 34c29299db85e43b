use super::*;

fn everything_forbidden() -> Value {
    json!({
        "metadata": {
            "labels": {"role": "osd", "ceph.elemental.net/owner": "CephOSD-other"},
            "annotations": {
                "keep": "me",
                "ceph.elemental.net/pod-template-hash": "0", "ceph.elemental.net/host": "h",
                "ceph.elemental.net/data": "/dev/evil", "ceph.elemental.net/db": "/dev/evil-db",
                "ceph.elemental.net/wal": "/dev/evil-wal", "ceph.elemental.net/pod-state": "up-to-date"
            },
            "finalizers": ["example.com/hold"]
        },
        "spec": {
            "nodeName": "elsewhere",
            "nodeSelector": {"kubernetes.io/hostname": "elsewhere", "disktype": "hdd"},
            "affinity": {"nodeAffinity": {
                "requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": []},
                "preferredDuringSchedulingIgnoredDuringExecution": []
            }},
            "containers": [{"name": "osd"}]
        }
    })
}

#[test]
fn every_forbidden_field_is_named() {
    let paths: Vec<String> = template_problems(&everything_forbidden())
        .into_iter()
        .map(|p| p.path)
        .collect();
    assert_eq!(
            paths,
            [
                "spec.podTemplate.metadata.labels[ceph.elemental.net/owner]",
                "spec.podTemplate.metadata.annotations[ceph.elemental.net/pod-template-hash]",
                "spec.podTemplate.metadata.annotations[ceph.elemental.net/host]",
                "spec.podTemplate.metadata.annotations[ceph.elemental.net/data]",
                "spec.podTemplate.metadata.annotations[ceph.elemental.net/db]",
                "spec.podTemplate.metadata.annotations[ceph.elemental.net/wal]",
                "spec.podTemplate.metadata.annotations[ceph.elemental.net/pod-state]",
                "spec.podTemplate.metadata.finalizers",
                "spec.podTemplate.spec.nodeName",
                "spec.podTemplate.spec.nodeSelector[kubernetes.io/hostname]",
                "spec.podTemplate.spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution",
            ]
        );
}

#[test]
fn removal_keeps_everything_else() {
    let mut template = everything_forbidden();
    remove_forbidden_fields(&mut template);
    assert!(template_problems(&template).is_empty());
    assert_eq!(
        template,
        json!({
            "metadata": {"labels": {"role": "osd"}, "annotations": {"keep": "me"}},
            "spec": {
                "nodeSelector": {"disktype": "hdd"},
                "affinity": {"nodeAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": []}},
                "containers": [{"name": "osd"}]
            }
        })
    );
}

#[test]
fn a_plain_template_has_no_problems() {
    let template = json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"finalizers": []},
                              "spec": {"nodeSelector": {"disktype": "ssd"}, "containers": []}});
    assert!(template_problems(&template).is_empty());
    assert!(template_problems(&json!("not a mapping")).is_empty());
}

#[test]
fn cel_rules_guard_every_step_and_name_the_field() {
    let rules = cel_validations();
    let rules = rules.as_array().expect("list");
    assert_eq!(rules.len(), RULES.len());
    assert_eq!(
            rules[0]["rule"],
            "!has(self.metadata) || !has(self.metadata.labels) || !('ceph.elemental.net/owner' in self.metadata.labels)"
        );
    assert_eq!(
        rules[0]["fieldPath"],
        ".metadata.labels['ceph.elemental.net/owner']"
    );
    assert_eq!(
        rules[1]["fieldPath"],
        ".metadata.labels['ceph.elemental.net/update-domain']"
    );
    assert_eq!(
            rules[8]["rule"],
            "!has(self.metadata) || !has(self.metadata.finalizers) || size(self.metadata.finalizers) == 0"
        );
    assert_eq!(
        rules[9]["rule"],
        "!has(self.spec) || !has(self.spec.nodeName)"
    );
    assert_eq!(rules[9]["fieldPath"], ".spec.nodeName");
}
