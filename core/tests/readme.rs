//! The README's Rust example is `examples/readme.rs` (compiled with the
//! examples): the two stay identical.

#[test]
fn the_readme_shows_the_compiled_example() {
    let readme = include_str!("../../README.md");
    let example = include_str!("../examples/readme.rs");
    let shown = readme
        .split("```rust\n")
        .nth(1)
        .and_then(|rest| rest.split("```\n").next())
        .expect("the README has a rust block");
    assert_eq!(
        shown, example,
        "README.md's Rust example differs from core/examples/readme.rs"
    );
}
