pub const GROUP: &str = "ceph.elemental.net";
