//! cty values on the wire, following go-cty's `msgpack` and `json` packages.
//!
//! Terraform sends config, plans and state as msgpack and stored state (UpgradeResourceState) as JSON. The
//! decoders are pure functions of (bytes, type): they never panic, bound their allocations by the input size
//! and their recursion by [`MAX_DEPTH`], and report errors with the attribute path where decoding stopped.
//!
//! msgpack rules (go-cty `msgpack/marshal.go`, `unmarshal.go`, `unknown.go`, `dynamic.go`):
//! * null is `nil` at any position; unknown is extension type 0 with one zero byte (`d4 00 00`). A refined
//!   unknown is extension type 12 whose payload lists refinements; the provider does not use refinements,
//!   so any extension of length ≤ 1, or type 12, decodes as [`Value::Unknown`].
//! * numbers: an integer that fits i64 is written in the smallest integer form, other finite numbers as
//!   float64, and numbers too large or precise for either as a decimal string; all three forms decode.
//! * objects and maps are msgpack maps (object attributes in byte order of their names); lists, sets and
//!   tuples are arrays; a `dynamic` value is the array `[type as JSON bytes, value]`.
use liqo_schema::tf::{AttributePath, PathStep, Type, Value};
use rmp::Marker;
use std::collections::BTreeMap;
use std::fmt;

/// Deepest nesting of values the decoders accept. Schema types are shallow; only `dynamic` values carry
/// their own (attacker-sized) type, and this keeps a hostile input from exhausting the stack.
pub const MAX_DEPTH: usize = 64;

/// Extension type of a refined unknown value (go-cty `unknownWithRefinementsExt`).
const EXT_REFINED_UNKNOWN: i8 = 12;

/// A value that does not match the expected type or is not valid msgpack/JSON.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DecodeError {
    pub path: AttributePath,
    pub message: String,
}

/// A value that cannot be written as the given type: a provider bug, reported with its path.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct EncodeError {
    pub path: AttributePath,
    pub message: String,
}

fn fmt_at(f: &mut fmt::Formatter<'_>, path: &AttributePath, message: &str) -> fmt::Result {
    if path.0.is_empty() { write!(f, "{message}") } else { write!(f, "{path}: {message}") }
}

impl fmt::Display for DecodeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt_at(f, &self.path, &self.message)
    }
}
impl std::error::Error for DecodeError {}

impl fmt::Display for EncodeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt_at(f, &self.path, &self.message)
    }
}
impl std::error::Error for EncodeError {}

/// Human name of a type for error messages ("list of string").
fn type_name(ty: &Type) -> String {
    match ty {
        Type::Bool => "bool".into(),
        Type::Number => "number".into(),
        Type::String => "string".into(),
        Type::Dynamic => "dynamic value".into(),
        Type::List(t) => format!("list of {}", type_name(t)),
        Type::Set(t) => format!("set of {}", type_name(t)),
        Type::Map(t) => format!("map of {}", type_name(t)),
        Type::Object(_) => "object".into(),
        Type::Tuple(ts) => format!("tuple of {} elements", ts.len()),
    }
}

fn value_kind(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Unknown => "unknown",
        Value::Bool(_) => "bool",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::List(_) => "list",
        Value::Set(_) => "set",
        Value::Map(_) => "map",
        Value::Object(_) => "object",
        Value::Tuple(_) => "tuple",
    }
}

// ---------------------------------------------------------------------------------------------------------
// msgpack decoding

/// Decodes a msgpack DynamicValue of type `ty`.
pub fn decode(bytes: &[u8], ty: &Type) -> Result<Value, DecodeError> {
    let mut d = Decoder { buf: bytes, pos: 0, path: Vec::new() };
    let v = d.value(ty, 0)?;
    if d.pos != bytes.len() {
        return Err(d.err(format!("{} unexpected bytes after the value", bytes.len() - d.pos)));
    }
    Ok(v)
}

struct Decoder<'a> {
    buf: &'a [u8],
    pos: usize,
    path: Vec<PathStep>,
}

impl<'a> Decoder<'a> {
    fn err(&self, message: impl Into<String>) -> DecodeError {
        DecodeError { path: AttributePath(self.path.clone()), message: message.into() }
    }

    fn remaining(&self) -> usize {
        self.buf.len() - self.pos
    }

    fn take(&mut self, n: usize) -> Result<&'a [u8], DecodeError> {
        if n > self.remaining() {
            return Err(self.err("unexpected end of msgpack data"));
        }
        let s = &self.buf[self.pos..self.pos + n];
        self.pos += n;
        Ok(s)
    }

    fn peek_marker(&self) -> Result<Marker, DecodeError> {
        match self.buf.get(self.pos) {
            Some(b) => Ok(Marker::from_u8(*b)),
            None => Err(self.err("unexpected end of msgpack data")),
        }
    }

    fn uint(&mut self, n: usize) -> Result<u64, DecodeError> {
        Ok(self.take(n)?.iter().fold(0u64, |acc, b| (acc << 8) | u64::from(*b)))
    }

    /// Length following a str/bin/array/map/ext marker of the given width in bytes.
    fn len(&mut self, width: usize) -> Result<usize, DecodeError> {
        let n = self.uint(width)?;
        usize::try_from(n).map_err(|_| self.err("msgpack length does not fit in memory"))
    }

    fn value(&mut self, ty: &Type, depth: usize) -> Result<Value, DecodeError> {
        if depth > MAX_DEPTH {
            return Err(self.err(format!("value nested deeper than {MAX_DEPTH} levels")));
        }
        match self.peek_marker()? {
            Marker::FixExt1
            | Marker::FixExt2
            | Marker::FixExt4
            | Marker::FixExt8
            | Marker::FixExt16
            | Marker::Ext8
            | Marker::Ext16
            | Marker::Ext32 => return self.unknown(),
            Marker::Null => {
                self.pos += 1;
                return Ok(Value::Null);
            }
            _ => {}
        }
        match ty {
            Type::Bool => self.bool(),
            Type::Number => self.number(),
            Type::String => Ok(Value::String(self.string("string is required")?)),
            Type::List(t) => Ok(Value::List(self.elements(t, depth)?)),
            Type::Set(t) => Ok(Value::Set(self.elements(t, depth)?)),
            Type::Tuple(ts) => self.tuple(ts, depth),
            Type::Map(t) => self.map(t, depth),
            Type::Object(attrs) => self.object(attrs, depth),
            Type::Dynamic => self.dynamic(depth),
        }
    }

    fn unknown(&mut self) -> Result<Value, DecodeError> {
        let marker = Marker::from_u8(self.take(1)?[0]);
        let len = match marker {
            Marker::FixExt1 => 1,
            Marker::FixExt2 => 2,
            Marker::FixExt4 => 4,
            Marker::FixExt8 => 8,
            Marker::FixExt16 => 16,
            Marker::Ext8 => self.len(1)?,
            Marker::Ext16 => self.len(2)?,
            _ => self.len(4)?,
        };
        let ext_type = self.take(1)?[0] as i8;
        self.take(len)?;
        // go-cty: a body of at most one byte is a plain unknown whatever the type code; a longer body must be
        // the refinement map of type 12. Refinements only narrow the unknown, so they are dropped here.
        if len <= 1 || ext_type == EXT_REFINED_UNKNOWN {
            Ok(Value::Unknown)
        } else {
            Err(self.err(format!("unsupported msgpack extension type {ext_type} with length {len}")))
        }
    }

    fn bool(&mut self) -> Result<Value, DecodeError> {
        let v = match self.peek_marker()? {
            Marker::True => true,
            Marker::False => false,
            _ => return Err(self.err("bool is required")),
        };
        self.pos += 1;
        Ok(Value::Bool(v))
    }

    fn number(&mut self) -> Result<Value, DecodeError> {
        let n = match self.peek_marker()? {
            Marker::FixPos(n) => {
                self.pos += 1;
                f64::from(n)
            }
            Marker::FixNeg(n) => {
                self.pos += 1;
                f64::from(n)
            }
            Marker::U8 | Marker::U16 | Marker::U32 | Marker::U64 => {
                let width = self.int_width();
                self.pos += 1;
                self.uint(width)? as f64
            }
            Marker::I8 | Marker::I16 | Marker::I32 | Marker::I64 => {
                let width = self.int_width();
                self.pos += 1;
                let raw = self.uint(width)?;
                // Sign-extend the big-endian two's complement value of `width` bytes.
                let shift = 64 - 8 * width as u32;
                (((raw << shift) as i64) >> shift) as f64
            }
            Marker::F32 => {
                self.pos += 1;
                f64::from(f32::from_bits(self.uint(4)? as u32))
            }
            Marker::F64 => {
                self.pos += 1;
                f64::from_bits(self.uint(8)?)
            }
            Marker::FixStr(_) | Marker::Str8 | Marker::Str16 | Marker::Str32 => {
                // cty writes numbers that fit neither i64 nor f64 exactly in decimal form.
                let s = self.string("number is required")?;
                match s.trim().parse::<f64>() {
                    Ok(n) if !n.is_nan() => n,
                    _ => return Err(self.err(format!("number is required, got the string {s:?}"))),
                }
            }
            _ => return Err(self.err("number is required")),
        };
        if n.is_nan() {
            return Err(self.err("number is required, got NaN"));
        }
        Ok(Value::Number(n))
    }

    /// Payload width of the integer marker at the cursor.
    fn int_width(&self) -> usize {
        match self.buf.get(self.pos).map(|b| Marker::from_u8(*b)) {
            Some(Marker::U8 | Marker::I8) => 1,
            Some(Marker::U16 | Marker::I16) => 2,
            Some(Marker::U32 | Marker::I32) => 4,
            _ => 8,
        }
    }

    /// A msgpack str (or bin, which go-msgpack also accepts as a string) holding valid UTF-8.
    fn string(&mut self, what: &str) -> Result<String, DecodeError> {
        let bytes = self.raw_bytes(what)?;
        match std::str::from_utf8(bytes) {
            Ok(s) => Ok(s.to_string()),
            Err(_) => Err(self.err("string is not valid UTF-8")),
        }
    }

    fn raw_bytes(&mut self, what: &str) -> Result<&'a [u8], DecodeError> {
        let len = match self.peek_marker()? {
            Marker::FixStr(n) => {
                self.pos += 1;
                usize::from(n)
            }
            Marker::Str8 | Marker::Bin8 => {
                self.pos += 1;
                self.len(1)?
            }
            Marker::Str16 | Marker::Bin16 => {
                self.pos += 1;
                self.len(2)?
            }
            Marker::Str32 | Marker::Bin32 => {
                self.pos += 1;
                self.len(4)?
            }
            _ => return Err(self.err(what.to_string())),
        };
        self.take(len)
    }

    fn array_len(&mut self, what: &str) -> Result<usize, DecodeError> {
        match self.peek_marker()? {
            Marker::FixArray(n) => {
                self.pos += 1;
                Ok(usize::from(n))
            }
            Marker::Array16 => {
                self.pos += 1;
                self.len(2)
            }
            Marker::Array32 => {
                self.pos += 1;
                self.len(4)
            }
            _ => Err(self.err(what.to_string())),
        }
    }

    fn map_len(&mut self, what: &str) -> Result<usize, DecodeError> {
        match self.peek_marker()? {
            Marker::FixMap(n) => {
                self.pos += 1;
                Ok(usize::from(n))
            }
            Marker::Map16 => {
                self.pos += 1;
                self.len(2)
            }
            Marker::Map32 => {
                self.pos += 1;
                self.len(4)
            }
            _ => Err(self.err(what.to_string())),
        }
    }

    /// Every element takes at least one byte, so a claimed length beyond the remaining input is an error
    /// before anything is allocated.
    fn check_count(&self, n: usize) -> Result<(), DecodeError> {
        if n > self.remaining() {
            Err(self.err(format!("collection claims {n} elements but only {} bytes remain", self.remaining())))
        } else {
            Ok(())
        }
    }

    fn elements(&mut self, ety: &Type, depth: usize) -> Result<Vec<Value>, DecodeError> {
        let n = self.array_len("a list or set is required")?;
        self.check_count(n)?;
        let mut out = Vec::with_capacity(n);
        for i in 0..n {
            self.path.push(PathStep::Index(i as i64));
            out.push(self.value(ety, depth + 1)?);
            self.path.pop();
        }
        Ok(out)
    }

    fn tuple(&mut self, tys: &[Type], depth: usize) -> Result<Value, DecodeError> {
        let n = self.array_len("a tuple is required")?;
        if n != tys.len() {
            return Err(self.err(format!("a tuple of length {} is required, got {n} elements", tys.len())));
        }
        let mut out = Vec::with_capacity(n);
        for (i, t) in tys.iter().enumerate() {
            self.path.push(PathStep::Index(i as i64));
            out.push(self.value(t, depth + 1)?);
            self.path.pop();
        }
        Ok(Value::Tuple(out))
    }

    fn map(&mut self, ety: &Type, depth: usize) -> Result<Value, DecodeError> {
        let n = self.map_len("a map is required")?;
        self.check_count(n)?;
        let mut out = BTreeMap::new();
        for _ in 0..n {
            let key = self.string("map keys must be strings")?;
            self.path.push(PathStep::Key(key.clone()));
            let v = self.value(ety, depth + 1)?;
            self.path.pop();
            out.insert(key, v);
        }
        Ok(Value::Map(out))
    }

    fn object(&mut self, attrs: &BTreeMap<String, Type>, depth: usize) -> Result<Value, DecodeError> {
        let n = self.map_len("an object is required")?;
        self.check_count(n)?;
        let mut out = BTreeMap::new();
        for _ in 0..n {
            let key = self.string("object attribute names must be strings")?;
            self.path.push(PathStep::Attribute(key.clone()));
            let Some(aty) = attrs.get(&key) else {
                return Err(self.err("unsupported attribute"));
            };
            let v = self.value(aty, depth + 1)?;
            self.path.pop();
            out.insert(key, v);
        }
        // Terraform always sends every attribute; a missing one reads as null like `Value::get` does.
        for name in attrs.keys() {
            out.entry(name.clone()).or_insert(Value::Null);
        }
        Ok(Value::Object(out))
    }

    fn dynamic(&mut self, depth: usize) -> Result<Value, DecodeError> {
        let n = self.array_len("a dynamic value ([type, value]) is required")?;
        if n != 2 {
            return Err(self.err(format!("a dynamic value must be a 2-element array, got {n} elements")));
        }
        let type_json = self.raw_bytes("the type of a dynamic value must be JSON bytes")?;
        let ty = serde_json::from_slice::<serde_json::Value>(type_json)
            .ok()
            .and_then(|j| Type::from_json(&j))
            .ok_or_else(|| self.err(format!("invalid type {:?}", String::from_utf8_lossy(type_json))))?;
        self.value(&ty, depth + 1)
    }
}

// ---------------------------------------------------------------------------------------------------------
// msgpack encoding

/// Encodes `value` as msgpack of type `ty`, byte for byte as go-cty would.
pub fn encode(value: &Value, ty: &Type) -> Result<Vec<u8>, EncodeError> {
    let mut e = Encoder { out: Vec::new(), path: Vec::new() };
    e.value(value, ty)?;
    Ok(e.out)
}

struct Encoder {
    out: Vec<u8>,
    path: Vec<PathStep>,
}

impl Encoder {
    fn err(&self, message: impl Into<String>) -> EncodeError {
        EncodeError { path: AttributePath(self.path.clone()), message: message.into() }
    }

    /// rmp writes into `Vec<u8>`, which cannot fail; errors are still mapped rather than unwrapped.
    fn w<T, E: fmt::Display>(&self, r: Result<T, E>) -> Result<T, EncodeError> {
        r.map_err(|e| self.err(format!("msgpack write failed: {e}")))
    }

    fn len32(&self, n: usize) -> Result<u32, EncodeError> {
        u32::try_from(n).map_err(|_| self.err(format!("collection of {n} elements is too large for msgpack")))
    }

    fn value(&mut self, v: &Value, ty: &Type) -> Result<(), EncodeError> {
        match (v, ty) {
            (Value::Unknown, _) => {
                let r = rmp::encode::write_ext_meta(&mut self.out, 1, 0);
                self.w(r)?;
                self.out.push(0);
            }
            (Value::Null, _) => {
                let r = rmp::encode::write_nil(&mut self.out);
                self.w(r)?;
            }
            (_, Type::Dynamic) => {
                let actual = infer_type(v);
                let r = rmp::encode::write_array_len(&mut self.out, 2);
                self.w(r)?;
                let r = rmp::encode::write_bin(&mut self.out, actual.to_json().to_string().as_bytes());
                self.w(r)?;
                self.value(v, &actual)?;
            }
            (Value::Bool(b), Type::Bool) => {
                let r = rmp::encode::write_bool(&mut self.out, *b);
                self.w(r)?;
            }
            (Value::Number(n), Type::Number) => self.number(*n)?,
            (Value::String(s), Type::String) => {
                let r = rmp::encode::write_str(&mut self.out, s);
                self.w(r)?;
            }
            (Value::List(items) | Value::Set(items) | Value::Tuple(items), Type::List(ety) | Type::Set(ety)) => {
                let n = self.len32(items.len())?;
                let r = rmp::encode::write_array_len(&mut self.out, n);
                self.w(r)?;
                for (i, item) in items.iter().enumerate() {
                    self.path.push(PathStep::Index(i as i64));
                    self.value(item, ety)?;
                    self.path.pop();
                }
            }
            (Value::List(items) | Value::Set(items) | Value::Tuple(items), Type::Tuple(tys)) => {
                if items.len() != tys.len() {
                    return Err(self.err(format!("expected a tuple of {} elements, got {}", tys.len(), items.len())));
                }
                let n = self.len32(items.len())?;
                let r = rmp::encode::write_array_len(&mut self.out, n);
                self.w(r)?;
                for (i, (item, t)) in items.iter().zip(tys).enumerate() {
                    self.path.push(PathStep::Index(i as i64));
                    self.value(item, t)?;
                    self.path.pop();
                }
            }
            (Value::Map(m) | Value::Object(m), Type::Map(ety)) => {
                let n = self.len32(m.len())?;
                let r = rmp::encode::write_map_len(&mut self.out, n);
                self.w(r)?;
                for (k, item) in m {
                    let r = rmp::encode::write_str(&mut self.out, k);
                    self.w(r)?;
                    self.path.push(PathStep::Key(k.clone()));
                    self.value(item, ety)?;
                    self.path.pop();
                }
            }
            (Value::Map(m) | Value::Object(m), Type::Object(attrs)) => {
                if let Some(extra) = m.keys().find(|k| !attrs.contains_key(*k)) {
                    self.path.push(PathStep::Attribute(extra.clone()));
                    return Err(self.err("attribute is not in the schema"));
                }
                let n = self.len32(attrs.len())?;
                let r = rmp::encode::write_map_len(&mut self.out, n);
                self.w(r)?;
                // BTreeMap iterates names in byte order, the order go-cty sorts attribute names in.
                for (name, aty) in attrs {
                    let r = rmp::encode::write_str(&mut self.out, name);
                    self.w(r)?;
                    self.path.push(PathStep::Attribute(name.clone()));
                    self.value(m.get(name).unwrap_or(&Value::Null), aty)?;
                    self.path.pop();
                }
            }
            (v, ty) => {
                return Err(self.err(format!("expected {}, got a {} value", type_name(ty), value_kind(v))));
            }
        }
        Ok(())
    }

    fn number(&mut self, n: f64) -> Result<(), EncodeError> {
        if n.is_nan() {
            return Err(self.err("NaN is not a valid number"));
        }
        // go-cty: an exact int64 in the most compact integer form, otherwise a float64. Every f64 is exact in
        // one of the two, so cty's decimal-string form is never needed when writing.
        if n.fract() == 0.0 && (-9_223_372_036_854_775_808.0..9_223_372_036_854_775_808.0).contains(&n) {
            let r = rmp::encode::write_sint(&mut self.out, n as i64);
            self.w(r)?;
        } else {
            let r = rmp::encode::write_f64(&mut self.out, n);
            self.w(r)?;
        }
        Ok(())
    }
}

/// The type a `dynamic` position is written with, inferred from the value: collections whose elements do not
/// share one type get `dynamic` elements (each then carries its own type).
fn infer_type(v: &Value) -> Type {
    fn common<'a>(items: impl Iterator<Item = &'a Value>) -> Type {
        let mut found: Option<Type> = None;
        for item in items.filter(|i| !i.is_null() && !i.is_unknown()) {
            let t = infer_type(item);
            match &found {
                None => found = Some(t),
                Some(f) if *f == t => {}
                Some(_) => return Type::Dynamic,
            }
        }
        found.unwrap_or(Type::Dynamic)
    }
    match v {
        Value::Null | Value::Unknown => Type::Dynamic,
        Value::Bool(_) => Type::Bool,
        Value::Number(_) => Type::Number,
        Value::String(_) => Type::String,
        Value::List(items) => Type::list(common(items.iter())),
        Value::Set(items) => Type::set(common(items.iter())),
        Value::Map(m) => Type::map(common(m.values())),
        Value::Object(m) => Type::Object(m.iter().map(|(k, v)| (k.clone(), infer_type(v))).collect()),
        Value::Tuple(items) => Type::Tuple(items.iter().map(infer_type).collect()),
    }
}

// ---------------------------------------------------------------------------------------------------------
// JSON decoding (stored state)

/// Decodes cty JSON (the stored state Terraform passes to UpgradeResourceState).
pub fn decode_json(bytes: &[u8], ty: &Type) -> Result<Value, DecodeError> {
    let j: serde_json::Value = serde_json::from_slice(bytes)
        .map_err(|e| DecodeError { path: AttributePath::default(), message: format!("invalid JSON: {e}") })?;
    json_to_value(&j, ty)
}

/// Converts an already parsed cty JSON value. Object attributes absent from `ty` are ignored: state written
/// by an older provider version may still hold attributes the current schema dropped.
pub fn json_to_value(j: &serde_json::Value, ty: &Type) -> Result<Value, DecodeError> {
    let mut path = Vec::new();
    from_json(j, ty, &mut path, 0)
}

fn from_json(j: &serde_json::Value, ty: &Type, path: &mut Vec<PathStep>, depth: usize) -> Result<Value, DecodeError> {
    use serde_json::Value as J;
    let err = |path: &[PathStep], message: String| DecodeError { path: AttributePath(path.to_vec()), message };
    if depth > MAX_DEPTH {
        return Err(err(path, format!("value nested deeper than {MAX_DEPTH} levels")));
    }
    if j.is_null() {
        return Ok(Value::Null);
    }
    let mismatch = |path: &[PathStep]| err(path, format!("{} is required", type_name(ty)));
    Ok(match ty {
        // go-cty's JSON decoder converts between primitive forms the same way Terraform's config does.
        Type::Bool => match j {
            J::Bool(b) => Value::Bool(*b),
            J::String(s) if s == "true" => Value::Bool(true),
            J::String(s) if s == "false" => Value::Bool(false),
            _ => return Err(mismatch(path)),
        },
        Type::Number => match j {
            J::Number(n) => Value::Number(n.as_f64().ok_or_else(|| mismatch(path))?),
            J::String(s) => match s.trim().parse::<f64>() {
                Ok(n) if n.is_finite() => Value::Number(n),
                _ => return Err(mismatch(path)),
            },
            _ => return Err(mismatch(path)),
        },
        Type::String => match j {
            J::String(s) => Value::String(s.clone()),
            J::Number(n) => Value::String(n.to_string()),
            J::Bool(b) => Value::String(b.to_string()),
            _ => return Err(mismatch(path)),
        },
        Type::List(ety) | Type::Set(ety) => {
            let J::Array(items) = j else {
                return Err(mismatch(path));
            };
            let mut out = Vec::with_capacity(items.len());
            for (i, item) in items.iter().enumerate() {
                path.push(PathStep::Index(i as i64));
                out.push(from_json(item, ety, path, depth + 1)?);
                path.pop();
            }
            if matches!(ty, Type::Set(_)) { Value::Set(out) } else { Value::List(out) }
        }
        Type::Tuple(tys) => {
            let J::Array(items) = j else {
                return Err(mismatch(path));
            };
            if items.len() != tys.len() {
                return Err(err(path, format!("a tuple of length {} is required, got {}", tys.len(), items.len())));
            }
            let mut out = Vec::with_capacity(items.len());
            for (i, (item, t)) in items.iter().zip(tys).enumerate() {
                path.push(PathStep::Index(i as i64));
                out.push(from_json(item, t, path, depth + 1)?);
                path.pop();
            }
            Value::Tuple(out)
        }
        Type::Map(ety) => {
            let J::Object(m) = j else {
                return Err(mismatch(path));
            };
            let mut out = BTreeMap::new();
            for (k, item) in m {
                path.push(PathStep::Key(k.clone()));
                out.insert(k.clone(), from_json(item, ety, path, depth + 1)?);
                path.pop();
            }
            Value::Map(out)
        }
        Type::Object(attrs) => {
            let J::Object(m) = j else {
                return Err(mismatch(path));
            };
            let mut out = BTreeMap::new();
            for (name, aty) in attrs {
                path.push(PathStep::Attribute(name.clone()));
                let v = match m.get(name) {
                    Some(item) => from_json(item, aty, path, depth + 1)?,
                    None => Value::Null,
                };
                path.pop();
                out.insert(name.clone(), v);
            }
            Value::Object(out)
        }
        Type::Dynamic => {
            // go-cty writes a dynamic value as {"value": …, "type": …}.
            let (Some(value), Some(type_json)) = (j.get("value"), j.get("type")) else {
                return Err(err(path, "a dynamic value ({\"value\": …, \"type\": …}) is required".into()));
            };
            let t = Type::from_json(type_json).ok_or_else(|| err(path, format!("invalid type {type_json}")))?;
            from_json(value, &t, path, depth + 1)?
        }
    })
}

#[cfg(test)]
mod tests;
