use super::*;

#[tokio::test]
async fn answers_in_order_and_records_calls() {
    let fake = ScriptedCeph::default()
        .on_ok_to_stop(Ok(OkToStop {
            ok_to_stop: false,
            ..OkToStop::default()
        }))
        .on_ok_to_stop(Ok(OkToStop {
            ok_to_stop: true,
            ..OkToStop::default()
        }))
        .on_add_noout(Ok(()))
        .on_rm_noout(Ok(()))
        .on_osd_metadata(Ok(BTreeMap::new()));
    assert!(!fake.ok_to_stop(&[OsdId(1)]).await.unwrap().ok_to_stop);
    assert!(fake.ok_to_stop(&[OsdId(1)]).await.unwrap().ok_to_stop);
    fake.add_noout(&[OsdId(1)]).await.unwrap();
    fake.rm_noout(&[OsdId(1)]).await.unwrap();
    assert!(fake.osd_metadata().await.unwrap().is_empty());
    assert_eq!(
        fake.calls(),
        [
            Call::OkToStop(vec![OsdId(1)]),
            Call::OkToStop(vec![OsdId(1)]),
            Call::AddNoout(vec![OsdId(1)]),
            Call::RmNoout(vec![OsdId(1)]),
            Call::OsdMetadata,
        ]
    );
}

#[tokio::test(start_paused = true)]
async fn a_hanging_answer_never_comes() {
    let fake = ScriptedCeph::default().on_ok_to_stop_hang();
    let r = tokio::time::timeout(
        std::time::Duration::from_secs(60),
        fake.ok_to_stop(&[OsdId(0)]),
    )
    .await;
    assert!(r.is_err());
}

#[tokio::test]
#[should_panic(expected = "nothing scripted")]
async fn an_unscripted_call_fails_the_test() {
    let fake = ScriptedCeph::default();
    let _ = fake.osd_metadata().await;
}
