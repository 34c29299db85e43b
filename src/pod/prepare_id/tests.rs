use super::*;
use k8s_openapi::api::core::v1::PodSpec;

fn container(name: &str, env: &[(&str, &str)]) -> Container {
    Container {
        name: name.to_owned(),
        env: Some(
            env.iter()
                .map(|(n, v)| EnvVar {
                    name: (*n).to_owned(),
                    value: Some((*v).to_owned()),
                    value_from: None,
                })
                .collect(),
        ),
        ..Container::default()
    }
}

fn env_of(c: &Container) -> Vec<(String, String)> {
    (c.env.iter().flatten())
        .map(|e| (e.name.clone(), e.value.clone().unwrap_or_default()))
        .collect()
}

#[test]
fn every_container_gets_the_id_once_and_the_annotation_says_it() {
    let mut pod = Pod {
        spec: Some(PodSpec {
            init_containers: Some(vec![container("prepare", &[("OSD_ID", "99")])]),
            containers: vec![container("osd", &[("OSD_DEVICE", "/dev/sdb")])],
            ..PodSpec::default()
        }),
        ..Pod::default()
    };
    set_prepare_id(&mut pod, 7);
    let spec = pod.spec.as_ref().unwrap();
    assert_eq!(
        env_of(&spec.init_containers.as_ref().unwrap()[0]),
        vec![("OSD_ID".to_owned(), "7".to_owned())]
    );
    assert_eq!(
        env_of(&spec.containers[0]),
        vec![
            ("OSD_DEVICE".to_owned(), "/dev/sdb".to_owned()),
            ("OSD_ID".to_owned(), "7".to_owned())
        ]
    );
    let annotations = pod.metadata.annotations.unwrap_or_default();
    assert_eq!(
        annotations.get(labels::PREPARE_OSD_ID).map(String::as_str),
        Some("7")
    );
}
