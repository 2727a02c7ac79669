//! cty values as the provider sees them: every position may be null or unknown.
use std::collections::BTreeMap;
use std::fmt;

/// A cty type. Only the types this provider's schemas use plus `Dynamic`, which the codec must still decode.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Type {
    Bool,
    Number,
    String,
    /// `DynamicPseudoType`: the value carries its own type on the wire.
    Dynamic,
    List(Box<Type>),
    Set(Box<Type>),
    Map(Box<Type>),
    Object(BTreeMap<String, Type>),
    Tuple(Vec<Type>),
}

impl Type {
    pub fn list(t: Type) -> Type {
        Type::List(Box::new(t))
    }
    pub fn set(t: Type) -> Type {
        Type::Set(Box::new(t))
    }
    pub fn map(t: Type) -> Type {
        Type::Map(Box::new(t))
    }
    pub fn object<I: IntoIterator<Item = (S, Type)>, S: Into<String>>(attrs: I) -> Type {
        Type::Object(attrs.into_iter().map(|(k, v)| (k.into(), v)).collect())
    }

    /// The JSON form Terraform expects in `Schema.Attribute.type` (`"string"`, `["list","string"]`, …).
    pub fn to_json(&self) -> serde_json::Value {
        use serde_json::{Value as J, json};
        match self {
            Type::Bool => json!("bool"),
            Type::Number => json!("number"),
            Type::String => json!("string"),
            Type::Dynamic => json!("dynamic"),
            Type::List(t) => json!(["list", t.to_json()]),
            Type::Set(t) => json!(["set", t.to_json()]),
            Type::Map(t) => json!(["map", t.to_json()]),
            Type::Object(attrs) => {
                let m: serde_json::Map<String, J> = attrs.iter().map(|(k, t)| (k.clone(), t.to_json())).collect();
                json!(["object", J::Object(m)])
            }
            Type::Tuple(ts) => json!(["tuple", ts.iter().map(Type::to_json).collect::<Vec<_>>()]),
        }
    }

    /// Parses the JSON type form (used for `DynamicPseudoType` values, which carry their type).
    pub fn from_json(j: &serde_json::Value) -> Option<Type> {
        use serde_json::Value as J;
        match j {
            J::String(s) => match s.as_str() {
                "bool" => Some(Type::Bool),
                "number" => Some(Type::Number),
                "string" => Some(Type::String),
                "dynamic" => Some(Type::Dynamic),
                _ => None,
            },
            J::Array(a) if a.len() >= 2 => match (a[0].as_str()?, &a[1]) {
                ("list", t) => Some(Type::list(Type::from_json(t)?)),
                ("set", t) => Some(Type::set(Type::from_json(t)?)),
                ("map", t) => Some(Type::map(Type::from_json(t)?)),
                ("object", J::Object(m)) => {
                    let mut attrs = BTreeMap::new();
                    for (k, v) in m {
                        attrs.insert(k.clone(), Type::from_json(v)?);
                    }
                    Some(Type::Object(attrs))
                }
                ("tuple", J::Array(ts)) => Some(Type::Tuple(ts.iter().map(Type::from_json).collect::<Option<_>>()?)),
                _ => None,
            },
            _ => None,
        }
    }
}

/// A cty value. Collections keep their kind so that sets and lists round-trip as Terraform sent them.
#[derive(Clone, Debug, PartialEq, Default)]
pub enum Value {
    #[default]
    Null,
    /// Not known until apply. Refined unknowns (cty refinements) are treated as plain unknowns.
    Unknown,
    Bool(bool),
    /// cty numbers are arbitrary precision; every number this provider handles fits an f64 exactly.
    Number(f64),
    String(String),
    List(Vec<Value>),
    Set(Vec<Value>),
    Map(BTreeMap<String, Value>),
    Object(BTreeMap<String, Value>),
    Tuple(Vec<Value>),
}

static NULL: Value = Value::Null;

/// The name of one attribute of a schema, as a constant its schema declares (`attributes!` in the provider): code
/// reads and writes attributes through these, so a misspelt attribute does not compile. Code that walks a schema
/// by name (the protocol layer, the schema itself) uses the `_named` accessors instead.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Key(&'static str);

impl Key {
    /// Only `attributes!` (and a schema walker's tests) should call this: a key is declared once, with its schema.
    pub const fn new(name: &'static str) -> Key {
        Key(name)
    }
    pub const fn name(self) -> &'static str {
        self.0
    }
    /// The path of this attribute at the root of its block.
    pub fn path(self) -> AttributePath {
        AttributePath::root(self)
    }
}

/// Tests and messages compare attribute names read back from a schema or a path with declared keys.
impl PartialEq<Key> for String {
    fn eq(&self, key: &Key) -> bool {
        self == key.0
    }
}

impl PartialEq<Key> for &str {
    fn eq(&self, key: &Key) -> bool {
        *self == key.0
    }
}

impl AsRef<str> for Key {
    fn as_ref(&self) -> &str {
        self.0
    }
}

impl From<Key> for String {
    fn from(key: Key) -> String {
        key.0.to_string()
    }
}

impl fmt::Display for Key {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.0)
    }
}

impl Value {
    pub fn string(s: impl Into<String>) -> Value {
        Value::String(s.into())
    }
    pub fn object<I: IntoIterator<Item = (S, Value)>, S: Into<String>>(attrs: I) -> Value {
        Value::Object(attrs.into_iter().map(|(k, v)| (k.into(), v)).collect())
    }
    pub fn string_list<I: IntoIterator<Item = S>, S: Into<String>>(items: I) -> Value {
        Value::List(items.into_iter().map(|s| Value::String(s.into())).collect())
    }
    pub fn string_map<I: IntoIterator<Item = (K, V)>, K: Into<String>, V: Into<String>>(items: I) -> Value {
        Value::Map(items.into_iter().map(|(k, v)| (k.into(), Value::String(v.into()))).collect())
    }
    /// `Some(s)` → string, `None` → null.
    pub fn opt_string(s: Option<impl Into<String>>) -> Value {
        s.map(|s| Value::String(s.into())).unwrap_or(Value::Null)
    }

    pub fn is_null(&self) -> bool {
        matches!(self, Value::Null)
    }
    pub fn is_unknown(&self) -> bool {
        matches!(self, Value::Unknown)
    }
    /// True when neither this value nor anything inside it is unknown.
    pub fn is_wholly_known(&self) -> bool {
        match self {
            Value::Unknown => false,
            Value::List(v) | Value::Set(v) | Value::Tuple(v) => v.iter().all(Value::is_wholly_known),
            Value::Map(m) | Value::Object(m) => m.values().all(Value::is_wholly_known),
            _ => true,
        }
    }

    /// Attribute of an object; null when absent or when `self` is not an object.
    pub fn get(&self, key: Key) -> &Value {
        self.get_named(key.0)
    }
    /// Mutable attribute of an object (inserted as null when absent). Panics if `self` is not an object:
    /// callers only use it on values built from a resource's own schema.
    pub fn get_mut(&mut self, key: Key) -> &mut Value {
        self.get_mut_named(key.0)
    }
    pub fn set(&mut self, key: Key, v: Value) {
        *self.get_mut(key) = v;
    }
    /// [`Value::get`] by a name read from a schema or from the wire.
    pub fn get_named(&self, name: &str) -> &Value {
        match self {
            Value::Object(m) => m.get(name).unwrap_or(&NULL),
            _ => &NULL,
        }
    }
    /// [`Value::get_mut`] by a name read from a schema or from the wire.
    pub fn get_mut_named(&mut self, name: &str) -> &mut Value {
        match self {
            Value::Object(m) => m.entry(name.to_string()).or_default(),
            other => panic!("get_mut({name}) on non-object value {other:?}"),
        }
    }
    /// [`Value::set`] by a name read from a schema or from the wire.
    pub fn set_named(&mut self, name: &str, v: Value) {
        *self.get_mut_named(name) = v;
    }

    pub fn as_str(&self) -> Option<&str> {
        match self {
            Value::String(s) => Some(s),
            _ => None,
        }
    }
    pub fn as_bool(&self) -> Option<bool> {
        match self {
            Value::Bool(b) => Some(*b),
            _ => None,
        }
    }
    pub fn as_f64(&self) -> Option<f64> {
        match self {
            Value::Number(n) => Some(*n),
            _ => None,
        }
    }
    /// The number as an integer, if it is one.
    pub fn as_i64(&self) -> Option<i64> {
        match self {
            Value::Number(n) if n.fract() == 0.0 && n.abs() < 9.0e15 => Some(*n as i64),
            _ => None,
        }
    }
    /// Elements of a list, set or tuple (empty for anything else, null included).
    pub fn elements(&self) -> &[Value] {
        match self {
            Value::List(v) | Value::Set(v) | Value::Tuple(v) => v,
            _ => &[],
        }
    }
    /// Entries of a map or object (None for anything else).
    pub fn entries(&self) -> Option<&BTreeMap<String, Value>> {
        match self {
            Value::Map(m) | Value::Object(m) => Some(m),
            _ => None,
        }
    }
    /// Strings of a known list/set of known strings.
    pub fn string_elements(&self) -> Option<Vec<String>> {
        self.elements().iter().map(|v| v.as_str().map(str::to_string)).collect()
    }
    /// The string entries of a map or object (entries that are not known strings left out); None for anything else.
    pub fn string_entries(&self) -> Option<BTreeMap<String, String>> {
        self.entries().map(|m| m.iter().filter_map(|(k, v)| Some((k.clone(), v.as_str()?.to_string()))).collect())
    }
}

/// One step of an attribute path.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum PathStep {
    Attribute(String),
    Key(String),
    Index(i64),
}

/// A path to an attribute, e.g. `server.node_port` or `resources["cpu"]`.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct AttributePath(pub Vec<PathStep>);

impl AttributePath {
    pub fn root(key: Key) -> AttributePath {
        AttributePath::root_named(key.0)
    }
    /// [`AttributePath::root`] by a name read from a schema.
    pub fn root_named(name: &str) -> AttributePath {
        AttributePath(vec![PathStep::Attribute(name.to_string())])
    }
    pub fn attr(self, key: Key) -> AttributePath {
        self.attr_named(key.0)
    }
    /// [`AttributePath::attr`] by a name read from a schema.
    pub fn attr_named(mut self, name: &str) -> AttributePath {
        self.0.push(PathStep::Attribute(name.to_string()));
        self
    }
    pub fn key(mut self, key: &str) -> AttributePath {
        self.0.push(PathStep::Key(key.to_string()));
        self
    }
    pub fn index(mut self, i: i64) -> AttributePath {
        self.0.push(PathStep::Index(i));
        self
    }
}

impl fmt::Display for AttributePath {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, s) in self.0.iter().enumerate() {
            match s {
                PathStep::Attribute(a) if i == 0 => write!(f, "{a}")?,
                PathStep::Attribute(a) => write!(f, ".{a}")?,
                PathStep::Key(k) => write!(f, "[{k:?}]")?,
                PathStep::Index(n) => write!(f, "[{n}]")?,
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn type_json_round_trips() {
        let t = Type::object([("a", Type::list(Type::String)), ("b", Type::map(Type::Number))]);
        assert_eq!(t.to_json().to_string(), r#"["object",{"a":["list","string"],"b":["map","number"]}]"#);
        assert_eq!(Type::from_json(&t.to_json()), Some(t));
    }

    #[test]
    fn path_display_is_terraform_like() {
        let p = AttributePath::root(Key::new("resources")).key("cpu");
        assert_eq!(p.to_string(), r#"resources["cpu"]"#);
        let nested = AttributePath::root(Key::new("server")).attr(Key::new("node_port")).index(2);
        assert_eq!(nested.to_string(), "server.node_port[2]");
    }

    #[test]
    fn known_ness_is_deep() {
        let v = Value::object([("a", Value::List(vec![Value::Unknown]))]);
        assert!(!v.is_wholly_known());
        assert!(v.get(Key::new("missing")).is_null());
        assert_eq!(Value::Number(30742.0).as_i64(), Some(30742));
        assert_eq!(Value::Number(1.5).as_i64(), None);
    }
}
