//! The plugin's reads and writes: one CephOSD, the pods and ReplicaSets with its owner label,
//! merge patches.

use crate::crd::CephOsd;
use crate::kubectl::failed::Failed;
use crate::labels;
use k8s_openapi::api::apps::v1::ReplicaSet;
use k8s_openapi::api::core::v1::Pod;
use kube::api::{ListParams, Patch, PatchParams};
use kube::config::{KubeConfigOptions, Kubeconfig};
use kube::{Api, Client, ResourceExt};
use serde_json::Value;
use std::path::Path;

pub(crate) struct Cluster {
    client: Client,
    pub(crate) namespace: String,
}

/// A CephOSD as the plugin reads it: the object with its pods and era ReplicaSets.
pub(crate) struct Snapshot {
    pub(crate) cr: CephOsd,
    pub(crate) pods: Vec<Pod>,
    pub(crate) replica_sets: Vec<ReplicaSet>,
}

impl Cluster {
    /// A client of the `context` of `kubeconfig` (defaults: kubectl's), for `namespace` (else
    /// the context's).
    pub(crate) async fn connect(
        kubeconfig: Option<&Path>,
        context: Option<String>,
        namespace: Option<String>,
    ) -> Result<Self, Failed> {
        let kubeconfig = match kubeconfig {
            Some(path) => Kubeconfig::read_from(path)
                .map_err(|e| Failed::usage(format!("cannot read {}: {e}", path.display())))?,
            None => Kubeconfig::read()
                .map_err(|e| Failed::usage(format!("cannot read the kubeconfig: {e}")))?,
        };
        let options = KubeConfigOptions {
            context,
            ..KubeConfigOptions::default()
        };
        let config = kube::Config::from_custom_kubeconfig(kubeconfig, &options)
            .await
            .map_err(|e| Failed::usage(format!("invalid kubeconfig: {e}")))?;
        let namespace = namespace.unwrap_or_else(|| config.default_namespace.clone());
        let client = Client::try_from(config)
            .map_err(|e| Failed::not_reached(format!("cannot build a client: {e}")))?;
        Ok(Self { client, namespace })
    }

    pub(crate) fn cephosds(&self) -> Api<CephOsd> {
        Api::namespaced(self.client.clone(), &self.namespace)
    }

    pub(crate) fn all_cephosds(&self) -> Api<CephOsd> {
        Api::all(self.client.clone())
    }

    pub(crate) fn pods(&self) -> Api<Pod> {
        Api::namespaced(self.client.clone(), &self.namespace)
    }

    /// `name`, or the only CephOSD of the namespace.
    pub(crate) async fn resolve(&self, name: Option<String>) -> Result<String, Failed> {
        if let Some(name) = name {
            return Ok(name);
        }
        // Names only: a CephOSD this build cannot read does not keep the others from being named.
        let list = self
            .cephosds()
            .list_metadata(&ListParams::default())
            .await
            .map_err(|e| Failed::not_reached(format!("cannot list CephOSDs: {e}")))?;
        let names: Vec<String> = list.items.iter().map(ResourceExt::name_any).collect();
        match names.as_slice() {
            [one] => Ok(one.clone()),
            [] => Err(Failed::usage(format!(
                "no CephOSD in namespace {}",
                self.namespace
            ))),
            many => Err(Failed::usage(format!(
                "namespace {} has {} CephOSDs ({}): name one",
                self.namespace,
                many.len(),
                many.join(", ")
            ))),
        }
    }

    /// The CephOSD `name` with its pods and ReplicaSets.
    pub(crate) async fn snapshot(&self, name: &str) -> Result<Snapshot, Failed> {
        let cr =
            (self.cephosds().get(name).await).map_err(|e| self.cephosd_failed(name, "read", &e))?;
        let selector = format!("{}={}", labels::OWNER, labels::owner_label_value(name));
        let params = ListParams::default().labels(&selector);
        let pods = self
            .pods()
            .list(&params)
            .await
            .map_err(|e| Failed::not_reached(format!("cannot list the pods of {name}: {e}")))?
            .items;
        let replica_sets: Api<ReplicaSet> = Api::namespaced(self.client.clone(), &self.namespace);
        // Reading ReplicaSets is only needed for the Ansible operator's era: without the
        // right to, the preview does without.
        let replica_sets = replica_sets
            .list(&params)
            .await
            .map(|l| l.items)
            .unwrap_or_default();
        Ok(Snapshot {
            cr,
            pods,
            replica_sets,
        })
    }

    /// A JSON merge patch of the CephOSD `name`.
    pub(crate) async fn patch_cephosd(&self, name: &str, patch: &Value) -> Result<CephOsd, Failed> {
        self.cephosds()
            .patch(name, &PatchParams::default(), &Patch::Merge(patch))
            .await
            .map_err(|e| self.cephosd_failed(name, "update", &e))
    }

    /// A call about the CephOSD `name` failed: no such CephOSD is a usage error (exit code
    /// 2), anything else a call that failed (1), each said in one line.
    fn cephosd_failed(&self, name: &str, verb: &str, error: &kube::Error) -> Failed {
        match error {
            kube::Error::Api(s) if s.code == 404 => {
                Failed::usage(format!("no CephOSD {name} in namespace {}", self.namespace))
            }
            kube::Error::Api(s) => Failed::not_reached(format!(
                "cannot {verb} CephOSD {name}: {} ({})",
                s.message, s.reason
            )),
            _ => Failed::not_reached(format!("cannot {verb} CephOSD {name}: {error}")),
        }
    }

    /// A JSON merge patch of the pod `name`.
    pub(crate) async fn patch_pod(&self, name: &str, patch: &Value) -> Result<Pod, Failed> {
        self.pods()
            .patch(name, &PatchParams::default(), &Patch::Merge(patch))
            .await
            .map_err(|e| Failed::not_reached(format!("cannot update pod {name}: {e}")))
    }
}
