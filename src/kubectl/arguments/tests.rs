use super::*;

#[test]
fn durations_read_as_kubectl_writes_them() {
    assert_eq!(parse_duration("90s"), Ok(Duration::from_secs(90)));
    assert_eq!(parse_duration("10m"), Ok(Duration::from_secs(600)));
    assert_eq!(parse_duration("2h"), Ok(Duration::from_secs(7200)));
    assert_eq!(parse_duration("45"), Ok(Duration::from_secs(45)));
    assert!(parse_duration("ten").is_err() && parse_duration("5d").is_err());
}
