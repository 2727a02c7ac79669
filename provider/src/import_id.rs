//! A managed type's import ID, declared once ([`ImportId`]): parsed on import, built as the `id` attribute, and
//! shown as the resource identity of its list resource; and the objects of a type found on a cluster ([`Found`]),
//! which its list resource and `liqo_import_ids` show.
use liqo_schema::tf::{Diagnostic, Key, Value};

use crate::protocol::IdentitySchema;
use crate::validate::check_dns_label;

/// The first part of the import ID of the types that live in a tenant namespace.
pub const TENANT_NAMESPACE_PART: (&str, &str) =
    ("tenant_namespace", "Name of the tenant namespace the object lives in.");

/// The parts of an import ID, in order, joined by `/`; each is a Kubernetes name (a DNS label).
pub struct ImportId {
    /// (name, description) of each part: the names of the resource identity's attributes.
    pub parts: &'static [(&'static str, &'static str)],
    /// The resource's attribute each part is, in order: `id` is built from them.
    pub attributes: &'static [Key],
    pub example: &'static str,
    /// What the ID names on the cluster, for the error of an ID that is not one.
    pub names: &'static str,
}

impl ImportId {
    /// `<part>/<part>` as the docs and errors write it.
    pub fn form(&self) -> String {
        self.parts.iter().map(|(name, _)| format!("<{name}>")).collect::<Vec<_>>().join("/")
    }

    /// The parts of `id`, or an error naming the form the ID must have.
    pub fn parse<const N: usize>(&self, type_name: &str, id: &str) -> Result<[String; N], Diagnostic> {
        debug_assert_eq!(N, self.parts.len(), "{type_name}'s import ID has {} parts", self.parts.len());
        let bad = |why: String| {
            Diagnostic::error(
                format!("Invalid import ID for {type_name}"),
                format!("`{id}` {why}. The import ID is `{}`, e.g. `{}`: {}.", self.form(), self.example, self.names),
            )
        };
        let parts: Vec<&str> = id.split('/').collect();
        if parts.len() != N {
            return Err(bad(match N {
                1 => "contains `/`".to_string(),
                _ if parts.len() == 1 => "has no `/`".to_string(),
                _ => format!("has {} parts separated by `/`, not {N}", parts.len()),
            }));
        }
        for part in &parts {
            check_dns_label(part).map_err(|why| bad(format!("has a part `{part}` that {why}")))?;
        }
        Ok(std::array::from_fn(|i| parts[i].to_string()))
    }

    /// The `id` of a resource whose (planned or observed) attributes are `state`: unknown while a part is.
    pub fn value(&self, state: &Value) -> Value {
        match self.attributes.iter().map(|a| state.get(*a).as_str()).collect::<Option<Vec<_>>>() {
            Some(parts) => Value::string(parts.join("/")),
            None => Value::Unknown,
        }
    }

    /// The resource identity: one string attribute per part.
    pub fn identity(&self) -> IdentitySchema {
        IdentitySchema { parts: self.parts.to_vec() }
    }
}

/// One object of a managed type found on a cluster: its import ID and what `terraform query` shows.
pub struct Found {
    pub id: String,
    pub display_name: String,
}

impl Found {
    /// `what id (peer <peer>)`.
    pub fn new(id: String, what: &str, peer: Option<&str>) -> Found {
        let display_name = match peer {
            Some(peer) => format!("{what} {id} (peer {peer})"),
            None => format!("{what} {id}"),
        };
        Found { id, display_name }
    }
}

/// The value of label `key` of an object.
pub fn label<'a>(meta: &'a kube::api::ObjectMeta, key: &str) -> Option<&'a str> {
    meta.labels.as_ref()?.get(key).map(String::as_str)
}

/// `<namespace>/<name>` of a namespaced object: the import ID of the types named after their object.
pub fn namespaced_id(meta: &kube::api::ObjectMeta) -> String {
    format!("{}/{}", meta.namespace.as_deref().unwrap_or_default(), meta.name.as_deref().unwrap_or_default())
}

/// A label selector, narrowed to one peer when `remote` is set.
pub fn by_peer(base: &str, key: &str, remote: Option<&str>) -> String {
    match remote {
        Some(r) => format!("{base},{key}={r}"),
        None => base.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const TWO: ImportId = ImportId {
        parts: &[("tenant_namespace", "ns"), ("name", "n")],
        attributes: &[Key::new("tenant_namespace"), Key::new("remote_cluster_id")],
        example: "liqo-tenant-rome/rome",
        names: "the namespace and name of the object",
    };

    #[test]
    fn parses_builds_and_names_the_form() {
        assert_eq!(TWO.parse::<2>("t", "liqo-tenant-rome/rome").unwrap(), ["liqo-tenant-rome", "rome"]);
        for (bad, why) in [
            ("rome", "has no `/`"),
            ("a/b/c", "has 3 parts separated by `/`, not 2"),
            ("a/", "has a part `` that is empty"),
            ("A/b", "has a part `A` that contains characters"),
        ] {
            let e = TWO.parse::<2>("liqo_x", bad).unwrap_err();
            assert_eq!(e.summary, "Invalid import ID for liqo_x");
            assert!(e.detail.contains(why), "{bad}: {}", e.detail);
            assert!(e.detail.contains("`<tenant_namespace>/<name>`, e.g. `liqo-tenant-rome/rome`"), "{}", e.detail);
        }
        let state =
            |name: Value| Value::object([("tenant_namespace", Value::string("ns")), ("remote_cluster_id", name)]);
        assert_eq!(TWO.value(&state(Value::string("n"))), Value::string("ns/n"));
        assert_eq!(TWO.value(&state(Value::Unknown)), Value::Unknown);
    }
}
