use super::*;
use k8s_openapi::api::core::v1::{
    ContainerState, ContainerStateTerminated, ContainerStatus, PodStatus,
};

fn exited(name: &str, code: i32, last: bool) -> ContainerStatus {
    let state = ContainerState {
        terminated: Some(ContainerStateTerminated {
            exit_code: code,
            message: Some("ceph-volume: id 3 is not destroyed".to_owned()),
            ..ContainerStateTerminated::default()
        }),
        ..ContainerState::default()
    };
    ContainerStatus {
        name: name.to_owned(),
        state: (!last).then(|| state.clone()),
        last_state: last.then_some(state),
        ..ContainerStatus::default()
    }
}

fn pod(status: PodStatus) -> Pod {
    Pod {
        status: Some(status),
        ..Pod::default()
    }
}

#[test]
fn a_container_that_exited_non_zero_now_or_before_a_restart_is_a_failure() {
    for last in [false, true] {
        let failed = pod(PodStatus {
            phase: Some("Running".to_owned()),
            init_container_statuses: Some(vec![exited("prepare", 1, last)]),
            ..PodStatus::default()
        });
        assert_eq!(
            failure(&failed).as_deref(),
            Some("container prepare exited with code 1: ceph-volume: id 3 is not destroyed")
        );
    }
}

#[test]
fn a_clean_exit_or_a_running_pod_is_no_failure_and_a_failed_phase_is() {
    let ok = pod(PodStatus {
        phase: Some("Running".to_owned()),
        init_container_statuses: Some(vec![exited("prepare", 0, false)]),
        ..PodStatus::default()
    });
    assert_eq!(failure(&ok), None);
    assert_eq!(failure(&Pod::default()), None);
    let ended = pod(PodStatus {
        phase: Some("Failed".to_owned()),
        message: Some("evicted".to_owned()),
        ..PodStatus::default()
    });
    assert_eq!(failure(&ended).as_deref(), Some("the pod failed: evicted"));
}
