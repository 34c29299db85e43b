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
mod tests;
