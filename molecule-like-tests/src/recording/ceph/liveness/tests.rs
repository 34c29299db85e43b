use super::*;
use crate::ceph::{OsdMap, PgStat};

fn error(e: &str) -> Observed {
    Observed::Error(e.to_owned())
}

#[test]
fn a_sampler_that_keeps_saying_something_is_never_silent() {
    let t0 = Instant::now();
    let mut heard = Heard::new(t0);
    for s in 1..=60 {
        let now = t0 + Duration::from_secs(s);
        heard.note(&Observed::OsdMap(OsdMap::default()), now);
        // The mgr away: each PG call ends in its timeout every 5 s.
        if s % 5 == 0 {
            heard.note(&error("pgs: pg dump: rc 110"), now);
        }
        assert_eq!(heard.silent(now), None, "at {s}s");
    }
}

#[test]
fn the_first_sampler_silent_past_the_bound_is_named() {
    let t0 = Instant::now();
    let mut heard = Heard::new(t0);
    let at = |s: u64| t0 + Duration::from_secs(s);
    heard.note(&Observed::Pgs(PgStat::default()), at(10));
    assert_eq!(heard.silent(at(15)), None);
    assert_eq!(heard.silent(at(16)), Some("osdmap"));
    heard.note(&error("osdmap: osd dump: rc 110"), at(16));
    assert_eq!(heard.silent(at(25)), None);
    assert_eq!(heard.silent(at(26)), Some("pgs"));
}

#[test]
fn connecting_counts_for_both_samplers_and_other_errors_for_neither() {
    let t0 = Instant::now();
    let mut heard = Heard::new(t0);
    let at = |s: u64| t0 + Duration::from_secs(s);
    heard.note(&error("connect: timed out"), at(12));
    assert_eq!(heard.silent(at(27)), None);
    heard.note(&error("unreadable sample \"x\""), at(27));
    assert_eq!(heard.silent(at(28)), Some("osdmap"));
}
