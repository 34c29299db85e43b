use super::*;
use proptest::prelude::*;
use serde_json::json;

fn vectors() -> Vec<Value> {
    // The shared spec copy wins when present; the crate's own copy keeps tests standalone.
    let shared = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../shared/spec/hash-vectors.json"
    );
    let own = include_str!("../../tests/data/hash-vectors.json");
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
