use std::collections::BTreeMap;
use std::time::Duration;

use super::steps_from;
use crate::journeys::bridge::Daemon;
use crate::recording::ceph::CephRecording;

fn s(secs: u64) -> Duration {
    Duration::from_secs(secs)
}

/// An OSD's old daemon stopped at `stop`, its new one booted at `boot`.
fn restarted(stop: u64, boot: u64) -> Vec<Daemon> {
    vec![
        Daemon {
            pod: "old".into(),
            stopping: Some(s(stop)),
            ..Daemon::default()
        },
        Daemon {
            pod: "new".into(),
            booted: Some((s(boot), 9)),
            ..Daemon::default()
        },
    ]
}

#[test]
fn stops_before_the_earlier_ones_are_back_make_one_step() {
    let daemons = BTreeMap::from([
        (0, restarted(10, 20)),
        (1, restarted(11, 19)),
        (2, restarted(25, 30)),
        (3, restarted(5, 8)),
    ]);
    let steps = steps_from(&daemons, &CephRecording::default(), s(6));
    let osds: Vec<Vec<u32>> = steps.iter().map(|s| s.osds.clone()).collect();
    assert_eq!(osds, [vec![0, 1], vec![2]], "osd.3 stopped before `from`");
    assert_eq!((steps[0].start, steps[0].booted), (s(10), Some(s(20))));
    // A new daemon that never booted keeps its step open: later stops join it.
    let daemons = BTreeMap::from([
        (
            0,
            vec![Daemon {
                stopping: Some(s(1)),
                ..Daemon::default()
            }],
        ),
        (1, restarted(50, 60)),
    ]);
    let steps = steps_from(&daemons, &CephRecording::default(), s(0));
    assert_eq!(steps.len(), 1);
    assert_eq!(steps[0].booted, None);
}
