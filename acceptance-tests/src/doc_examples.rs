//! The documentation examples (`examples/provider`, `examples/resources/*`, `examples/data-sources/*`) are
//! fragments of one configuration: each names the provider blocks of `examples/provider/provider.tf` and resources
//! another example defines. This module reads them and splits them into top-level blocks, for the tests that
//! validate them (tests/example_files.rs) and apply them (tests/resource_examples.rs).
use std::collections::BTreeMap;
use std::path::PathBuf;

use anyhow::{Context, Result, bail};

use crate::ground::repository_root;

/// `examples/` of the repository.
pub fn dir() -> PathBuf {
    repository_root().join("examples")
}

/// The text of `examples/<file>`.
pub fn read(file: &str) -> Result<String> {
    std::fs::read_to_string(dir().join(file)).with_context(|| format!("reading examples/{file}"))
}

/// The resource examples, `resources/liqo_*/resource.tf`, sorted.
pub fn resource_fragments() -> Result<Vec<String>> {
    let mut fragments = Vec::new();
    for entry in std::fs::read_dir(dir().join("resources")).context("listing examples/resources")? {
        let name = entry?.file_name().to_string_lossy().into_owned();
        let fragment = format!("resources/{name}/resource.tf");
        if name.starts_with("liqo_") && dir().join(&fragment).is_file() {
            fragments.push(fragment);
        }
    }
    fragments.sort();
    Ok(fragments)
}

/// The documented import commands: `(address, ID)` of each `terraform import ADDRESS ID` line of
/// `resources/liqo_*/import.sh`, in the files' order.
pub fn import_commands() -> Result<Vec<(String, String)>> {
    let mut commands = Vec::new();
    for fragment in resource_fragments()? {
        let file = fragment.replace("resource.tf", "import.sh");
        commands.extend(parse_imports(&read(&file)?).with_context(|| format!("examples/{file}"))?);
    }
    Ok(commands)
}

fn parse_imports(script: &str) -> Result<Vec<(String, String)>> {
    let mut commands = Vec::new();
    for line in script.lines().filter(|l| l.starts_with("terraform import ")) {
        let command = line.split('#').next().unwrap_or_default();
        match command.split_whitespace().collect::<Vec<_>>()[..] {
            [_, _, address, id] => commands.push((address.to_owned(), id.to_owned())),
            _ => bail!("not `terraform import ADDRESS ID`: {line:?}"),
        }
    }
    if commands.is_empty() {
        bail!("no `terraform import` line");
    }
    Ok(commands)
}

/// The top-level blocks of a `terraform fmt`-formatted file, each as `(header line, text)`; comments between
/// blocks are dropped.
pub fn blocks(text: &str) -> Vec<(String, String)> {
    let mut blocks = Vec::new();
    let mut current: Option<(String, String)> = None;
    for line in text.lines() {
        match &mut current {
            Some((_, body)) => {
                body.push_str(line);
                body.push('\n');
                if line == "}" {
                    blocks.push(current.take().expect("inside a block"));
                }
            }
            None if line.ends_with('{') && !line.starts_with([' ', '#', '/']) => {
                current = Some((line.trim_end_matches('{').trim().to_string(), format!("{line}\n")));
            }
            None => {}
        }
    }
    blocks
}

/// The resource type a `resource "TYPE" "NAME"` header declares.
fn resource_type(header: &str) -> Option<&str> {
    header.strip_prefix("resource \"")?.split('"').next()
}

/// Several fragments joined into one configuration, every block once. Where fragments repeat a block (the
/// liqo_tenant example shows the liqo_generate, liqo_consumer_key and liqo_peer blocks it works with), the copy
/// of the fragment that documents that resource type (`resources/<type>/resource.tf`) is kept, else the first;
/// two fragments writing the same block of any other kind (an output, say) is an error.
pub struct Assembled {
    /// The configuration, each block preceded by a comment naming its fragment.
    pub text: String,
    /// `(header, fragment)` of every copy left out.
    pub left_out: Vec<(String, String)>,
}

pub fn assemble(fragments: &[String]) -> Result<Assembled> {
    // header → (fragment, text), in the order first seen.
    let mut chosen: Vec<(String, String, String)> = Vec::new();
    let mut index: BTreeMap<String, usize> = BTreeMap::new();
    let mut left_out = Vec::new();
    for fragment in fragments {
        for (header, body) in blocks(&read(fragment)?) {
            let owns = |f: &str| resource_type(&header).is_some_and(|t| f == format!("resources/{t}/resource.tf"));
            match index.get(&header) {
                None => {
                    index.insert(header.clone(), chosen.len());
                    chosen.push((header, fragment.clone(), body));
                }
                Some(&i) if resource_type(&header).is_none() => {
                    bail!("{header} is written by both examples/{} and examples/{fragment}", chosen[i].1)
                }
                Some(&i) if owns(fragment) => {
                    left_out.push((header.clone(), chosen[i].1.clone()));
                    chosen[i] = (header, fragment.clone(), body);
                }
                Some(_) => left_out.push((header, fragment.clone())),
            }
        }
    }
    let text = chosen.iter().map(|(_, fragment, body)| format!("# examples/{fragment}\n{body}\n")).collect();
    Ok(Assembled { text, left_out })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn blocks_split_a_formatted_file() {
        let text = "# c\nresource \"a\" \"b\" {\n  x = {\n    y = 1\n  }\n}\n\noutput \"o\" {\n  value = 1\n}\n";
        let headers: Vec<String> = blocks(text).into_iter().map(|(h, _)| h).collect();
        assert_eq!(headers, ["resource \"a\" \"b\"", "output \"o\""]);
    }

    #[test]
    fn import_lines_give_address_and_id() -> Result<()> {
        let script =
            "# Import ID: x\nterraform import liqo_a.b ns/name   # on milan\n\n# note\nterraform import liqo_c.d e\n";
        assert_eq!(
            parse_imports(script)?,
            [("liqo_a.b".to_string(), "ns/name".to_string()), ("liqo_c.d".to_string(), "e".to_string())]
        );
        assert!(parse_imports("terraform import liqo_a.b\n").is_err());
        assert!(parse_imports("# no command\n").is_err());
        Ok(())
    }

    #[test]
    fn the_documenting_fragment_wins_a_repeated_resource_block() -> Result<()> {
        let fragments: Vec<String> =
            ["resources/liqo_tenant/resource.tf", "resources/liqo_generate/resource.tf"].map(String::from).into();
        let assembled = assemble(&fragments)?;
        let generate = "resource \"liqo_generate\" \"milan\"";
        assert_eq!(assembled.left_out, [(generate.to_string(), fragments[0].clone())]);
        assert_eq!(assembled.text.matches(generate).count(), 1, "{}", assembled.text);
        let kept = assembled.text.split(generate).next().unwrap_or_default();
        assert!(kept.ends_with("# examples/resources/liqo_generate/resource.tf\n"), "{}", assembled.text);
        Ok(())
    }
}
