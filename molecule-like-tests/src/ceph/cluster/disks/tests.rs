use super::script_error;

#[test]
fn the_scripts_own_error_line_is_the_reason() {
    let failed = "ceph [\"osd-prepare\", \"1\", \"--host\", \"h2\"] failed (exit status: 1): \
        [ceph] ERROR: ceph osd new 5d46 1 refused: Error EINVAL: id 1 already in use and \
        does not match uuid 5d46\n";
    assert_eq!(
        script_error(failed).as_deref(),
        Some(
            "ceph osd new 5d46 1 refused: Error EINVAL: id 1 already in use and does not \
             match uuid 5d46"
        )
    );
    assert_eq!(
        script_error("ceph [\"osd-prepare\"] did not finish in 120s"),
        None
    );
}
