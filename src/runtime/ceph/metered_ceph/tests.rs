use super::*;
use crate::ceph::fake::ScriptedCeph;

#[tokio::test]
async fn each_command_is_counted_and_timed_answered_or_not() {
    let metrics = Arc::new(Metrics::default());
    let ceph = MeteredCeph {
        inner: Arc::new(
            ScriptedCeph::default()
                .on_add_noout(Ok(()))
                .on_add_noout(Ok(()))
                .on_rm_noout(Err(CephError::Timeout {
                    command: "osd rm-noout 3".into(),
                    timeout: std::time::Duration::from_secs(1),
                })),
        ),
        metrics: Arc::clone(&metrics),
    };
    ceph.add_noout(&[OsdId(3)]).await.unwrap();
    ceph.add_noout(&[OsdId(3)]).await.unwrap();
    ceph.rm_noout(&[OsdId(3)]).await.unwrap_err();
    let text = metrics.encode();
    assert!(
        text.contains(r#"ceph_osd_operator_ceph_commands_total{command="osd add-noout"} 2"#),
        "{text}"
    );
    assert!(text.contains(r#"ceph_osd_operator_ceph_commands_total{command="osd rm-noout"} 1"#));
    assert!(
        text.contains(r#"ceph_osd_operator_ceph_command_seconds_total{command="osd add-noout"}"#)
    );
}
