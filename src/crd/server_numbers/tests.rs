use super::*;
use crate::hash::TemplateHash;
use proptest::prelude::*;
use serde_json::json;

/// A number as YAML or JSON text spells it, parsed the way `render` parses a manifest.
fn number(text: &str) -> Number {
    let value: Value = serde_saphyr::from_str(text).expect("a number");
    match value {
        Value::Number(n) => n,
        other => panic!("{text} is not a number: {other}"),
    }
}

fn integer(text: &str) -> bool {
    is_integer(decode(&number(text)))
}

#[test]
fn integers_and_floats_are_told_apart_as_the_server_decodes_them() {
    assert_eq!(decode(&number("6800")), Decoded::Int(6800));
    assert_eq!(decode(&number("6800.0")), Decoded::Float(6800.0));
    assert_eq!(decode(&number("1e1")), Decoded::Float(10.0));
    assert_eq!(
        decode(&number("9223372036854775807")),
        Decoded::Int(i64::MAX)
    );
    // Beyond int64 the server decodes a float64.
    assert_eq!(
        decode(&number("9223372036854775808")),
        Decoded::Float(9_223_372_036_854_775_808.0)
    );
}

#[test]
fn whole_floats_within_2_pow_53_are_integers() {
    for text in [
        "1.0",
        "6800.0",
        "1e1",
        "1e3",
        "-0.0",
        "-7.0",
        "9007199254740991.0",
    ] {
        assert!(integer(text), "{text}");
    }
    for text in [
        "9007199254740992.0", // 2^53
        "9007199254740994.0", // 2^53 + 2
        "-9007199254740992.0",
        "1e19",
        "9223372036854775808",
    ] {
        assert!(!integer(text), "{text}");
    }
}

#[test]
fn fractions_are_not_integers_except_within_the_servers_tolerance() {
    for text in ["0.5", "1.5", "-1.5", "0.9999999999", "4.9999999999", "1e-7"] {
        assert!(!integer(text), "{text}");
    }
    assert!(!integer("-1.0000000001"), "below zero no tolerance");
    assert!(integer("1.0000000001"), "the server's tolerance above 1");
    assert!(integer("6800.000001"));
    assert!(!integer("1.00000001"), "outside the tolerance");
}

#[test]
fn only_exactly_whole_values_have_an_integer_value() {
    assert_eq!(exact_integer(decode(&number("6800.0"))), Some(6800));
    assert_eq!(exact_integer(decode(&number("-0.0"))), Some(0));
    assert_eq!(exact_integer(decode(&number("6800.000001"))), None);
    assert_eq!(exact_integer(decode(&number("9007199254740992.0"))), None);
    assert_eq!(
        exact_integer(decode(&number("2147483648"))),
        Some(2_147_483_648)
    );
    assert_eq!(format_range(Some("int32")), (-2_147_483_648, 2_147_483_647));
    assert_eq!(format_range(Some("int64")), (i64::MIN, i64::MAX));
    assert_eq!(format_range(None), (i64::MIN, i64::MAX));
}

#[test]
fn numbers_are_stored_as_the_server_writes_them() {
    let cases = [
        ("1.0", json!(1)),
        ("6800.0", json!(6800)),
        ("1e1", json!(10)),
        ("1e3", json!(1000)),
        ("-0.0", json!(0)),
        ("-7.0", json!(-7)),
        ("9007199254740992.0", json!(9_007_199_254_740_992_i64)),
        ("1e19", json!(10_000_000_000_000_000_000_u64)),
        ("1.5", json!(1.5)),
        ("1.0000000001", json!(1.000_000_000_1)),
        ("1e21", json!(1e21)),
        ("1e-7", json!(1e-7)),
        ("6800", json!(6800)),
        ("-3", json!(-3)),
    ];
    for (text, expected) in cases {
        let stored = stored(&number(text));
        assert_eq!(stored, expected, "{text}");
        // Exactly what serde_json reads from the server's text.
        assert_eq!(stored.to_string(), expected.to_string(), "{text}");
    }
    // Beyond 1e21 Go writes an exponent: the value is kept.
    assert_eq!(go_text(1e21), "1e21");
    assert_eq!(go_text(1e20), "100000000000000000000");
    assert_eq!(go_text(-0.0), "-0");
}

#[test]
fn normalising_reaches_every_number() {
    let mut value = json!({"a": [1.0, {"b": 1e3}], "c": "1.0", "d": null, "e": 0.5});
    normalise_numbers(&mut value);
    assert_eq!(
        value.to_string(),
        r#"{"a":[1,{"b":1000}],"c":"1.0","d":null,"e":0.5}"#
    );
}

proptest! {
    /// Any whole float64 within ±(2^53 − 1), in any spelling, is stored as the integer
    /// written directly: same template, same hash.
    #[test]
    fn a_whole_float_hashes_like_the_integer(
        i in -9_007_199_254_740_991_i64..=9_007_199_254_740_991,
        spelling in 0..3_u8,
    ) {
        #[allow(clippy::cast_precision_loss)] // exact within ±(2^53 − 1)
        let f = i as f64;
        let text = match spelling {
            0 => format!("{f:?}"),  // 6800.0, 1e16
            1 => format!("{f:e}"),  // 6.8e3
            _ => format!("{f:.1}"), // 6800.0
        };
        let n = number(&text);
        prop_assert!(n.is_f64(), "{} parses as a float", text);
        prop_assert!(is_integer(decode(&n)));
        prop_assert_eq!(exact_integer(decode(&n)), Some(i));
        let mut template = json!({"spec": {"terminationGracePeriodSeconds": Value::Number(n)}});
        normalise_numbers(&mut template);
        let direct = json!({"spec": {"terminationGracePeriodSeconds": i}});
        prop_assert_eq!(TemplateHash::of(&template), TemplateHash::of(&direct));
    }
}
