use super::*;

fn key(host: &str, data: &str) -> OsdKey {
    OsdKey::new(host, data)
}

#[test]
fn entries_are_read_by_line_or_comma_with_their_confirmation() {
    let (requests, problems) = replace_requests(
        " node-a:/dev/sdb \n node-b:/dev/sdc=swapped, node-c:/dev/sdd=swapped-2\n",
    );
    assert_eq!(problems, Vec::<String>::new());
    assert_eq!(
        requests,
        vec![
            ReplaceRequest {
                key: key("node-a", "/dev/sdb"),
                swapped: None
            },
            ReplaceRequest {
                key: key("node-b", "/dev/sdc"),
                swapped: Some("swapped".to_owned())
            },
            ReplaceRequest {
                key: key("node-c", "/dev/sdd"),
                swapped: Some("swapped-2".to_owned())
            },
        ]
    );
}

#[test]
fn a_device_path_with_colons_keeps_them() {
    let (requests, _) = replace_requests("h:/dev/disk/by-path/pci-0000:00:1f.2-ata-1=swapped");
    assert_eq!(
        requests[0].key,
        key("h", "/dev/disk/by-path/pci-0000:00:1f.2-ata-1")
    );
}

#[test]
fn what_cannot_be_read_is_named_and_the_rest_is_kept() {
    let (requests, problems) = replace_requests("h:/dev/sdb=yes\nnonsense\nh:sdb\nh:/dev/sdc");
    assert_eq!(requests.len(), 1);
    assert_eq!(problems.len(), 3, "{problems:?}");
    assert!(problems[0].contains("only `swapped`"), "{problems:?}");
    assert!(problems[1].contains("not an OSD key"), "{problems:?}");
    assert!(problems[2].contains("\"h:sdb\""), "{problems:?}");
}

#[test]
fn a_key_listed_twice_keeps_its_confirmation() {
    let (requests, _) = replace_requests("h:/dev/sdb=swapped\nh:/dev/sdb");
    assert_eq!(requests.len(), 1);
    assert_eq!(requests[0].swapped.as_deref(), Some("swapped"));
}

#[test]
fn the_annotation_written_reads_back_the_same() {
    let (requests, _) = replace_requests("a:/dev/sdb\nb:/dev/sdc=swapped-x");
    assert_eq!(replace_requests(&replace_annotation(&requests)).0, requests);
}

#[test]
fn only_done_and_refused_are_over_and_the_pod_waits_until_preparing() {
    use ReplacementPhase::*;
    for phase in [Draining, Destroying, AwaitingDisk, PrepareFailed] {
        assert!(phase.withholds_pod() && !phase.is_over(), "{phase}");
    }
    for phase in [Preparing, Backfilling] {
        assert!(!phase.withholds_pod() && !phase.is_over(), "{phase}");
    }
    for phase in [Done, Refused] {
        assert!(!phase.withholds_pod() && phase.is_over(), "{phase}");
    }
}
