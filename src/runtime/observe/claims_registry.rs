//! The disk claims of every CephOSD the operator can see (all namespaces), kept current: built
//! again only when a CephOSD appears, goes, or changes its spec.

use crate::crd::CephOsd;
use crate::plan::rules::disk_claims::{Claimant, DiskClaims};
use crate::runtime::memory::locked::locked;
use crate::runtime::memory::Memory;
use kube::runtime::reflector::Store;
use kube::ResourceExt;
use std::collections::hash_map::DefaultHasher;
use std::hash::{Hash, Hasher};
use std::sync::{Arc, Mutex};

#[derive(Default)]
pub(crate) struct ClaimsRegistry {
    /// The claims, and a fingerprint of the CephOSD versions they were built from.
    current: Mutex<(u64, Arc<DiskClaims>)>,
}

impl ClaimsRegistry {
    /// The claims of the CephOSDs in `crs` (rebuilt if any of them appeared, went, or
    /// changed its spec since the last call).
    pub(crate) fn of(&self, crs: &Store<CephOsd>, memory: &Memory) -> Arc<DiskClaims> {
        let crs = crs.state();
        let fingerprint = fingerprint(&crs);
        if let Some(claims) = Some(&*locked(&self.current))
            .filter(|(kept, _)| *kept == fingerprint)
            .map(|(_, claims)| claims.clone())
        {
            return claims;
        }
        let specs: Vec<(Claimant, _)> = crs
            .iter()
            .map(|cr| {
                let claimant = Claimant {
                    namespace: cr.namespace().unwrap_or_default(),
                    name: cr.name_any(),
                    uid: cr.uid().unwrap_or_default(),
                    created: cr.metadata.creation_timestamp.as_ref().map(|t| t.0),
                };
                (claimant, memory.expanded(cr))
            })
            .collect();
        let claims = Arc::new(DiskClaims::build(
            specs.iter().map(|(c, e)| (c.clone(), &e.desired)),
        ));
        *locked(&self.current) = (fingerprint, claims.clone());
        claims
    }

    /// The claims as last built.
    pub(crate) fn latest(&self) -> Arc<DiskClaims> {
        locked(&self.current).1.clone()
    }
}

/// Identifies the CephOSDs and their spec versions (in any order).
fn fingerprint(crs: &[Arc<CephOsd>]) -> u64 {
    crs.iter()
        .map(|cr| {
            let mut hasher = DefaultHasher::new();
            (
                &cr.metadata.uid,
                &cr.metadata.generation,
                &cr.metadata.namespace,
                &cr.metadata.name,
            )
                .hash(&mut hasher);
            hasher.finish()
        })
        .fold(crs.len() as u64, u64::wrapping_add)
}
