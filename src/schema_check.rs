//! Offline check of a manifest against the CRD's own structural schema: the types the API
//! server enforces (so `render` rejects what `kubectl apply` would), with the field path.
//!
//! Checked: `type` (string, integer, number, boolean, object, array), `nullable`,
//! `x-kubernetes-int-or-string`, `x-kubernetes-preserve-unknown-fields`, `required`, `enum`,
//! `properties`, `additionalProperties` and `items`. Unknown fields are not errors: the API
//! server prunes them. CEL rules are not evaluated here (`validate` checks those by hand).

use serde_json::Value;

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
        let fits = value.is_string() || value.is_i64() || value.is_u64();
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
        Some("integer") => value.is_i64() || value.is_u64(),
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
        Value::Number(n) => format!("the number {n}"),
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
}
