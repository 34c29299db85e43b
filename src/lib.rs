//! ceph-osd-operator: reconciles `CephOSD` resources into one node-bound Pod per OSD.
pub mod crd;
