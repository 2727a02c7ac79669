//! docgen: writes the Terraform Registry documentation in `docs/` from the provider's own schema.
//!
//! Every page is a template from `docs/templates/` (or a built-in default when a page needs no prose of its own)
//! rendered with the schema of its resource, data source or provider block and with the example files under
//! `examples/`. The output follows the layout and markup of HashiCorp's `tfplugindocs`, so the Terraform and
//! OpenTofu registries render it like any other provider's docs, and the templates use the subset of
//! tfplugindocs' template syntax described in [`template`]. tfplugindocs itself is not used because it needs Go,
//! the Terraform CLI and a built provider binary; the schema is available right here, in-process.
//!
//! Usage (from anywhere in the repository):
//!
//! ```text
//! cargo run -q -p terraform-provider-liqo --bin docgen              regenerate docs/
//! cargo run -q -p terraform-provider-liqo --bin docgen -- --check   exit 1 listing pages that differ from docs/
//! cargo run -q -p terraform-provider-liqo --bin docgen -- --force   also overwrite or remove hand-written pages
//! ```
//!
//! A generated page carries a marker comment after its frontmatter with a checksum of the page. Without
//! `--force`, docgen refuses to overwrite or remove a page that lacks the marker or no longer matches the
//! checksum, so prose written or edited straight in `docs/` is never lost: move it into the page's template
//! first.
use std::path::Path;
use std::process::ExitCode;
use terraform_provider_liqo::provider::LiqoProvider;

const USAGE: &str = "usage: cargo run -q -p terraform-provider-liqo --bin docgen -- [--check | --force]";

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let mode = match args.iter().map(String::as_str).collect::<Vec<_>>().as_slice() {
        [] => sync::Mode::Write { force: false },
        ["--force"] => sync::Mode::Write { force: true },
        ["--check"] => sync::Mode::Check,
        _ => {
            eprintln!("{USAGE}");
            return ExitCode::from(2);
        }
    };
    // The generator always runs through cargo, so the repository root is the parent of this crate's manifest.
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).parent().expect("provider/ has a parent directory").to_path_buf();
    let disk = files::Disk { root: root.clone() };
    let catalog = match pages::Catalog::from_provider(&LiqoProvider::default()) {
        Ok(c) => c,
        Err(errors) => return fail(&errors),
    };
    let pages = match pages::generate(&catalog, &disk) {
        Ok(p) => p,
        Err(errors) => return fail(&errors),
    };
    match sync::run(mode, &root, &pages) {
        Ok(code) => code,
        Err(errors) => fail(&errors),
    }
}

fn fail(errors: &[String]) -> ExitCode {
    for e in errors {
        eprintln!("docgen: error: {e}");
    }
    ExitCode::from(2)
}

/// Access to the repository's files (templates and examples), so tests can render from memory.
mod files {
    use std::io;
    use std::path::PathBuf;

    pub trait Files {
        /// The text of a file given by its path relative to the repository root (`/`-separated).
        fn read(&self, path: &str) -> io::Result<String>;
        fn exists(&self, path: &str) -> bool;
        /// Every file under `docs/templates/`, as paths relative to the repository root, sorted.
        fn templates(&self) -> io::Result<Vec<String>>;
    }

    pub struct Disk {
        pub root: PathBuf,
    }

    impl Files for Disk {
        fn read(&self, path: &str) -> io::Result<String> {
            std::fs::read_to_string(self.root.join(path))
        }
        fn exists(&self, path: &str) -> bool {
            self.root.join(path).is_file()
        }
        fn templates(&self) -> io::Result<Vec<String>> {
            let mut out = Vec::new();
            walk(&self.root, "docs/templates", &mut out)?;
            out.sort();
            Ok(out)
        }
    }

    /// Collects the files below `dir` (relative to `root`); a missing directory holds no files.
    pub fn walk(root: &std::path::Path, dir: &str, out: &mut Vec<String>) -> io::Result<()> {
        let entries = match std::fs::read_dir(root.join(dir)) {
            Ok(e) => e,
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(()),
            Err(e) => return Err(e),
        };
        for entry in entries {
            let entry = entry?;
            let name = entry.file_name().to_string_lossy().into_owned();
            let rel = format!("{dir}/{name}");
            if entry.file_type()?.is_dir() {
                walk(root, &rel, out)?;
            } else {
                out.push(rel);
            }
        }
        Ok(())
    }
}

/// The schema section of a page, rendered as tfplugindocs renders it: attributes and blocks grouped into
/// Required / Optional / Read-Only, sorted by name, nested attributes and blocks in their own anchored sections.
mod schema_md {
    use liqo_schema::tf::{Attribute, Block, NestedBlock, Nesting, Schema, Type};
    use std::collections::BTreeMap;

    #[derive(Clone, Copy, PartialEq, Eq, Debug)]
    enum Group {
        Required,
        Optional,
        ReadOnly,
    }

    const GROUPS: [Group; 3] = [Group::Required, Group::Optional, Group::ReadOnly];

    impl Group {
        fn title(self, root: bool) -> &'static str {
            match (self, root) {
                (Group::Required, true) => "### Required",
                (Group::Optional, true) => "### Optional",
                (Group::ReadOnly, true) => "### Read-Only",
                (Group::Required, false) => "Required:",
                (Group::Optional, false) => "Optional:",
                (Group::ReadOnly, false) => "Read-Only:",
            }
        }
    }

    /// A nested section still to be written below the current list.
    struct Section<'a> {
        anchor: String,
        path: Vec<String>,
        content: Content<'a>,
        /// The group of the attribute that holds this section (object attributes list all fields under it).
        group: Group,
    }

    enum Content<'a> {
        Block(&'a Block),
        Attributes(&'a [Attribute]),
        Object(&'a BTreeMap<String, Type>),
    }

    enum Child<'a> {
        Attr(&'a Attribute),
        Block(&'a NestedBlock),
    }

    /// `## Schema` and everything below it. Errors name the attribute path that cannot be rendered.
    pub fn render(schema: &Schema) -> Result<String, String> {
        let mut out = String::from("## Schema\n\n");
        write_block(&mut out, &[], &schema.block, true)?;
        // Nested sections each end with a blank line, so deep nesting stacks them up; one is enough.
        while out.contains("\n\n\n") {
            out = out.replace("\n\n\n", "\n\n");
        }
        Ok(out)
    }

    fn attribute_group(a: &Attribute, path: &[String]) -> Result<Group, String> {
        if a.required {
            Ok(Group::Required)
        } else if a.optional {
            Ok(Group::Optional)
        } else if a.computed {
            Ok(Group::ReadOnly)
        } else {
            Err(format!("attribute `{}` is neither required, optional nor computed; fix its schema", path.join(".")))
        }
    }

    fn block_is_required(b: &NestedBlock) -> bool {
        b.min_items > 0
    }

    /// A block with no required items is optional when it is empty or anything inside it can be set.
    fn block_is_optional(b: &NestedBlock) -> bool {
        b.min_items == 0
            && ((b.block.attributes.is_empty() && b.block.blocks.is_empty())
                || b.block.attributes.iter().any(|a| a.required || a.optional)
                || b.block.blocks.iter().any(|c| block_is_required(c) || block_is_optional(c)))
    }

    fn block_is_read_only(b: &NestedBlock) -> bool {
        b.min_items == 0
            && b.max_items == 0
            && b.block.attributes.iter().all(|a| a.computed && !a.optional && !a.required)
            && b.block.blocks.iter().all(block_is_read_only)
    }

    fn block_group(b: &NestedBlock, path: &[String]) -> Result<Group, String> {
        if block_is_required(b) {
            Ok(Group::Required)
        } else if block_is_optional(b) {
            Ok(Group::Optional)
        } else if block_is_read_only(b) {
            Ok(Group::ReadOnly)
        } else {
            Err(format!(
                "block `{}` mixes computed-only attributes with settable limits (min/max items); mark it computed or make an attribute settable",
                path.join(".")
            ))
        }
    }

    fn child_path(parents: &[String], name: &str) -> Vec<String> {
        let mut p = parents.to_vec();
        p.push(name.to_string());
        p
    }

    fn write_block<'a>(out: &mut String, parents: &[String], block: &'a Block, root: bool) -> Result<(), String> {
        let mut children: Vec<(&str, Child<'a>)> =
            block.attributes.iter().map(|a| (a.name.as_str(), Child::Attr(a))).collect();
        children.extend(block.blocks.iter().map(|b| (b.type_name.as_str(), Child::Block(b))));
        children.sort_by(|a, b| a.0.cmp(b.0));
        let mut sections = Vec::new();
        for group in GROUPS {
            let mut lines = String::new();
            for (name, child) in &children {
                let path = child_path(parents, name);
                match child {
                    Child::Attr(a) => {
                        // Like tfplugindocs: an undescribed top-level `id` is the resource ID, listed as read-only.
                        let undescribed_id = root && a.name == "id" && a.description.trim().is_empty();
                        let g = if undescribed_id { Group::ReadOnly } else { attribute_group(a, &path)? };
                        if g == group {
                            let description = if undescribed_id { "The ID of this resource." } else { &a.description };
                            sections.extend(write_attribute(&mut lines, path, a, description, group));
                        }
                    }
                    Child::Block(b) => {
                        if block_group(b, &path)? == group {
                            sections.push(write_block_type(&mut lines, path, b));
                        }
                    }
                }
            }
            if !lines.is_empty() {
                out.push_str(group.title(root));
                out.push_str("\n\n");
                out.push_str(&lines);
                out.push('\n');
            }
        }
        write_sections(out, sections)
    }

    fn write_sections(out: &mut String, sections: Vec<Section<'_>>) -> Result<(), String> {
        for s in sections {
            out.push_str(&format!("<a id=\"{}\"></a>\n### Nested Schema for `{}`\n\n", s.anchor, s.path.join(".")));
            match s.content {
                Content::Block(b) => write_block(out, &s.path, b, false)?,
                Content::Attributes(attrs) => write_nested_attributes(out, &s.path, attrs)?,
                Content::Object(fields) => write_object(out, &s.path, fields, s.group)?,
            }
            out.push('\n');
        }
        Ok(())
    }

    fn write_nested_attributes(out: &mut String, parents: &[String], attrs: &[Attribute]) -> Result<(), String> {
        let mut sorted: Vec<&Attribute> = attrs.iter().collect();
        sorted.sort_by(|a, b| a.name.cmp(&b.name));
        let mut sections = Vec::new();
        for group in GROUPS {
            let mut lines = String::new();
            for a in &sorted {
                let path = child_path(parents, &a.name);
                if attribute_group(a, &path)? == group {
                    sections.extend(write_attribute(&mut lines, path, a, &a.description, group));
                }
            }
            if !lines.is_empty() {
                out.push_str(group.title(false));
                out.push_str("\n\n");
                out.push_str(&lines);
                out.push('\n');
            }
        }
        write_sections(out, sections)
    }

    /// Fields of an object-typed attribute: they carry no flags of their own, so all are listed under the
    /// group of the attribute that holds them.
    fn write_object(
        out: &mut String,
        parents: &[String],
        fields: &BTreeMap<String, Type>,
        group: Group,
    ) -> Result<(), String> {
        out.push_str(group.title(false));
        out.push_str("\n\n");
        let mut sections = Vec::new();
        for (name, ty) in fields {
            let path = child_path(parents, name);
            out.push_str(&format!("- `{name}` ({})", type_name(ty)));
            if let Some(inner) = object_fields(ty) {
                let anchor = format!("nestedobjatt--{}", path.join("--"));
                out.push_str(&format!(" (see [below for nested schema](#{anchor}))"));
                sections.push(Section { anchor, path, content: Content::Object(inner), group });
            }
            out.push('\n');
        }
        out.push('\n');
        write_sections(out, sections)
    }

    /// Writes one attribute line; returns the nested section it needs, if any.
    fn write_attribute<'a>(
        out: &mut String,
        path: Vec<String>,
        a: &'a Attribute,
        description: &str,
        group: Group,
    ) -> Option<Section<'a>> {
        let name = &a.name;
        let mut flags = match (&a.nested, &a.ty) {
            (Some(n), _) => match n.nesting {
                Nesting::Single | Nesting::Group => "Attributes".to_string(),
                Nesting::List => "Attributes List".to_string(),
                Nesting::Set => "Attributes Set".to_string(),
                Nesting::Map => "Attributes Map".to_string(),
            },
            (None, Some(t)) => type_name(t),
            (None, None) => "Dynamic".to_string(),
        };
        if a.sensitive {
            flags.push_str(", Sensitive");
        }
        if a.deprecated {
            flags.push_str(", Deprecated");
        }
        out.push_str(&format!("- `{name}` ({flags})"));
        let description = collapse_paragraphs(description.trim());
        if !description.is_empty() {
            out.push(' ');
            out.push_str(&description);
        }
        let anchor = format!("nestedatt--{}", path.join("--"));
        let content = match (&a.nested, &a.ty) {
            (Some(n), _) => Some(Content::Attributes(&n.attributes)),
            (None, Some(t)) => object_fields(t).map(Content::Object),
            (None, None) => None,
        };
        let section = content.map(|content| {
            out.push_str(&format!(" (see [below for nested schema](#{anchor}))"));
            Section { anchor, path, content, group }
        });
        out.push('\n');
        section
    }

    fn write_block_type<'a>(out: &mut String, path: Vec<String>, b: &'a NestedBlock) -> Section<'a> {
        let mut flags = match b.nesting {
            Nesting::Single | Nesting::Group => "Block".to_string(),
            Nesting::List => "Block List".to_string(),
            Nesting::Set => "Block Set".to_string(),
            Nesting::Map => "Block Map".to_string(),
        };
        if matches!(b.nesting, Nesting::Single | Nesting::Group) {
            flags.push_str(if block_is_required(b) {
                ", Required"
            } else if block_is_optional(b) {
                ", Optional"
            } else {
                ", Read-only"
            });
        } else if b.min_items > 0 {
            flags.push_str(&format!(", Min: {}", b.min_items));
        }
        if b.max_items > 0 {
            flags.push_str(&format!(", Max: {}", b.max_items));
        }
        if b.block.deprecated {
            flags.push_str(", Deprecated");
        }
        out.push_str(&format!("- `{}` ({flags})", b.type_name));
        let description = collapse_paragraphs(b.block.description.trim());
        if !description.is_empty() {
            out.push(' ');
            out.push_str(&description);
        }
        let anchor = format!("nestedblock--{}", path.join("--"));
        out.push_str(&format!(" (see [below for nested schema](#{anchor}))\n"));
        Section { anchor, path, content: Content::Block(&b.block), group: Group::Optional }
    }

    /// The object type an attribute's value holds directly or as collection elements, if any.
    fn object_fields(t: &Type) -> Option<&BTreeMap<String, Type>> {
        match t {
            Type::Object(fields) => Some(fields),
            Type::List(e) | Type::Set(e) | Type::Map(e) => match e.as_ref() {
                Type::Object(fields) => Some(fields),
                _ => None,
            },
            _ => None,
        }
    }

    fn type_name(t: &Type) -> String {
        match t {
            Type::Bool => "Boolean".into(),
            Type::Number => "Number".into(),
            Type::String => "String".into(),
            Type::Dynamic => "Dynamic".into(),
            Type::List(e) => format!("List of {}", type_name(e)),
            Type::Set(e) => format!("Set of {}", type_name(e)),
            Type::Map(e) => format!("Map of {}", type_name(e)),
            Type::Object(_) => "Object".into(),
            Type::Tuple(_) => "Tuple".into(),
        }
    }

    /// A list item cannot hold blank lines, so paragraphs become Markdown hard line breaks.
    fn collapse_paragraphs(text: &str) -> String {
        let mut out = String::with_capacity(text.len());
        let mut newlines = 0;
        for c in text.chars() {
            if c == '\n' {
                newlines += 1;
                continue;
            }
            match newlines {
                0 => {}
                1 => out.push('\n'),
                _ => out.push_str("  \n"),
            }
            newlines = 0;
            out.push(c);
        }
        out
    }
}

/// The template language: the part of tfplugindocs' Go-template syntax the pages need, so a template reads like
/// the ones in HashiCorp's providers.
///
/// Text is copied verbatim except for actions `{{ … }}`. An action is a pipeline `cmd | cmd | …`; a command is a
/// field (`.Name`) or a function call with string-literal or field arguments, and the result of the previous
/// command is passed as the last argument of the next one. `{{-` and `-}}` trim the whitespace before or after
/// the action. Functions: `tffile PATH` and `codefile LANG PATH` (a fenced code block with the file's content;
/// paths are relative to the repository root), `trimspace`, `plainmarkdown` (text without Markdown markup, for
/// the frontmatter) and `prefixlines PREFIX`. Conditionals are not supported: a page either has a template,
/// which knows which examples exist, or uses a built-in default assembled for the files present.
mod template {
    use crate::files::Files;
    use std::collections::BTreeMap;

    pub struct Context<'a> {
        pub fields: BTreeMap<&'static str, String>,
        /// What the fields describe, for error messages ("a resource page").
        pub kind: &'static str,
        pub files: &'a dyn Files,
    }

    /// Renders `text`; errors are `NAME:LINE: message`.
    pub fn render(name: &str, text: &str, ctx: &Context) -> Result<String, String> {
        let mut out = String::new();
        let mut rest = text;
        let mut trim_next = false;
        let mut line = 1;
        while let Some(start) = rest.find("{{") {
            let mut literal = &rest[..start];
            if trim_next {
                literal = literal.trim_start();
            }
            let after = &rest[start + 2..];
            let (trim_before, body_start) =
                if after.starts_with("- ") || after.starts_with("-\n") { (true, 1) } else { (false, 0) };
            if trim_before {
                literal = literal.trim_end();
            }
            out.push_str(literal);
            line += rest[..start].matches('\n').count();
            let end = action_end(&after[body_start..])
                .ok_or_else(|| format!("{name}:{line}: `{{{{` without a closing `}}}}`"))?;
            let mut body = &after[body_start..body_start + end];
            trim_next = false;
            if body.ends_with(" -") || body.ends_with("\n-") {
                trim_next = true;
                body = &body[..body.len() - 1];
            }
            let value = eval(body.trim(), ctx).map_err(|e| format!("{name}:{line}: {e}"))?;
            out.push_str(&value);
            let consumed = 2 + body_start + end + 2;
            line += rest[start..start + consumed].matches('\n').count();
            rest = &rest[start + consumed..];
        }
        out.push_str(if trim_next { rest.trim_start() } else { rest });
        Ok(out)
    }

    /// Offset of the `}}` that closes an action, skipping string literals.
    fn action_end(s: &str) -> Option<usize> {
        let bytes = s.as_bytes();
        let mut i = 0;
        let mut in_string = false;
        while i < bytes.len() {
            match bytes[i] {
                b'\\' if in_string => i += 1,
                b'"' => in_string = !in_string,
                b'}' if !in_string && bytes.get(i + 1) == Some(&b'}') => return Some(i),
                _ => {}
            }
            i += 1;
        }
        None
    }

    #[derive(Debug, PartialEq)]
    enum Token {
        Str(String),
        Word(String),
        Pipe,
    }

    fn tokenize(s: &str) -> Result<Vec<Token>, String> {
        let mut tokens = Vec::new();
        let mut chars = s.chars().peekable();
        while let Some(&c) = chars.peek() {
            if c.is_whitespace() {
                chars.next();
            } else if c == '|' {
                chars.next();
                tokens.push(Token::Pipe);
            } else if c == '"' {
                chars.next();
                let mut lit = String::new();
                loop {
                    match chars.next() {
                        Some('"') => break,
                        Some('\\') => match chars.next() {
                            Some('n') => lit.push('\n'),
                            Some('t') => lit.push('\t'),
                            Some(e @ ('"' | '\\')) => lit.push(e),
                            other => {
                                return Err(format!(
                                    "unsupported escape `\\{}` in a string",
                                    other.map(String::from).unwrap_or_default()
                                ));
                            }
                        },
                        Some(ch) => lit.push(ch),
                        None => return Err("unterminated string".into()),
                    }
                }
                tokens.push(Token::Str(lit));
            } else if c.is_alphanumeric() || c == '.' || c == '_' {
                let mut word = String::new();
                while let Some(&ch) = chars.peek() {
                    if ch.is_alphanumeric() || ch == '.' || ch == '_' {
                        word.push(ch);
                        chars.next();
                    } else {
                        break;
                    }
                }
                tokens.push(Token::Word(word));
            } else {
                return Err(format!(
                    "unexpected `{c}` (only fields, functions, string literals and `|` are supported)"
                ));
            }
        }
        Ok(tokens)
    }

    fn eval(body: &str, ctx: &Context) -> Result<String, String> {
        if body.starts_with("/*") {
            return Err("comments are not supported; write prose outside the actions".into());
        }
        let tokens = tokenize(body)?;
        if tokens.is_empty() {
            return Err("empty action".into());
        }
        let mut piped: Option<String> = None;
        for command in tokens.split(|t| *t == Token::Pipe) {
            let (head, args) = command.split_first().ok_or("empty command in a pipeline")?;
            let mut values = Vec::new();
            for a in args {
                values.push(match a {
                    Token::Str(s) => s.clone(),
                    Token::Word(w) if w.starts_with('.') => field(w, ctx)?,
                    Token::Word(w) => {
                        return Err(format!("`{w}` must be a field (`.Name`) or a string literal"));
                    }
                    Token::Pipe => unreachable!("split on pipes"),
                });
            }
            values.extend(piped.take());
            piped = Some(match head {
                Token::Word(w) if w.starts_with('.') => {
                    if !values.is_empty() {
                        return Err(format!("field `{w}` takes no arguments"));
                    }
                    field(w, ctx)?
                }
                Token::Str(s) if values.is_empty() => s.clone(),
                Token::Word(w) => call(w, &values, ctx)?,
                Token::Str(_) | Token::Pipe => {
                    return Err("a string literal takes no arguments".into());
                }
            });
        }
        piped.ok_or_else(|| "empty action".into())
    }

    fn field(name: &str, ctx: &Context) -> Result<String, String> {
        ctx.fields.get(&name[1..]).cloned().ok_or_else(|| {
            let known: Vec<String> = ctx.fields.keys().map(|k| format!(".{k}")).collect();
            format!("unknown field `{name}` in {} (available: {})", ctx.kind, known.join(", "))
        })
    }

    fn call(name: &str, args: &[String], ctx: &Context) -> Result<String, String> {
        match (name, args) {
            ("tffile", [path]) => code_file("terraform", path, ctx),
            ("codefile", [lang, path]) => code_file(lang, path, ctx),
            ("trimspace", [s]) => Ok(s.trim().to_string()),
            ("plainmarkdown", [s]) => Ok(plain_markdown(s)),
            ("prefixlines", [prefix, s]) => {
                Ok(s.lines().map(|l| format!("{prefix}{l}")).collect::<Vec<_>>().join("\n"))
            }
            ("tffile" | "codefile" | "trimspace" | "plainmarkdown" | "prefixlines", _) => {
                Err(format!("wrong number of arguments ({}) for `{name}`", args.len()))
            }
            _ => Err(format!(
                "unknown function `{name}` (known: tffile, codefile, trimspace, plainmarkdown, prefixlines)"
            )),
        }
    }

    fn code_file(lang: &str, path: &str, ctx: &Context) -> Result<String, String> {
        let text = ctx.files.read(path).map_err(|e| format!("cannot read {path}: {e}"))?;
        let text = text.trim();
        if text.is_empty() {
            return Err(format!("{path} is empty"));
        }
        Ok(format!("```{lang}\n{text}\n```"))
    }

    /// Markdown reduced to plain text for the frontmatter `description` (search results and link previews show
    /// it raw): links become `text URL`, code spans and emphasis lose their markers, callout arrows go, and
    /// blank lines between paragraphs are dropped.
    pub fn plain_markdown(s: &str) -> String {
        let mut lines = Vec::new();
        for line in s.lines() {
            let line = line.trim_end();
            if line.trim().is_empty() {
                continue;
            }
            let line = ["-> ", "~> ", "!> "].iter().fold(line, |l, p| l.strip_prefix(p).unwrap_or(l));
            lines.push(plain_line(line));
        }
        lines.join("\n")
    }

    fn plain_line(line: &str) -> String {
        let mut out = String::new();
        let mut rest = line;
        while !rest.is_empty() {
            if let Some(code) = rest.strip_prefix('`')
                && let Some(end) = code.find('`')
            {
                out.push_str(&code[..end]);
                rest = &code[end + 1..];
                continue;
            }
            if let Some(after) = rest.strip_prefix("**").or_else(|| rest.strip_prefix("__")) {
                rest = after;
                continue;
            }
            if let Some(link) = rest.strip_prefix('[')
                && let Some((text, url, tail)) = link.find("](").and_then(|mid| {
                    let url_part = &link[mid + 2..];
                    url_part.find(')').map(|close| (&link[..mid], &url_part[..close], &url_part[close + 1..]))
                })
            {
                out.push_str(&plain_line(text));
                out.push(' ');
                out.push_str(url);
                rest = tail;
                continue;
            }
            let c = rest.chars().next().expect("rest is not empty");
            out.push(c);
            rest = &rest[c.len_utf8()..];
        }
        out
    }
}

/// Which pages exist and what each is rendered from.
mod pages {
    use crate::files::Files;
    use crate::{schema_md, template};
    use liqo_schema::tf::Schema;
    use std::collections::BTreeMap;
    use terraform_provider_liqo::protocol::Provider;

    pub const PROVIDER_NAME: &str = "terraform-provider-liqo";
    pub const SHORT_NAME: &str = "liqo";
    /// Start of the comment every generated page carries; pages without it were written by hand.
    const MARKER: &str = "<!-- Generated by docgen";

    /// The schemas the docs describe, sorted by type name.
    pub struct Catalog {
        pub provider: Schema,
        pub resources: Vec<(String, Schema)>,
        pub data_sources: Vec<(String, Schema)>,
        /// List resources (`terraform query`), by the managed type each lists.
        pub list_resources: Vec<(String, Schema)>,
    }

    impl Catalog {
        pub fn from_provider(p: &dyn Provider) -> Result<Catalog, Vec<String>> {
            let resources = p.resources().iter().map(|r| (r.type_name().to_string(), r.schema())).collect();
            let data_sources = p.data_sources().iter().map(|d| (d.type_name().to_string(), d.schema())).collect();
            let lists = p.list_resources().iter().map(|l| (l.type_name().to_string(), l.schema())).collect();
            Catalog::new(p.provider_schema(), resources, data_sources, lists)
        }

        pub fn new(
            provider: Schema,
            mut resources: Vec<(String, Schema)>,
            mut data_sources: Vec<(String, Schema)>,
            mut list_resources: Vec<(String, Schema)>,
        ) -> Result<Catalog, Vec<String>> {
            let mut errors = Vec::new();
            let kinds = [
                ("resource", &mut resources),
                ("data source", &mut data_sources),
                ("list resource", &mut list_resources),
            ];
            for (kind, list) in kinds {
                list.sort_by(|a, b| a.0.cmp(&b.0));
                for pair in list.windows(2) {
                    if pair[0].0 == pair[1].0 {
                        errors.push(format!("{kind} type {} is registered twice", pair[0].0));
                    }
                }
                for (name, _) in list.iter() {
                    if short_name(name).is_none() {
                        errors.push(format!("{kind} type {name} does not start with `{SHORT_NAME}_`"));
                    }
                }
            }
            if errors.is_empty() {
                Ok(Catalog { provider, resources, data_sources, list_resources })
            } else {
                Err(errors)
            }
        }
    }

    fn short_name(type_name: &str) -> Option<&str> {
        type_name.strip_prefix(SHORT_NAME).and_then(|s| s.strip_prefix('_')).filter(|s| !s.is_empty())
    }

    /// A rendered page: its path relative to the repository root and its full text.
    #[derive(Debug)]
    pub struct Page {
        pub path: String,
        pub content: String,
    }

    #[derive(Clone, Copy, PartialEq)]
    enum Kind {
        Provider,
        Resource,
        DataSource,
        ListResource,
    }

    impl Kind {
        fn label(self) -> &'static str {
            match self {
                Kind::Provider => "Provider",
                Kind::Resource => "Resource",
                Kind::DataSource => "Data Source",
                Kind::ListResource => "List Resource",
            }
        }
    }

    /// One schema page to render: where its inputs are and where it goes.
    struct SchemaPage<'a> {
        kind: Kind,
        /// `liqo_peer`, or `liqo` for the provider.
        name: String,
        schema: &'a Schema,
        template: String,
        output: String,
        example: String,
        import: Option<String>,
    }

    /// Renders every page. Errors (bad templates, templates for types that do not exist, unreadable examples) are
    /// collected so one run reports all of them.
    pub fn generate(catalog: &Catalog, files: &dyn Files) -> Result<Vec<Page>, Vec<String>> {
        let mut errors = Vec::new();
        let mut schema_pages = vec![SchemaPage {
            kind: Kind::Provider,
            name: SHORT_NAME.to_string(),
            schema: &catalog.provider,
            template: "docs/templates/index.md.tmpl".into(),
            output: "docs/index.md".into(),
            example: "examples/provider/provider.tf".into(),
            import: None,
        }];
        for (name, schema) in &catalog.resources {
            let short = short_name(name).expect("checked by Catalog::new");
            schema_pages.push(SchemaPage {
                kind: Kind::Resource,
                name: name.clone(),
                schema,
                template: format!("docs/templates/resources/{short}.md.tmpl"),
                output: format!("docs/resources/{short}.md"),
                example: format!("examples/resources/{name}/resource.tf"),
                import: Some(format!("examples/resources/{name}/import.sh")),
            });
        }
        for (name, schema) in &catalog.data_sources {
            let short = short_name(name).expect("checked by Catalog::new");
            schema_pages.push(SchemaPage {
                kind: Kind::DataSource,
                name: name.clone(),
                schema,
                template: format!("docs/templates/data-sources/{short}.md.tmpl"),
                output: format!("docs/data-sources/{short}.md"),
                example: format!("examples/data-sources/{name}/data-source.tf"),
                import: None,
            });
        }

        for (name, schema) in &catalog.list_resources {
            let short = short_name(name).expect("checked by Catalog::new");
            schema_pages.push(SchemaPage {
                kind: Kind::ListResource,
                name: name.clone(),
                schema,
                template: format!("docs/templates/list-resources/{short}.md.tmpl"),
                output: format!("docs/list-resources/{short}.md"),
                example: format!("examples/list-resources/{name}/list-resource.tfquery.hcl"),
                import: None,
            });
        }

        let templates = match files.templates() {
            Ok(t) => t,
            Err(e) => return Err(vec![format!("cannot list docs/templates: {e}")]),
        };
        let mut guides = Vec::new();
        for t in &templates {
            let known = schema_pages.iter().any(|p| &p.template == t);
            match t.strip_prefix("docs/templates/guides/").and_then(|g| g.strip_suffix(".md.tmpl")) {
                Some(guide) if !guide.contains('/') && !guide.is_empty() => {
                    guides.push((t.clone(), format!("docs/guides/{guide}.md")))
                }
                _ if known => {}
                _ => errors.push(orphan_template(t)),
            }
        }

        let mut pages = Vec::new();
        for p in &schema_pages {
            match render_schema_page(p, files) {
                Ok(page) => pages.push(page),
                Err(e) => errors.push(e),
            }
        }
        for (template, output) in guides {
            let ctx = template::Context { fields: common_fields(), kind: "a guide", files };
            let result = files
                .read(&template)
                .map_err(|e| format!("cannot read {template}: {e}"))
                .and_then(|text| template::render(&template, &text, &ctx))
                .and_then(|text| finish(&template, text, &template, "the template"));
            match result {
                Ok(content) => pages.push(Page { path: output, content }),
                Err(e) => errors.push(e),
            }
        }
        if errors.is_empty() { Ok(pages) } else { Err(errors) }
    }

    fn orphan_template(t: &str) -> String {
        let expect = |dir: &str, kind: &str| {
            t.strip_prefix(dir)
                .and_then(|n| n.strip_suffix(".md.tmpl"))
                .map(|n| format!("{t}: the provider has no {kind} {SHORT_NAME}_{n}; rename or remove the template"))
        };
        expect("docs/templates/resources/", "resource")
            .or_else(|| expect("docs/templates/data-sources/", "data source"))
            .or_else(|| expect("docs/templates/list-resources/", "list resource"))
            .unwrap_or_else(|| {
                format!(
                    "{t}: not a page template; templates are docs/templates/index.md.tmpl, resources/<name>.md.tmpl, data-sources/<name>.md.tmpl, list-resources/<name>.md.tmpl and guides/<name>.md.tmpl"
                )
            })
    }

    fn common_fields() -> BTreeMap<&'static str, String> {
        BTreeMap::from([("ProviderName", PROVIDER_NAME.to_string()), ("ProviderShortName", SHORT_NAME.to_string())])
    }

    fn render_schema_page(p: &SchemaPage, files: &dyn Files) -> Result<Page, String> {
        let schema_md = schema_md::render(p.schema).map_err(|e| format!("{}: {e}", p.name))?;
        let mut fields = common_fields();
        fields.insert("Name", p.name.clone());
        fields.insert("Type", p.kind.label().to_string());
        fields.insert("Description", p.schema.block.description.clone());
        fields.insert("SchemaMarkdown", format!("<!-- schema generated by docgen -->\n{schema_md}"));
        fields.insert("ExampleFile", p.example.clone());
        if let Some(import) = &p.import {
            fields.insert("ImportFile", import.clone());
        }
        let kind = match p.kind {
            Kind::Provider => "the provider page",
            Kind::Resource => "a resource page",
            Kind::DataSource => "a data source page",
            Kind::ListResource => "a list resource page",
        };
        let ctx = template::Context { fields, kind, files };
        let (name, text, source, edit) = if files.exists(&p.template) {
            let text = files.read(&p.template).map_err(|e| format!("cannot read {}: {e}", p.template))?;
            let source = format!("{} and the schema of {}", p.template, p.name);
            (p.template.clone(), text, source, "the template or the schema's descriptions".to_string())
        } else {
            let has_import = p.import.as_deref().is_some_and(|i| files.exists(i));
            let text = default_template(p.kind, files.exists(&p.example), has_import);
            let source = format!("the default page layout and the schema of {}", p.name);
            let edit = format!("the schema's descriptions or add {} for prose", p.template);
            (format!("built-in {} template", p.kind.label().to_lowercase()), text, source, edit)
        };
        let content = template::render(&name, &text, &ctx)?;
        Ok(Page { path: p.output.clone(), content: finish(&name, content, &source, &edit)? })
    }

    /// The page tfplugindocs would write without a template, for the example files that exist.
    fn default_template(kind: Kind, has_example: bool, has_import: bool) -> String {
        let title =
            if kind == Kind::Provider { "{{ .ProviderShortName }} Provider" } else { "{{ .Name }} ({{ .Type }})" };
        let page_title = if kind == Kind::Provider {
            "{{ .ProviderShortName }} Provider"
        } else {
            "{{ .Name }} {{ .Type }} - {{ .ProviderName }}"
        };
        let mut t = format!(
            "---\npage_title: \"{page_title}\"\nsubcategory: \"\"\ndescription: |-\n{{{{ .Description | plainmarkdown | trimspace | prefixlines \"  \" }}}}\n---\n\n# {title}\n\n{{{{ .Description | trimspace }}}}\n\n"
        );
        if has_example {
            t.push_str("## Example Usage\n\n{{ tffile .ExampleFile }}\n\n");
        }
        t.push_str("{{ .SchemaMarkdown | trimspace }}\n");
        if has_import {
            t.push_str("\n## Import\n\nImport is supported using the following syntax:\n\n{{ codefile \"shell\" .ImportFile }}\n");
        }
        t
    }

    /// Checks the frontmatter, inserts the marker after it and ends the page with exactly one newline.
    fn finish(name: &str, content: String, source: &str, edit: &str) -> Result<String, String> {
        let body = content
            .strip_prefix("---\n")
            .ok_or_else(|| format!("{name}: a page must start with YAML frontmatter (`---`)"))?;
        let end = body.find("\n---\n").ok_or_else(|| format!("{name}: the frontmatter has no closing `---` line"))?;
        let front = &body[..end + 1];
        if !front.lines().any(|l| l.starts_with("page_title:")) {
            return Err(format!("{name}: the frontmatter needs a `page_title` (the Registry's navigation title)"));
        }
        let rest = body[end + 5..].trim_end();
        let unmarked = format!("---\n{front}---\n{rest}\n");
        let marker = format!(
            "{MARKER} from {source}. Do not edit this file: change {edit}, then run `cargo run -q -p {PROVIDER_NAME} --bin docgen`. Checksum {:016x}. -->",
            fnv1a64(&unmarked)
        );
        Ok(format!("---\n{front}---\n{marker}\n{rest}\n"))
    }

    /// True for a page docgen wrote and nobody edited since: the checksum in its marker matches the rest of the
    /// page. Anything else holds prose written by hand, which must not be overwritten.
    pub fn is_pristine(text: &str) -> bool {
        let Some(start) = text.find(MARKER) else {
            return false;
        };
        let end = text[start..].find('\n').map_or(text.len(), |i| start + i + 1);
        let Some(sum) = text[start..end].split("Checksum ").nth(1).and_then(|s| s.get(..16)) else {
            return false;
        };
        format!("{:016x}", fnv1a64(&format!("{}{}", &text[..start], &text[end..]))) == sum
    }

    /// FNV-1a, 64 bits: stable across Rust releases and platforms (unlike std's hasher), which a checksum
    /// committed to the repository needs.
    fn fnv1a64(text: &str) -> u64 {
        text.bytes().fold(0xcbf2_9ce4_8422_2325, |h, b| (h ^ u64::from(b)).wrapping_mul(0x0000_0100_0000_01b3))
    }
}

/// Brings `docs/` in line with the rendered pages, or reports how it differs.
mod sync {
    use crate::files;
    use crate::pages::{Page, is_pristine};
    use std::collections::BTreeSet;
    use std::path::Path;
    use std::process::ExitCode;

    pub enum Mode {
        Check,
        Write { force: bool },
    }

    /// Pages currently in `docs/` (every `.md` outside `docs/templates/`).
    fn existing(root: &Path) -> Result<BTreeSet<String>, String> {
        let mut all = Vec::new();
        files::walk(root, "docs", &mut all).map_err(|e| format!("cannot list docs/: {e}"))?;
        Ok(all.into_iter().filter(|p| p.ends_with(".md") && !p.starts_with("docs/templates/")).collect())
    }

    pub fn run(mode: Mode, root: &Path, pages: &[Page]) -> Result<ExitCode, Vec<String>> {
        let on_disk = existing(root).map_err(|e| vec![e])?;
        let read = |p: &str| std::fs::read_to_string(root.join(p)).ok();
        let changed: Vec<&Page> =
            pages.iter().filter(|p| read(&p.path).as_deref() != Some(p.content.as_str())).collect();
        let generated: BTreeSet<&str> = pages.iter().map(|p| p.path.as_str()).collect();
        let stale: Vec<&String> = on_disk.iter().filter(|p| !generated.contains(p.as_str())).collect();
        match mode {
            Mode::Check => {
                if changed.is_empty() && stale.is_empty() {
                    return Ok(ExitCode::SUCCESS);
                }
                for p in &changed {
                    let what =
                        if on_disk.contains(&p.path) { "differs from what docgen generates" } else { "is missing" };
                    eprintln!("{} {what}", p.path);
                }
                for p in &stale {
                    eprintln!("{p} is not generated by docgen (no such resource, data source or guide template)");
                }
                eprintln!(
                    "docs/ is out of date: run `cargo run -q -p terraform-provider-liqo --bin docgen` and commit the result."
                );
                Ok(ExitCode::from(1))
            }
            Mode::Write { force } => {
                let hand_written: Vec<String> = changed
                    .iter()
                    .map(|p| p.path.as_str())
                    .chain(stale.iter().map(|p| p.as_str()))
                    .filter(|p| read(p).is_some_and(|text| !is_pristine(&text)))
                    .map(str::to_string)
                    .collect();
                if !force && !hand_written.is_empty() {
                    return Err(hand_written
                        .iter()
                        .map(|p| {
                            format!(
                                "{p} was written or edited by hand (no docgen marker, or the page no longer matches its checksum); move its prose into its template under docs/templates/, then rerun (add --force to overwrite it)"
                            )
                        })
                        .collect());
                }
                for p in &changed {
                    let path = root.join(&p.path);
                    let written = path
                        .parent()
                        .map_or(Ok(()), std::fs::create_dir_all)
                        .and_then(|()| std::fs::write(&path, &p.content));
                    written.map_err(|e| vec![format!("cannot write {}: {e}", p.path)])?;
                    eprintln!("wrote {}", p.path);
                }
                for p in &stale {
                    std::fs::remove_file(root.join(p)).map_err(|e| vec![format!("cannot remove {p}: {e}")])?;
                    eprintln!("removed {p} (no longer generated)");
                }
                Ok(ExitCode::SUCCESS)
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::files::Files;
    use super::pages::{Catalog, generate};
    use super::{schema_md, template};
    use liqo_schema::tf::{Attribute, Block, NestedBlock, Nesting, Schema, Type};
    use std::collections::BTreeMap;
    use std::io;

    /// Repository files held in memory.
    struct Memory(BTreeMap<&'static str, &'static str>);

    impl Files for Memory {
        fn read(&self, path: &str) -> io::Result<String> {
            self.0.get(path).map(|s| s.to_string()).ok_or_else(|| io::Error::new(io::ErrorKind::NotFound, "not found"))
        }
        fn exists(&self, path: &str) -> bool {
            self.0.contains_key(path)
        }
        fn templates(&self) -> io::Result<Vec<String>> {
            Ok(self.0.keys().filter(|k| k.starts_with("docs/templates/")).map(|k| k.to_string()).collect())
        }
    }

    fn small_schema() -> Schema {
        let server = Attribute::nested(
            "server",
            Nesting::Single,
            vec![
                Attribute::required("port", Type::Number).describe("UDP port."),
                Attribute::optional("node_port", Type::Number),
                Attribute::nested("endpoint", Nesting::List, vec![Attribute::computed("address", Type::String)])
                    .with_computed()
                    .describe("Where clients connect."),
            ],
        )
        .with_optional()
        .describe("Gateway server settings.");
        let timeouts =
            NestedBlock::single("timeouts", Block::new("", vec![Attribute::optional("create", Type::String)]));
        Schema {
            version: 0,
            block: Block::new(
                "A **test** resource.",
                vec![
                    Attribute::computed("id", Type::String),
                    Attribute::required("name", Type::String).describe("Object name.\n\nMust be unique."),
                    Attribute::optional("kubeconfig", Type::String).sensitive().describe("Kubeconfig."),
                    Attribute::computed("labels", Type::map(Type::String)),
                    Attribute::computed("status", Type::object([("phase", Type::String)])),
                    server,
                ],
            )
            .with_block(timeouts),
        }
    }

    #[test]
    fn renders_schema_like_tfplugindocs() {
        let md = schema_md::render(&small_schema()).unwrap();
        let expected = "\
## Schema

### Required

- `name` (String) Object name.  
Must be unique.

### Optional

- `kubeconfig` (String, Sensitive) Kubeconfig.
- `server` (Attributes) Gateway server settings. (see [below for nested schema](#nestedatt--server))
- `timeouts` (Block, Optional) (see [below for nested schema](#nestedblock--timeouts))

### Read-Only

- `id` (String) The ID of this resource.
- `labels` (Map of String)
- `status` (Object) (see [below for nested schema](#nestedatt--status))

<a id=\"nestedatt--server\"></a>
### Nested Schema for `server`

Required:

- `port` (Number) UDP port.

Optional:

- `node_port` (Number)

Read-Only:

- `endpoint` (Attributes List) Where clients connect. (see [below for nested schema](#nestedatt--server--endpoint))

<a id=\"nestedatt--server--endpoint\"></a>
### Nested Schema for `server.endpoint`

Read-Only:

- `address` (String)

<a id=\"nestedblock--timeouts\"></a>
### Nested Schema for `timeouts`

Optional:

- `create` (String)

<a id=\"nestedatt--status\"></a>
### Nested Schema for `status`

Read-Only:

- `phase` (String)

";
        assert_eq!(md, expected);
    }

    #[test]
    fn attribute_without_flags_is_an_error_naming_its_path() {
        let mut loose = Attribute::optional("port", Type::Number);
        loose.optional = false;
        let schema = Schema {
            version: 0,
            block: Block::new("", vec![Attribute::nested("server", Nesting::Single, vec![loose]).with_optional()]),
        };
        let err = schema_md::render(&schema).unwrap_err();
        assert!(err.contains("`server.port`"), "{err}");
    }

    fn ctx<'a>(files: &'a Memory) -> template::Context<'a> {
        let fields = BTreeMap::from([
            ("Name", "liqo_x".to_string()),
            ("Description", "  Hello [docs](https://x.io) `code`.\n\nMore.  ".to_string()),
        ]);
        template::Context { fields, kind: "a test page", files }
    }

    #[test]
    fn template_pipelines_trim_markers_and_files() {
        let files = Memory(BTreeMap::from([("examples/a.tf", "\nresource \"x\" \"y\" {}\n\n")]));
        let out = template::render(
            "t",
            "a: |-\n{{ .Description | plainmarkdown | trimspace | prefixlines \"  \" }}\n# {{ .Name }}\n\n{{- \"x\" -}}\n\n{{ tffile \"examples/a.tf\" }}",
            &ctx(&files),
        )
        .unwrap();
        assert_eq!(
            out,
            "a: |-\n  Hello docs https://x.io code.\n  More.\n# liqo_xx```terraform\nresource \"x\" \"y\" {}\n```"
        );
    }

    #[test]
    fn template_errors_name_the_line() {
        let files = Memory(BTreeMap::new());
        let err = template::render("page.md.tmpl", "one\ntwo {{ .Nope }}", &ctx(&files)).unwrap_err();
        assert!(err.starts_with("page.md.tmpl:2: unknown field `.Nope`"), "{err}");
        let err = template::render("page.md.tmpl", "\n\n{{ tffile \"missing.tf\" }}", &ctx(&files)).unwrap_err();
        assert!(err.starts_with("page.md.tmpl:3: cannot read missing.tf"), "{err}");
        let err = template::render("p", "{{ if .Name }}", &ctx(&files)).unwrap_err();
        assert!(err.contains("unknown function `if`"), "{err}");
    }

    fn catalog() -> Catalog {
        let provider = Schema {
            version: 0,
            block: Block::new("Provider text.", vec![Attribute::optional("liqo_namespace", Type::String)]),
        };
        Catalog::new(
            provider,
            vec![("liqo_thing".into(), small_schema())],
            vec![],
            vec![("liqo_thing".into(), small_schema())],
        )
        .unwrap()
    }

    #[test]
    fn default_pages_follow_the_registry_layout() {
        let files = Memory(BTreeMap::from([
            ("examples/resources/liqo_thing/resource.tf", "resource \"liqo_thing\" \"a\" {}\n"),
            ("examples/resources/liqo_thing/import.sh", "terraform import liqo_thing.a ns/name\n"),
        ]));
        let pages = generate(&catalog(), &files).unwrap();
        let paths: Vec<&str> = pages.iter().map(|p| p.path.as_str()).collect();
        assert_eq!(paths, ["docs/index.md", "docs/resources/thing.md", "docs/list-resources/thing.md"]);
        let list = &pages[2].content;
        assert!(
            list.contains(
                "-->\n\n# liqo_thing (List Resource)\n\nA **test** resource.\n\n<!-- schema generated by docgen -->"
            ),
            "{list}"
        );
        let thing = &pages[1].content;
        assert!(thing.starts_with(
            "---\npage_title: \"liqo_thing Resource - terraform-provider-liqo\"\nsubcategory: \"\"\ndescription: |-\n  A test resource.\n---\n<!-- Generated by docgen from the default page layout and the schema of liqo_thing. Do not edit this file: change the schema's descriptions or add docs/templates/resources/thing.md.tmpl for prose, then run"
        ), "{thing}");
        assert!(thing.contains("-->\n\n# liqo_thing (Resource)\n\nA **test** resource.\n\n## Example Usage\n\n```terraform\nresource \"liqo_thing\" \"a\" {}\n```\n\n<!-- schema generated by docgen -->\n## Schema\n"), "{thing}");
        assert!(thing.ends_with("## Import\n\nImport is supported using the following syntax:\n\n```shell\nterraform import liqo_thing.a ns/name\n```\n"), "{thing}");
        // No provider example exists, so the provider page has no Example Usage section.
        assert!(!pages[0].content.contains("## Example Usage"));
        assert!(pages[0].content.contains("# liqo Provider\n\nProvider text.\n\n<!-- schema generated by docgen -->"));
    }

    #[test]
    fn templates_guides_and_orphans() {
        let files = Memory(BTreeMap::from([
            (
                "docs/templates/resources/thing.md.tmpl",
                "---\npage_title: \"{{ .Name }}\"\n---\n\n~> Prose.\n\n{{ .SchemaMarkdown | trimspace }}\n",
            ),
            (
                "docs/templates/guides/flow.md.tmpl",
                "---\npage_title: \"Flow\"\nsubcategory: \"Guides\"\n---\n\n# Flow for {{ .ProviderShortName }}\n",
            ),
        ]));
        let pages = generate(&catalog(), &files).unwrap();
        let thing = pages.iter().find(|p| p.path == "docs/resources/thing.md").unwrap();
        assert!(thing.content.contains("from docs/templates/resources/thing.md.tmpl and the schema of liqo_thing."));
        assert!(thing.content.contains("\n~> Prose.\n\n<!-- schema generated by docgen -->\n## Schema\n"));
        let guide = pages.iter().find(|p| p.path == "docs/guides/flow.md").unwrap();
        assert!(guide.content.ends_with("-->\n\n# Flow for liqo\n"), "{}", guide.content);

        let files = Memory(BTreeMap::from([
            ("docs/templates/resources/gone.md.tmpl", "---\npage_title: \"x\"\n---\n"),
            ("docs/templates/guides/untitled.md.tmpl", "---\nsubcategory: \"\"\n---\n"),
            ("docs/templates/notes.txt", ""),
        ]));
        let errors = generate(&catalog(), &files).unwrap_err();
        assert_eq!(errors.len(), 3, "{errors:?}");
        assert!(errors[0].contains("docs/templates/notes.txt: not a page template"), "{errors:?}");
        assert!(errors[1].contains("the provider has no resource liqo_gone"), "{errors:?}");
        assert!(errors[2].contains("untitled.md.tmpl: the frontmatter needs a `page_title`"), "{errors:?}");
    }

    #[test]
    fn hand_edits_of_generated_pages_are_detected() {
        let files = Memory(BTreeMap::new());
        let pages = generate(&catalog(), &files).unwrap();
        let page = &pages[1].content;
        assert!(super::pages::is_pristine(page));
        assert!(!super::pages::is_pristine(&page.replace("A **test** resource.", "A test resource, edited.")));
        assert!(!super::pages::is_pristine("---\npage_title: \"x\"\n---\n\n# Written by hand\n"));
    }

    /// A scratch repository root, removed when dropped.
    struct Scratch(std::path::PathBuf);

    impl Drop for Scratch {
        fn drop(&mut self) {
            let _ = std::fs::remove_dir_all(&self.0);
        }
    }

    #[test]
    fn sync_writes_removes_stale_pages_and_keeps_hand_written_ones() {
        use super::sync::{Mode, run};
        use std::process::ExitCode;
        let root = Scratch(std::env::temp_dir().join(format!("docgen-sync-{}", std::process::id())));
        let write = |rel: &str, text: &str| {
            let path = root.0.join(rel);
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(path, text).unwrap();
        };
        let pages = generate(&catalog(), &Memory(BTreeMap::new())).unwrap();
        // A page docgen wrote for a resource that no longer exists, and prose someone wrote straight into docs/.
        let stale = pages[1].content.clone();
        write("docs/resources/gone.md", &stale);
        write("docs/resources/thing.md", "---\npage_title: \"x\"\n---\n\nHand-written prose.\n");

        assert_eq!(run(Mode::Check, &root.0, &pages).unwrap(), ExitCode::from(1));
        let refused = run(Mode::Write { force: false }, &root.0, &pages).unwrap_err();
        assert_eq!(refused.len(), 1, "{refused:?}");
        assert!(refused[0].starts_with("docs/resources/thing.md was written or edited by hand"), "{refused:?}");
        assert!(!root.0.join("docs/index.md").exists(), "nothing is written when a page is refused");

        assert_eq!(run(Mode::Write { force: true }, &root.0, &pages).unwrap(), ExitCode::SUCCESS);
        assert!(!root.0.join("docs/resources/gone.md").exists());
        for p in &pages {
            assert_eq!(std::fs::read_to_string(root.0.join(&p.path)).unwrap(), p.content);
        }
        assert_eq!(run(Mode::Check, &root.0, &pages).unwrap(), ExitCode::SUCCESS);
    }

    #[test]
    fn catalog_rejects_foreign_and_duplicate_types() {
        let s = || Schema::default();
        let errors = Catalog::new(
            s(),
            vec![("liqo_a".into(), s()), ("liqo_a".into(), s())],
            vec![("other_b".into(), s())],
            vec![],
        )
        .err()
        .unwrap();
        assert_eq!(
            errors,
            ["resource type liqo_a is registered twice", "data source type other_b does not start with `liqo_`"]
        );
    }
}
