//! JSON numbers in a custom resource as the API server treats them, for the offline path
//! (`render`) to check and hash exactly what the server accepts and stores.
//!
//! - Decoding: a number whose text parses as an int64 is an integer, any other a float64
//!   (`1.0`, `1e3`, and integers beyond int64).
//! - Type check: a float64 counts as an integer when it is whole and within ±(2^53 − 1), or
//!   above 1 and within a relative 1e-9 of the whole number below it (the server's
//!   tolerance: `1.0000000001` passes, `0.9999999999`, `-1.0000000001` and `1.5` do not).
//!   A `type: integer` field then also needs the exact decimal form to parse as an integer of
//!   its format (so there only whole values pass); `x-kubernetes-int-or-string` does not.
//! - Storage: a float64 is written in its shortest form, without exponent from 1e-6 to 1e21,
//!   so a whole one reads back as an integer (`1.0` is stored as `1`, `-0.0` as `0`).

use serde_json::{Number, Value};

/// A JSON number as the API server decodes it.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) enum Decoded {
    Int(i64),
    Float(f64),
}

/// How the API server decodes `n`.
pub(crate) fn decode(n: &Number) -> Decoded {
    match n.as_i64() {
        Some(i) => Decoded::Int(i),
        // Without arbitrary precision every serde_json number has an f64 value.
        None => Decoded::Float(n.as_f64().unwrap_or(f64::NAN)),
    }
}

/// 2^53 − 1: the largest float64 magnitude the server takes as an integer.
pub(crate) const MAX_SAFE_INTEGER: f64 = 9_007_199_254_740_991.0;

/// The server's relative tolerance for a float64 just above a whole number.
const TOLERANCE: f64 = 1e-9;

/// Whether the server's type check takes `n` as an integer (for `type: integer` and
/// `x-kubernetes-int-or-string`).
pub(crate) fn is_integer(n: Decoded) -> bool {
    match n {
        Decoded::Int(_) => true,
        Decoded::Float(f) => float_is_integer(f),
    }
}

fn float_is_integer(f: f64) -> bool {
    if !f.is_finite() || f.abs() > MAX_SAFE_INTEGER {
        return false;
    }
    if f.fract() == 0.0 {
        return true;
    }
    let whole = f.trunc();
    // Only above 1 does the tolerance apply (the whole number below is then at least 1).
    whole >= 1.0 && (f - whole) / (f + whole) < TOLERANCE
}

/// The integer value `n` holds for a `type: integer` field's range check: None unless it is
/// exactly whole (the server parses its decimal form as an integer).
pub(crate) fn exact_integer(n: Decoded) -> Option<i64> {
    match n {
        Decoded::Int(i) => Some(i),
        Decoded::Float(f) if float_is_integer(f) && f.fract() == 0.0 => {
            // Within ±(2^53 − 1): the conversion is exact.
            #[allow(clippy::cast_possible_truncation)]
            Some(f as i64)
        }
        Decoded::Float(_) => None,
    }
}

/// The range of an integer `format` (`int32`; anything else is int64).
pub(crate) fn format_range(format: Option<&str>) -> (i64, i64) {
    match format {
        Some("int32") => (i32::MIN.into(), i32::MAX.into()),
        _ => (i64::MIN, i64::MAX),
    }
}

/// `n` as the API server stores and returns it, read back by serde_json as the operator reads
/// it: a float64 is written in Go's shortest form, then decoded again (an int64 when that
/// text is one).
pub(crate) fn stored(n: &Number) -> Value {
    match decode(n) {
        Decoded::Int(i) => Value::from(i),
        Decoded::Float(f) => {
            let text = go_text(f);
            match text.parse::<i64>() {
                Ok(i) => Value::from(i),
                Err(_) => serde_json::from_str(&text).unwrap_or_else(|_| Value::Number(n.clone())),
            }
        }
    }
}

/// The text Go's encoding/json writes for a finite float64: the shortest digits that read
/// back to it, with an exponent only below 1e-6 or from 1e21 on.
fn go_text(f: f64) -> String {
    let abs = f.abs();
    if abs != 0.0 && !(1e-6..1e21).contains(&abs) {
        format!("{f:e}")
    } else {
        format!("{f}")
    }
}

/// Replaces every number in `value` by its stored form ([`stored`]).
pub(crate) fn normalise_numbers(value: &mut Value) {
    match value {
        Value::Number(n) => *value = stored(n),
        Value::Array(items) => items.iter_mut().for_each(normalise_numbers),
        Value::Object(fields) => fields.values_mut().for_each(normalise_numbers),
        Value::Null | Value::Bool(_) | Value::String(_) => {}
    }
}

#[cfg(test)]
mod tests;
