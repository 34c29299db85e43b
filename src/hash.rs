//! The pod template hash: SHA-512 over the template serialised exactly like Python's
//! `json.dumps(obj, separators=(",", ":"), sort_keys=True)`, first 16 hex characters.
//!
//! Bit-compatibility with the reference operator is what lets us adopt its pods without
//! restarting them; the vectors in `tests/data/hash-vectors.json` pin it.

use serde_json::Value;
use sha2::{Digest, Sha512};
use std::fmt::{self, Write as _};

/// A 16-hex-character template hash, as stored in `ceph.elemental.net/pod-template-hash`.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct TemplateHash(String);

impl TemplateHash {
    /// Hashes a pod template as received from the API server (raw JSON, never re-typed).
    pub fn of(template: &Value) -> Self {
        let digest = Sha512::digest(canonical_json(template).as_bytes());
        let mut hex = hex::encode(digest);
        hex.truncate(16);
        Self(hex)
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for TemplateHash {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl PartialEq<str> for TemplateHash {
    fn eq(&self, other: &str) -> bool {
        self.0 == other
    }
}

/// Python-compatible compact JSON with keys sorted by code point at every level and
/// everything outside printable ASCII escaped as `\uXXXX` (`ensure_ascii=True`).
pub(crate) fn canonical_json(value: &Value) -> String {
    let mut out = String::new();
    write_value(&mut out, value);
    out
}

fn write_value(out: &mut String, value: &Value) {
    match value {
        Value::Null => out.push_str("null"),
        Value::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
        Value::Number(n) => write_number(out, n),
        Value::String(s) => write_string(out, s),
        Value::Array(items) => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write_value(out, item);
            }
            out.push(']');
        }
        Value::Object(map) => {
            // UTF-8 byte order equals code point order, which is what Python sorts by.
            let mut entries: Vec<_> = map.iter().collect();
            entries.sort_by(|a, b| a.0.cmp(b.0));
            out.push('{');
            for (i, (key, item)) in entries.into_iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write_string(out, key);
                out.push(':');
                write_value(out, item);
            }
            out.push('}');
        }
    }
}

fn write_number(out: &mut String, n: &serde_json::Number) {
    if let Some(f) = n.as_f64().filter(|_| n.is_f64()) {
        // Python prints floats with repr(): integral floats keep ".0", huge ones use "e+".
        if f.is_finite() && f.fract() == 0.0 && f.abs() < 1e16 {
            let _ = write!(out, "{f:.1}");
        } else {
            let text = n.to_string();
            match text.split_once('e') {
                Some((mantissa, exp)) => {
                    let (sign, digits) = match exp.strip_prefix('-') {
                        Some(d) => ('-', d),
                        None => ('+', exp.trim_start_matches('+')),
                    };
                    let _ = write!(out, "{mantissa}e{sign}{digits:0>2}");
                }
                None => out.push_str(&text),
            }
        }
    } else {
        out.push_str(&n.to_string());
    }
}

fn write_string(out: &mut String, s: &str) {
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '\u{8}' => out.push_str("\\b"),
            '\u{c}' => out.push_str("\\f"),
            ' '..='~' => out.push(c),
            _ => {
                let mut units = [0u16; 2];
                for unit in c.encode_utf16(&mut units) {
                    let _ = write!(out, "\\u{unit:04x}");
                }
            }
        }
    }
    out.push('"');
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use serde_json::json;

    fn vectors() -> Vec<Value> {
        // The shared spec copy wins when present; the crate's own copy keeps tests standalone.
        let shared = concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../shared/spec/hash-vectors.json"
        );
        let own = include_str!("../tests/data/hash-vectors.json");
        let text = std::fs::read_to_string(shared).unwrap_or_else(|_| own.to_owned());
        let all: Value = serde_json::from_str(&text).expect("vectors parse");
        all["hash"].as_array().expect("hash vectors").clone()
    }

    #[test]
    fn matches_every_vector() {
        let vectors = vectors();
        assert!(vectors.len() >= 2);
        for v in vectors {
            let template = &v["podTemplate"];
            assert_eq!(
                canonical_json(template),
                v["serialized"].as_str().expect("s")
            );
            assert_eq!(
                TemplateHash::of(template).as_str(),
                v["pod_template_hash"].as_str().expect("h"),
                "{}",
                v["description"]
            );
        }
    }

    #[test]
    fn escapes_like_python_ensure_ascii() {
        let value = json!({"b": "a\"\\\n\r\t\u{8}\u{c}\u{1}\u{7f}é🚀/", "a": [1, -2, true, null]});
        assert_eq!(
            canonical_json(&value),
            r#"{"a":[1,-2,true,null],"b":"a\"\\\n\r\t\b\f\u0001\u007f\u00e9\ud83d\ude80/"}"#
        );
    }

    #[test]
    fn floats_print_like_python_repr() {
        assert_eq!(canonical_json(&json!(1.0)), "1.0");
        assert_eq!(canonical_json(&json!(0.5)), "0.5");
        assert_eq!(canonical_json(&json!(1e20)), "1e+20");
        assert_eq!(canonical_json(&json!(1e-7)), "1e-07");
    }

    #[test]
    fn keys_sort_by_code_point_not_by_utf16() {
        // U+FF61 sorts before U+1F600 by code point (and by UTF-8 bytes).
        let value = json!({"\u{1F600}": 1, "\u{FF61}": 2, "Z": 3, "a": 4});
        assert_eq!(
            canonical_json(&value),
            r#"{"Z":3,"a":4,"\uff61":2,"\ud83d\ude00":1}"#
        );
    }

    proptest! {
        #[test]
        fn output_is_printable_ascii_and_round_trips(s in any::<String>(), k in any::<String>()) {
            let value = json!({ k.clone(): [s.clone(), {"x": s.clone()}] });
            let text = canonical_json(&value);
            prop_assert!(text.bytes().all(|b| (0x20..0x7f).contains(&b)));
            let back: Value = serde_json::from_str(&text).expect("valid json");
            prop_assert_eq!(back, value);
        }

        #[test]
        fn hash_ignores_key_order(a in "[a-z]{1,8}", b in "[A-Z]{1,8}", x in any::<i64>()) {
            let one: Value = serde_json::from_str(&format!(r#"{{"{a}":{x},"{b}":"v"}}"#)).expect("json");
            let two: Value = serde_json::from_str(&format!(r#"{{"{b}":"v","{a}":{x}}}"#)).expect("json");
            let hash = TemplateHash::of(&one);
            prop_assert_eq!(hash.as_str().len(), 16);
            prop_assert_eq!(hash, TemplateHash::of(&two));
        }
    }
}
