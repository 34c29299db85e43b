//! Owner references that name a CephOSD.

use k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference;

/// Whether an ownerReference names a CephOSD.
pub(crate) fn is_cephosd(reference: &OwnerReference) -> bool {
    reference.kind == "CephOSD"
        && reference.api_version.split('/').next() == Some(crate::crd::GROUP)
}
