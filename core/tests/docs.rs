//! The Rust code the docs show is compiled with the examples: README.md's
//! start is `examples/quickstart.rs` and docs/rust.md's guide is
//! `examples/rust_guide.rs`, each kept identical to its copy here.

fn first_rust_block(doc: &str) -> &str {
    doc.split("```rust\n")
        .nth(1)
        .and_then(|rest| rest.split("```\n").next())
        .expect("a rust block")
}

#[test]
fn the_docs_show_the_compiled_examples() {
    let shown = [
        (
            include_str!("../../README.md"),
            include_str!("../examples/quickstart.rs"),
            "README.md",
        ),
        (
            include_str!("../../docs/rust.md"),
            include_str!("../examples/rust_guide.rs"),
            "docs/rust.md",
        ),
    ];
    for (doc, example, name) in shown {
        assert_eq!(
            first_rust_block(doc),
            example,
            "{name}'s Rust example differs from its compiled copy"
        );
    }
}

/// docs/internals.md's module table names every module of `core/src` (a
/// file `name.rs` as `` `name.rs` ``, a directory as `` `name/` ``) and
/// every file of `host/`, and its Tests section every file of
/// `core/tests`: a module or test file added without a line there fails
/// here.
#[test]
fn the_internals_table_names_every_module() {
    let internals = include_str!("../../docs/internals.md");
    let src = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let names = |dir: &std::path::Path| -> Vec<(String, bool)> {
        let mut found: Vec<(String, bool)> = std::fs::read_dir(dir)
            .unwrap()
            .map(|entry| entry.unwrap().path())
            .filter(|path| path.is_dir() || path.extension().is_some_and(|e| e == "rs"))
            .map(|path| (path.file_name().unwrap().to_string_lossy().into_owned(), path.is_dir()))
            .collect();
        found.sort();
        found
    };
    let mut missing = Vec::new();
    for (name, is_dir) in names(&src) {
        let shown = if is_dir {
            format!("`{name}/")
        } else {
            format!("`{name}`")
        };
        if !internals.contains(&shown) {
            missing.push(name);
        }
    }
    for (name, _) in names(&src.join("host")) {
        if name != "mod.rs" && !internals.contains(&format!("`{name}`")) {
            missing.push(format!("host/{name}"));
        }
    }
    // Its Tests section names every test file (not the shared helpers'
    // directories).
    let tests = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests");
    let section = internals.split("## Tests").nth(1).unwrap_or("");
    for (name, is_dir) in names(&tests) {
        if !is_dir && !section.contains(&format!("`{name}`")) {
            missing.push(format!("tests/{name}"));
        }
    }
    assert!(missing.is_empty(), "docs/internals.md lacks {missing:?}");
}
