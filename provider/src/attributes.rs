//! One declaration per attribute. A resource, data source or provider block declares its attributes once, with
//! [`attributes!`]: each entry's name becomes a [`Key`] constant that every read and write of that attribute goes
//! through (so a misspelt attribute does not compile), and its [`Decl`] says everything else about it — type, how
//! it is set, sensitivity, its plan-time check, and its plan behaviour (replace on change, default, computed
//! output). The schema Terraform sees, the generic checks ([`crate::validate::Validator::declared`]) and the
//! lifecycle's plan rules are all read from that one list.
use std::ops::RangeInclusive;

use liqo_schema::tf::{Attribute, Block, Nesting, Type, Value};

pub use liqo_schema::tf::Key;

/// Declares the attributes of one block: `name: <Decl expression>;` per attribute, in schema order. Expands to a
/// [`Key`] constant per attribute (spelled as the attribute, as Terraform users write it) and `declared()`, the
/// block's [`Decl`]s. A nested attribute's children are declared in a module of the same name beside its key.
///
/// A block that code reads and writes as a whole opens with `struct <Name>;` and gives each attribute its Rust type:
/// `name: <type> = <Decl expression>;`. That also makes `<Name>`, the block's typed model: one field per attribute,
/// read from a [`Value`] (a null one as its declared default) and written back by [`Field`], so an attribute is one
/// line here and its uses, never a hand-written reader or writer.
macro_rules! attributes {
    (struct $model:ident; $($(#[$doc:meta])* $name:ident: $ty:ty = $decl:expr;)+) => {
        $crate::attributes::attributes!($($(#[$doc])* $name: $decl;)+);

        /// This block's attributes as Rust values (see `attributes!`).
        #[derive(Clone, Debug, PartialEq)]
        pub struct $model {
            $($(#[$doc])* pub $name: $ty,)+
        }

        impl $crate::attributes::Field for $model {
            fn read(block: &liqo_schema::tf::Value) -> $model {
                let decls = declared();
                $model { $($name: $crate::attributes::read_declared(&decls, block, $name),)+ }
            }
            fn write(&self) -> liqo_schema::tf::Value {
                liqo_schema::tf::Value::object([$(($name, $crate::attributes::Field::write(&self.$name))),+])
            }
        }

        // A nested block's model may be reached only through its parent's.
        #[allow(dead_code)]
        impl $model {
            /// The block's values as [`Field::read`] makes them of `block`.
            pub fn of(block: &liqo_schema::tf::Value) -> $model {
                $crate::attributes::Field::read(block)
            }
            /// Every attribute at its declared default (null, empty or `None` where it has none): the seed of a
            /// state built from the cluster, such as an import's.
            pub fn defaults() -> $model {
                $crate::attributes::Field::read(&liqo_schema::tf::Value::Null)
            }
            /// The block as a value ([`Field::write`]).
            pub fn value(&self) -> liqo_schema::tf::Value {
                $crate::attributes::Field::write(self)
            }
        }
    };
    ($($(#[$doc:meta])* $name:ident: $decl:expr;)+) => {
        $(
            $(#[$doc])*
            #[allow(non_upper_case_globals)]
            pub const $name: $crate::attributes::Key =
                $crate::attributes::Key::new($crate::attributes::unraw(stringify!($name)));
        )+
        /// Every attribute of this block, in schema order.
        pub fn declared() -> Vec<$crate::attributes::Decl> {
            vec![$(($decl).named($name)),+]
        }
    };
}
pub(crate) use attributes;

/// An attribute named like a Rust keyword is declared as a raw identifier (`r#type`); its name drops the `r#`.
pub const fn unraw(name: &'static str) -> &'static str {
    match name.as_bytes() {
        [b'r', b'#', rest @ ..] => match std::str::from_utf8(rest) {
            Ok(name) => name,
            Err(_) => panic!("attribute names are ASCII"),
        },
        _ => name,
    }
}

/// A plan-time check of one attribute's value, run when the value is known (unknown and null values pass;
/// a missing required one is [`crate::validate::Validator::required`]'s). Each names the attribute and the fix ([`crate::validate`]).
#[derive(Clone, Debug)]
pub enum Check {
    /// A Liqo cluster ID (a DNS label).
    ClusterId,
    /// A Kubernetes namespace name.
    Namespace,
    /// The name of a namespaced Kubernetes object (a DNS subdomain) of this kind; the text says where it comes from.
    ObjectName { kind: &'static str, fix: &'static str },
    /// A Go-style duration (`90s`, `1h30m`).
    Duration,
    /// A WireGuard public key (32 bytes, standard base64).
    WireguardKey,
    /// A CIDR.
    Cidr,
    /// One of these strings (case-sensitive).
    OneOf(&'static [&'static str]),
    /// A whole number in this range.
    Port(RangeInclusive<i64>),
    /// An API server URL; the text shows a good value.
    ApiServerUrl(&'static str),
    /// The URL of a proxy to an API server (a kubeconfig's `proxy-url`).
    ProxyUrl,
    /// PEM CA certificate(s); the text says where they come from.
    CaBundle(&'static str),
    /// A map of Kubernetes resource names to quantities (`{ cpu = "4", memory = "8Gi" }`).
    Quantities,
    /// A map of Kubernetes label keys to label values.
    Labels,
    /// A qualified name such as `example.com/owner` (a label or annotation key, a load-balancer class), or each
    /// key of a map; `what` names it, `example` shows a good one.
    QualifiedName { what: &'static str, example: &'static str },
}

/// Everything about one attribute but its name, which [`attributes!`] gives it from the constant's.
#[derive(Clone, Debug)]
pub struct Decl {
    pub key: Key,
    schema: Attribute,
    children: Vec<Decl>,
    /// Liqo treats it as immutable: a change replaces the resource.
    pub replace_on_change: bool,
    /// An optional nested object that gives the resource its kind: setting or removing it replaces the resource.
    pub replace_on_presence_change: bool,
    /// A computed output: unknown on create and on replacement, the prior value otherwise.
    pub output: bool,
    /// The value planned when the configuration leaves it null (defaults follow the configuration, not the prior
    /// state, so removing an explicit value restores the default).
    pub default: Option<Value>,
    pub check: Option<Check>,
    /// A name of the Go provider published as `liqotech/liqo` before this one, which 1.x does not use: what to
    /// write instead ([`removed`]).
    pub removed: Option<&'static str>,
}

fn decl(schema: Attribute) -> Decl {
    Decl {
        key: Key::new(""),
        schema,
        children: Vec::new(),
        replace_on_change: false,
        replace_on_presence_change: false,
        output: false,
        default: None,
        check: None,
        removed: None,
    }
}

pub fn required(ty: Type) -> Decl {
    decl(Attribute::required("", ty))
}
pub fn optional(ty: Type) -> Decl {
    decl(Attribute::optional("", ty))
}
/// Optional in the configuration, computed by the provider when omitted (defaults, values read from the cluster).
pub fn optional_computed(ty: Type) -> Decl {
    decl(Attribute::optional_computed("", ty))
}
pub fn computed(ty: Type) -> Decl {
    decl(Attribute::computed("", ty))
}
/// An argument or attribute of the Go provider 0.0.x (Liqo 0.x) or 0.1.x (a wrapper of `liqoctl peer`), both
/// published as `liqotech/liqo`, that this provider does not have; `instead` says what replaces it. It stays in the
/// schema (optional, of any type) so that a configuration written for those providers reaches this
/// provider's validation, which answers with one error per resource naming the 1.x way and the upgrade guide
/// ([`crate::validate::Validator::removed`]), instead of Terraform's bare "Unsupported argument" or "Unsupported
/// attribute" (as the plugin SDK's `Removed` schema field does). It is never set, so its value is always null. Not
/// marked deprecated: Terraform would add a warning per argument to the one error.
pub fn removed(instead: &'static str) -> Decl {
    let schema = Attribute::optional("", Type::Dynamic).describe(format!("{REMOVED_NOTE}{instead}"));
    Decl { removed: Some(instead), ..decl(schema) }
}
/// The [`removed`] attributes `object` (a configuration or a state) sets: a block written for the Go provider 0.x,
/// or an object that provider made.
pub fn removed_set<'a>(decls: &'a [Decl], object: &Value) -> Vec<&'a Decl> {
    decls.iter().filter(|d| d.removed.is_some() && !object.get(d.key).is_null()).collect()
}

/// A stored state the Go provider 0.x wrote (it sets a [`removed`] attribute), made decodable with this schema: each
/// such value becomes a string (whatever its old type), since it only shows where the state came from. `None`
/// for any other state.
pub fn go_provider_state(decls: &[Decl], state: &serde_json::Value) -> Option<serde_json::Value> {
    let mut state = state.clone();
    let object = state.as_object_mut()?;
    let mut found = false;
    for d in decls.iter().filter(|d| d.removed.is_some()) {
        if let Some(old) = object.get_mut(d.key.name()).filter(|v| !v.is_null()) {
            let text = old.as_str().map(str::to_string).unwrap_or_else(|| old.to_string());
            *old = serde_json::json!({"value": text, "type": "string"});
            found = true;
        }
    }
    found.then_some(state)
}

/// An optional nested attribute holding objects of `children` (a nested module's `declared()`).
pub fn nested(nesting: Nesting, children: Vec<Decl>) -> Decl {
    let schema = Attribute::nested("", nesting, Vec::new()).with_optional();
    Decl { children, ..decl(schema) }
}

impl Decl {
    /// The name, from [`attributes!`].
    pub fn named(mut self, key: Key) -> Decl {
        self.key = key;
        self.schema.name = key.name().to_string();
        self
    }
    pub fn describe(mut self, text: impl Into<String>) -> Decl {
        self.schema.description = text.into();
        self
    }
    /// A nested attribute only the provider sets.
    pub fn computed(mut self) -> Decl {
        self.schema.optional = false;
        self.schema.required = false;
        self.schema.computed = true;
        self
    }
    /// A nested attribute that must be set.
    pub fn required(mut self) -> Decl {
        self.schema = self.schema.with_required();
        self
    }
    pub fn sensitive(mut self) -> Decl {
        self.schema = self.schema.sensitive();
        self
    }
    pub fn write_only(mut self) -> Decl {
        self.schema = self.schema.write_only();
        self
    }
    pub fn replace_on_change(mut self) -> Decl {
        self.replace_on_change = true;
        self
    }
    pub fn replace_on_presence_change(mut self) -> Decl {
        self.replace_on_presence_change = true;
        self
    }
    pub fn output(mut self) -> Decl {
        self.output = true;
        self
    }
    pub fn default(mut self, value: Value) -> Decl {
        self.default = Some(value);
        self
    }
    pub fn check(mut self, check: Check) -> Decl {
        self.check = Some(check);
        self
    }

    /// Whether the declaration is a required one (whoever checks it: see [`block`]).
    pub fn is_required(&self) -> bool {
        self.schema.required
    }
    pub fn description(&self) -> &str {
        &self.schema.description
    }
    /// The attributes of the objects a nested attribute holds (empty for a plain one).
    pub fn children(&self) -> &[Decl] {
        &self.children
    }
    /// How a nested attribute holds its objects; `None` for a plain attribute.
    pub fn nesting(&self) -> Option<Nesting> {
        self.schema.nested.as_ref().map(|n| n.nesting)
    }

    /// The attribute as Terraform's schema shows it.
    pub fn attribute(&self) -> Attribute {
        let mut attribute = self.schema.clone();
        if let Some(nested) = attribute.nested.as_mut() {
            nested.attributes = self.children.iter().map(Decl::attribute).collect();
        }
        attribute
    }
}

/// Opens the description of a required top-level attribute: Terraform's schema calls it optional (see [`block`]),
/// so editors and the documentation (`docs.sh` reads it back) learn it from here.
pub const REQUIRED_NOTE: &str = "Required. ";
/// Opens the description of a [`removed`] attribute; `docs.sh` leaves such attributes out of the resource pages
/// (the upgrade guide lists them).
pub const REMOVED_NOTE: &str = "Removed (a name of the Go provider 0.x). ";

/// A block of declared attributes as Terraform's schema shows it. A required top-level attribute is shown as
/// optional, and the provider requires it when a create is applied ([`crate::validate::Validator::required`]): Terraform
/// rejects a block that lacks a required attribute before the provider sees it, so a configuration written for the
/// Go provider 0.x would get Terraform's bare "Missing required argument" instead of the error that names the 1.x
/// way ([`removed`]). Nested attributes keep Terraform's check.
pub fn block(description: impl Into<String>, decls: &[Decl]) -> Block {
    let attributes = decls
        .iter()
        .map(|d| {
            let mut attribute = d.attribute();
            if attribute.required {
                attribute.required = false;
                attribute.optional = true;
                attribute.description = format!("{REQUIRED_NOTE}{}", attribute.description);
            }
            attribute
        })
        .collect();
    Block::new(description, attributes)
}

/// Whether Terraform's schema shows `attribute` as a required top-level one ([`block`]).
#[cfg(test)]
pub fn shown_required(attribute: &Attribute) -> bool {
    attribute.optional && !attribute.required && attribute.description.starts_with(REQUIRED_NOTE)
}

/// How an attribute's value maps to the Rust type its block's typed model ([`attributes!`]) holds it in. Reading is
/// total: a null or unknown value reads as the type's empty value (`None`, `""`, `false`, `0`, an empty collection),
/// so a model is read from a plan, a state or nothing alike; a field whose unknown-ness matters is a [`Value`].
pub trait Field: Sized {
    fn read(value: &Value) -> Self;
    fn write(&self) -> Value;
}

/// The model's value of `key` in `block`: the declared default when it is null.
pub fn read_declared<T: Field>(decls: &[Decl], block: &Value, key: Key) -> T {
    match block.get(key) {
        Value::Null => T::read(&default_of(decls, key)),
        value => T::read(value),
    }
}

/// A field the resource never writes: `id`, which the lifecycle driver sets, and the [`removed`] names. Reads as
/// nothing, writes null.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Unset;

impl Field for Unset {
    fn read(_: &Value) -> Unset {
        Unset
    }
    fn write(&self) -> Value {
        Value::Null
    }
}

impl Field for Value {
    fn read(value: &Value) -> Value {
        value.clone()
    }
    fn write(&self) -> Value {
        self.clone()
    }
}

impl Field for String {
    fn read(value: &Value) -> String {
        value.as_str().unwrap_or_default().to_string()
    }
    fn write(&self) -> Value {
        Value::string(self)
    }
}

impl Field for bool {
    fn read(value: &Value) -> bool {
        value.as_bool().unwrap_or_default()
    }
    fn write(&self) -> Value {
        Value::Bool(*self)
    }
}

impl Field for i64 {
    fn read(value: &Value) -> i64 {
        value.as_i64().unwrap_or_default()
    }
    fn write(&self) -> Value {
        Value::Number(*self as f64)
    }
}

/// Null (or unknown) is `None`.
impl<T: Field> Field for Option<T> {
    fn read(value: &Value) -> Option<T> {
        (!value.is_null() && !value.is_unknown()).then(|| T::read(value))
    }
    fn write(&self) -> Value {
        self.as_ref().map(Field::write).unwrap_or_default()
    }
}

/// A list attribute (a list of nested objects too).
impl<T: Field> Field for Vec<T> {
    fn read(value: &Value) -> Vec<T> {
        value.elements().iter().map(T::read).collect()
    }
    fn write(&self) -> Value {
        Value::List(self.iter().map(Field::write).collect())
    }
}

/// A set attribute.
impl<T: Field + Ord> Field for std::collections::BTreeSet<T> {
    fn read(value: &Value) -> Self {
        value.elements().iter().map(T::read).collect()
    }
    fn write(&self) -> Value {
        Value::Set(self.iter().map(Field::write).collect())
    }
}

/// A map attribute.
impl<T: Field> Field for std::collections::BTreeMap<String, T> {
    fn read(value: &Value) -> Self {
        value.entries().into_iter().flatten().map(|(k, v)| (k.clone(), T::read(v))).collect()
    }
    fn write(&self) -> Value {
        Value::Map(self.iter().map(|(k, v)| (k.clone(), v.write())).collect())
    }
}

/// The declared default of `key` (null when it has none).
pub fn default_of(decls: &[Decl], key: Key) -> Value {
    decls.iter().find(|d| d.key == key).and_then(|d| d.default.clone()).unwrap_or_default()
}

/// The computed outputs among `decls`.
pub fn outputs(decls: &[Decl]) -> impl Iterator<Item = Key> + '_ {
    decls.iter().filter(|d| d.output).map(|d| d.key)
}

#[cfg(test)]
mod tests {
    use std::collections::{BTreeMap, BTreeSet};

    use liqo_schema::tf::{Nesting, Type, Value};

    use super::Field;

    mod attr {
        use super::*;
        use crate::attributes::*;
        attributes! {
            struct Block;
            id: Unset = computed(Type::String);
            name: String = required(Type::String);
            port: i64 = optional_computed(Type::Number).default(Value::Number(51840.0));
            wait: bool = optional_computed(Type::Bool).default(Value::Bool(true));
            note: Option<String> = optional(Type::String);
            tags: BTreeSet<String> = optional(Type::set(Type::String));
            labels: BTreeMap<String, String> = optional(Type::map(Type::String));
            pending: Value = computed(Type::String);
            items: Vec<item::Item> = nested(Nesting::List, item::declared());
        }
        pub mod item {
            use crate::attributes::*;
            use liqo_schema::tf::Type;
            attributes! {
                struct Item;
                key: String = required(Type::String);
                values: Option<Vec<String>> = optional(Type::list(Type::String));
            }
        }
    }

    #[test]
    fn a_model_reads_nulls_as_the_declared_defaults_and_writes_back_what_it_read() {
        let defaults = attr::Block::defaults();
        assert_eq!((defaults.port, defaults.wait, defaults.note.clone()), (51840, true, None));
        assert!(defaults.name.is_empty() && defaults.tags.is_empty() && defaults.items.is_empty());

        let value = Value::object([
            (attr::id, Value::string("ignored: the driver sets it")),
            (attr::name, Value::string("milan")),
            (attr::port, Value::Number(30000.0)),
            (attr::wait, Value::Bool(false)),
            (attr::note, Value::Unknown),
            (attr::tags, Value::Set(vec![Value::string("b"), Value::string("a")])),
            (attr::labels, Value::string_map([("k", "v")])),
            (attr::pending, Value::Unknown),
            (
                attr::items,
                Value::List(vec![Value::object([
                    (attr::item::key, Value::string("zone")),
                    (attr::item::values, Value::string_list(["a"])),
                ])]),
            ),
        ]);
        let model = attr::Block::of(&value);
        assert_eq!((model.name.as_str(), model.port, model.wait), ("milan", 30000, false));
        assert_eq!(model.note, None, "an unknown value reads as none");
        assert_eq!(model.items[0].values, Some(vec!["a".to_string()]));
        let written = model.value();
        assert!(written.get(attr::id).is_null(), "the driver owns id");
        assert!(written.get(attr::pending).is_unknown(), "a Value field keeps unknown-ness");
        assert_eq!(written.get(attr::tags), &Value::Set(vec![Value::string("a"), Value::string("b")]));
        assert_eq!(written.get(attr::labels), value.get(attr::labels));
        assert_eq!(written.get(attr::items), value.get(attr::items));
        assert_eq!(attr::Block::read(&written), model);
    }
}
