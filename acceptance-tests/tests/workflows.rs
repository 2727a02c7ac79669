//! The GitHub Actions workflows only run on GitHub, so these tests keep them well-formed and pointing at files
//! that exist: every workflow parses, has triggers and jobs, every job has a runner and steps, and every script a
//! step runs from the repository (`./release.sh`, `acceptance-tests/test`, …) is there and executable; and the
//! scripts they run are found in the checkout under test, not the one the tests were built in; and the provider's
//! resource folders keep to their layering. They need no test ground.
use liqo_acceptance::ground::repository_root;
use serde_yaml::Value;
use std::collections::BTreeSet;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

struct Workflow {
    file: String,
    doc: Value,
}

fn workflows() -> Vec<Workflow> {
    let dir = repository_root().join(".github/workflows");
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("cannot list {}: {e}", dir.display()))
        .map(|e| e.expect("directory entry").path())
        .filter(|p| p.extension().is_some_and(|x| x == "yml" || x == "yaml"))
        .collect();
    files.sort();
    assert!(!files.is_empty(), "no workflows in {}", dir.display());
    files
        .into_iter()
        .map(|path| {
            let file = format!(".github/workflows/{}", path.file_name().unwrap().to_string_lossy());
            let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("cannot read {file}: {e}"));
            let doc = serde_yaml::from_str(&text).unwrap_or_else(|e| panic!("{file} is not valid YAML: {e}"));
            Workflow { file, doc }
        })
        .collect()
}

fn get<'a>(v: &'a Value, key: &str) -> Option<&'a Value> {
    v.as_mapping()?.get(key)
}

fn jobs(w: &Workflow) -> Vec<(String, &Value)> {
    get(&w.doc, "jobs")
        .and_then(Value::as_mapping)
        .map(|m| m.iter().map(|(k, v)| (k.as_str().unwrap_or("?").to_string(), v)).collect())
        .unwrap_or_default()
}

/// Every step of every job.
fn steps(w: &Workflow) -> Vec<&Value> {
    jobs(w)
        .into_iter()
        .flat_map(|(_, body)| get(body, "steps").and_then(Value::as_sequence).into_iter().flatten())
        .collect()
}

/// Every step's `run` script, with the workflow file and job it belongs to.
fn run_scripts(w: &Workflow) -> Vec<(String, String)> {
    let mut out = Vec::new();
    for (job, body) in jobs(w) {
        for step in get(body, "steps").and_then(Value::as_sequence).into_iter().flatten() {
            if let Some(run) = get(step, "run").and_then(Value::as_str) {
                out.push((format!("{} job {job}", w.file), run.to_string()));
            }
        }
    }
    out
}

fn non_empty(v: Option<&Value>) -> bool {
    match v {
        Some(Value::String(s)) => !s.trim().is_empty(),
        Some(Value::Sequence(s)) => !s.is_empty(),
        Some(Value::Mapping(m)) => !m.is_empty(),
        _ => false,
    }
}

#[test]
fn workflows_have_triggers_and_jobs_with_runners_and_steps() {
    let mut problems = Vec::new();
    for w in workflows() {
        let f = &w.file;
        if get(&w.doc, "name").and_then(Value::as_str).is_none() {
            problems.push(format!("{f}: no `name`"));
        }
        // YAML 1.1 would read the key `on` as a boolean; GitHub and serde_yaml (YAML 1.2) read it as a string.
        if !non_empty(get(&w.doc, "on")) {
            problems.push(format!("{f}: no triggers (`on`)"));
        }
        let jobs = jobs(&w);
        if jobs.is_empty() {
            problems.push(format!("{f}: no `jobs`"));
        }
        let names: Vec<&str> = jobs.iter().map(|(n, _)| n.as_str()).collect();
        for (job, body) in &jobs {
            if !non_empty(get(body, "runs-on")) {
                problems.push(format!("{f}: job {job} has no `runs-on`"));
            }
            let steps = get(body, "steps").and_then(Value::as_sequence);
            if steps.is_none_or(|s| s.is_empty()) {
                problems.push(format!("{f}: job {job} has no `steps`"));
            }
            for (i, step) in steps.into_iter().flatten().enumerate() {
                let (uses, run) = (get(step, "uses").is_some(), get(step, "run").is_some());
                if uses == run {
                    problems.push(format!("{f}: job {job} step {} needs exactly one of `uses` and `run`", i + 1));
                }
            }
            let needs = match get(body, "needs") {
                Some(Value::String(s)) => vec![s.as_str()],
                Some(Value::Sequence(s)) => s.iter().filter_map(Value::as_str).collect(),
                _ => vec![],
            };
            for n in needs {
                if !names.contains(&n) {
                    problems.push(format!("{f}: job {job} needs job {n}, which does not exist"));
                }
            }
        }
    }
    assert!(problems.is_empty(), "workflow problems:\n{}", problems.join("\n"));
}

/// The first word of every command in a shell script (after `&&`, `||`, `;`, `|`, `(`, shell keywords and
/// variable assignments), skipping here-document bodies. Good enough to find the programs a step runs.
fn command_words(script: &str) -> Vec<String> {
    let joined = script.replace("\\\n", " ");
    let mut words = Vec::new();
    let mut heredoc_end: Option<String> = None;
    for line in joined.lines() {
        if let Some(end) = &heredoc_end {
            if line.trim() == end {
                heredoc_end = None;
            }
            continue;
        }
        if let Some(pos) = line.find("<<") {
            let tag: String = line[pos + 2..]
                .trim_start_matches('-')
                .trim_start()
                .trim_start_matches(['\'', '"'])
                .chars()
                .take_while(|c| c.is_alphanumeric() || *c == '_')
                .collect();
            if !tag.is_empty() {
                heredoc_end = Some(tag);
            }
        }
        let code = line.split(" #").next().unwrap_or("");
        if code.trim_start().starts_with('#') {
            continue;
        }
        for command in code.split(['&', '|', ';', '(', ')']) {
            let first = command.split_whitespace().find(|w| {
                !matches!(*w, "if" | "then" | "else" | "elif" | "do" | "while" | "until" | "!" | "time" | "exec")
                    && !w.split_once('=').is_some_and(|(name, _)| {
                        !name.is_empty() && name.chars().all(|c| c.is_alphanumeric() || c == '_')
                    })
            });
            if let Some(w) = first {
                words.push(w.trim_matches(['"', '\'']).to_string());
            }
        }
    }
    words
}

#[test]
fn command_words_finds_the_programs_a_script_runs() {
    let script = "cd dist && ./release.sh package \\\n  --out x\nfoo | acceptance-tests/test\nif [ -x a ]; then VAR=1 b/c arg; fi\ncat >f <<'EOF'\nnot/a/command here\nEOF\n# comment/only\n\"$TF\" plan # trailing/comment";
    assert_eq!(
        command_words(script),
        ["cd", "./release.sh", "foo", "acceptance-tests/test", "[", "b/c", "fi", "cat", "$TF"]
    );
}

/// `env!` of `CARGO_MANIFEST_DIR` is the checkout a binary was built in. The build cache is shared between checkouts
/// and cargo reuses a binary whose checkout moved with its files' times, so that path can be another checkout's (CI
/// once ran `release.sh` of a clone deleted before its run, and 70 tests failed). `repository_root()` reads the
/// variable the running process is given instead; this keeps the compile-time one from coming back.
#[test]
fn no_rust_source_finds_the_repository_by_the_path_it_was_built_in() {
    let needle = concat!("env!(", "\"CARGO_MANIFEST_DIR\")");
    let mut found = Vec::new();
    let mut todo = vec![repository_root()];
    let mut read = 0;
    while let Some(dir) = todo.pop() {
        for entry in std::fs::read_dir(&dir).unwrap_or_else(|e| panic!("reading {}: {e}", dir.display())) {
            let path = entry.expect("directory entry").path();
            let name = path.file_name().and_then(|n| n.to_str()).unwrap_or_default();
            if path.is_dir() && !name.starts_with('.') && name != "target" {
                todo.push(path);
            } else if name.ends_with(".rs") {
                read += 1;
                let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
                found.extend(
                    text.lines()
                        .enumerate()
                        .filter(|(_, line)| line.contains(needle))
                        .map(|(n, _)| format!("{}:{}", path.display(), n + 1)),
                );
            }
        }
    }
    assert!(read > 50, "only {read} Rust files under {}", repository_root().display());
    assert!(
        found.is_empty(),
        "use liqo_acceptance::ground::repository_root() (the checkout under test) instead of {needle} in: {found:#?}"
    );
}

#[test]
fn scripts_and_paths_referenced_by_workflows_exist() {
    let root = repository_root();
    let mut problems = Vec::new();
    let mut checked = 0;
    for w in workflows() {
        for (at, script) in run_scripts(&w) {
            for word in command_words(&script) {
                // A relative path run as a program must be a script of this repository.
                if word.contains('/') && !word.contains('$') && !word.starts_with('/') && !word.starts_with('~') {
                    checked += 1;
                    let path = root.join(&word);
                    match std::fs::metadata(&path) {
                        Ok(m) if m.is_file() && m.permissions().mode() & 0o111 != 0 => {}
                        Ok(_) => problems.push(format!("{at}: runs {word}, which is not an executable file")),
                        Err(_) => problems.push(format!("{at}: runs {word}, which does not exist in the repository")),
                    }
                }
            }
            for dir in script.split_whitespace().filter_map(|w| w.strip_prefix("-chdir=")) {
                checked += 1;
                if !root.join(dir).is_dir() {
                    problems.push(format!("{at}: -chdir={dir} is not a directory of the repository"));
                }
            }
        }
        let text = serde_yaml::to_string(&w.doc).expect("a parsed document serialises");
        for part in text.split("hashFiles('").skip(1) {
            let file = part.split('\'').next().unwrap_or("");
            checked += 1;
            if !root.join(file).is_file() {
                problems.push(format!("{}: hashFiles('{file}') names a file that does not exist", w.file));
            }
        }
    }
    assert!(problems.is_empty(), "broken references:\n{}", problems.join("\n"));
    assert!(checked > 0, "no repository path found in any workflow; the scan is broken");
}

fn all_runs(file: &str) -> String {
    let w = workflows().into_iter().find(|w| w.file.ends_with(file)).unwrap_or_else(|| panic!("no workflow {file}"));
    run_scripts(&w).into_iter().map(|(_, s)| s).collect::<Vec<_>>().join("\n")
}

#[test]
fn workflows_cover_checks_release_and_end_to_end() {
    let ci = all_runs("ci.yml");
    for needle in
        ["cargo fmt --all --check", "-D warnings", "cargo test", "scripts/docs.sh --check", "acceptance-tests/test"]
    {
        assert!(ci.contains(needle), "ci.yml does not run `{needle}`");
    }

    let release = workflows().into_iter().find(|w| w.file.ends_with("release.yml")).expect("release.yml");
    let tags = get(&release.doc, "on").and_then(|on| get(on, "push")).and_then(|p| get(p, "tags"));
    assert!(
        tags.and_then(Value::as_sequence).is_some_and(|t| t.iter().any(|t| t.as_str() == Some("v*"))),
        "release.yml must run on pushed tags v*"
    );
    let runs = all_runs("release.yml");
    for needle in
        ["./release.sh package", "gpg --batch --verify", "gh release create", "_SHA256SUMS.sig", "_manifest.json"]
    {
        assert!(runs.contains(needle), "release.yml does not do `{needle}`");
    }
    // release.sh signs (a binary detached signature) only when it is given the key, as the package step must do.
    let package_step = steps(&release)
        .into_iter()
        .find(|step| get(step, "run").and_then(Value::as_str).is_some_and(|r| r.contains("./release.sh package")))
        .expect("release.yml has a step running ./release.sh package");
    let key = get(package_step, "env").and_then(|env| get(env, "GPG_FINGERPRINT")).and_then(Value::as_str);
    assert!(
        key.is_some_and(|k| k.contains("steps.gpg.outputs.fingerprint")),
        "release.yml must pass the imported key's fingerprint to ./release.sh package as GPG_FINGERPRINT"
    );
    let script = std::fs::read_to_string(repository_root().join("release.sh")).expect("release.sh");
    assert!(
        script.contains("--detach-sign") && !script.contains("--armor"),
        "release.sh must sign with a binary detached signature"
    );
    let platforms = serde_yaml::to_string(&release.doc).expect("a parsed document serialises");
    for platform in ["os: windows", "os: darwin", "os: linux"] {
        assert!(platforms.contains(platform), "release.yml does not build `{platform}`");
    }

    // Terraform 1.0.11, the oldest client line, has a job of its own on CI.
    let ci_doc = workflows().into_iter().find(|w| w.file.ends_with("ci.yml")).expect("ci.yml");
    let acceptance = jobs(&ci_doc).into_iter().find(|(name, _)| name == "acceptance").expect("ci.yml job acceptance").1;
    let clients: Vec<&str> = get(acceptance, "strategy")
        .and_then(|s| get(s, "matrix"))
        .and_then(|m| get(m, "include"))
        .and_then(Value::as_sequence)
        .map(|entries| entries.iter().filter_map(|e| get(e, "clients").and_then(Value::as_str)).collect())
        .unwrap_or_default();
    assert!(clients.contains(&"terraform10"), "ci.yml acceptance matrix must include terraform10: {clients:?}");
    // The test command as the README gives it: no client named, so each real-Liqo scenario runs with the client
    // tf::assignment gives it and the light lane with every client.
    assert!(
        clients.contains(&""),
        "ci.yml acceptance matrix must run the test command without LIQO_TEST_CLIENTS: {clients:?}"
    );
    let env = get(acceptance, "env").and_then(|e| get(e, "LIQO_TEST_CLIENTS")).and_then(Value::as_str);
    assert_eq!(env, Some("${{ matrix.clients }}"), "the acceptance job must pass its clients as LIQO_TEST_CLIENTS");

    let e2e = all_runs("e2e.yml");
    for needle in [
        "kind\" create cluster",
        "helm install liqo",
        "filesystem_mirror",
        "-chdir=examples/peering apply",
        "-chdir=examples/peering destroy",
    ] {
        assert!(e2e.contains(needle), "e2e.yml does not do `{needle}`");
    }
}

// The layering rule of the provider's resource folders (provider/src/lib.rs, DESIGN.md): a type's folder never
// imports another type's folder, and the modules below them (`lifecycle`, `shared`) import none. What two types
// share moves to `shared`. Checked here, on the checkout's sources, like the rest of this file.
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
fn the_resource_scanner_sees_paths_and_groups() {
    let text = "use crate::resources::peer::node_check;\nuse crate::resources::{gateway, shared::x};\n// [`crate::resources::all`]";
    assert_eq!(
        reached(text, "resources::"),
        BTreeSet::from(["peer".into(), "gateway".into(), "shared".into(), "all".into()])
    );
    assert_eq!(reached("use super::super::peer::x;", "super::super::"), BTreeSet::from(["peer".into()]));
}

#[test]
fn no_resource_folder_imports_another() {
    let root = repository_root().join("provider/src/resources");
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
