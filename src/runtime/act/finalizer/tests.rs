use super::*;

fn with(finalizers: Option<Vec<&str>>) -> CephOsd {
    let mut cr = crate::testing::CephOsdBuilder::new("c")
        .storage(&["h"], &["/dev/sdb"])
        .build()
        .expect("a CephOsd");
    cr.metadata.finalizers = finalizers.map(|f| f.into_iter().map(String::from).collect());
    cr
}

#[test]
fn patches_keep_every_other_finalizer_at_the_version_read() {
    let mut cr = with(Some(vec!["example.com/x"]));
    cr.metadata.resource_version = Some("7".into());
    assert_eq!(
        finalizers_patch(&cr, true),
        Some(
            json!({"metadata": {"resourceVersion": "7", "finalizers": ["example.com/x", FINALIZER]}})
        )
    );
    assert_eq!(finalizers_patch(&cr, false), None);
    let held = with(Some(vec![FINALIZER, "example.com/x"]));
    assert_eq!(finalizers_patch(&held, true), None);
    assert_eq!(
        finalizers_patch(&held, false),
        Some(json!({"metadata": {"resourceVersion": null, "finalizers": ["example.com/x"]}}))
    );
}
