//! A CephOSD of `updateDomain: Topology` whose rollout waits looks at Ceph again on the gate's
//! cadence: a host moved in CRUSH comes with no Kubernetes event.

use super::*;
use crate::crd::topology::TopologySpec;
use crate::plan::gate::{CephInput, GateOff, QUICK_LOOKS};
use crate::plan::topology::{CrushPlacement, TopologyView};
use std::collections::BTreeMap;

fn rack_cr(marker: &str) -> CephOsd {
    let mut cr = cr(UpdateDomain::Topology, &["h1", "h2"], &["/dev/sdb"], marker);
    cr.spec.topology = Some(TopologySpec {
        bucket_type: "rack".into(),
        topology_key: None,
    });
    cr
}

/// CRUSH with no host of the CephOSD in a rack: every step halts on membership.
fn no_racks() -> TopologyView {
    TopologyView {
        crush: Some(Ok(CrushPlacement {
            auto_type: Err("not asked".into()),
            ancestors: BTreeMap::new(),
        })),
        labels: BTreeMap::new(),
    }
}

fn plan_with(cluster: &Cluster, cr: &CephOsd, input: CephInput) -> Plan {
    let mut cr = cr.clone();
    cr.status = cluster.status.clone();
    let mut observed = Observed::new(&cluster.pods, &cluster.replica_sets);
    observed.ceph = CephView {
        input,
        look_every: QUICK_LOOKS,
        ..CephView::default()
    };
    observed.topology = no_racks();
    plan(
        &cr,
        &observed,
        &mut CountingSuffix::default(),
        at(cluster.clock),
    )
}

#[test]
fn a_waiting_rollout_looks_at_crush_again_on_the_gates_cadence() {
    let cluster = converged(&rack_cr("a"));
    let changed = rack_cr("b");
    let plan = plan_with(&cluster, &changed, CephInput::NotAsked);
    let halted = plan.halted.clone().unwrap_or_default();
    assert!(halted.contains("no known failure domain"), "{halted}");
    assert_eq!(plan.requeue_after, Some(QUICK_LOOKS));
}

#[test]
fn a_finished_rollout_or_no_gate_does_not_look_again() {
    let cluster = converged(&rack_cr("a"));
    let settled = plan_with(&cluster, &rack_cr("a"), CephInput::NotAsked);
    assert_eq!(settled.requeue_after, None);
    let off = CephInput::Off {
        why: GateOff::NotConfigured,
    };
    let without_ceph = plan_with(&cluster, &rack_cr("b"), off);
    assert_ne!(without_ceph.requeue_after, Some(QUICK_LOOKS));
}
