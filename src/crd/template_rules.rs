//! Fields of `spec.podTemplate` the operator never takes from the template: its own labels and
//! annotations (computed for each OSD), and placement and lifecycle fields that would fight
//! the binding of each pod to its host.
//!
//! The CRD rejects them (one CEL rule each, naming the field); a CR stored before that rule
//! still renders safely: the fields are left out of every pod and the status reports them.

use crate::labels;
use serde_json::{json, Map, Value};
use std::fmt;

/// The node label the operator's required node affinity matches.
pub(crate) const HOSTNAME_LABEL: &str = "kubernetes.io/hostname";

/// How a forbidden field sits in the template.
#[derive(Clone, Copy, Debug)]
enum Shape {
    /// A key of a string map (labels, annotations, nodeSelector).
    MapKey,
    /// A field of an object.
    Field,
    /// A list that must be empty if present.
    NonEmptyList,
}

/// One forbidden field: the object holding it, its key, and why.
struct Rule {
    parent: &'static [&'static str],
    key: &'static str,
    shape: Shape,
    message: &'static str,
}

const SET_BY_OPERATOR: &str =
    "is set by the operator for each OSD pod and may not be set in the template";

const RULES: &[Rule] = &[
    Rule {
        parent: &["metadata", "labels"],
        key: labels::OWNER,
        shape: Shape::MapKey,
        message: SET_BY_OPERATOR,
    },
    Rule {
        parent: &["metadata", "labels"],
        key: labels::UPDATE_DOMAIN,
        shape: Shape::MapKey,
        message: SET_BY_OPERATOR,
    },
    Rule {
        parent: &["metadata", "annotations"],
        key: labels::TEMPLATE_HASH,
        shape: Shape::MapKey,
        message: SET_BY_OPERATOR,
    },
    Rule {
        parent: &["metadata", "annotations"],
        key: labels::HOST,
        shape: Shape::MapKey,
        message: SET_BY_OPERATOR,
    },
    Rule {
        parent: &["metadata", "annotations"],
        key: labels::DATA,
        shape: Shape::MapKey,
        message: SET_BY_OPERATOR,
    },
    Rule {
        parent: &["metadata", "annotations"],
        key: labels::DB,
        shape: Shape::MapKey,
        message: SET_BY_OPERATOR,
    },
    Rule {
        parent: &["metadata", "annotations"],
        key: labels::WAL,
        shape: Shape::MapKey,
        message: SET_BY_OPERATOR,
    },
    Rule {
        parent: &["metadata", "annotations"],
        key: labels::POD_STATE,
        shape: Shape::MapKey,
        message: SET_BY_OPERATOR,
    },
    Rule {
        parent: &["metadata"],
        key: "finalizers",
        shape: Shape::NonEmptyList,
        message: "may not be set: a finalizer on every OSD pod would hold up each replacement \
                  and the deletion of the CephOSD",
    },
    Rule {
        parent: &["spec"],
        key: "nodeName",
        shape: Shape::Field,
        message: "may not be set: the operator binds each OSD pod to its host with a required \
                  node affinity",
    },
    Rule {
        parent: &["spec", "nodeSelector"],
        key: HOSTNAME_LABEL,
        shape: Shape::MapKey,
        message: "may not be set: the operator binds each OSD pod to its host, and one value \
                  cannot fit every host",
    },
    Rule {
        parent: &["spec", "affinity", "nodeAffinity"],
        key: "requiredDuringSchedulingIgnoredDuringExecution",
        shape: Shape::Field,
        message: "may not be set: the operator sets it to the OSD's host; constrain nodes with \
                  nodeSelector or preferredDuringSchedulingIgnoredDuringExecution",
    },
];

/// A forbidden field found in a template.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct TemplateProblem {
    /// The field, as `spec.podTemplate.<path>`.
    pub path: String,
    pub message: &'static str,
}

impl fmt::Display for TemplateProblem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.path, self.message)
    }
}

impl Rule {
    fn parent<'a>(&self, template: &'a Value) -> Option<&'a Map<String, Value>> {
        self.parent
            .iter()
            .try_fold(template, |value, key| value.get(key))?
            .as_object()
    }

    fn is_set(&self, template: &Value) -> bool {
        match self.parent(template).and_then(|p| p.get(self.key)) {
            None | Some(Value::Null) => false,
            Some(Value::Array(items)) if matches!(self.shape, Shape::NonEmptyList) => {
                !items.is_empty()
            }
            Some(_) => true,
        }
    }

    fn path(&self) -> String {
        let parent = self.parent.join(".");
        match self.shape {
            Shape::MapKey => format!("spec.podTemplate.{parent}[{}]", self.key),
            Shape::Field | Shape::NonEmptyList => format!("spec.podTemplate.{parent}.{}", self.key),
        }
    }

    /// The CEL rule (on `spec.podTemplate`) that rejects the field, and its `fieldPath`.
    fn cel(&self) -> (String, String) {
        let mut guards = Vec::new();
        let mut object = "self".to_owned();
        for key in self.parent {
            object = format!("{object}.{key}");
            guards.push(format!("!has({object})"));
        }
        let parent_path: String = self.parent.iter().map(|k| format!(".{k}")).collect();
        let (check, field_path) = match self.shape {
            Shape::MapKey => (
                format!("!('{}' in {object})", self.key),
                format!("{parent_path}['{}']", self.key),
            ),
            Shape::Field => (
                format!("!has({object}.{})", self.key),
                format!("{parent_path}.{}", self.key),
            ),
            Shape::NonEmptyList => (
                format!(
                    "!has({object}.{key}) || size({object}.{key}) == 0",
                    key = self.key
                ),
                format!("{parent_path}.{}", self.key),
            ),
        };
        guards.push(check);
        (guards.join(" || "), field_path)
    }
}

/// The forbidden fields `template` sets.
pub(crate) fn template_problems(template: &Value) -> Vec<TemplateProblem> {
    RULES
        .iter()
        .filter(|rule| rule.is_set(template))
        .map(|rule| TemplateProblem {
            path: rule.path(),
            message: rule.message,
        })
        .collect()
}

/// Removes every forbidden field from `template` (the operator then adds its own).
pub(crate) fn remove_forbidden_fields(template: &mut Value) {
    for rule in RULES {
        let parent = rule
            .parent
            .iter()
            .try_fold(&mut *template, |value, key| value.get_mut(*key))
            .and_then(Value::as_object_mut);
        if let Some(parent) = parent {
            parent.remove(rule.key);
        }
    }
}

/// The CRD's `x-kubernetes-validations` for `spec.podTemplate`: one rule per forbidden field.
pub(crate) fn cel_validations() -> Value {
    RULES
        .iter()
        .map(|rule| {
            let (rule_text, field_path) = rule.cel();
            json!({
                "rule": rule_text,
                "fieldPath": field_path,
                "reason": "FieldValueForbidden",
                "message": rule.message,
            })
        })
        .collect()
}

#[cfg(test)]
mod tests;
