use super::*;

#[test]
fn the_report_aligns_moments_spans_and_figures() {
    let mut m = Milestones::new("rollout by host");
    m.mark_at("template changed", Duration::from_millis(1_500))
        .mark_since(
            "first pod replaced",
            Duration::from_millis(4_250),
            "template changed",
        )
        .span("set up", Duration::from_millis(12_345))
        .figure("steps", 3)
        .section("ceph calls", "  ok-to-stop 1\n");
    let report = m.report();
    assert_eq!(
        report,
        "==== rollout by host\n\
             \x20 template changed    at     1.50s\n\
             \x20 first pod replaced  at     4.25s  +2.75s after template changed\n\
             \x20 set up              12.35s\n\
             \x20 steps               3\n\
             ceph calls:\n  ok-to-stop 1\n"
    );
    assert_eq!(
        m.moment("first pod replaced"),
        Some(Duration::from_millis(4_250))
    );
    assert_eq!(m.moment("never"), None);
}

#[test]
fn a_mark_is_taken_on_the_clock_given() {
    let clock = Instant::now().checked_sub(Duration::from_secs(5)).unwrap();
    let mut m = Milestones::on_clock("j", clock);
    let at = m.mark("now");
    assert!(at >= Duration::from_secs(5), "{at:?}");
    assert_eq!(m.moment("now"), Some(at));
    // A reference never marked counts from the clock's start.
    m.mark_since("later", Duration::from_secs(7), "missing");
    assert!(
        m.report().contains("+7.00s after missing"),
        "{}",
        m.report()
    );
}
