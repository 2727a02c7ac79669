//! Resource, data-source and provider schemas, with builders that keep resource modules short.
use super::Type;
use std::collections::BTreeMap;

/// A versioned schema. Bump `version` when the state layout changes and teach the resource to upgrade.
#[derive(Clone, Debug, Default)]
pub struct Schema {
    pub version: i64,
    pub block: Block,
}

#[derive(Clone, Debug, Default)]
pub struct Block {
    pub description: String,
    pub attributes: Vec<Attribute>,
    pub blocks: Vec<NestedBlock>,
    pub deprecated: bool,
}

/// How a nested attribute or block holds its objects.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Nesting {
    Single,
    List,
    Set,
    Map,
    /// Blocks only: a single block that is never null.
    Group,
}

/// Protocol-6 nested attribute (`server = { … }`): only `nested` is set, never a plain type.
#[derive(Clone, Debug)]
pub struct NestedType {
    pub nesting: Nesting,
    pub attributes: Vec<Attribute>,
}

#[derive(Clone, Debug)]
pub struct Attribute {
    pub name: String,
    /// Exactly one of `ty` and `nested` is set (Terraform rejects a schema that sets both).
    pub ty: Option<Type>,
    pub nested: Option<NestedType>,
    pub description: String,
    pub required: bool,
    pub optional: bool,
    pub computed: bool,
    pub sensitive: bool,
    /// Taken from the configuration only and never stored: Terraform keeps it out of plans and state, and the
    /// protocol layer returns it as null in every state (Terraform ≥ 1.11, OpenTofu ≥ 1.11).
    pub write_only: bool,
    pub deprecated: bool,
}

#[derive(Clone, Debug)]
pub struct NestedBlock {
    pub type_name: String,
    pub block: Block,
    pub nesting: Nesting,
    pub min_items: i64,
    pub max_items: i64,
}

impl Attribute {
    fn new(name: &str, ty: Type) -> Attribute {
        Attribute {
            name: name.to_string(),
            ty: Some(ty),
            nested: None,
            description: String::new(),
            required: false,
            optional: false,
            computed: false,
            sensitive: false,
            write_only: false,
            deprecated: false,
        }
    }
    pub fn required(name: &str, ty: Type) -> Attribute {
        Attribute { required: true, ..Attribute::new(name, ty) }
    }
    pub fn optional(name: &str, ty: Type) -> Attribute {
        Attribute { optional: true, ..Attribute::new(name, ty) }
    }
    /// Optional in config, computed by the provider when omitted (defaults, values read from the cluster).
    pub fn optional_computed(name: &str, ty: Type) -> Attribute {
        Attribute { optional: true, computed: true, ..Attribute::new(name, ty) }
    }
    pub fn computed(name: &str, ty: Type) -> Attribute {
        Attribute { computed: true, ..Attribute::new(name, ty) }
    }
    /// A nested attribute holding objects with `attributes`.
    pub fn nested(name: &str, nesting: Nesting, attributes: Vec<Attribute>) -> Attribute {
        Attribute { ty: None, nested: Some(NestedType { nesting, attributes }), ..Attribute::new(name, Type::Dynamic) }
    }
    pub fn with_required(mut self) -> Attribute {
        self.required = true;
        self.optional = false;
        self
    }
    pub fn with_optional(mut self) -> Attribute {
        self.optional = true;
        self.required = false;
        self
    }
    pub fn with_computed(mut self) -> Attribute {
        self.computed = true;
        self
    }
    pub fn sensitive(mut self) -> Attribute {
        self.sensitive = true;
        self
    }
    pub fn write_only(mut self) -> Attribute {
        self.write_only = true;
        self
    }
    pub fn describe(mut self, text: impl Into<String>) -> Attribute {
        self.description = text.into();
        self
    }

    /// The cty type of this attribute's value.
    pub fn implied_type(&self) -> Type {
        match (&self.ty, &self.nested) {
            (Some(t), _) => t.clone(),
            (None, Some(n)) => {
                let obj = Type::Object(n.attributes.iter().map(|a| (a.name.clone(), a.implied_type())).collect());
                match n.nesting {
                    Nesting::Single | Nesting::Group => obj,
                    Nesting::List => Type::list(obj),
                    Nesting::Set => Type::set(obj),
                    Nesting::Map => Type::map(obj),
                }
            }
            (None, None) => Type::Dynamic,
        }
    }
}

impl Block {
    pub fn new(description: impl Into<String>, attributes: Vec<Attribute>) -> Block {
        Block { description: description.into(), attributes, blocks: Vec::new(), deprecated: false }
    }
    pub fn with_block(mut self, b: NestedBlock) -> Block {
        self.blocks.push(b);
        self
    }

    /// The object type of a value conforming to this block.
    pub fn implied_type(&self) -> Type {
        let mut attrs: BTreeMap<String, Type> =
            self.attributes.iter().map(|a| (a.name.clone(), a.implied_type())).collect();
        for b in &self.blocks {
            let obj = b.block.implied_type();
            let t = match b.nesting {
                Nesting::Single | Nesting::Group => obj,
                Nesting::List => Type::list(obj),
                Nesting::Set => Type::set(obj),
                Nesting::Map => Type::map(obj),
            };
            attrs.insert(b.type_name.clone(), t);
        }
        Type::Object(attrs)
    }

    pub fn attribute(&self, name: impl AsRef<str>) -> Option<&Attribute> {
        self.attributes.iter().find(|a| a.name == name.as_ref())
    }
}

impl NestedBlock {
    pub fn single(type_name: &str, block: Block) -> NestedBlock {
        NestedBlock { type_name: type_name.to_string(), block, nesting: Nesting::Single, min_items: 0, max_items: 0 }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nested_attribute_has_no_plain_type() {
        let a = Attribute::nested("server", Nesting::Single, vec![Attribute::optional("port", Type::Number)]);
        assert!(a.ty.is_none());
        assert_eq!(a.implied_type(), Type::object([("port", Type::Number)]));
    }

    #[test]
    fn block_type_includes_nested_blocks() {
        let b = Block::new("r", vec![Attribute::required("name", Type::String)]).with_block(NestedBlock::single(
            "timeouts",
            Block::new("t", vec![Attribute::optional("create", Type::String)]),
        ));
        assert_eq!(
            b.implied_type(),
            Type::object([("name", Type::String), ("timeouts", Type::object([("create", Type::String)]))])
        );
    }
}
