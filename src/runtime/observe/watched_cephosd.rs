//! What the CephOSD watch decodes: each object on its own. One the operator cannot read (a
//! value its types do not hold, stored before the schema bounded it) is kept apart with the
//! reason and the field, reported on that object, and left out of the cache: it never fails
//! the LIST or the watch that every other CephOSD comes through.

use crate::crd::{CephOsd, CephOsdSpec, UpdateDomain};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kube::runtime::watcher;
use kube::Resource;
use serde::{Deserialize, Deserializer};
use std::borrow::Cow;

/// A CephOSD as the watch decodes it.
#[derive(Clone, Debug)]
pub(crate) enum WatchedCephOsd {
    Readable(Box<CephOsd>),
    Unreadable(Box<Unreadable>),
}

/// A CephOSD the operator cannot read: its metadata and why.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Unreadable {
    pub metadata: ObjectMeta,
    /// The field that does not fit (`spec.partition`), or `.` for the object itself.
    pub field: String,
    pub error: String,
    /// `status.conditions` as stored, kept beside the one that reports the object.
    pub conditions: Vec<serde_json::Value>,
}

impl std::fmt::Display for Unreadable {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: {}", self.field, self.error)
    }
}

impl<'de> Deserialize<'de> for WatchedCephOsd {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let value = serde_json::Value::deserialize(deserializer)?;
        // Without readable metadata the object cannot even be named: that fails as before.
        let metadata = ObjectMeta::deserialize(value.get("metadata").unwrap_or(&value))
            .map_err(serde::de::Error::custom)?;
        Ok(
            match serde_path_to_error::deserialize::<_, CephOsd>(&value) {
                Ok(cr) => Self::Readable(Box::new(cr)),
                Err(error) => Self::Unreadable(Box::new(Unreadable {
                    metadata,
                    field: error.path().to_string(),
                    error: error.into_inner().to_string(),
                    conditions: value
                        .pointer("/status/conditions")
                        .and_then(serde_json::Value::as_array)
                        .cloned()
                        .unwrap_or_default(),
                })),
            },
        )
    }
}

/// The API of CephOSDs, for a watch that decodes [`WatchedCephOsd`]s.
impl Resource for WatchedCephOsd {
    type DynamicType = ();
    type Scope = <CephOsd as Resource>::Scope;

    fn kind((): &()) -> Cow<'_, str> {
        CephOsd::kind(&())
    }

    fn group((): &()) -> Cow<'_, str> {
        CephOsd::group(&())
    }

    fn version((): &()) -> Cow<'_, str> {
        CephOsd::version(&())
    }

    fn plural((): &()) -> Cow<'_, str> {
        CephOsd::plural(&())
    }

    fn meta(&self) -> &ObjectMeta {
        match self {
            Self::Readable(cr) => &cr.metadata,
            Self::Unreadable(u) => &u.metadata,
        }
    }

    fn meta_mut(&mut self) -> &mut ObjectMeta {
        match self {
            Self::Readable(cr) => &mut cr.metadata,
            Self::Unreadable(u) => &mut u.metadata,
        }
    }
}

/// The event as the CephOSD cache takes it, and the unreadable object it carried, if any.
/// An unreadable object is not listed; one that turns unreadable keeps its last readable
/// version in the cache until it is read again or deleted (its disks stay claimed).
pub(crate) fn split_event(
    event: watcher::Event<WatchedCephOsd>,
) -> (Option<watcher::Event<CephOsd>>, Option<Unreadable>) {
    use watcher::Event;
    let readable = |w: WatchedCephOsd| match w {
        WatchedCephOsd::Readable(cr) => Ok(*cr),
        WatchedCephOsd::Unreadable(u) => Err(u),
    };
    match event {
        Event::Init => (Some(Event::Init), None),
        Event::InitDone => (Some(Event::InitDone), None),
        Event::InitApply(w) => match readable(w) {
            Ok(cr) => (Some(Event::InitApply(cr)), None),
            Err(u) => (None, Some(*u)),
        },
        Event::Apply(w) => match readable(w) {
            Ok(cr) => (Some(Event::Apply(cr)), None),
            Err(u) => (None, Some(*u)),
        },
        // The cache removes by name: the last readable version goes.
        Event::Delete(w) => match readable(w) {
            Ok(cr) => (Some(Event::Delete(cr)), None),
            Err(u) => (Some(Event::Delete(shell_of(u.metadata))), None),
        },
    }
}

/// A CephOSD with `metadata` and an empty spec: what the cache needs to remove an object
/// by name.
fn shell_of(metadata: ObjectMeta) -> CephOsd {
    let spec = CephOsdSpec::new(Vec::new(), UpdateDomain::Osd, serde_json::Value::Null);
    let mut cr = CephOsd::new("", spec);
    cr.metadata = metadata;
    cr
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn cephosd(partition: &serde_json::Value) -> serde_json::Value {
        json!({
            "apiVersion": "ceph.elemental.net/v1alpha1",
            "kind": "CephOSD",
            "metadata": {"name": "big", "namespace": "ns", "uid": "u1", "resourceVersion": "7"},
            "spec": {
                "storage": [{"hosts": ["h"], "osds": [{"data": "/dev/sdb"}]}],
                "updateDomain": "Host",
                "podTemplate": {"metadata": {"labels": {"a": "b"}}, "spec": {"containers": []}},
                "partition": partition,
            }
        })
    }

    #[test]
    fn a_value_the_type_does_not_hold_is_unreadable_naming_the_field() {
        let watched: WatchedCephOsd =
            serde_json::from_value(cephosd(&json!(2_147_483_648_i64))).expect("decoded");
        let WatchedCephOsd::Unreadable(u) = watched else {
            panic!("read a partition past i32");
        };
        assert_eq!(u.metadata.name.as_deref(), Some("big"));
        assert_eq!(u.field, "spec.partition");
        assert!(u.error.contains("2147483648"), "{}", u.error);
        assert_eq!(u.to_string(), format!("spec.partition: {}", u.error));
    }

    #[test]
    fn a_readable_one_is_the_cephosd_itself() {
        let watched: WatchedCephOsd = serde_json::from_value(cephosd(&json!(2))).expect("decoded");
        let WatchedCephOsd::Readable(cr) = watched else {
            panic!("a good CephOSD unreadable");
        };
        let direct: CephOsd = serde_json::from_value(cephosd(&json!(2))).expect("read");
        assert_eq!(cr.spec, direct.spec);
        assert_eq!(cr.metadata, direct.metadata);
    }

    #[test]
    fn a_list_with_one_unreadable_object_reads_the_others() {
        let list = json!([
            cephosd(&json!(1)),
            cephosd(&json!(-1_i64 << 40)),
            cephosd(&json!("10%"))
        ]);
        let watched: Vec<WatchedCephOsd> = serde_json::from_value(list).expect("the list");
        let readable = watched
            .iter()
            .filter(|w| matches!(w, WatchedCephOsd::Readable(_)))
            .count();
        assert_eq!(readable, 2);
    }

    #[test]
    fn events_keep_the_readable_and_report_the_unreadable() {
        let unreadable: WatchedCephOsd =
            serde_json::from_value(cephosd(&json!(2_147_483_648_i64))).expect("decoded");
        let readable: WatchedCephOsd = serde_json::from_value(cephosd(&json!(1))).expect("decoded");
        let (cached, reported) = split_event(watcher::Event::Apply(unreadable.clone()));
        assert!(cached.is_none());
        assert_eq!(reported.expect("reported").field, "spec.partition");
        let (cached, reported) = split_event(watcher::Event::InitApply(readable));
        assert!(matches!(cached, Some(watcher::Event::InitApply(_))) && reported.is_none());
        // Deleted while unreadable: removed from the cache by name.
        let (cached, reported) = split_event(watcher::Event::Delete(unreadable));
        let Some(watcher::Event::Delete(shell)) = cached else {
            panic!("not removed");
        };
        assert_eq!(
            (
                shell.metadata.name.as_deref(),
                shell.metadata.namespace.as_deref()
            ),
            (Some("big"), Some("ns"))
        );
        assert!(reported.is_none());
    }
}
