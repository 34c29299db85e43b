fn main() {
    print!(
        "{}",
        ceph_osd_operator::crd::custom_resource_definition_yaml()
    );
}
