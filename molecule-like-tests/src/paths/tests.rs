use super::with_section;

#[test]
fn a_section_is_replaced_in_place_or_appended() {
    let doc = "# B\n\nintro\n\n## One\n\nold one\n\n## Two\n\nold two\n";
    assert_eq!(
        with_section(doc, "## One", "## One\n\nnew one\n"),
        "# B\n\nintro\n\n## One\n\nnew one\n\n## Two\n\nold two\n"
    );
    assert_eq!(
        with_section(doc, "## Two", "## Two\n\nnew two"),
        "# B\n\nintro\n\n## One\n\nold one\n\n## Two\n\nnew two\n"
    );
    assert_eq!(
        with_section("# B\n", "## Three", "## Three\n\nthree"),
        "# B\n\n## Three\n\nthree\n"
    );
}
