use super::*;
use crate::ceph::test_data::ids;

#[test]
fn a_statement_is_a_list_of_numbers_or_said_as_written() {
    assert_eq!(read_stated_ids("3, 7"), Ok(ids(&[3, 7])));
    assert_eq!(read_stated_ids("5"), Ok(ids(&[5])));
    assert_eq!(read_stated_ids(" 2 ,2"), Ok(ids(&[2])));
    assert_eq!(read_stated_ids("3,x"), Err("3,x".to_owned()));
    assert_eq!(read_stated_ids("3,"), Err("3,".to_owned()));
    assert_eq!(read_stated_ids(""), Err(String::new()));
    assert_eq!(read_stated_ids("-1"), Err("-1".to_owned()));
}
