//! What the gated journeys look up and do the same way: the disks the rollout reaches first
//! and last, an admin's pod annotation, the converged pods the pod watch's rollout check compares, an OSD's state in Ceph's view.

use std::collections::BTreeMap;
use std::time::Duration;

use ceph_osd_operator::crd::UpdateDomain;
use ceph_osd_operator::OsdKey;
use k8s_openapi::api::core::v1::Pod;
use kube::api::{Patch, PatchParams};
use kube::ResourceExt;
use serde_json::json;

use crate::ceph::OsdInfo;
use crate::journeys::gated::Gated;
use crate::kubernetes::pods::{names_by_key, rollout_order};
use crate::recording::ceph::CephState;

impl Gated {
    /// Kills the operator (SIGKILL: no graceful shutdown) and starts it again as `Gated` does,
    /// each `ceph` call in its log.
    pub fn restart_operator(&mut self) -> anyhow::Result<()> {
        self.s.stop_operator();
        let args: Vec<&str> = self.operator_args.iter().map(String::as_str).collect();
        let log_filter = format!(
            "{},ceph_osd_operator::ceph::cli=debug",
            crate::kubernetes::operator::operator_log_filter()
        );
        self.s.start_operator_with_env(
            &crate::kubernetes::operator::OperatorOptions::default(),
            &args,
            &[("RUST_LOG", &log_filter)],
        )
    }

    /// Holds for `duration` that every converged pod still stands (none deleted, none
    /// replaced); `while_what` says what should hold the rollout still.
    pub async fn converged_pods_stand(
        &self,
        duration: Duration,
        while_what: &str,
    ) -> anyhow::Result<()> {
        let old: Vec<String> = (self.converged.pods.values())
            .map(ResourceExt::name_any)
            .collect();
        crate::journeys::scenario::hold(duration, || async {
            for p in self.s.owned_pods(crate::kubernetes::manifests::CR).await? {
                anyhow::ensure!(
                    old.contains(&p.name_any()) && p.metadata.deletion_timestamp.is_none(),
                    "pod {} changed while {while_what}\n{}",
                    p.name_any(),
                    self.gate.render()
                );
            }
            Ok(())
        })
        .await
    }

    /// The last disk in the rollout's order, with its OSD id: a rollout stops every other
    /// host first.
    pub fn last_in_rollout_order(&self) -> (OsdKey, u32) {
        let (key, id) = (self.table.iter())
            .max_by_key(|(key, _)| rollout_order(key))
            .expect("a gated scenario has disks");
        (key.clone(), *id)
    }

    /// Lists exactly `hosts` (one `/dev/sdb` each) in the spec and waits until the pods of
    /// `want` converge on the fixture's template (a host left out is drained first).
    pub async fn set_hosts(
        &self,
        hosts: &[String],
        want: &std::collections::BTreeSet<OsdKey>,
    ) -> anyhow::Result<()> {
        let storage = crate::kubernetes::manifests::storage(hosts, &["/dev/sdb"]);
        self.s
            .patch_spec(
                crate::kubernetes::manifests::CR,
                json!({ "storage": storage }),
            )
            .await?;
        self.s
            .wait_converged(
                crate::kubernetes::manifests::CR,
                want,
                &self.converged.hash,
                crate::journeys::scenario::ROLLOUT,
            )
            .await?;
        Ok(())
    }

    /// The first disk in the rollout's order, with its OSD id: the first step stops its host.
    pub fn first_in_rollout_order(&self) -> (OsdKey, u32) {
        let (key, id) = (self.table.iter())
            .min_by_key(|(key, _)| rollout_order(key))
            .expect("a gated scenario has disks");
        (key.clone(), *id)
    }

    /// Sets one annotation on `pod` (that very pod: its uid in the patch), as an admin does.
    pub async fn annotate_pod(&self, pod: &Pod, key: &str, value: &str) -> anyhow::Result<()> {
        let patch = json!({"metadata": {"uid": pod.uid(), "annotations": {key: value}}});
        (self.s.pods)
            .patch(
                &pod.name_any(),
                &PatchParams::default(),
                &Patch::Merge(&patch),
            )
            .await?;
        Ok(())
    }

    /// The converged pods by name with their disks: what the pod watch's rollout check compares.
    pub fn old_pods(&self) -> BTreeMap<String, OsdKey> {
        names_by_key(&self.converged.pods)
    }

    /// The pod watch of a rollout by host: one pod per disk at any time, host by host, each
    /// host's replacements Ready before the next host's pods go.
    pub async fn check_pods_rolled_by_host(&self) -> anyhow::Result<()> {
        self.s.assert_one_pod_per_key().await?;
        self.s
            .recorder()?
            .timeline()
            .check_rollout(&self.old_pods(), UpdateDomain::Host)
    }

    /// Waits until OSD `id` is as `wanted` says in Ceph's osdmap (`what` names it in the error).
    pub async fn wait_osd(
        &self,
        what: &str,
        id: u32,
        timeout: Duration,
        wanted: impl Fn(&OsdInfo) -> bool,
    ) -> anyhow::Result<CephState> {
        self.ceph
            .wait_until(what, timeout, |v| {
                (v.osdmap.as_ref()).is_some_and(|(_, m)| m.osd(id).is_some_and(&wanted))
            })
            .await
    }
}
