use super::*;
use crate::crd::osd::OsdKey;
use crate::hash::TemplateHash;
use crate::labels::PodState;
use proptest::prelude::*;

fn direct(osd: &DesiredOsd, identity: &PodIdentity<'_>) -> Result<Map<String, Value>, RenderError> {
    let owner_label = crate::labels::owner_label_value(identity.cr_name);
    render(&Values::of(osd, identity, &owner_label))
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(300))]

    /// Filling the placeholders gives exactly what rendering with the values gives, for any
    /// values (quotes, newlines, template syntax, NUL, empty optional values included).
    /// Where a value is not valid in YAML even escaped (C1 control characters), rendering
    /// directly fails and the filled copy carries the value as it is.
    #[test]
    fn filled_copies_equal_direct_renders(
        host in any::<String>(),
        data in any::<String>(),
        db in proptest::option::of(any::<String>()),
        wal in proptest::option::of(".{0,3}"),
        owner_uid in proptest::option::of("[a-z0-9-]{0,8}"),
        name in "[a-z0-9-]{1,20}|\\{\\{ host \\}\\}|\\x00host\\x00",
        state in prop_oneof![Just(PodState::WaitForReady), Just(PodState::UpToDate)],
    ) {
        let key = OsdKey::new(host, data);
        let osd = DesiredOsd { device: key.device_id(), key, db, wal, index: 0, disk: 0 };
        let hash = TemplateHash::of(&serde_json::json!({"spec": {}}));
        let identity = PodIdentity {
            cr_name: "ceph-osds",
            namespace: "ceph",
            owner_uid: owner_uid.as_deref(),
            name: &name,
            template_hash: &hash,
            pod_state: state,
        };
        let filled = pod_additions(&osd, &identity).expect("fills");
        if let Ok(direct) = direct(&osd, &identity) {
            prop_assert_eq!(filled, direct);
        }
    }
}
