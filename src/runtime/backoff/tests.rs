use super::*;

#[test]
fn watch_retries_stay_short_and_start_over_after_working_a_while() {
    let t0 = Instant::now();
    let mut retry = WatchRetry::default();
    let delays: Vec<u128> = (0..7)
        .map(|i| retry.next_at(t0 + Duration::from_secs(i)).as_millis())
        .collect();
    assert_eq!(delays, [100, 200, 400, 800, 1600, 2000, 2000]);
    // Worked for 10 s, then failed: from the first delay again.
    retry.worked_at(t0 + Duration::from_secs(10));
    assert_eq!(retry.next_at(t0 + Duration::from_secs(20)).as_millis(), 100);
}

#[test]
fn an_init_before_each_failing_list_resets_nothing() {
    let t0 = Instant::now();
    let mut retry = WatchRetry::default();
    let mut at = t0;
    let mut delays = Vec::new();
    for _ in 0..6 {
        retry.worked_at(at); // the watcher's `Init`, then the LIST fails at once
        let delay = retry.next_at(at + Duration::from_millis(5));
        delays.push(delay.as_millis());
        at += delay + Duration::from_millis(5);
    }
    assert_eq!(delays, [100, 200, 400, 800, 1600, 2000]);
}
