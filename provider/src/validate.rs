//! Plan-time validators: each checks one attribute when its value is known and names the attribute and the fix.
//! They run before anything touches a cluster; the provider block, the resources, the data sources and the list
//! resources share them.
use liqo_schema::tf::{AttributePath, Diagnostic, Diagnostics, Nesting, Value};

use crate::attributes::{Check, Decl};
use std::time::Duration;

/// Parses Go-style durations (`1h30m`, `90s`, `500ms`), the format Terraform users know from `timeouts`.
pub fn parse_duration(s: &str) -> Result<Duration, String> {
    let s = s.trim();
    if s.is_empty() {
        return Err("empty duration".into());
    }
    let mut total = 0f64;
    let mut rest = s;
    while !rest.is_empty() {
        let num_len = rest.find(|c: char| !(c.is_ascii_digit() || c == '.')).unwrap_or(rest.len());
        if num_len == 0 {
            return Err(format!("`{s}` is not a duration"));
        }
        let n: f64 = rest[..num_len].parse().map_err(|_| format!("`{s}` is not a duration"))?;
        rest = &rest[num_len..];
        let unit_len = rest.find(|c: char| c.is_ascii_digit() || c == '.').unwrap_or(rest.len());
        let factor = match &rest[..unit_len] {
            "ms" => 0.001,
            "s" => 1.0,
            "m" => 60.0,
            "h" => 3600.0,
            "" => return Err(format!("`{s}` has a number without a unit (use s, m or h)")),
            u => return Err(format!("`{s}` has unknown unit `{u}` (use ms, s, m or h)")),
        };
        rest = &rest[unit_len..];
        total += n * factor;
    }
    // A value past what a Duration holds (about 5.8e11 years) is refused rather than panicking the provider.
    Duration::try_from_secs_f64(total).map_err(|_| format!("`{s}` is too long a duration"))
}

/// Where a configuration written for the Go provider 0.x is sent.
const GO_PROVIDER_GUIDE: &str = "The guide \"Upgrading from the Go provider (0.0.x, 0.1.x)\" \
     (docs/guides/upgrading-from-the-go-provider.md) rewrites such a block for 1.x, Liqo's Terraform tutorial included, and \
     takes over a peering the 0.1.x provider made without touching it.";

/// Validation helpers: each checks one attribute when its value is known and pushes an error naming the
/// attribute and the fix. Unknown and null values pass (a missing required attribute: [`Validator::required`]).
pub struct Validator<'a> {
    pub config: &'a Value,
    pub diags: Diagnostics,
}

impl<'a> Validator<'a> {
    pub fn new(config: &'a Value) -> Validator<'a> {
        Validator { config, diags: Diagnostics::new() }
    }

    /// The declared [`Check`]s of `decls` on `object`, a block's value at `at` (`None`: the configuration's root),
    /// descending into nested objects (each element of a nested list or set). A check of a list or set attribute
    /// applies to each element.
    pub fn declared(&mut self, decls: &[Decl], object: &Value, at: Option<&AttributePath>) {
        for d in decls {
            let path = match at {
                Some(p) => p.clone().attr(d.key),
                None => d.key.path(),
            };
            let value = object.get(d.key);
            if let Some(check) = &d.check {
                match value {
                    Value::List(items) | Value::Set(items) => {
                        for (i, item) in items.iter().enumerate() {
                            self.check(check, path.clone().index(i as i64), item);
                        }
                    }
                    _ => self.check(check, path.clone(), value),
                }
            }
            match d.nesting() {
                Some(Nesting::Single) => self.declared(d.children(), value, Some(&path)),
                Some(Nesting::List | Nesting::Set) => {
                    for (i, item) in value.elements().iter().enumerate() {
                        self.declared(d.children(), item, Some(&path.clone().index(i as i64)));
                    }
                }
                _ => {}
            }
        }
    }

    /// Each top-level required attribute of `decls` the configuration leaves null is an error on it: the provider
    /// requires them, not Terraform ([`crate::attributes::block`]). Checked when a resource's create is applied,
    /// before anything is written — not at validation nor in a plan: `terraform destroy` first plans every resource
    /// with its configuration, and there an attribute fed by a cluster gone for good is null (Terraform itself
    /// rejects only an absent argument, not a null one).
    pub fn required(&mut self, decls: &[Decl]) {
        // A block of a type the Go provider 0.x also had may have been written for it (its liqo_generate took no
        // arguments at all).
        let go_provider = match decls.iter().any(|d| d.removed.is_some()) {
            true => format!(
                " Was this block written for the Go provider published as liqotech/liqo 0.0.x or 0.1.x? \
                 {GO_PROVIDER_GUIDE}"
            ),
            false => String::new(),
        };
        for d in decls.iter().filter(|d| d.is_required() && self.config.get(d.key).is_null()) {
            self.error(
                d.key.path(),
                format!("Missing required argument `{}`", d.key.name()),
                format!("{} Set `{}` in this block.{go_provider}", d.description(), d.key.name()),
            );
        }
    }

    /// Names of the Go provider 0.x set in a `type_name` block ([`crate::attributes::removed`]): one error, on the
    /// first of them, listing each with what replaces it. True when there was one; the other checks then say
    /// nothing, since the block was written for another provider.
    pub fn removed(&mut self, type_name: &str, decls: &[Decl]) -> bool {
        let set = crate::attributes::removed_set(decls, self.config);
        let Some(first) = set.first() else { return false };
        let list = set
            .iter()
            .map(|d| format!("- `{}`: {}", d.key.name(), d.removed.unwrap_or_default()))
            .collect::<Vec<_>>()
            .join("\n");
        let names = set.iter().map(|d| format!("`{}`", d.key.name())).collect::<Vec<_>>().join(", ");
        self.error(
            first.key.path(),
            format!("{type_name} of the Go provider 0.x: {names}"),
            format!(
                "This block was written for the Go provider published as liqotech/liqo 0.0.x (Liqo 0.x) or 0.1.x \
                 (a wrapper of `liqoctl peer`). This provider builds Liqo 1.x peerings with its own resources \
                 (liqo_generate, liqo_gateway, liqo_consumer_key, liqo_tenant, liqo_peer, liqo_offload, or the module \
                 examples/modules/peering for all of them):\n{list}\n{GO_PROVIDER_GUIDE}"
            ),
        );
        true
    }

    /// One check, on a value found at `path`.
    pub fn check(&mut self, check: &Check, path: AttributePath, value: &Value) {
        match check {
            Check::ClusterId => self.cluster_id_at(path, value),
            Check::Namespace => self.namespace(path, value),
            Check::ObjectName { kind, fix } => self.object_name(path, value, kind, fix),
            Check::Duration => self.duration(path, value),
            Check::WireguardKey => self.wireguard_key(path, value),
            Check::Cidr => self.cidr(path, value),
            Check::OneOf(allowed) => self.one_of(path, value, allowed),
            Check::Port(range) => self.port(path, value, range),
            Check::ApiServerUrl(example) => self.api_server_url(path, value, example),
            Check::ProxyUrl => self.proxy_url(path, value),
            Check::CaBundle(fix) => self.ca_bundle(path, value, fix),
            Check::Quantities => self.quantities(path, value),
            Check::Labels => self.labels(path, value),
            Check::QualifiedName { what, example } => self.qualified_name(path, value, what, example),
        }
    }

    pub fn error(&mut self, path: AttributePath, summary: impl Into<String>, detail: impl Into<String>) {
        self.diags.push(Diagnostic::error(summary, detail).at(path));
    }

    /// A Liqo cluster ID: a DNS-1123 label (`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`, at most 63 characters).
    pub fn cluster_id_at(&mut self, path: AttributePath, value: &Value) {
        if let Some(s) = value.as_str()
            && let Err(why) = check_dns_label(s)
        {
            self.error(
                path.clone(),
                format!("Invalid cluster ID for `{path}`"),
                format!("`{s}` {why}. Liqo cluster IDs are DNS labels: lowercase letters, digits and '-', starting and ending with a letter or digit, at most 63 characters (e.g. `milan`). Read it with `liqoctl info --get clusterid` or from liqo_generate's `cluster_id`."),
            );
        }
    }

    /// A Kubernetes namespace name (also a DNS label).
    fn namespace(&mut self, path: AttributePath, value: &Value) {
        if let Some(s) = value.as_str()
            && let Err(why) = check_dns_label(s)
        {
            self.error(
                path.clone(),
                format!("Invalid namespace name for `{path}`"),
                format!("`{s}` {why}. Namespace names are DNS labels: lowercase letters, digits and '-', at most 63 characters."),
            );
        }
    }

    /// An object name: a DNS subdomain (lowercase alphanumerics, '-' and '.', at most 253 characters).
    fn object_name(&mut self, path: AttributePath, value: &Value, kind: &str, fix: &str) {
        let Some(s) = value.as_str() else {
            return;
        };
        if check_object_name(s).is_err() {
            self.error(
                path.clone(),
                format!("Invalid {kind} name for `{path}`"),
                format!("`{s}` is not a valid {kind} name (lowercase letters, digits, '-' and '.', at most 253 characters). {fix}"),
            );
        }
    }

    /// An IPv4 or IPv6 CIDR such as `10.243.0.0/16`.
    fn cidr(&mut self, path: AttributePath, value: &Value) {
        if let Some(s) = value.as_str()
            && let Err(why) = check_cidr(s)
        {
            self.error(
                path.clone(),
                format!("Invalid CIDR for `{path}`"),
                format!("`{s}` {why}. Give a network in CIDR notation, e.g. `10.243.0.0/16` (read it with liqo_generate's `pod_cidrs` / `external_cidr`)."),
            );
        }
    }

    /// A WireGuard public key: standard base64 of exactly 32 bytes (44 characters).
    fn wireguard_key(&mut self, path: AttributePath, value: &Value) {
        if let Some(s) = value.as_str()
            && let Err(why) = check_wireguard_key(s)
        {
            self.error(
                path.clone(),
                format!("Invalid WireGuard public key for `{path}`"),
                format!("{why}. A WireGuard key is 32 bytes in standard base64 (44 characters ending in '='), as `wg pubkey` prints it; use the peer's liqo_generate `wireguard_public_key`."),
            );
        }
    }

    /// A TCP/UDP port in `range`.
    fn port(&mut self, path: AttributePath, value: &Value, range: &std::ops::RangeInclusive<i64>) {
        if let Value::Number(n) = value {
            let ok = value.as_i64().is_some_and(|p| range.contains(&p));
            if !ok {
                self.error(
                    path.clone(),
                    format!("Port out of range for `{path}`"),
                    format!("{n} is not a whole number between {} and {}.", range.start(), range.end()),
                );
            }
        }
    }

    /// One of a fixed set of strings (Liqo enum values are case-sensitive).
    fn one_of(&mut self, path: AttributePath, value: &Value, allowed: &[&str]) {
        if let Some(s) = value.as_str()
            && !allowed.contains(&s)
        {
            self.error(
                path.clone(),
                format!("Unsupported value for `{path}`"),
                format!(
                    "`{s}` is not one of {} (case-sensitive).",
                    allowed.iter().map(|a| format!("`{a}`")).collect::<Vec<_>>().join(", ")
                ),
            );
        }
    }

    /// A duration string such as `90s` or `10m`.
    fn duration(&mut self, path: AttributePath, value: &Value) {
        if let Some(s) = value.as_str()
            && let Err(why) = parse_duration(s)
        {
            self.error(
                path.clone(),
                format!("Invalid duration for `{path}`"),
                format!("{why}. Write durations like `90s`, `10m` or `1h30m`."),
            );
        }
    }

    /// An API server URL for a kubeconfig (`https://host[:port][/path]`); `example` shows a good value.
    fn api_server_url(&mut self, path: AttributePath, value: &Value, example: &str) {
        if let Some(url) = value.as_str()
            && let Err(why) = check_api_server_url(url)
        {
            self.error(
                path.clone(),
                format!("Invalid API server URL for `{path}`"),
                format!("`{url}` {why}. {example}"),
            );
        }
    }

    /// A proxy to an API server, as a kubeconfig's `proxy-url` takes it (client-go and kube: `http`, `https`,
    /// `socks5`).
    fn proxy_url(&mut self, path: AttributePath, value: &Value) {
        let Some(text) = value.as_str() else { return };
        let usable = Url::split(text)
            .is_some_and(|u| PROXY_SCHEMES.contains(&u.scheme) && !u.authority.is_empty() && u.is_valid());
        if !usable {
            self.error(
                path.clone(),
                format!("Invalid proxy URL for `{path}`"),
                format!(
                    "`{text}` is not a URL starting with `http://`, `https://` or `socks5://` and a host. Give the \
                     proxy as `http://host:port`, e.g. `http://proxy.example.com:8118`."
                ),
            );
        }
    }

    /// PEM CA certificate(s): certificates only, at least one (the rule of [`crate::crypto::certificates`]).
    fn ca_bundle(&mut self, path: AttributePath, value: &Value, fix: &str) {
        if let Some(pem) = value.as_str()
            && let Err(why) = crate::crypto::certificates(pem.as_bytes())
        {
            self.error(
                path.clone(),
                format!("Invalid CA for `{path}`"),
                format!("The value is not PEM CA certificates: {why}. {fix}"),
            );
        }
    }

    /// Resource names (`cpu`, `nvidia.com/gpu`) to Kubernetes quantities.
    fn quantities(&mut self, path: AttributePath, value: &Value) {
        for (key, value) in value.entries().into_iter().flatten() {
            let at = path.clone().key(key);
            if let Err(why) = check_qualified_name(key) {
                self.error(
                    at.clone(),
                    format!("Invalid resource name `{key}` in `{path}`"),
                    format!(
                        "`{key}` {why}. Use a Kubernetes resource name: `cpu`, `memory`, `pods`, \
                         `ephemeral-storage` or an extended resource such as `nvidia.com/gpu`."
                    ),
                );
            }
            if let Some(q) = value.as_str()
                && let Err(why) = crate::quantity::parse(q)
            {
                self.error(
                    at,
                    format!("Invalid quantity for `{key}` in `{path}`"),
                    format!(
                        "`{q}` {why}. Write a Kubernetes quantity: a non-negative number with an optional suffix, \
                         e.g. `4`, `500m`, `8Gi`, `1e3`."
                    ),
                );
            }
        }
    }

    /// Kubernetes label or annotation keys (an optional DNS-subdomain prefix and '/', then a name of at most 63
    /// letters, digits, '-', '_' or '.'): the string itself, or each key of a map (its error on that key).
    fn qualified_name(&mut self, path: AttributePath, value: &Value, what: &str, example: &str) {
        let keys: Vec<(AttributePath, &str)> = match value.entries() {
            Some(map) => map.keys().map(|k| (path.clone().key(k), k.as_str())).collect(),
            None => value.as_str().map(|k| (path.clone(), k)).into_iter().collect(),
        };
        for (at, key) in keys {
            if let Err(why) = check_qualified_name(key) {
                self.error(
                    at,
                    format!("Invalid {what} `{key}` in `{path}`"),
                    format!("`{key}` {why}. Use one such as `{example}`."),
                );
            }
        }
    }

    /// Label keys (qualified names, e.g. `example.com/gpu`) to label values (at most 63 letters, digits, '-', '_'
    /// or '.', starting and ending with a letter or digit; or empty).
    fn labels(&mut self, path: AttributePath, value: &Value) {
        for (key, value) in value.entries().into_iter().flatten() {
            let at = path.clone().key(key);
            if let Err(why) = check_qualified_name(key) {
                self.error(
                    at.clone(),
                    format!("Invalid label key `{key}` in `{path}`"),
                    format!("`{key}` {why}. Use a Kubernetes label key such as `example.com/gpu` or `tier`."),
                );
            }
            if let Some(v) = value.as_str()
                && !v.is_empty()
                && let Err(why) = match v.contains('/') {
                    true => Err("contains '/'".to_string()),
                    false => check_qualified_name(v),
                }
            {
                self.error(
                    at,
                    format!("Invalid label value for `{key}` in `{path}`"),
                    format!(
                        "`{v}` {why}. A label value is empty or at most 63 letters, digits, '-', '_' or '.', \
                         starting and ending with a letter or digit."
                    ),
                );
            }
        }
    }

    pub fn finish(self) -> Diagnostics {
        self.diags
    }
}

pub fn check_dns_label(s: &str) -> Result<(), String> {
    if s.is_empty() {
        return Err("is empty".into());
    }
    if s.len() > 63 {
        return Err(format!("is {} characters long", s.len()));
    }
    if !s.bytes().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-') {
        return Err("contains characters other than lowercase letters, digits and '-'".into());
    }
    if s.starts_with('-') || s.ends_with('-') {
        return Err("starts or ends with '-'".into());
    }
    Ok(())
}

/// A namespaced object's name: a DNS subdomain (lowercase alphanumerics, '-' and '.', at most 253 characters).
pub fn check_object_name(s: &str) -> Result<(), String> {
    let valid = !s.is_empty() && s.len() <= 253 && s.split('.').all(|part| check_dns_label(part).is_ok());
    if valid { Ok(()) } else { Err("is not an object name (lowercase letters, digits, '-' and '.')".to_owned()) }
}

/// A Kubernetes qualified name (resource names, label keys): an optional DNS-subdomain prefix and `/`, then a
/// name of at most 63 alphanumerics, '-', '_' or '.', starting and ending with an alphanumeric.
pub fn check_qualified_name(key: &str) -> Result<(), String> {
    let (prefix, name) = match key.rsplit_once('/') {
        Some((p, n)) => (Some(p), n),
        None => (None, key),
    };
    if let Some(p) = prefix {
        let subdomain_ok = !p.is_empty() && p.len() <= 253 && p.split('.').all(|label| check_dns_label(label).is_ok());
        if !subdomain_ok {
            return Err(format!("has an invalid prefix `{p}` (it must be a DNS subdomain such as `example.com`)"));
        }
    }
    let alnum = |c: char| c.is_ascii_alphanumeric();
    let ok = !name.is_empty()
        && name.len() <= 63
        && name.starts_with(alnum)
        && name.ends_with(alnum)
        && name.chars().all(|c| alnum(c) || matches!(c, '-' | '_' | '.'));
    if ok {
        Ok(())
    } else {
        Err("is not a valid name (at most 63 letters, digits, '-', '_' or '.', starting and ending with a letter or digit)".into())
    }
}

pub fn check_cidr(s: &str) -> Result<(), String> {
    let (addr, len) = s.split_once('/').ok_or_else(|| "has no prefix length (`/16`)".to_string())?;
    let ip: std::net::IpAddr = addr.parse().map_err(|_| format!("has an invalid address `{addr}`"))?;
    let max = if ip.is_ipv4() { 32 } else { 128 };
    match len.parse::<u8>() {
        Ok(l) if l <= max => Ok(()),
        _ => Err(format!("has an invalid prefix length `{len}` (0–{max})")),
    }
}

pub fn check_wireguard_key(s: &str) -> Result<(), String> {
    use base64::Engine;
    match base64::engine::general_purpose::STANDARD.decode(s) {
        Ok(b) if b.len() == 32 => Ok(()),
        Ok(b) => Err(format!("the value decodes to {} bytes, not 32", b.len())),
        Err(_) => Err("the value is not valid standard base64".into()),
    }
}

/// The schemes of a proxy a kubeconfig's `proxy-url` may name.
const PROXY_SCHEMES: [&str; 3] = ["http", "https", "socks5"];

/// A URL as written, split where the provider's checks look: the scheme before the first `://`, the authority up
/// to the first `/` after it. The one reading of a URL for the provider block (`host`, `proxy_url`) and the
/// resources' API server URLs; whether kube can use it at all is [`Url::is_valid`], which `http::Uri` decides.
pub struct Url<'a> {
    /// Before `://`, as written: `http::Uri` would lowercase it, and the checks and their messages go by what the
    /// user wrote (`HTTPS://` is refused where `https://` is asked for).
    pub scheme: &'a str,
    /// Everything after `://`.
    pub rest: &'a str,
    /// `rest` up to its first `/`: user, host and port.
    pub authority: &'a str,
    text: &'a str,
}

impl<'a> Url<'a> {
    /// `None` when `text` has no `://`, i.e. no scheme.
    pub fn split(text: &'a str) -> Option<Url<'a>> {
        let (scheme, rest) = text.split_once("://")?;
        Some(Url { scheme, rest, authority: rest.split('/').next().unwrap_or_default(), text })
    }

    /// Whether kube can hold it: `http::Uri` (the type kube's `Config` keeps the server in) takes it, and it has
    /// something after `://`.
    pub fn is_valid(&self) -> bool {
        !self.rest.is_empty() && self.text.parse::<http::Uri>().is_ok()
    }
}

/// `https://host[:port][/path]`: what a kubeconfig `server` may hold. Plain HTTP is refused because the
/// consumer authenticates with a client certificate, which only works over TLS.
///
/// The scheme and authority come from [`Url::split`]; the host and port rules below stay here rather than being
/// asked of `http::Uri`, for two reasons. `http::Uri` is more lenient than a kubeconfig server may be (it takes
/// ports `0`, `99999` or `x`, any text in brackets, `_` in host names), so it cannot decide them; and each message
/// names the part that is wrong, which its errors do not. Nor is [`Url::is_valid`] asked at the end: this check has
/// always taken paths `http::Uri` refuses (`<`, `>`, a backquote), and refusing them now would change which
/// configurations plan.
pub fn check_api_server_url(url: &str) -> Result<(), String> {
    let url = Url::split(url)
        .filter(|u| u.scheme == "https")
        .ok_or("does not start with `https://` (API servers are served over TLS)")?;
    if url.rest.contains(['?', '#', '@']) || url.rest.contains(char::is_whitespace) {
        return Err("contains a query, fragment, user name or space".into());
    }
    let authority = url.authority;
    let port = if let Some(v6) = authority.strip_prefix('[') {
        let (addr, after) = v6.split_once(']').ok_or("has an unclosed `[` in an IPv6 address")?;
        addr.parse::<std::net::Ipv6Addr>().map_err(|_| format!("has an invalid IPv6 address `{addr}`"))?;
        match after {
            "" => None,
            p => Some(p.strip_prefix(':').ok_or("has text after the IPv6 address that is not `:port`")?),
        }
    } else {
        let (host, port) = match authority.split_once(':') {
            Some((h, p)) => (h, Some(p)),
            None => (authority, None),
        };
        if host.is_empty() {
            return Err("has no host".into());
        }
        if !host.chars().all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '.')) {
            return Err(format!(
                "has an invalid host `{host}` (IPv6 addresses go in brackets: `https://[fd00::1]:6443`)"
            ));
        }
        port
    };
    match port.map(str::parse::<u16>) {
        None | Some(Ok(1..=65535)) => Ok(()),
        Some(_) => Err(format!("has an invalid port `{}` (1–65535)", port.unwrap_or_default())),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_parse_like_go() {
        assert_eq!(parse_duration("90s"), Ok(Duration::from_secs(90)));
        assert_eq!(parse_duration("1h30m"), Ok(Duration::from_secs(5400)));
        assert_eq!(parse_duration("500ms"), Ok(Duration::from_millis(500)));
        assert!(parse_duration("10").unwrap_err().contains("without a unit"));
        assert!(parse_duration("99999999999999999999999h").unwrap_err().contains("too long"));
        assert!(parse_duration("5 minutes").is_err());
    }

    #[test]
    fn validators_name_the_attribute() {
        let cfg = Value::object([
            ("remote_cluster_id", Value::string("Milan_1")),
            ("remote_public_key", Value::string("dG9vIHNob3J0")),
            ("server", Value::object([("port", Value::Number(70000.0))])),
            ("mode", Value::string("nodeport")),
            ("ok", Value::Unknown),
        ]);
        mod attr {
            use crate::attributes::*;
            use liqo_schema::tf::{Nesting, Type};
            attributes! {
                remote_cluster_id: required(Type::String).check(Check::ClusterId);
                remote_public_key: required(Type::String).check(Check::WireguardKey);
                server: nested(Nesting::Single, server::declared());
                mode: optional(Type::String).check(Check::OneOf(&["NodePort", "LoadBalancer"]));
                ok: optional(Type::String).check(Check::ClusterId);
            }
            pub mod server {
                use crate::attributes::*;
                use liqo_schema::tf::Type;
                attributes! {
                    port: optional(Type::Number).check(Check::Port(1..=65535));
                }
            }
        }
        let mut c = Validator::new(&cfg);
        c.declared(&attr::declared(), &cfg, None);
        let d = c.finish();
        let paths: Vec<String> = d.iter().map(|d| d.attribute.as_ref().unwrap().to_string()).collect();
        assert_eq!(paths, ["remote_cluster_id", "remote_public_key", "server.port", "mode"]);
        assert!(d.0[1].detail.contains("decodes to 9 bytes"));
    }

    #[test]
    fn urls_split_as_written() {
        let url = Url::split("HTTPS://[::1]:6443/prefix").unwrap();
        assert_eq!((url.scheme, url.authority, url.rest), ("HTTPS", "[::1]:6443", "[::1]:6443/prefix"));
        assert!(Url::split("10.0.0.1:6443").is_none());
        assert!(Url::split("socks5://proxy:1080").unwrap().is_valid());
        for invalid in ["https://", "https://h:1:2", "https://[::1", "https://h/a<b"] {
            assert!(!Url::split(invalid).unwrap().is_valid(), "{invalid}");
        }
    }

    /// Each rule of an API server URL, with the message that names it.
    #[test]
    fn api_server_url_messages() {
        for (bad, why) in [
            ("HTTPS://h", "does not start with `https://` (API servers are served over TLS)"),
            ("https://h/x?y", "contains a query, fragment, user name or space"),
            ("https://[::1", "has an unclosed `[` in an IPv6 address"),
            ("https://[zz]:1", "has an invalid IPv6 address `zz`"),
            ("https://[::1]x", "has text after the IPv6 address that is not `:port`"),
            ("https:///prefix", "has no host"),
            ("https://h_1", "has an invalid host `h_1` (IPv6 addresses go in brackets: `https://[fd00::1]:6443`)"),
            ("https://h:0", "has an invalid port `0` (1–65535)"),
            ("https://h:1:2", "has an invalid port `1:2` (1–65535)"),
        ] {
            assert_eq!(check_api_server_url(bad), Err(why.to_string()), "{bad}");
        }
        // Paths are taken as written, also where `http::Uri` would refuse them.
        assert_eq!(check_api_server_url("https://h:6443/a<b"), Ok(()));
    }

    #[test]
    fn cidrs_are_checked() {
        assert!(check_cidr("10.243.0.0/16").is_ok());
        assert!(check_cidr("fd00::/64").is_ok());
        assert!(check_cidr("10.243.0.0").is_err());
        assert!(check_cidr("10.243.0.0/33").is_err());
        assert!(check_cidr("10.243.0/16").is_err());
    }

    #[test]
    fn resource_names_are_qualified_names() {
        for ok in ["cpu", "ephemeral-storage", "hugepages-2Mi", "nvidia.com/gpu", "example.com/foo_bar"] {
            assert!(check_qualified_name(ok).is_ok(), "{ok}");
        }
        for bad in ["", "-cpu", "a/b/c", "/gpu", "UPPER.com/gpu", "x".repeat(64).as_str()] {
            assert!(check_qualified_name(bad).is_err(), "{bad}");
        }
    }
}
