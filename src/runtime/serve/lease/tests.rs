use super::*;

fn lease(holder: Option<&str>, renewed: i64, duration: i32) -> Lease {
    Lease {
        metadata: ObjectMeta::default(),
        spec: Some(LeaseSpec {
            holder_identity: holder.map(Into::into),
            renew_time: Some(MicroTime(Timestamp::from_second(renewed).expect("time"))),
            lease_duration_seconds: Some(duration),
            ..LeaseSpec::default()
        }),
    }
}

fn at(s: i64) -> Timestamp {
    Timestamp::from_second(s).expect("time")
}

fn settings() -> LeaseSettings {
    LeaseSettings {
        namespace: "ns".into(),
        name: "lease".into(),
        identity: "me".into(),
        duration: Duration::from_secs(15),
        retry: Duration::from_secs(3),
    }
}

#[tokio::test(start_paused = true)]
async fn a_holder_whose_renewals_hang_gives_up_before_the_lease_expires() {
    let start = tokio::time::Instant::now();
    let mut attempts = 0;
    let error = renew_until_lost(&settings(), || {
        attempts += 1;
        let first = attempts == 1;
        async move {
            if first {
                Ok(true)
            } else {
                std::future::pending().await
            }
        }
    })
    .await;
    // Renewed at 3 s; the next attempt (at 6 s) hangs until 3 s + 12 s.
    assert_eq!(start.elapsed(), Duration::from_secs(15));
    assert!(
        error
            .to_string()
            .contains("within 12s: the API server did not answer"),
        "{error}"
    );
}

#[tokio::test(start_paused = true)]
async fn failed_renewals_are_retried_until_the_deadline() {
    let start = tokio::time::Instant::now();
    let error = renew_until_lost(&settings(), || async {
        Err(kube::Error::LinesCodecMaxLineLengthExceeded)
    })
    .await;
    // Attempts at 3 and 6 s fail and are retried; after the one at 9 s no other fits
    // before 12 s.
    assert_eq!(start.elapsed(), Duration::from_secs(9));
    assert!(matches!(error, LeaseError::RenewFailed { .. }), "{error}");
    let lost = renew_until_lost(&settings(), || async { Ok(false) }).await;
    assert!(matches!(lost, LeaseError::Lost(_)));
}

#[test]
fn the_lease_namespace_is_the_given_one_else_the_watched_one_never_a_guess() {
    assert_eq!(
        lease_namespace(Some("op"), Some("ceph")).ok(),
        Some("op".into())
    );
    assert_eq!(
        lease_namespace(None, Some("ceph")).ok(),
        Some("ceph".into())
    );
    assert_eq!(
        lease_namespace(Some(""), Some("ceph")).ok(),
        Some("ceph".into())
    );
    let error = lease_namespace(None, None).expect_err("no namespace");
    assert!(error.to_string().contains("--lease-namespace"), "{error}");
    assert!(lease_namespace(Some(""), Some("")).is_err());
}

#[test]
fn decisions() {
    assert_eq!(decide(None, "me", at(100)), Decision::Create);
    let theirs = lease(Some("other"), 100, 15);
    assert_eq!(decide(Some(&theirs), "me", at(110)), Decision::Wait);
    assert_eq!(
        decide(Some(&theirs), "me", at(115)),
        Decision::Take { transition: true }
    );
    assert_eq!(
        decide(Some(&lease(Some("me"), 100, 15)), "me", at(105)),
        Decision::Take { transition: false }
    );
    assert_eq!(
        decide(Some(&lease(None, 100, 15)), "me", at(101)),
        Decision::Take { transition: true }
    );
    assert_eq!(
        decide(Some(&lease(Some(""), 100, 15)), "me", at(101)),
        Decision::Take { transition: true }
    );
}
