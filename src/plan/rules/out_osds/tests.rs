use super::*;
use crate::ceph::OsdInfo;
use crate::crd::StepDrain;
use proptest::prelude::*;

const KEY: &str = "node-d:/dev/sdb";
const OTHER_KEY: &str = "node-a:/dev/sdb";

fn at(seconds: i64) -> Timestamp {
    Timestamp::from_second(1_700_000_000 + seconds).expect("time")
}

/// An OSD map of `(id, up, in)`.
fn dump(osds: &[(u32, bool, bool)]) -> OsdDump {
    OsdDump {
        epoch: 10,
        osds: osds
            .iter()
            .map(|&(id, up, is_in)| {
                let mut state = vec!["exists".to_owned()];
                if up {
                    state.push("up".to_owned());
                }
                let info = OsdInfo {
                    id: OsdId(id),
                    up,
                    is_in,
                    up_from: 5,
                    noout: false,
                    state,
                };
                (OsdId(id), info)
            })
            .collect(),
        require_osd_release: None,
        placement: crate::ceph::Placement::default(),
    }
}

fn record(id: u32, key: &str, by: MarkedBy) -> OsdOut {
    OsdOut {
        id,
        key: key.to_owned(),
        marked_by: by,
        since: Time(at(0)),
    }
}

fn keys(keys: &[&str]) -> BTreeSet<String> {
    keys.iter().map(|k| (*k).to_owned()).collect()
}

fn known(pairs: &[(&str, u32)]) -> BTreeMap<String, Vec<u32>> {
    pairs
        .iter()
        .map(|(k, id)| ((*k).to_owned(), vec![*id]))
        .collect()
}

fn drain_of(key: &str, id: u32) -> CephStep {
    CephStep {
        keys: vec![key.to_owned()],
        osds: Vec::new(),
        noout: Vec::new(),
        started: Time(at(0)),
        drain: Some(StepDrain {
            ids: [(key.to_owned(), vec![id])].into_iter().collect(),
            marked_out: vec![id],
        }),
        domains: BTreeMap::new(),
    }
}

struct Case<'a> {
    previous: Vec<OsdOut>,
    osds: Option<OsdDump>,
    desired: BTreeSet<String>,
    known: BTreeMap<String, Vec<u32>>,
    step: Option<CephStep>,
    gate_marks_in: BTreeSet<u32>,
    _of: std::marker::PhantomData<&'a ()>,
}

impl Case<'_> {
    fn new(previous: Vec<OsdOut>, osds: OsdDump, desired: &[&str]) -> Self {
        Self {
            previous,
            osds: Some(osds),
            desired: keys(desired),
            known: BTreeMap::new(),
            step: None,
            gate_marks_in: BTreeSet::new(),
            _of: std::marker::PhantomData,
        }
    }

    fn run(&self) -> OutOutcome {
        out_osds(&OutInput {
            previous: &self.previous,
            osds: self.osds.as_ref(),
            desired: &self.desired,
            known: &self.known,
            step: self.step.as_ref(),
            gate_marks_in: &self.gate_marks_in,
            now: at(60),
        })
    }
}

#[test]
fn a_drain_records_the_ids_it_marked_out_and_says_nothing_of_them() {
    let mut case = Case::new(Vec::new(), dump(&[(3, true, true)]), &[OTHER_KEY]);
    case.step = Some(drain_of(KEY, 3));
    let out = case.run();
    assert_eq!(
        out.records,
        [OsdOut {
            since: Time(at(60)),
            ..record(3, KEY, MarkedBy::Operator)
        }]
    );
    assert!(out.mark_in.is_empty());
    assert_eq!(
        out.condition.map(|c| c.reason),
        Some(ConditionReason::AllOsdsIn)
    );
    assert_eq!(out.marking_in, None);
}

#[test]
fn the_record_outlives_the_drain_and_the_pod() {
    // The drain ended: no step, the OSD down and out, its key not in the spec.
    let case = Case::new(
        vec![record(3, KEY, MarkedBy::Operator)],
        dump(&[(3, false, false)]),
        &[OTHER_KEY],
    );
    let out = case.run();
    assert_eq!(out.records, [record(3, KEY, MarkedBy::Operator)]);
    assert!(out.mark_in.is_empty());
    assert!(out.condition.is_some_and(|c| c.holds));
    assert_eq!(out.requeue_after, None);
}

#[test]
fn a_key_put_back_waits_for_its_daemon_then_is_marked_in() {
    let previous = vec![record(3, KEY, MarkedBy::Operator)];
    let down = Case::new(previous.clone(), dump(&[(3, false, false)]), &[KEY]).run();
    assert!(down.mark_in.is_empty());
    assert_eq!(down.records, previous);
    assert!(down
        .marking_in
        .as_deref()
        .is_some_and(|m| m.contains("once its daemon is up")));
    assert_eq!(down.requeue_after, Some(MARK_IN_LOOKS));
    let condition = down.condition.expect("condition");
    assert!(!condition.holds);
    assert!(
        condition.message.contains("osd.3 (node-d:/dev/sdb)"),
        "{}",
        condition.message
    );

    let up = Case::new(previous.clone(), dump(&[(3, true, false)]), &[KEY]).run();
    assert_eq!(up.mark_in, [OsdId(3)]);
    assert_eq!(up.records, previous, "kept until Ceph shows it in");
    assert!(up.marking_in.is_some());

    let back_in = Case::new(previous, dump(&[(3, true, true)]), &[KEY]).run();
    assert!(back_in.records.is_empty());
    assert!(back_in.mark_in.is_empty());
    assert_eq!(back_in.marking_in, None);
    assert!(back_in.condition.is_some_and(|c| c.holds));
}

#[test]
fn a_purged_or_destroyed_osd_is_forgotten() {
    let previous = vec![record(3, KEY, MarkedBy::Operator)];
    let purged = Case::new(previous.clone(), dump(&[(4, true, true)]), &[KEY]).run();
    assert!(purged.records.is_empty());
    assert!(purged.mark_in.is_empty());
    let mut destroyed = dump(&[(3, false, false)]);
    if let Some(o) = destroyed.osds.get_mut(&OsdId(3)) {
        o.state.push("destroyed".to_owned());
    }
    let destroyed = Case::new(previous, destroyed, &[KEY]).run();
    assert!(destroyed.records.is_empty());
    assert!(destroyed.mark_in.is_empty());
}

#[test]
fn an_id_the_gate_marks_in_itself_is_not_marked_twice() {
    // Put back before its pod stopped: the drain's own rule marks it in.
    let mut case = Case::new(
        vec![record(3, KEY, MarkedBy::Operator)],
        dump(&[(3, true, false)]),
        &[KEY],
    );
    case.gate_marks_in = [3].into_iter().collect();
    let out = case.run();
    assert!(out.mark_in.is_empty());
    assert!(out.records.is_empty());
}

#[test]
fn an_open_drain_keeps_its_ids_even_when_its_key_is_listed() {
    let mut case = Case::new(
        vec![record(3, KEY, MarkedBy::Operator)],
        dump(&[(3, true, false)]),
        &[KEY],
    );
    case.step = Some(drain_of(KEY, 3));
    let out = case.run();
    assert!(out.mark_in.is_empty());
    assert_eq!(out.records.len(), 1);
}

#[test]
fn an_admins_out_is_named_never_marked_in() {
    let mut case = Case::new(
        Vec::new(),
        dump(&[(1, true, false), (3, true, true)]),
        &[OTHER_KEY, KEY],
    );
    case.known = known(&[(OTHER_KEY, 1), (KEY, 3)]);
    let out = case.run();
    assert!(out.mark_in.is_empty());
    assert_eq!(
        out.records,
        [OsdOut {
            since: Time(at(60)),
            ..record(1, OTHER_KEY, MarkedBy::Other)
        }]
    );
    assert_eq!(out.marking_in, None, "not the operator's to wait for");
    assert_eq!(out.requeue_after, None);
    let condition = out.condition.expect("condition");
    assert_eq!(condition.reason, ConditionReason::OsdsOut);
    assert!(
        condition
            .message
            .contains("osd.1 (node-a:/dev/sdb) out in Ceph, not marked out by the operator"),
        "{}",
        condition.message
    );
    // Seen again: the same record, since unchanged; in again: forgotten.
    case.previous = out.records;
    assert_eq!(case.run().records[0].since, Time(at(60)));
    case.osds = Some(dump(&[(1, true, true), (3, true, true)]));
    let back = case.run();
    assert!(back.records.is_empty());
    assert!(back.condition.is_some_and(|c| c.holds));
}

#[test]
fn an_out_osd_of_a_key_not_in_the_spec_is_not_named() {
    let mut case = Case::new(Vec::new(), dump(&[(1, true, false)]), &[]);
    case.known = known(&[(OTHER_KEY, 1)]);
    let out = case.run();
    assert!(out.records.is_empty());
    assert!(out.condition.is_some_and(|c| c.holds));
}

#[test]
fn without_ceph_the_records_stay_and_nothing_is_said() {
    let mut case = Case::new(vec![record(3, KEY, MarkedBy::Operator)], dump(&[]), &[KEY]);
    case.osds = None;
    let out = case.run();
    assert_eq!(out.records, [record(3, KEY, MarkedBy::Operator)]);
    assert!(out.mark_in.is_empty());
    assert_eq!(out.condition, None);
    assert_eq!(out.marking_in, None);
}

#[test]
fn out_changed_sees_an_admins_out_an_in_and_a_purge() {
    let known = known(&[(OTHER_KEY, 1), (KEY, 3)]);
    let listed = keys(&[OTHER_KEY, KEY]);
    let out_changed = |records: &[OsdOut], known: &BTreeMap<String, Vec<u32>>, osds: &OsdDump| {
        super::out_changed(records, known, &listed, osds)
    };
    let settled = dump(&[(1, true, true), (3, true, true)]);
    assert!(!out_changed(&[], &known, &settled));
    assert!(out_changed(
        &[],
        &known,
        &dump(&[(1, true, false), (3, true, true)])
    ));
    let named = [record(1, OTHER_KEY, MarkedBy::Other)];
    assert!(!out_changed(
        &named,
        &known,
        &dump(&[(1, true, false), (3, true, true)])
    ));
    assert!(out_changed(&named, &known, &settled));
    let drained = [record(7, "node-x:/dev/sdb", MarkedBy::Operator)];
    assert!(!out_changed(
        &drained,
        &known,
        &dump(&[(1, true, true), (3, true, true), (7, false, false)])
    ));
    assert!(out_changed(&drained, &known, &settled), "purged");
    // An out OSD of a key the spec no longer lists is not its to name.
    let unlisted = keys(&[KEY]);
    assert!(!super::out_changed(
        &[],
        &known,
        &unlisted,
        &dump(&[(1, true, false), (3, true, true)])
    ));
}

proptest! {
    /// Whatever the map and the records: only the operator's own records of listed keys with
    /// an up daemon are marked in; every record is an OSD Ceph has out; every OSD of a listed
    /// key that is out is named; the condition holds exactly when nothing is.
    #[test]
    fn only_the_operators_own_with_a_daemon_up_are_marked_in(
        osds in proptest::collection::btree_map(0u32..8, (any::<bool>(), any::<bool>()), 0..8),
        previous in proptest::collection::btree_map(0u32..8, (0usize..3, any::<bool>()), 0..6),
        desired_mask in 0u8..8,
    ) {
        let all_keys = ["h0:/dev/sdb", "h1:/dev/sdb", "h2:/dev/sdb"];
        let key_of = |id: u32| all_keys[(id % 3) as usize];
        let map = dump(&osds.iter().map(|(&id, &(up, i))| (id, up, i)).collect::<Vec<_>>());
        let previous: Vec<OsdOut> = previous
            .iter()
            .map(|(&id, &(_, mine))| {
                record(id, key_of(id), if mine { MarkedBy::Operator } else { MarkedBy::Other })
            })
            .collect();
        let desired: BTreeSet<String> = (0..3)
            .filter(|i| desired_mask & (1 << i) != 0)
            .map(|i| all_keys[i].to_owned())
            .collect();
        let known: BTreeMap<String, Vec<u32>> = (0..8u32)
            .map(|id| (key_of(id).to_owned(), id))
            .fold(BTreeMap::new(), |mut m, (k, id)| {
                m.entry(k).or_insert_with(Vec::new).push(id);
                m
            });
        let out = out_osds(&OutInput {
            previous: &previous,
            osds: Some(&map),
            desired: &desired,
            known: &known,
            step: None,
            gate_marks_in: &BTreeSet::new(),
            now: at(60),
        });
        for id in &out.mark_in {
            let mine = previous.iter().any(|r| r.id == id.0 && r.marked_by == MarkedBy::Operator);
            prop_assert!(mine);
            prop_assert!(desired.contains(key_of(id.0)));
            prop_assert!(map.osds[id].up && !map.osds[id].is_in);
        }
        for r in &out.records {
            prop_assert!(map.osds.get(&OsdId(r.id)).is_some_and(|o| !o.is_in));
        }
        for (id, o) in &map.osds {
            if !o.is_in && desired.contains(key_of(id.0)) {
                prop_assert!(out.records.iter().any(|r| r.id == id.0));
            }
        }
        let condition = out.condition.expect("condition");
        let named = out.records.iter().any(|r| desired.contains(&r.key));
        prop_assert_eq!(condition.holds, !named);
        prop_assert!(!out_changed(&out.records, &known, &desired, &map));
    }
}
