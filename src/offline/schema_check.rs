//! Offline check of a manifest against the CRD's own structural schema: the types the API
//! server enforces (so `render` rejects what `kubectl apply` would), with the field path.
//!
//! Checked: `type` (string, integer, number, boolean, object, array), `nullable`,
//! `x-kubernetes-int-or-string`, `x-kubernetes-preserve-unknown-fields`, `required`, `enum`,
//! `properties`, `additionalProperties` and `items`; for integers the `int32` / `int64` range
//! and `minimum` / `maximum`. Numbers are judged as the server decodes them
//! (`server_numbers`): `1.0` and `1e3` are integers, `0.5` is not. Unknown fields are not
//! errors: the API server prunes them. CEL rules are not evaluated here (`validate` checks
//! those by hand).

use crate::crd::server_numbers::{
    decode, exact_integer, format_range, is_integer, Decoded, MAX_SAFE_INTEGER,
};
use serde_json::{Number, Value};

/// The first place where `value` does not fit `schema`, as `(path, message)`.
pub(crate) fn first_mismatch(schema: &Value, value: &Value) -> Option<(String, String)> {
    check(schema, value, &mut String::new())
}

fn check(schema: &Value, value: &Value, path: &mut String) -> Option<(String, String)> {
    let fail =
        |path: &str, message: String| Some((path.trim_start_matches('.').to_owned(), message));
    if value.is_null() {
        return None;
    }
    if schema.get("x-kubernetes-int-or-string") == Some(&Value::Bool(true)) {
        let fits = value.is_string() || value.as_number().is_some_and(number_is_integer);
        return if fits {
            None
        } else {
            fail(
                path,
                format!("must be an integer or a string, found {}", found(value)),
            )
        };
    }
    let expected = schema.get("type").and_then(Value::as_str);
    let fits = match expected {
        Some("string") => value.is_string(),
        Some("integer") => value.as_number().is_some_and(number_is_integer),
        Some("number") => value.is_number(),
        Some("boolean") => value.is_boolean(),
        Some("object") => value.is_object(),
        Some("array") => value.is_array(),
        _ => true,
    };
    if !fits {
        let expected = expected.unwrap_or("");
        return fail(
            path,
            format!("must be {}, found {}", article(expected), found(value)),
        );
    }
    if let Some(n) = value.as_number() {
        if let Some(message) = number_problem(schema, n) {
            return fail(path, message);
        }
    }
    if let Some(allowed) = schema.get("enum").and_then(Value::as_array) {
        if !allowed.contains(value) {
            let list: Vec<String> = allowed.iter().map(Value::to_string).collect();
            return fail(
                path,
                format!("must be one of {}, found {value}", list.join(", ")),
            );
        }
    }
    match value {
        Value::Object(fields) => {
            for name in schema
                .get("required")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
                .filter_map(Value::as_str)
            {
                if !fields.contains_key(name) {
                    return fail(&format!("{path}.{name}"), "is required".to_owned());
                }
            }
            let properties = schema.get("properties").and_then(Value::as_object);
            let additional = schema.get("additionalProperties").filter(|s| s.is_object());
            for (name, child) in fields {
                let child_schema = properties.and_then(|p| p.get(name)).or(additional);
                if let Some(child_schema) = child_schema {
                    let len = path.len();
                    if properties.is_some_and(|p| p.contains_key(name)) {
                        path.push('.');
                        path.push_str(name);
                    } else {
                        path.push_str(&format!("[{name}]"));
                    }
                    let mismatch = check(child_schema, child, path);
                    path.truncate(len);
                    if mismatch.is_some() {
                        return mismatch;
                    }
                }
            }
            None
        }
        Value::Array(items) => {
            let item_schema = schema.get("items")?;
            for (index, item) in items.iter().enumerate() {
                let len = path.len();
                path.push_str(&format!("[{index}]"));
                let mismatch = check(item_schema, item, path);
                path.truncate(len);
                if mismatch.is_some() {
                    return mismatch;
                }
            }
            None
        }
        _ => None,
    }
}

fn number_is_integer(n: &Number) -> bool {
    is_integer(decode(n))
}

/// What the server's range checks say of a number of the right type.
fn number_problem(schema: &Value, n: &Number) -> Option<String> {
    integer_problem(schema, n).or_else(|| bound_problem(schema, n))
}

/// A `type: integer` number must be exactly whole (not only within the type check's
/// tolerance) and fit its format.
fn integer_problem(schema: &Value, n: &Number) -> Option<String> {
    if schema.get("type").and_then(Value::as_str) != Some("integer") {
        return None;
    }
    let format = schema.get("format").and_then(Value::as_str);
    let (min, max) = format_range(format);
    match exact_integer(decode(n)) {
        None => Some(format!("must be an integer, found the number {n}")),
        Some(i) if i < min || i > max => Some(format!(
            "must be an integer from {min} to {max} ({}), found the number {n}",
            format.unwrap_or("int64")
        )),
        Some(_) => None,
    }
}

/// `minimum` and `maximum` (exclusive when `exclusiveMinimum` / `exclusiveMaximum` is true).
fn bound_problem(schema: &Value, n: &Number) -> Option<String> {
    let value = match decode(n) {
        #[allow(clippy::cast_precision_loss)] // the bounds are float64 values too
        Decoded::Int(i) => i as f64,
        Decoded::Float(f) => f,
    };
    let bound = |key: &str| schema.get(key).and_then(Value::as_f64);
    let exclusive = |key: &str| schema.get(key) == Some(&Value::Bool(true));
    if let Some(min) = bound("minimum") {
        let strict = exclusive("exclusiveMinimum");
        if value < min || (strict && value <= min) {
            let relation = if strict { "greater than" } else { "at least" };
            return Some(format!("must be {relation} {min}, found the number {n}"));
        }
    }
    if let Some(max) = bound("maximum") {
        let strict = exclusive("exclusiveMaximum");
        if value > max || (strict && value >= max) {
            let relation = if strict { "less than" } else { "at most" };
            return Some(format!("must be {relation} {max}, found the number {n}"));
        }
    }
    None
}

fn article(type_: &str) -> String {
    match type_ {
        "integer" | "object" | "array" => format!("an {type_}"),
        "" => "of another type".to_owned(),
        _ => format!("a {type_}"),
    }
}

fn found(value: &Value) -> String {
    match value {
        Value::Null => "null".to_owned(),
        Value::Bool(b) => format!("the boolean {b}"),
        Value::Number(n) => match decode(n) {
            Decoded::Float(f) if f.fract() == 0.0 && f.abs() > MAX_SAFE_INTEGER => format!(
                "the number {n} (a whole number written with a fraction or an exponent, or \
                 beyond int64, counts as an integer only within ±{MAX_SAFE_INTEGER})"
            ),
            _ => format!("the number {n}"),
        },
        Value::String(s) => format!("the string {s:?}"),
        Value::Array(_) => "a list".to_owned(),
        Value::Object(_) => "a mapping".to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn schema() -> Value {
        json!({
            "type": "object",
            "required": ["spec"],
            "properties": {
                "spec": {
                    "type": "object",
                    "properties": {
                        "mode": {"type": "string", "enum": ["A", "B"]},
                        "count": {"type": "integer"},
                        "port": {"type": "integer", "format": "int32"},
                        "grace": {"type": "integer", "format": "int64"},
                        "replicas": {"type": "integer", "format": "int32", "minimum": 1.0},
                        "share": {"type": "number", "maximum": 1.0, "exclusiveMaximum": true},
                        "ratio": {"type": "number"},
                        "list": {"type": "array", "items": {"type": "string"}},
                        "limits": {"type": "object", "additionalProperties": {
                            "x-kubernetes-int-or-string": true,
                            "anyOf": [{"type": "integer"}, {"type": "string"}]
                        }},
                        "free": {"type": "object", "x-kubernetes-preserve-unknown-fields": true},
                        "maybe": {"type": "string", "nullable": true}
                    }
                }
            }
        })
    }

    #[test]
    fn fitting_values_pass() {
        let value = json!({"spec": {
            "mode": "A", "count": 3, "ratio": 0.5, "list": ["x"],
            "limits": {"cpu": "500m", "memory": 1024}, "free": {"anything": [1, {"b": true}]},
            "maybe": null, "unknown": {"pruned": 1}
        }});
        assert_eq!(first_mismatch(&schema(), &value), None);
    }

    #[test]
    fn mismatches_name_the_field() {
        let cases = [
            (json!({}), "spec", "is required"),
            (
                json!({"spec": []}),
                "spec",
                "must be an object, found a list",
            ),
            (
                json!({"spec": {"mode": "c"}}),
                "spec.mode",
                r#"must be one of "A", "B", found "c""#,
            ),
            (
                json!({"spec": {"count": 1.5}}),
                "spec.count",
                "must be an integer, found the number 1.5",
            ),
            (
                json!({"spec": {"count": "1"}}),
                "spec.count",
                "must be an integer, found the string \"1\"",
            ),
            (
                json!({"spec": {"ratio": true}}),
                "spec.ratio",
                "must be a number, found the boolean true",
            ),
            (
                json!({"spec": {"list": ["a", 2]}}),
                "spec.list[1]",
                "must be a string, found the number 2",
            ),
            (
                json!({"spec": {"limits": {"cpu": 0.5}}}),
                "spec.limits[cpu]",
                "must be an integer or a string, found the number 0.5",
            ),
        ];
        for (value, path, message) in cases {
            assert_eq!(
                first_mismatch(&schema(), &value),
                Some((path.to_owned(), message.to_owned())),
                "{value}"
            );
        }
    }

    /// `spec` of the test schema with one field set to a number spelled as in a manifest.
    fn spec_with(field: &str, number: &str) -> Value {
        serde_saphyr::from_str(&format!("spec: {{{field}: {number}}}")).expect("yaml")
    }

    #[test]
    fn numbers_pass_as_the_api_server_decodes_them() {
        let accepted = [
            // Whole numbers written as floats: what the server accepts and stores as integers.
            ("limits", "{cpu: 1.0}"),
            ("port", "6800.0"),
            ("grace", "1e1"),
            ("limits", "{memory: 1e3}"),
            ("port", "-0.0"),
            ("limits", "{cpu: -0.0}"),
            ("grace", "9007199254740991.0"),
            ("port", "2147483647.0"),
            ("replicas", "2.0"),
            // Integers of any size within the format.
            ("grace", "9223372036854775807"),
            ("limits", "{cpu: 9223372036854775807}"),
            // The server's tolerance of an int-or-string just above a whole number.
            ("limits", "{cpu: 1.0000000001}"),
            ("share", "0.5"),
        ];
        for (field, number) in accepted {
            let value = spec_with(field, number);
            assert_eq!(first_mismatch(&schema(), &value), None, "{field}: {number}");
        }
    }

    #[test]
    fn numbers_the_api_server_rejects_are_rejected_naming_the_field() {
        let whole_beyond = "counts as an integer only within ±9007199254740991";
        let cases = [
            ("limits", "{cpu: 0.5}", "spec.limits[cpu]", "must be an integer or a string, found the number 0.5"),
            ("limits", "{cpu: 1.5}", "spec.limits[cpu]", "must be an integer or a string, found the number 1.5"),
            ("limits", "{cpu: 0.9999999999}", "spec.limits[cpu]", "found the number 0.9999999999"),
            ("limits", "{cpu: -1.0000000001}", "spec.limits[cpu]", "found the number -1.0000000001"),
            ("limits", "{cpu: 9007199254740992.0}", "spec.limits[cpu]", whole_beyond),
            ("limits", "{cpu: 9223372036854775808}", "spec.limits[cpu]", whole_beyond),
            ("port", "1.5", "spec.port", "must be an integer, found the number 1.5"),
            ("port", "6800.000001", "spec.port", "must be an integer, found the number 6800.000001"),
            ("grace", "1.0000000001", "spec.grace", "must be an integer, found the number 1.0000000001"),
            ("grace", "9007199254740992.0", "spec.grace", whole_beyond),
            ("grace", "9007199254740994.0", "spec.grace", "must be an integer, found the number 9007199254740994.0"),
            ("grace", "1e19", "spec.grace", whole_beyond),
            (
                "port",
                "2147483648",
                "spec.port",
                "must be an integer from -2147483648 to 2147483647 (int32), found the number 2147483648",
            ),
            ("replicas", "0", "spec.replicas", "must be at least 1, found the number 0"),
            ("replicas", "0.0", "spec.replicas", "must be at least 1, found the number 0.0"),
            ("share", "1.0", "spec.share", "must be less than 1, found the number 1.0"),
        ];
        for (field, number, path, message) in cases {
            let value = spec_with(field, number);
            let mismatch = first_mismatch(&schema(), &value);
            let (found_path, found_message) = mismatch.expect(number);
            assert_eq!(found_path, path, "{number}");
            assert!(found_message.contains(message), "{number}: {found_message}");
        }
    }
}
