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
