//! gpugraph-testing is test scaffolding: a crate of the workspace may name it only among its
//! dev-dependencies, never where production code would link it.

use std::path::Path;

/// The sections of `manifest` (a Cargo.toml's text) that name gpugraph-testing, other than
/// `[dev-dependencies]` (plain or per target).
fn production_uses(manifest: &str) -> Vec<String> {
    let mut section = String::new();
    let mut found = Vec::new();
    for line in manifest.lines().map(str::trim) {
        if line.starts_with('[') {
            section = line.to_string();
            // `[dependencies.gpugraph-testing]` names it in its header.
            if section.contains("gpugraph-testing") && !section.contains("dev-dependencies") {
                found.push(section.clone());
            }
        } else if line.starts_with("gpugraph-testing")
            && !(section.ends_with("dev-dependencies]") || section == "[workspace.dependencies]")
        {
            found.push(section.clone());
        }
    }
    found
}

#[test]
fn no_crate_depends_on_it_outside_its_dev_dependencies() {
    let crates = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let mut checked = 0;
    for entry in std::fs::read_dir(&crates).unwrap() {
        let manifest = entry.unwrap().path().join("Cargo.toml");
        let Ok(text) = std::fs::read_to_string(&manifest) else {
            continue;
        };
        checked += 1;
        let uses = production_uses(&text);
        assert!(
            uses.is_empty(),
            "{} names gpugraph-testing in {uses:?}",
            manifest.display()
        );
    }
    assert!(
        checked >= 10,
        "only {checked} manifests found under {}",
        crates.display()
    );
}

#[test]
fn a_production_dependency_is_found() {
    assert_eq!(
        production_uses("[dependencies]\ngpugraph-testing.workspace = true\n"),
        ["[dependencies]"]
    );
    assert_eq!(
        production_uses("[dependencies.gpugraph-testing]\nworkspace = true\n"),
        ["[dependencies.gpugraph-testing]"]
    );
    assert!(production_uses(
        "[dependencies]\nwgpu = \"30\"\n[dev-dependencies]\ngpugraph-testing.workspace = true\n"
    )
    .is_empty());
}
