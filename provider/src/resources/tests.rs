//! The layering rule of the resource folders (lib.rs, DESIGN.md): a type's folder never imports another type's
//! folder, and the modules below them (`lifecycle`, `shared`) import none. What two types share moves to `shared`.
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

/// The modules of `resources/` that are not a resource type: the driver and what the types share.
const BELOW_THE_TYPES: [&str; 2] = ["lifecycle", "shared"];

/// The modules of `resources/` that `text` reaches through `prefix` (a path to `resources/` as the file spells
/// it): `resources::peer::…` and each name of a `resources::{peer, shared::…}` group.
fn reached(text: &str, prefix: &str) -> BTreeSet<String> {
    let ident = |s: &str| s.chars().take_while(|c| c.is_ascii_alphanumeric() || *c == '_').collect::<String>();
    let mut found = BTreeSet::new();
    for (at, _) in text.match_indices(prefix) {
        let rest = &text[at + prefix.len()..];
        if let Some(group) = rest.strip_prefix('{') {
            let group = &group[..group.find('}').unwrap_or(group.len())];
            found.extend(group.split(',').map(|item| ident(item.trim())).filter(|n| !n.is_empty()));
        } else {
            found.insert(ident(rest));
        }
    }
    found
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display())) {
        let path = entry.unwrap().path();
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

#[test]
fn the_scanner_sees_paths_and_groups() {
    let text = "use crate::resources::peer::node_check;\nuse crate::resources::{gateway, shared::x};\n// [`crate::resources::all`]";
    assert_eq!(
        reached(text, "resources::"),
        BTreeSet::from(["peer".into(), "gateway".into(), "shared".into(), "all".into()])
    );
    assert_eq!(reached("use super::super::peer::x;", "super::super::"), BTreeSet::from(["peer".into()]));
}

#[test]
fn no_resource_folder_imports_another() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("src/resources");
    let folders: Vec<String> = std::fs::read_dir(&root)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.is_dir())
        .map(|p| p.file_name().unwrap().to_string_lossy().into_owned())
        .collect();
    let types: BTreeSet<&str> = folders.iter().map(String::as_str).filter(|f| !BELOW_THE_TYPES.contains(f)).collect();
    assert!(types.contains("peer") && types.contains("virtual_node"), "resource folders not found: {folders:?}");
    let mut sideways = Vec::new();
    for folder in &folders {
        let mut files = Vec::new();
        rust_files(&root.join(folder), &mut files);
        for file in files {
            let text = std::fs::read_to_string(&file).unwrap();
            // `resources/` is `crate::resources`, `super::super` from a folder's file and `super` from its mod.rs.
            let parent = if file.ends_with("mod.rs") { "super::" } else { "super::super::" };
            let mut modules = reached(&text, "resources::");
            modules.extend(reached(&text, parent));
            for other in modules.iter().filter(|m| types.contains(m.as_str()) && *m != folder) {
                sideways.push(format!("{} uses resources::{other}", file.strip_prefix(&root).unwrap().display()));
            }
        }
    }
    assert!(
        sideways.is_empty(),
        "a resource folder imports another (move what they share to resources/shared/): {sideways:#?}"
    );
}
