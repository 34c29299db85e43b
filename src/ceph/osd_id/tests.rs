use super::*;

#[test]
fn shows_as_ceph_names_it() {
    assert_eq!(OsdId(7).to_string(), "osd.7");
    assert_eq!(list(&[OsdId(0), OsdId(3)]), "osd.0, osd.3");
    assert_eq!(list(&[]), "");
}
