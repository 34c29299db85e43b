//! `spec.partition` and `spec.canary`: a count of update domains, as an integer or a
//! percentage of all update domains (rounded up), and the schema rules that keep them so.

use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;
use serde_json::{json, Value};

/// The fields counted in update domains.
const FIELDS: [&str; 2] = ["partition", "canary"];

/// The largest count the schema accepts: the largest integer the operator's type holds.
const MAX_DOMAINS: i32 = i32::MAX;

/// How many of `total` update domains `value` stands for: an integer, or `"N%"` of `total`
/// rounded up (so a canary of `"1%"` is one domain, and a partition holds rather more than
/// fewer). An error names what is wrong; the schema rejects such values first.
pub(crate) fn domains_of(field: &str, value: &IntOrString, total: usize) -> Result<usize, String> {
    match value {
        IntOrString::Int(n) => {
            usize::try_from(*n).map_err(|_| format!("spec.{field} must not be negative ({n})"))
        }
        IntOrString::String(text) => {
            let percent = text
                .strip_suffix('%')
                .and_then(|n| n.parse::<usize>().ok())
                .filter(|n| *n <= 100)
                .ok_or_else(|| {
                    format!(
                        "spec.{field} must be an integer or a percentage from 0% to 100%, \
                         not {text:?}"
                    )
                })?;
            Ok((percent * total).div_ceil(100))
        }
    }
}

/// A CEL rule per field: a non-negative integer or a percentage from 0% to 100%, the
/// message naming the field.
pub(crate) fn add_validations(crd: &mut Value) {
    for field in FIELDS {
        let pointer =
            format!("/spec/versions/0/schema/openAPIV3Schema/properties/spec/properties/{field}");
        if let Some(schema) = crd.pointer_mut(&pointer) {
            schema["x-kubernetes-validations"] = json!([{
                "rule": format!(
                    "type(self) == int ? self >= 0 && self <= {MAX_DOMAINS} : \
                     self.matches('^(100|[1-9]?[0-9])%$')"
                ),
                "message": format!(
                    "spec.{field} must be an integer from 0 to {MAX_DOMAINS} or a percentage \
                     from 0% to 100% (like \"10%\"), counted in update domains"
                ),
            }]);
        }
    }
    let pointer =
        "/spec/versions/0/schema/openAPIV3Schema/properties/spec/properties/promotedTemplateHash";
    if let Some(schema) = crd.pointer_mut(pointer) {
        schema["maxLength"] = json!(64);
    }
}

#[cfg(test)]
mod tests;
