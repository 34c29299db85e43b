//! ceph-osd-operator: reconciles `CephOSD` resources into one node-bound Pod per OSD.
pub mod crd;
pub mod desired;
pub mod hash;
pub mod labels;
pub mod osd;
pub mod plan;
pub mod render;
