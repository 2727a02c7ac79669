//! From the `kubernetes = { … }` settings of a provider block to a `kube::Config`, without contacting the cluster.
//!
//! The rules follow hashicorp/kubernetes so that users can copy their provider blocks across:
//! * every connection attribute falls back to a `KUBE_*` environment variable when it is not set in the block
//!   (a value in the block always wins over the environment);
//! * `config_path` / `config_paths` name kubeconfig files, merged like kubectl merges `KUBECONFIG` (first file to
//!   set a value wins); `KUBECONFIG` itself is *not* read, so a provider block never silently follows whatever
//!   cluster the shell happens to point at;
//! * `config_context`, `config_context_cluster` and `config_context_auth_info` pick the context, cluster and user;
//! * explicit attributes (`host`, certificates, `token`, `exec`, `insecure`, …) override what the kubeconfig says;
//! * with nothing configured, a provider running inside a pod uses the pod's service account.
//!
//! Everything that can be checked without the API (files readable, contexts present, URLs and PEM data well
//! formed) is checked here, and each error points at the attribute (or names the environment variable) it
//! came from.
use super::attr::{self, kubernetes, kubernetes::exec};
use crate::validate::Url;
use kube::config::{
    AuthInfo, Cluster as KubeCluster, Context, ExecConfig, ExecInteractiveMode, KubeConfigOptions, Kubeconfig,
    KubeconfigError, NamedAuthInfo, NamedCluster, NamedContext,
};
use liqo_schema::tf::{AttributePath, Diagnostic, Diagnostics, Key, Value};
use std::collections::HashMap;

/// Reads one environment variable; injected so tests never touch the process environment.
pub type Env<'a> = &'a (dyn Fn(&str) -> Option<String> + Sync);

/// The process environment, with empty variables treated as unset (as hashicorp/kubernetes does).
pub fn process_env(name: &str) -> Option<String> {
    std::env::var(name).ok().filter(|v| !v.is_empty())
}

/// Environment variables of the connection attributes, as hashicorp/kubernetes names them.
pub const ENV_CONFIG_PATH: &str = "KUBE_CONFIG_PATH";
pub const ENV_CONFIG_PATHS: &str = "KUBE_CONFIG_PATHS";
pub const ENV_CTX: &str = "KUBE_CTX";
pub const ENV_CTX_CLUSTER: &str = "KUBE_CTX_CLUSTER";
pub const ENV_CTX_AUTH_INFO: &str = "KUBE_CTX_AUTH_INFO";
pub const ENV_HOST: &str = "KUBE_HOST";
pub const ENV_TOKEN: &str = "KUBE_TOKEN";
pub const ENV_CLIENT_CERT: &str = "KUBE_CLIENT_CERT_DATA";
pub const ENV_CLIENT_KEY: &str = "KUBE_CLIENT_KEY_DATA";
pub const ENV_CLUSTER_CA: &str = "KUBE_CLUSTER_CA_CERT_DATA";
pub const ENV_INSECURE: &str = "KUBE_INSECURE";
pub const ENV_TLS_SERVER_NAME: &str = "KUBE_TLS_SERVER_NAME";
pub const ENV_PROXY_URL: &str = "KUBE_PROXY_URL";

/// Name of the single context/cluster/user of the kubeconfig handed to kube once overrides are applied.
const EFFECTIVE: &str = "terraform-provider-liqo";

/// Where a setting came from, so an error can point at it.
#[derive(Clone, Debug, PartialEq)]
enum Origin {
    Block,
    Env(&'static str),
}

/// One resolved setting.
#[derive(Clone, Debug)]
struct Setting<T> {
    value: T,
    origin: Origin,
    path: AttributePath,
}

impl<T> Setting<T> {
    /// An error about this setting: attached to its attribute, and naming the environment variable if the value
    /// came from there (the block does not show it, so the user would otherwise look in the wrong place).
    fn error(&self, summary: impl Into<String>, detail: impl Into<String>) -> Diagnostic {
        let mut detail = detail.into();
        if let Origin::Env(var) = self.origin {
            detail.push_str(&format!("\n(This value comes from the environment variable {var}, because `{}` is not set in the provider block.)", self.path));
        }
        Diagnostic::error(summary, detail).at(self.path.clone())
    }
}

fn kpath(key: Key) -> AttributePath {
    kubernetes.path().attr(key)
}

/// The exec credential plugin, as given in the block.
#[derive(Clone, Debug, PartialEq)]
struct Exec {
    api_version: String,
    command: String,
    args: Vec<String>,
    env: Vec<(String, String)>,
}

/// The connection settings after environment fallbacks, before any file is read.
#[derive(Debug, Default)]
struct Settings {
    config_paths: Vec<Setting<String>>,
    context: Option<Setting<String>>,
    context_cluster: Option<Setting<String>>,
    context_auth_info: Option<Setting<String>>,
    host: Option<Setting<String>>,
    token: Option<Setting<String>>,
    client_certificate: Option<Setting<String>>,
    client_key: Option<Setting<String>>,
    cluster_ca_certificate: Option<Setting<String>>,
    insecure: Option<Setting<bool>>,
    tls_server_name: Option<Setting<String>>,
    proxy_url: Option<Setting<String>>,
    exec: Option<Exec>,
}

impl Settings {
    /// True when the block (or the environment) names a cluster some way; otherwise in-cluster config is tried.
    fn names_a_cluster(&self) -> bool {
        !self.config_paths.is_empty() || self.host.is_some()
    }
}

/// Paths of the connection attributes whose values are unknown (they depend on resources not created yet).
/// Empty when the whole connection is known.
pub fn unknown_attributes(config: &Value) -> Vec<String> {
    let mut out = Vec::new();
    for key in attr::declared().iter().map(|d| d.key) {
        collect_unknown(config.get(key), key.path(), &mut out);
    }
    out
}

/// The API server a block reaches and the settings it comes from, as errors about an unreachable cluster name
/// it: `https://10.0.0.1:6443 (kubeconfig milan.kubeconfig, context milan)`.
pub fn describe_source(config: &Value, server: Option<&str>) -> String {
    let k = config.get(kubernetes);
    let mut from = Vec::new();
    if let Some(path) = k.get(kubernetes::config_path).as_str() {
        from.push(format!("kubeconfig {path}"));
    }
    if let Some(paths) = k.get(kubernetes::config_paths).string_elements().filter(|p| !p.is_empty()) {
        from.push(format!("kubeconfigs {}", paths.join(", ")));
    }
    if let Some(context) = k.get(kubernetes::config_context).as_str() {
        from.push(format!("context {context}"));
    }
    let server = server.unwrap_or("the API server of this provider block");
    if from.is_empty() { server.to_string() } else { format!("{server} ({})", from.join(", ")) }
}

fn collect_unknown(v: &Value, path: AttributePath, out: &mut Vec<String>) {
    match v {
        Value::Unknown => out.push(path.to_string()),
        Value::Object(m) => m.iter().for_each(|(k, v)| collect_unknown(v, path.clone().attr_named(k), out)),
        Value::Map(m) => m.iter().for_each(|(k, v)| collect_unknown(v, path.clone().key(k), out)),
        Value::List(l) | Value::Set(l) | Value::Tuple(l) => {
            l.iter().enumerate().for_each(|(i, v)| collect_unknown(v, path.clone().index(i as i64), out))
        }
        _ => {}
    }
}

/// Checks that need nothing but the block's own known values (ValidateProviderConfig): conflicting attributes,
/// URL schemes, PEM syntax, exec plugin API version. Unknown values pass.
pub fn validate_block(config: &Value) -> Diagnostics {
    let mut diags = Diagnostics::new();
    let k = config.get(kubernetes);
    if !k.get(kubernetes::config_path).is_null() && !k.get(kubernetes::config_paths).is_null() {
        diags.push(
            Diagnostic::error(
                "Conflicting kubeconfig attributes",
                "Set either `config_path` (one file) or `config_paths` (several files, merged in order), not both.",
            )
            .at(kpath(kubernetes::config_paths)),
        );
    }
    let from_block = |name: Key| {
        k.get(name).as_str().filter(|s| !s.is_empty()).map(|s| Setting {
            value: s.to_string(),
            origin: Origin::Block,
            path: kpath(name),
        })
    };
    if let Some(h) = from_block(kubernetes::host) {
        diags.extend(check_url(&h, &["https", "http"]));
    }
    if let Some(p) = from_block(kubernetes::proxy_url) {
        diags.extend(check_url(&p, &["http", "https", "socks5"]));
    }
    for (name, kind) in [
        (kubernetes::cluster_ca_certificate, PemKind::Certificate),
        (kubernetes::client_certificate, PemKind::Certificate),
        (kubernetes::client_key, PemKind::PrivateKey),
    ] {
        if let Some(s) = from_block(name) {
            diags.extend(check_pem(&s, kind));
        }
    }
    if k.get(kubernetes::insecure).as_bool() == Some(true) && from_block(kubernetes::cluster_ca_certificate).is_some() {
        diags.push(insecure_with_ca(kpath(kubernetes::insecure)));
    }
    if let Some(v) = k.get(kubernetes::exec).get(exec::api_version).as_str() {
        diags.extend(check_exec_api_version(v));
    }
    diags
}

fn insecure_with_ca(path: AttributePath) -> Diagnostic {
    Diagnostic::error(
        "`insecure` conflicts with `cluster_ca_certificate`",
        "`insecure = true` turns off verification of the API server's certificate, so a CA bundle to verify it against makes no sense. Remove one of the two (keeping the CA is the safe choice).",
    )
    .at(path)
}

fn check_exec_api_version(v: &str) -> Diagnostics {
    let path = kpath(kubernetes::exec).attr(exec::api_version);
    match v {
        "client.authentication.k8s.io/v1" | "client.authentication.k8s.io/v1beta1" => Diagnostics::new(),
        "client.authentication.k8s.io/v1alpha1" => Diagnostic::warning(
            "Deprecated exec plugin API version",
            "client.authentication.k8s.io/v1alpha1 was removed from Kubernetes clients in 1.24; use v1beta1 or v1 if the plugin supports it.",
        )
        .at(path)
        .into(),
        other => Diagnostic::error(
            "Unsupported exec plugin API version",
            format!("`{other}` is not a client authentication API version. Use `client.authentication.k8s.io/v1` or `client.authentication.k8s.io/v1beta1` (the plugin's documentation says which it speaks)."),
        )
        .at(path)
        .into(),
    }
}

/// `host` / `proxy_url`: a URL ([`Url`]) with one of `schemes` that kube can use.
fn check_url(s: &Setting<String>, schemes: &[&str]) -> Diagnostics {
    let what = s.path.to_string();
    let url = match Url::split(&s.value) {
        Some(url) => url,
        None => {
            return s
                .error(
                    format!("`{what}` has no URL scheme"),
                    format!(
                        "`{}` must be a URL starting with {}, e.g. `https://203.0.113.10:6443`.",
                        s.value,
                        schemes.iter().map(|x| format!("`{x}://`")).collect::<Vec<_>>().join(" or ")
                    ),
                )
                .into();
        }
    };
    let scheme = url.scheme;
    if !schemes.contains(&scheme) {
        return s
            .error(
                format!("Unsupported URL scheme in `{what}`"),
                format!(
                    "`{}` uses `{scheme}://`; use {}.",
                    s.value,
                    schemes.iter().map(|x| format!("`{x}://`")).collect::<Vec<_>>().join(" or ")
                ),
            )
            .into();
    }
    if !url.is_valid() {
        return s
            .error(
                format!("Invalid URL in `{what}`"),
                format!("`{}` is not a valid URL (expected e.g. `{scheme}://203.0.113.10:6443`).", s.value),
            )
            .into();
    }
    Diagnostics::new()
}

#[derive(Clone, Copy)]
enum PemKind {
    Certificate,
    PrivateKey,
}

/// Certificates and keys are PEM text, as in hashicorp/kubernetes (base64-encoded kubeconfig fields need
/// `base64decode()` first, which is the usual mistake; the error says so).
fn check_pem(s: &Setting<String>, kind: PemKind) -> Diagnostics {
    let blocks = pem::parse_many(s.value.as_bytes()).unwrap_or_default();
    let ok = match kind {
        // The one CA-bundle rule every attribute shares (it also parses each certificate).
        PemKind::Certificate => crate::crypto::certificates(s.value.as_bytes()).is_ok(),
        PemKind::PrivateKey => blocks.len() == 1 && blocks[0].tag().ends_with("PRIVATE KEY"),
    };
    if ok {
        return Diagnostics::new();
    }
    let expected = match kind {
        PemKind::Certificate => "one or more PEM `CERTIFICATE` blocks",
        PemKind::PrivateKey => "one PEM private key block (`PRIVATE KEY`, `RSA PRIVATE KEY` or `EC PRIVATE KEY`)",
    };
    let seen = if blocks.is_empty() {
        "no PEM block".to_string()
    } else {
        format!("PEM blocks {:?}", blocks.iter().map(|b| b.tag()).collect::<Vec<_>>())
    };
    s.error(
        format!("`{}` is not valid PEM", s.path),
        format!("Expected {expected}, found {seen}. Kubeconfig `*-data` fields are base64-encoded PEM: pass them through `base64decode()`."),
    )
    .into()
}

/// Applies environment fallbacks and the static checks. Fails only on values that are wrong on their own.
fn resolve(config: &Value, env: Env) -> Result<Settings, Diagnostics> {
    let k = config.get(kubernetes);
    let string = |name: Key, var: &'static str| -> Option<Setting<String>> {
        match k.get(name).as_str().filter(|s| !s.is_empty()) {
            Some(s) => Some(Setting { value: s.to_string(), origin: Origin::Block, path: kpath(name) }),
            None => env(var).map(|v| Setting { value: v, origin: Origin::Env(var), path: kpath(name) }),
        }
    };
    let mut diags = validate_block(config);
    let mut s = Settings {
        context: string(kubernetes::config_context, ENV_CTX),
        context_cluster: string(kubernetes::config_context_cluster, ENV_CTX_CLUSTER),
        context_auth_info: string(kubernetes::config_context_auth_info, ENV_CTX_AUTH_INFO),
        host: string(kubernetes::host, ENV_HOST),
        token: string(kubernetes::token, ENV_TOKEN),
        client_certificate: string(kubernetes::client_certificate, ENV_CLIENT_CERT),
        client_key: string(kubernetes::client_key, ENV_CLIENT_KEY),
        cluster_ca_certificate: string(kubernetes::cluster_ca_certificate, ENV_CLUSTER_CA),
        tls_server_name: string(kubernetes::tls_server_name, ENV_TLS_SERVER_NAME),
        proxy_url: string(kubernetes::proxy_url, ENV_PROXY_URL),
        ..Settings::default()
    };

    // Kubeconfig files: the block's `config_path`, else its `config_paths`, else KUBE_CONFIG_PATH, else
    // KUBE_CONFIG_PATHS (a list separated like PATH).
    let block_paths: Vec<Setting<String>> = k
        .get(kubernetes::config_paths)
        .elements()
        .iter()
        .enumerate()
        .filter_map(|(i, v)| {
            v.as_str().map(|p| Setting {
                value: p.to_string(),
                origin: Origin::Block,
                path: kpath(kubernetes::config_paths).index(i as i64),
            })
        })
        .collect();
    s.config_paths = if let Some(p) = k.get(kubernetes::config_path).as_str().filter(|p| !p.is_empty()) {
        vec![Setting { value: p.to_string(), origin: Origin::Block, path: kpath(kubernetes::config_path) }]
    } else if !block_paths.is_empty() {
        block_paths
    } else if let Some(p) = env(ENV_CONFIG_PATH) {
        vec![Setting { value: p, origin: Origin::Env(ENV_CONFIG_PATH), path: kpath(kubernetes::config_path) }]
    } else if let Some(list) = env(ENV_CONFIG_PATHS) {
        std::env::split_paths(&list)
            .filter(|p| !p.as_os_str().is_empty())
            .map(|p| Setting {
                value: p.to_string_lossy().into_owned(),
                origin: Origin::Env(ENV_CONFIG_PATHS),
                path: kpath(kubernetes::config_paths),
            })
            .collect()
    } else {
        Vec::new()
    };

    s.insecure = match k.get(kubernetes::insecure).as_bool() {
        Some(b) => Some(Setting { value: b, origin: Origin::Block, path: kpath(kubernetes::insecure) }),
        None => match env(ENV_INSECURE) {
            None => None,
            Some(v) => match parse_go_bool(&v) {
                Some(b) => {
                    Some(Setting { value: b, origin: Origin::Env(ENV_INSECURE), path: kpath(kubernetes::insecure) })
                }
                None => {
                    diags.push(
                        Diagnostic::error(
                            format!("Invalid {ENV_INSECURE}"),
                            format!(
                                "The environment variable {ENV_INSECURE} is `{v}`; use `true` or `false` (or unset it)."
                            ),
                        )
                        .at(kpath(kubernetes::insecure)),
                    );
                    None
                }
            },
        },
    };

    // Values from the environment were not seen by `validate_block`; check them the same way.
    for (set, schemes) in [(&s.host, &["https", "http"][..]), (&s.proxy_url, &["http", "https", "socks5"][..])] {
        if let Some(v) = set.as_ref().filter(|v| v.origin != Origin::Block) {
            diags.extend(check_url(v, schemes));
        }
    }
    for (set, kind) in [
        (&s.cluster_ca_certificate, PemKind::Certificate),
        (&s.client_certificate, PemKind::Certificate),
        (&s.client_key, PemKind::PrivateKey),
    ] {
        if let Some(v) = set.as_ref().filter(|v| v.origin != Origin::Block) {
            diags.extend(check_pem(v, kind));
        }
    }
    if let (Some(i), Some(ca)) = (&s.insecure, &s.cluster_ca_certificate)
        && i.value
        && (i.origin != Origin::Block || ca.origin != Origin::Block)
    {
        diags.push(insecure_with_ca(kpath(kubernetes::insecure)));
    }

    let e = k.get(kubernetes::exec);
    if let (Some(api_version), Some(command)) = (e.get(exec::api_version).as_str(), e.get(exec::command).as_str()) {
        s.exec = Some(Exec {
            api_version: api_version.to_string(),
            command: command.to_string(),
            args: e.get(exec::args).string_elements().unwrap_or_default(),
            env: e.get(exec::env).string_entries().unwrap_or_default().into_iter().collect(),
        });
    }

    // Context selectors only mean something with a kubeconfig. Set in the block without one is a mistake worth
    // reporting; set in the environment (a shell-wide KUBE_CTX) it is simply not used.
    if s.config_paths.is_empty() {
        for sel in [&s.context, &s.context_cluster, &s.context_auth_info].into_iter().flatten() {
            if sel.origin == Origin::Block {
                diags.push(sel.error(
                    format!("`{}` needs a kubeconfig", sel.path),
                    "Context selection applies to kubeconfig files: set `config_path` (or `config_paths`) too, or remove it and configure `host` and credentials directly.",
                ));
            }
        }
    }
    if diags.has_errors() { Err(diags) } else { Ok(s) }
}

/// Go's strconv.ParseBool, which hashicorp/kubernetes uses for KUBE_INSECURE.
fn parse_go_bool(s: &str) -> Option<bool> {
    match s {
        "1" | "t" | "T" | "true" | "TRUE" | "True" => Some(true),
        "0" | "f" | "F" | "false" | "FALSE" | "False" => Some(false),
        _ => None,
    }
}

/// `~/x` → `$HOME/x`, as hashicorp/kubernetes expands config paths.
fn expand_home(p: &str, env: Env) -> String {
    match (p.strip_prefix("~/"), env("HOME")) {
        (Some(rest), Some(home)) => format!("{}/{rest}", home.trim_end_matches('/')),
        _ => p.to_string(),
    }
}

/// Reads and merges the kubeconfig files (first file to set a value wins, as kubectl does).
fn load_kubeconfigs(paths: &[Setting<String>], env: Env) -> Result<Kubeconfig, Diagnostics> {
    let mut merged: Option<Kubeconfig> = None;
    for p in paths {
        let file = expand_home(&p.value, env);
        let kc = Kubeconfig::read_from(&file).map_err(|e| {
            let why = match &e {
                KubeconfigError::ReadConfig(io, _) => format!("it cannot be read: {io}"),
                other => format!("it is not a valid kubeconfig ({})", parse_error_location(&other.to_string())),
            };
            Diagnostics::from(p.error("Cannot load kubeconfig file", format!("`{file}`: {why}. Check the path (relative paths start from Terraform's working directory; `~/` is expanded).")))
        })?;
        merged = Some(match merged {
            None => kc,
            Some(m) => m
                .merge(kc)
                .map_err(|e| Diagnostics::from(p.error("Cannot merge kubeconfig files", format!("`{file}`: {e}."))))?,
        });
    }
    Ok(merged.unwrap_or_default())
}

/// Where a kubeconfig failed to parse, without the parser's excerpt: a kubeconfig holds credentials, and parser
/// messages quote the offending lines (a `client-key-data` line would end up in Terraform's output).
pub(super) fn parse_error_location(message: &str) -> String {
    let number_after = |key: &str| -> Option<u64> {
        let rest = &message[message.find(key)? + key.len()..];
        let digits: String = rest.chars().take_while(char::is_ascii_digit).collect();
        digits.parse().ok()
    };
    match (number_after("line "), number_after("column ")) {
        (Some(l), Some(c)) => {
            format!("YAML error at line {l}, column {c}; the content is not shown because it may hold credentials")
        }
        _ => "the content is not shown because it may hold credentials".to_string(),
    }
}

fn names<'a>(items: impl Iterator<Item = &'a String>) -> String {
    let v: Vec<String> = items.map(|n| format!("`{n}`")).collect();
    if v.is_empty() { "none".to_string() } else { v.join(", ") }
}

/// The cluster, user and context namespace a kubeconfig selects, with each failure pointing at the attribute
/// that made the choice.
fn select(kc: &Kubeconfig, s: &Settings) -> Result<(KubeCluster, AuthInfo, Option<String>), Diagnostics> {
    let first_path = &s.config_paths[0];
    let files = s.config_paths.iter().map(|p| format!("`{}`", p.value)).collect::<Vec<_>>().join(", ");
    let ctx_name = match (&s.context, &kc.current_context) {
        (Some(c), _) => c.value.clone(),
        (None, Some(c)) => c.clone(),
        (None, None) => {
            return Err(Diagnostic::error(
                "No kubeconfig context selected",
                format!(
                    "{files} has no `current-context`. Set `config_context` to one of: {}.",
                    names(kc.contexts.iter().map(|c| &c.name))
                ),
            )
            .at(kpath(kubernetes::config_context))
            .into());
        }
    };
    let context: Context = match kc.contexts.iter().find(|c| c.name == ctx_name).and_then(|c| c.context.clone()) {
        Some(c) => c,
        None => {
            let detail = format!(
                "Context `{ctx_name}` is not in {files}. Contexts there: {}.",
                names(kc.contexts.iter().map(|c| &c.name))
            );
            return Err(match &s.context {
                Some(c) => c.error("Unknown kubeconfig context", detail),
                None => first_path.error(
                    "Unknown kubeconfig context",
                    format!(
                        "{detail} (`{ctx_name}` is the file's current-context; set `config_context` to pick another.)"
                    ),
                ),
            }
            .into());
        }
    };
    let cluster_name = s.context_cluster.as_ref().map(|c| c.value.clone()).unwrap_or_else(|| context.cluster.clone());
    let cluster = match kc.clusters.iter().find(|c| c.name == cluster_name).and_then(|c| c.cluster.clone()) {
        Some(c) => c,
        None => {
            let detail = format!(
                "Cluster `{cluster_name}` is not in {files}. Clusters there: {}.",
                names(kc.clusters.iter().map(|c| &c.name))
            );
            return Err(match &s.context_cluster {
                Some(c) => c.error("Unknown kubeconfig cluster", detail),
                None => Diagnostic::error(
                    "Unknown kubeconfig cluster",
                    format!("{detail} (named by context `{ctx_name}`.)"),
                )
                .at(kpath(kubernetes::config_context)),
            }
            .into());
        }
    };
    // Like client-go, a context whose user is missing connects anonymously; a user the block names must exist.
    let user = match (&s.context_auth_info, &context.user) {
        (Some(u), _) => match kc.auth_infos.iter().find(|a| a.name == u.value) {
            Some(a) => a.auth_info.clone().unwrap_or_default(),
            None => {
                return Err(u
                    .error(
                        "Unknown kubeconfig user",
                        format!(
                            "User `{}` is not in {files}. Users there: {}.",
                            u.value,
                            names(kc.auth_infos.iter().map(|a| &a.name))
                        ),
                    )
                    .into());
            }
        },
        (None, Some(name)) => {
            kc.auth_infos.iter().find(|a| &a.name == name).and_then(|a| a.auth_info.clone()).unwrap_or_default()
        }
        (None, None) => AuthInfo::default(),
    };
    Ok((cluster, user, context.namespace))
}

/// Explicit attributes win over the kubeconfig, field by field (the same overrides client-go applies).
fn apply_overrides(cluster: &mut KubeCluster, user: &mut AuthInfo, s: &Settings) {
    use base64::Engine;
    let b64 = |s: &str| base64::engine::general_purpose::STANDARD.encode(s.as_bytes());
    if let Some(h) = &s.host {
        cluster.server = Some(h.value.clone());
    }
    if let Some(ca) = &s.cluster_ca_certificate {
        cluster.certificate_authority_data = Some(b64(&ca.value));
        cluster.certificate_authority = None;
    }
    if let Some(i) = &s.insecure {
        cluster.insecure_skip_tls_verify = Some(i.value);
    }
    if let Some(t) = &s.tls_server_name {
        cluster.tls_server_name = Some(t.value.clone());
    }
    if let Some(p) = &s.proxy_url {
        cluster.proxy_url = Some(p.value.clone());
    }
    if let Some(c) = &s.client_certificate {
        user.client_certificate_data = Some(b64(&c.value));
        user.client_certificate = None;
    }
    if let Some(k) = &s.client_key {
        user.client_key_data = Some(b64(&k.value).into());
        user.client_key = None;
    }
    if let Some(t) = &s.token {
        user.token = Some(t.value.clone().into());
        user.token_file = None;
    }
    if let Some(e) = &s.exec {
        user.exec = Some(ExecConfig {
            api_version: Some(e.api_version.clone()),
            command: Some(e.command.clone()),
            args: Some(e.args.clone()),
            env: Some(
                e.env
                    .iter()
                    .map(|(k, v)| HashMap::from([("name".to_string(), k.clone()), ("value".to_string(), v.clone())]))
                    .collect(),
            ),
            // The provider runs under Terraform without a terminal: a plugin must not wait for input.
            interactive_mode: Some(ExecInteractiveMode::Never),
            ..ExecConfig::default()
        });
    }
}

/// What ConfigureProvider learned about the cluster: a client configuration, ready to connect on first use.
pub async fn build(config: &Value, env: Env<'_>) -> Result<kube::Config, Diagnostics> {
    let s = resolve(config, env)?;
    if !s.names_a_cluster() {
        return in_cluster(&s, env);
    }
    let (mut cluster, mut user, namespace) = if s.config_paths.is_empty() {
        (KubeCluster::default(), AuthInfo::default(), None)
    } else {
        let kc = load_kubeconfigs(&s.config_paths, env)?;
        select(&kc, &s)?
    };
    apply_overrides(&mut cluster, &mut user, &s);

    if cluster.server.as_deref().unwrap_or("").is_empty() {
        return Err(Diagnostic::error(
            "No API server address",
            "The selected kubeconfig cluster has no `server`. Set `host` to the API server URL (e.g. `https://203.0.113.10:6443`).",
        )
        .at(kpath(kubernetes::host))
        .into());
    }
    let has_cert = user.client_certificate_data.is_some() || user.client_certificate.is_some();
    let has_key = user.client_key_data.is_some() || user.client_key.is_some();
    if has_cert != has_key {
        let (missing, path) = if has_cert {
            ("client key", kubernetes::client_key)
        } else {
            ("client certificate", kubernetes::client_certificate)
        };
        return Err(Diagnostic::error(
            format!("Client {missing} missing"),
            format!("Client-certificate authentication needs both the certificate and its key, but the {missing} is set neither in the block nor in the selected kubeconfig user. Set `{path}`."),
        )
        .at(kpath(path))
        .into());
    }

    let kubeconfig = Kubeconfig {
        clusters: vec![NamedCluster { name: EFFECTIVE.into(), cluster: Some(cluster), ..Default::default() }],
        auth_infos: vec![NamedAuthInfo { name: EFFECTIVE.into(), auth_info: Some(user), ..Default::default() }],
        contexts: vec![NamedContext {
            name: EFFECTIVE.into(),
            context: Some(Context {
                cluster: EFFECTIVE.into(),
                user: Some(EFFECTIVE.into()),
                namespace,
                ..Default::default()
            }),
            ..Default::default()
        }],
        current_context: Some(EFFECTIVE.into()),
        ..Default::default()
    };
    kube_config_from(kubeconfig, &s).await
}

/// kube's own parsing of the effective kubeconfig (server URL, CA bundle, proxy). Its errors are mapped back to
/// the attribute that supplied the value.
async fn kube_config_from(kubeconfig: Kubeconfig, s: &Settings) -> Result<kube::Config, Diagnostics> {
    kube::Config::from_custom_kubeconfig(kubeconfig, &KubeConfigOptions::default()).await.map_err(|e| {
        let source_of = |explicit: &Option<Setting<String>>| -> AttributePath {
            explicit
                .as_ref()
                .map(|x| x.path.clone())
                .or_else(|| s.config_paths.first().map(|p| p.path.clone()))
                .unwrap_or_else(|| AttributePath::root(kubernetes))
        };
        let (summary, path) = match &e {
            KubeconfigError::ParseClusterUrl(_) | KubeconfigError::MissingClusterUrl => {
                ("Invalid API server URL", source_of(&s.host))
            }
            KubeconfigError::LoadCertificateAuthority(_) | KubeconfigError::ParseCertificates(_) => {
                ("Invalid cluster CA certificate", source_of(&s.cluster_ca_certificate))
            }
            KubeconfigError::ParseProxyUrl(_) => ("Invalid proxy URL", source_of(&s.proxy_url)),
            _ => ("Invalid Kubernetes connection settings", AttributePath::root(kubernetes)),
        };
        Diagnostics::from(
            Diagnostic::error(
                summary,
                format!("{e}. Check this setting in the provider block or in the kubeconfig it points at."),
            )
            .at(path),
        )
    })
}

/// Nothing names a cluster: inside a pod, use its service account (as client-go does); anywhere else, say what
/// to configure — in particular that KUBECONFIG is deliberately ignored.
fn in_cluster(s: &Settings, env: Env) -> Result<kube::Config, Diagnostics> {
    let credentials_only =
        s.token.is_some() || s.client_certificate.is_some() || s.exec.is_some() || s.cluster_ca_certificate.is_some();
    if !credentials_only && env("KUBERNETES_SERVICE_HOST").is_some() {
        return kube::Config::incluster().map_err(|e| {
            Diagnostic::error(
                "Cannot use the pod's service account",
                format!("No cluster is configured in the provider block and the provider runs in a pod, but its in-cluster configuration failed: {e}. Configure `kubernetes` explicitly."),
            )
            .at(AttributePath::root(kubernetes))
            .into()
        });
    }
    let hint = if env("KUBECONFIG").is_some() {
        " KUBECONFIG is set in the environment, but like hashicorp/kubernetes this provider does not read it implicitly: set `config_path = pathexpand(\"~/.kube/config\")` (or KUBE_CONFIG_PATH) to use a kubeconfig."
    } else {
        ""
    };
    let (summary, path) = if credentials_only {
        ("No API server address", kpath(kubernetes::host))
    } else {
        ("No Kubernetes cluster configured", AttributePath::root(kubernetes))
    };
    Err(Diagnostic::error(
        summary,
        format!(
            "Tell the provider which cluster to manage: `kubernetes = {{ config_path = \"…\", config_context = \"…\" }}` for a kubeconfig file, or `host` plus credentials (`token`, `client_certificate`/`client_key`, or `exec`). The KUBE_* environment variables work as fallbacks.{hint}"
        ),
    )
    .at(path)
    .into())
}
