//! The OSD id a pod prepares a new disk with (a disk replacement keeping the id): the
//! [`labels::OSD_ID_ENV`] env of every container and init container, and the
//! [`labels::PREPARE_OSD_ID`] annotation. The template's prepare step passes it on
//! (`ceph-volume lvm prepare --osd-id "$OSD_ID"`); a template that sets `OSD_ID` itself is
//! overridden.

use crate::labels;
use k8s_openapi::api::core::v1::{Container, EnvVar, Pod};

/// `pod` made to prepare its disk as OSD `id`.
pub(crate) fn set_prepare_id(pod: &mut Pod, id: u32) {
    let value = id.to_string();
    (pod.metadata
        .annotations
        .get_or_insert_with(Default::default))
    .insert(labels::PREPARE_OSD_ID.to_owned(), value.clone());
    let Some(spec) = pod.spec.as_mut() else {
        return;
    };
    let init = spec.init_containers.iter_mut().flatten();
    for container in spec.containers.iter_mut().chain(init) {
        set_env(container, &value);
    }
}

fn set_env(container: &mut Container, value: &str) {
    let env = container.env.get_or_insert_with(Vec::new);
    env.retain(|e| e.name != labels::OSD_ID_ENV);
    env.push(EnvVar {
        name: labels::OSD_ID_ENV.to_owned(),
        value: Some(value.to_owned()),
        value_from: None,
    });
}

#[cfg(test)]
mod tests;
