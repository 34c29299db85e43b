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
mod tests;
