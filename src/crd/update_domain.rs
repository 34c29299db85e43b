//! The update domains OSDs are grouped in, by the spec's `updateDomain`: the words the
//! rollout, the disruption budget and `kubectl ceph-osd` share.

use crate::crd::osd::OsdKey;
use crate::crd::UpdateDomain;

/// The id of the update domain an OSD belongs to: its key, or its host.
pub(crate) fn domain_id(key: &OsdKey, domain: UpdateDomain) -> String {
    match domain {
        UpdateDomain::Osd => key.to_string(),
        UpdateDomain::Host => key.host.clone(),
    }
}
