use super::*;

#[test]
fn integers_and_percentages_count_domains_rounding_up() {
    let of = |v: IntOrString, total| domains_of("partition", &v, total);
    assert_eq!(of(IntOrString::Int(3), 10), Ok(3));
    assert_eq!(of(IntOrString::Int(30), 10), Ok(30));
    assert_eq!(of(IntOrString::String("10%".into()), 10), Ok(1));
    assert_eq!(of(IntOrString::String("10%".into()), 11), Ok(2));
    assert_eq!(of(IntOrString::String("1%".into()), 3), Ok(1));
    assert_eq!(of(IntOrString::String("0%".into()), 30), Ok(0));
    assert_eq!(of(IntOrString::String("100%".into()), 7), Ok(7));
    for bad in ["101%", "-1%", "10", "%", "ten%", " 5%"] {
        let error = of(IntOrString::String(bad.into()), 10).expect_err(bad);
        assert!(error.starts_with("spec.partition must be"), "{error}");
    }
    assert!(of(IntOrString::Int(-1), 10).is_err());
}

#[test]
fn the_schema_carries_a_rule_naming_each_field() {
    let crd =
        serde_json::to_value(crate::crd::custom_resource_definition().expect("crd")).expect("json");
    for field in FIELDS {
        let schema = crd
            .pointer(&format!(
                "/spec/versions/0/schema/openAPIV3Schema/properties/spec/properties/{field}"
            ))
            .expect(field);
        assert_eq!(schema["x-kubernetes-int-or-string"], json!(true), "{field}");
        let message = schema["x-kubernetes-validations"][0]["message"]
            .as_str()
            .expect("message");
        assert!(message.starts_with(&format!("spec.{field} ")), "{message}");
    }
}
