//! Schemas and diagnostics in their tfplugin6 form.
use liqo_schema::tf::{Attribute, AttributePath, Block, Diagnostics, Nesting, PathStep, Schema, Severity, Type};
use magma_protocol::tfplugin6 as pb;
use pb::schema::{nested_block::NestingMode as BlockNesting, object::NestingMode as ObjectNesting};

const PLAIN: i32 = pb::StringKind::Plain as i32;

pub(crate) fn schema(s: &Schema) -> pb::Schema {
    pb::Schema { version: s.version, block: Some(block(&s.block)) }
}

fn block(b: &Block) -> pb::schema::Block {
    pb::schema::Block {
        attributes: b.attributes.iter().map(attribute).collect(),
        block_types: b
            .blocks
            .iter()
            .map(|nb| pb::schema::NestedBlock {
                type_name: nb.type_name.clone(),
                block: Some(block(&nb.block)),
                nesting: block_nesting(nb.nesting) as i32,
                min_items: nb.min_items,
                max_items: nb.max_items,
            })
            .collect(),
        description: b.description.clone(),
        description_kind: PLAIN,
        deprecated: b.deprecated,
        ..Default::default()
    }
}

fn attribute(a: &Attribute) -> pb::schema::Attribute {
    // Terraform rejects an attribute that sets both `type` and `nested_type`, so a nested attribute
    // leaves `type` empty.
    let (ty, nested_type) = match &a.nested {
        Some(n) => (
            Vec::new(),
            Some(pb::schema::Object {
                attributes: n.attributes.iter().map(attribute).collect(),
                nesting: object_nesting(n.nesting) as i32,
                ..Default::default()
            }),
        ),
        None => (type_json(a.ty.as_ref().unwrap_or(&Type::Dynamic)), None),
    };
    pb::schema::Attribute {
        name: a.name.clone(),
        r#type: ty,
        nested_type,
        description: a.description.clone(),
        required: a.required,
        optional: a.optional,
        computed: a.computed,
        sensitive: a.sensitive,
        write_only: a.write_only,
        description_kind: PLAIN,
        deprecated: a.deprecated,
        ..Default::default()
    }
}

/// The JSON type form Terraform expects in `Attribute.type`.
pub(crate) fn type_json(ty: &Type) -> Vec<u8> {
    ty.to_json().to_string().into_bytes()
}

fn block_nesting(n: Nesting) -> BlockNesting {
    match n {
        Nesting::Single => BlockNesting::Single,
        Nesting::List => BlockNesting::List,
        Nesting::Set => BlockNesting::Set,
        Nesting::Map => BlockNesting::Map,
        Nesting::Group => BlockNesting::Group,
    }
}

/// Nested attributes have no "group" mode; a group (never null) is a single object there.
fn object_nesting(n: Nesting) -> ObjectNesting {
    match n {
        Nesting::Single | Nesting::Group => ObjectNesting::Single,
        Nesting::List => ObjectNesting::List,
        Nesting::Set => ObjectNesting::Set,
        Nesting::Map => ObjectNesting::Map,
    }
}

pub(crate) fn diagnostics(d: &Diagnostics) -> Vec<pb::Diagnostic> {
    d.iter()
        .map(|d| pb::Diagnostic {
            severity: match d.severity {
                Severity::Error => pb::diagnostic::Severity::Error,
                Severity::Warning => pb::diagnostic::Severity::Warning,
            } as i32,
            summary: d.summary.clone(),
            detail: d.detail.clone(),
            attribute: d.attribute.as_ref().map(attribute_path),
        })
        .collect()
}

pub(crate) fn attribute_path(p: &AttributePath) -> pb::AttributePath {
    use pb::attribute_path::{Step, step::Selector};
    pb::AttributePath {
        steps: p
            .0
            .iter()
            .map(|s| Step {
                selector: Some(match s {
                    PathStep::Attribute(a) => Selector::AttributeName(a.clone()),
                    PathStep::Key(k) => Selector::ElementKeyString(k.clone()),
                    PathStep::Index(i) => Selector::ElementKeyInt(*i),
                }),
            })
            .collect(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use liqo_schema::tf::{Diagnostic, NestedBlock};

    #[test]
    fn nested_attributes_set_only_nested_type() {
        let s = Schema {
            version: 2,
            block: Block::new(
                "A thing.",
                vec![
                    Attribute::required("name", Type::String).describe("Name."),
                    Attribute::nested(
                        "server",
                        Nesting::Single,
                        vec![
                            Attribute::optional("port", Type::Number),
                            Attribute::computed("ips", Type::list(Type::String)),
                        ],
                    )
                    .with_optional(),
                    Attribute::optional("secret", Type::String).sensitive(),
                ],
            )
            .with_block(NestedBlock::single(
                "timeouts",
                Block::new("", vec![Attribute::optional("create", Type::String)]),
            )),
        };
        let p = schema(&s);
        assert_eq!(p.version, 2);
        let b = p.block.unwrap();
        assert_eq!(b.description, "A thing.");
        assert_eq!(b.description_kind, PLAIN);
        let name = &b.attributes[0];
        assert_eq!(name.r#type, br#""string""#.to_vec());
        assert!(name.nested_type.is_none() && name.required && !name.optional);
        let server = &b.attributes[1];
        assert!(server.r#type.is_empty(), "a nested attribute must not also set type");
        let obj = server.nested_type.as_ref().unwrap();
        assert_eq!(obj.nesting, ObjectNesting::Single as i32);
        assert_eq!(obj.attributes[1].r#type, br#"["list","string"]"#.to_vec());
        assert!(obj.attributes[1].computed);
        assert!(b.attributes[2].sensitive);
        assert_eq!(b.block_types[0].type_name, "timeouts");
        assert_eq!(b.block_types[0].nesting, BlockNesting::Single as i32);
    }

    #[test]
    fn diagnostics_keep_their_attribute_path() {
        use pb::attribute_path::step::Selector;
        let d: Diagnostics = Diagnostic::error("bad", "worse")
            .at(AttributePath::root_named("rule").index(1).attr_named("name").key("k"))
            .into();
        let p = diagnostics(&d);
        assert_eq!(p[0].severity, pb::diagnostic::Severity::Error as i32);
        let steps: Vec<_> =
            p[0].attribute.as_ref().unwrap().steps.iter().map(|s| s.selector.clone().unwrap()).collect();
        assert_eq!(
            steps,
            vec![
                Selector::AttributeName("rule".into()),
                Selector::ElementKeyInt(1),
                Selector::AttributeName("name".into()),
                Selector::ElementKeyString("k".into()),
            ]
        );
    }
}
