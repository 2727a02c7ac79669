//! Bad input, table-driven: every resource, the `liqo_peering` data source and the provider block (with the
//! `liqo_cluster` data source riding along in the provider cases) given one wrong value at a time. Each case must be rejected by `plan` with a
//! diagnostic that sits on the case's block (`on main.tf line N, in resource "…"`), names the attribute and
//! says how to fix it, without a single connection reaching an API server; and, unless only ConfigureProvider
//! can check it (kubeconfig files, contexts, effective credentials), already by `validate`.
//!
//! The provider block points at a counting fake API server: a loopback TCP listener that counts the
//! connections it accepts and closes them. A control at the end shows the counter works: a configuration that
//! does need the API (reading `data "liqo_cluster"`) is seen by it.
//!
//! Needs no test ground. Runs once per client (Terraform 1.16.4 and OpenTofu 1.11.7), side by side,
//! one working directory per client, `init` once, `main.tf` rewritten per case.
use std::time::Instant;

use anyhow::{Result, ensure};
use liqo_acceptance::tf::{self, Cli, CountingApiServer, Workdir};

/// A real certificate as an HCL string body (the provider parses every certificate it is given).
fn pem_cert() -> String {
    let cert = rcgen::generate_simple_self_signed(vec!["case".to_string()]).expect("a self-signed certificate").cert;
    cert.pem().replace('\n', "\\n")
}

/// A consumer's CSR for `rome` as liqo_consumer_key makes it, as an HCL string (leaked: the case tables hold
/// `&'static str`, and the test makes it once).
fn rome_csr() -> &'static str {
    static CSR: std::sync::OnceLock<String> = std::sync::OnceLock::new();
    CSR.get_or_init(|| {
        let key = liqo_acceptance::ground::kubeconfig::ConsumerKey::new("rome").expect("a consumer key");
        format!("\"{}\"", key.csr_pem.replace('\n', "\\n"))
    })
}

/// Planted in invalid kubeconfigs (liqo_peer's `kubeconfig_wo`, a provider block's kubeconfig file): the
/// diagnostics about them must not quote it.
const PLANTED_SECRET: &str = "cGxhbnRlZC1wcml2YXRlLWtleQ";
/// Files of the root module the provider-block cases point at.
const FAKE_KUBECONFIG: &str = "fake.kubeconfig";
const GARBAGE_KUBECONFIG: &str = "garbage.kubeconfig";
const DIRECTORY_KUBECONFIG: &str = "kubeconfig.d";

/// The first command that rejects a case: `validate` (static checks) or `plan` (ConfigureProvider reads
/// kubeconfig files). Every case also runs with `plan`, which is where a provider could reach the cluster.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Stage {
    Validate,
    Plan,
}

impl Stage {
    fn args(self) -> &'static [&'static str] {
        match self {
            Stage::Validate => &["validate", "-no-color"],
            Stage::Plan => &["plan", "-input=false", "-no-color"],
        }
    }
}

/// One bad input and what the diagnostic about it must say.
struct Case {
    name: String,
    stage: Stage,
    /// The provider block (`{api}` stands for the counting server's URL).
    provider: String,
    /// Resource and data blocks.
    body: String,
    /// Terraform's location line for the block in error: `resource "liqo_gateway" "case"` or `provider "liqo"`.
    block: String,
    /// A phrase of the diagnostic's summary.
    summary: &'static str,
    /// The attribute (its path as the provider writes it, or its name).
    attribute: &'static str,
    /// A phrase of the fix the diagnostic suggests.
    hint: &'static str,
}

fn default_provider() -> String {
    "provider \"liqo\" {\n  kubernetes = { host = \"{api}\", insecure = true, token = \"x\" }\n}\n".into()
}

/// `key = value` lines of a valid block; `set` replaces or adds lines, `unset` drops them. `timeouts` is a
/// nested block (`timeouts { … }`), everything else an argument.
fn render(kind: &str, base: &[(&str, &str)], set: &[(&str, &str)], unset: &[&str]) -> String {
    let mut lines: Vec<(String, String)> =
        base.iter().filter(|(k, _)| !unset.contains(k)).map(|(k, v)| (k.to_string(), v.to_string())).collect();
    for (k, v) in set {
        match lines.iter_mut().find(|(key, _)| key == k) {
            Some(line) => line.1 = v.to_string(),
            None => lines.push((k.to_string(), v.to_string())),
        }
    }
    let mut hcl = format!("resource \"{kind}\" \"case\" {{\n");
    for (k, v) in lines {
        if k == "timeouts" {
            hcl.push_str(&format!("  timeouts {v}\n"));
        } else {
            hcl.push_str(&format!("  {k} = {v}\n"));
        }
    }
    hcl.push_str("}\n");
    hcl
}

const GENERATE: &[(&str, &str)] = &[("remote_cluster_id", "\"rome\"")];
const GATEWAY_SERVER: &[(&str, &str)] = &[
    ("tenant_namespace", "\"liqo-tenant-rome\""),
    ("remote_cluster_id", "\"rome\""),
    ("remote_pod_cidrs", "[\"10.101.0.0/16\"]"),
    ("remote_external_cidr", "\"10.151.0.0/16\""),
    // A valid WireGuard public key (32 bytes, standard base64).
    ("remote_public_key", "\"nBxGmUf2Fa4rYqgFpFyPq6KTTsqfPxDeUuQmuAxHXwM=\""),
    ("server", "{ service_type = \"NodePort\", port = 51840, node_port = 30742 }"),
];
const CLIENT: &str = "{ addresses = [\"127.0.0.1\"], port = 30742 }";
fn tenant_base() -> Vec<(&'static str, &'static str)> {
    vec![("tenant_namespace", "\"liqo-tenant-rome\""), ("consumer_cluster_id", "\"rome\""), ("csr", rome_csr())]
}
/// A kubeconfig that passes liqo_peer's checks (JSON is YAML).
const PEER_KUBECONFIG: &str = "jsonencode({ apiVersion = \"v1\", clusters = [{ name = \"milan\", cluster = { server = \"https://127.0.0.1:6443\" } }], users = [{ name = \"rome\", user = {} }], contexts = [{ name = \"default-context\", context = { cluster = \"milan\", user = \"rome\" } }], \"current-context\" = \"default-context\" })";
const OFFLOAD: &[(&str, &str)] = &[("namespace", "\"liqo-demo\"")];

fn peer_base() -> Vec<(&'static str, &'static str)> {
    vec![
        ("tenant_namespace", "\"liqo-tenant-milan\""),
        ("provider_cluster_id", "\"milan\""),
        ("provider_tenant_namespace", "\"liqo-tenant-rome\""),
        // The brought-kubeconfig flow: the issued-certificate flow's inputs are references in real use.
        ("kubeconfig_wo", PEER_KUBECONFIG),
        ("kubeconfig_wo_version", "1"),
        ("resources", "{ cpu = \"4\", memory = \"8Gi\", pods = \"110\" }"),
    ]
}

/// A resource case rejected by `validate`.
fn resource_case(
    kind: &str,
    base: &[(&str, &str)],
    set: &[(&str, &str)],
    unset: &[&str],
    (summary, attribute, hint): (&'static str, &'static str, &'static str),
) -> Case {
    let label = set
        .iter()
        .map(|(k, v)| format!("{k}={v}"))
        .chain(unset.iter().map(|k| format!("-{k}")))
        .collect::<Vec<_>>()
        .join(" ");
    Case {
        name: format!("{kind}: {label}"),
        stage: Stage::Validate,
        provider: default_provider(),
        body: render(kind, base, set, unset),
        block: format!("resource \"{kind}\" \"case\""),
        summary,
        attribute,
        hint,
    }
}

/// A `liqo_peering` data source case: data sources are read while planning, so only validation stands between
/// a bad argument and a request to the cluster.
fn peering_case(remote_cluster_id: &str, hint: &'static str) -> Case {
    Case {
        name: format!("data liqo_peering: remote_cluster_id={remote_cluster_id}"),
        stage: Stage::Validate,
        provider: default_provider(),
        body: format!("data \"liqo_peering\" \"case\" {{\n  remote_cluster_id = {remote_cluster_id}\n}}\n"),
        block: "data \"liqo_peering\" \"case\"".into(),
        summary: "Invalid cluster ID for `remote_cluster_id`",
        attribute: "remote_cluster_id",
        hint,
    }
}

/// A provider-block case: a valid liqo_generate and a liqo_cluster data source use the bad block.
fn provider_case(
    stage: Stage,
    kubernetes: &str,
    extra: &str,
    (summary, attribute, hint): (&'static str, &'static str, &'static str),
) -> Case {
    Case {
        name: format!("provider: kubernetes = {kubernetes} {extra}"),
        stage,
        provider: format!("provider \"liqo\" {{\n  kubernetes = {kubernetes}\n{extra}}}\n"),
        body: format!("{}\ndata \"liqo_cluster\" \"case\" {{}}\n", render("liqo_generate", GENERATE, &[], &[])),
        block: "provider \"liqo\"".into(),
        summary,
        attribute,
        hint,
    }
}

fn cases() -> Vec<Case> {
    use Stage::{Plan, Validate};
    let mut cases = Vec::new();

    // The provider block: static checks (validate) …
    let p = |stage, k: &str, summary_attr_hint| provider_case(stage, k, "", summary_attr_hint);
    cases.push(p(
        Validate,
        "{ host = \"127.0.0.1:6443\", token = \"x\" }",
        ("has no URL scheme", "kubernetes.host", "must be a URL starting with `https://`"),
    ));
    cases.push(p(
        Validate,
        "{ host = \"ftp://127.0.0.1:6443\", token = \"x\" }",
        ("Unsupported URL scheme in `kubernetes.host`", "kubernetes.host", "use `https://` or `http://`"),
    ));
    cases.push(p(
        Validate,
        "{ host = \"https://\", token = \"x\" }",
        ("Invalid URL in `kubernetes.host`", "kubernetes.host", "is not a valid URL"),
    ));
    cases.push(p(
        Validate,
        "{ host = \"{api}\", token = \"x\", proxy_url = \"gopher://proxy:70\" }",
        ("Unsupported URL scheme in `kubernetes.proxy_url`", "kubernetes.proxy_url", "`socks5://`"),
    ));
    cases.push(p(
        Validate,
        "{ config_path = \"fake.kubeconfig\", config_paths = [\"fake.kubeconfig\"] }",
        ("Conflicting kubeconfig attributes", "config_paths", "Set either `config_path`"),
    ));
    let insecure_with_ca = format!(
        "{{ host = \"{{api}}\", token = \"x\", insecure = true, cluster_ca_certificate = \"{}\" }}",
        pem_cert()
    );
    cases.push(p(
        Validate,
        &insecure_with_ca,
        ("`insecure` conflicts with `cluster_ca_certificate`", "insecure", "Remove one of the two"),
    ));
    cases.push(p(
        Validate,
        "{ host = \"{api}\", cluster_ca_certificate = \"TUlJQnN6Q0NBVm1nQXdJQkFnSVU=\", token = \"x\" }",
        (
            "`kubernetes.cluster_ca_certificate` is not valid PEM",
            "cluster_ca_certificate",
            "pass them through `base64decode()`",
        ),
    ));
    let cert = pem_cert();
    let key_is_a_certificate =
        format!("{{ host = \"{{api}}\", insecure = true, client_certificate = \"{cert}\", client_key = \"{cert}\" }}");
    cases.push(p(
        Validate,
        &key_is_a_certificate,
        ("`kubernetes.client_key` is not valid PEM", "client_key", "one PEM private key block"),
    ));
    cases.push(p(
        Validate,
        "{ host = \"{api}\", insecure = true, exec = { api_version = \"v1\", command = \"true\" } }",
        ("Unsupported exec plugin API version", "api_version", "client.authentication.k8s.io/v1beta1"),
    ));
    cases.push(provider_case(
        Validate,
        "{ host = \"{api}\", insecure = true, token = \"x\" }",
        "  liqo_namespace = \"Liqo_System\"\n",
        ("Invalid namespace name for `liqo_namespace`", "liqo_namespace", "Namespace names are DNS labels"),
    ));
    // … and what only ConfigureProvider can check (plan): files, contexts, the effective credentials.
    cases.push(p(
        Plan,
        "{ config_path = \"missing.kubeconfig\" }",
        ("Cannot load kubeconfig file", "config_path", "Check the path"),
    ));
    cases.push(p(
        Plan,
        "{ config_path = \"kubeconfig.d\" }",
        ("Cannot load kubeconfig file", "config_path", "it cannot be read"),
    ));
    cases.push(p(
        Plan,
        "{ config_path = \"garbage.kubeconfig\" }",
        ("Cannot load kubeconfig file", "config_path", "it is not a valid kubeconfig"),
    ));
    cases.push(p(
        Plan,
        "{ config_path = \"fake.kubeconfig\", config_context = \"florence\" }",
        ("Unknown kubeconfig context", "config_context", "Contexts there: `fake`"),
    ));
    cases.push(p(
        Plan,
        "{ config_path = \"fake.kubeconfig\", config_context_cluster = \"nowhere\" }",
        ("Unknown kubeconfig cluster", "config_context_cluster", "Clusters there: `fake`"),
    ));
    cases.push(p(
        Plan,
        "{ config_path = \"fake.kubeconfig\", config_context_auth_info = \"nobody\" }",
        ("Unknown kubeconfig user", "config_context_auth_info", "Users there: `fake`"),
    ));
    cases.push(p(
        Plan,
        "{ host = \"{api}\", token = \"x\", config_context = \"fake\" }",
        ("needs a kubeconfig", "config_context", "set `config_path`"),
    ));
    let cert_without_key = format!("{{ host = \"{{api}}\", insecure = true, client_certificate = \"{cert}\" }}");
    cases.push(p(Plan, &cert_without_key, ("key missing", "client_key", "Set `client_key`")));
    cases.push(p(Plan, "{ token = \"x\" }", ("No API server address", "host", "`host` plus credentials")));
    cases.push(p(
        Plan,
        "{}",
        ("No Kubernetes cluster configured", "kubernetes", "Tell the provider which cluster to manage"),
    ));

    // liqo_generate
    let g = |set: &[(&str, &str)], e| resource_case("liqo_generate", GENERATE, set, &[], e);
    let dns = "Liqo cluster IDs are DNS labels";
    cases.push(g(
        &[("remote_cluster_id", "\"Rome_1\"")],
        ("Invalid cluster ID for `remote_cluster_id`", "remote_cluster_id", dns),
    ));
    cases.push(g(
        &[("remote_cluster_id", "\"-rome\"")],
        ("Invalid cluster ID for `remote_cluster_id`", "remote_cluster_id", "starts or ends with '-'"),
    ));
    let long = format!("\"{}\"", "a".repeat(64));
    cases.push(g(
        &[("remote_cluster_id", long.as_str())],
        ("Invalid cluster ID for `remote_cluster_id`", "remote_cluster_id", "is 64 characters long"),
    ));
    cases.push(g(
        &[("remote_cluster_id", "\"\"")],
        ("Invalid cluster ID for `remote_cluster_id`", "remote_cluster_id", "is empty"),
    ));
    cases.push(g(
        &[("tenant_namespace", "\"Tenant.NS\"")],
        ("Invalid namespace name for `tenant_namespace`", "tenant_namespace", "Namespace names are DNS labels"),
    ));
    cases.push(g(
        &[("timeouts", "{ create = \"10 minutes\" }")],
        ("Invalid duration for `timeouts.create`", "create", "Write durations like `90s`"),
    ));
    cases.push(g(
        &[("timeouts", "{ delete = \"10\" }")],
        ("Invalid duration for `timeouts.delete`", "delete", "a number without a unit"),
    ));

    // liqo_gateway
    let w = |set: &[(&str, &str)], unset: &[&str], e| resource_case("liqo_gateway", GATEWAY_SERVER, set, unset, e);
    let cidr_hint = "Give a network in CIDR notation";
    cases.push(w(
        &[("remote_pod_cidrs", "[\"10.101.0.0\"]")],
        &[],
        ("Invalid CIDR for `remote_pod_cidrs[0]`", "remote_pod_cidrs", "has no prefix length"),
    ));
    cases.push(w(
        &[("remote_pod_cidrs", "[\"10.101.0.0/16\", \"10.102.0.0/33\"]")],
        &[],
        ("Invalid CIDR for `remote_pod_cidrs[1]`", "remote_pod_cidrs", "invalid prefix length `33`"),
    ));
    cases.push(w(
        &[("remote_external_cidr", "\"300.1.0.0/16\"")],
        &[],
        ("Invalid CIDR for `remote_external_cidr`", "remote_external_cidr", cidr_hint),
    ));
    cases.push(w(
        &[("remote_pod_cidrs", "[]")],
        &[],
        ("No pod CIDR for `remote_pod_cidrs`", "remote_pod_cidrs", "Give at least one pod CIDR"),
    ));
    let key_hint = "32 bytes in standard base64";
    cases.push(w(
        &[("remote_public_key", "\"dG9vIHNob3J0\"")],
        &[],
        ("Invalid WireGuard public key for `remote_public_key`", "remote_public_key", "decodes to 9 bytes, not 32"),
    ));
    cases.push(w(
        &[("remote_public_key", "\"not base64!\"")],
        &[],
        ("Invalid WireGuard public key for `remote_public_key`", "remote_public_key", key_hint),
    ));
    let key33 = format!("\"{}\"", "A".repeat(44));
    cases.push(w(
        &[("remote_public_key", key33.as_str())],
        &[],
        ("Invalid WireGuard public key for `remote_public_key`", "remote_public_key", "decodes to 33 bytes, not 32"),
    ));
    cases.push(w(
        &[],
        &["server"],
        ("One of `server` and `client` is required", "server", "on the cluster that exposes the WireGuard endpoint"),
    ));
    cases.push(w(
        &[("client", CLIENT)],
        &[],
        ("Only one of `server` and `client` may be set", "client", "exactly one Liqo gateway"),
    ));
    cases.push(w(
        &[("server", "{ service_type = \"NodePort\", port = 70000 }")],
        &[],
        ("Port out of range for `server.port`", "server.port", "between 1 and 65535"),
    ));
    cases.push(w(
        &[("server", "{ service_type = \"NodePort\", port = 0 }")],
        &[],
        ("Port out of range for `server.port`", "server.port", "between 1 and 65535"),
    ));
    cases.push(w(
        &[("server", "{ service_type = \"NodePort\", node_port = 8080 }")],
        &[],
        ("Port out of range for `server.node_port`", "server.node_port", "between 30000 and 32767"),
    ));
    cases.push(w(
        &[("server", "{ service_type = \"nodeport\" }")],
        &[],
        (
            "Unsupported value for `server.service_type`",
            "server.service_type",
            "`NodePort`, `LoadBalancer`, `ClusterIP` (case-sensitive)",
        ),
    ));
    cases.push(w(
        &[("server", "{ service_type = \"ClusterIP\", node_port = 30742 }")],
        &[],
        ("`server.node_port` needs a NodePort or LoadBalancer service", "server.node_port", "remove `node_port`"),
    ));
    cases.push(w(
        &[("server", "{ service_type = \"LoadBalancer\", load_balancer_ip = \"not-an-ip\" }")],
        &[],
        (
            "Invalid IP address for `server.load_balancer_ip`",
            "server.load_balancer_ip",
            "is not an IPv4 or IPv6 address",
        ),
    ));
    cases.push(w(
        &[("server", "{ service_type = \"NodePort\", load_balancer_ip = \"203.0.113.7\" }")],
        &[],
        (
            "`server.load_balancer_ip` needs a LoadBalancer service",
            "server.load_balancer_ip",
            "Set `service_type = \"LoadBalancer\"`",
        ),
    ));
    cases.push(w(
        &[("client", "{ addresses = [\"127.0.0.1\"], port = 65536 }")],
        &["server"],
        ("Port out of range for `client.port`", "client.port", "between 1 and 65535"),
    ));
    cases.push(w(
        &[("client", "{ addresses = [\"127.0.0.1\"], port = 30742, protocol = \"SCTP\" }")],
        &["server"],
        ("Unsupported value for `client.protocol`", "client.protocol", "`UDP`"),
    ));
    cases.push(w(
        &[("client", "{ addresses = [\"127.0.0.1\"], port = 30742, protocol = \"TCP\" }")],
        &["server"],
        ("TCP is not supported for `client.protocol`", "client.protocol", "listens on UDP only"),
    ));
    cases.push(w(
        &[("client", "{ addresses = [], port = 30742 }")],
        &["server"],
        ("No address for `client.addresses`", "client.addresses", "Give the server's endpoint address"),
    ));
    cases.push(w(&[("mtu", "100")], &[], ("Out of range for `mtu`", "mtu", "between 576 and 9000")));
    cases.push(w(&[("mtu", "1500.5")], &[], ("Out of range for `mtu`", "mtu", "give a whole number")));
    cases.push(w(
        &[("key_secret_name", "\"GW_Keys\"")],
        &[],
        ("Invalid Secret name for `key_secret_name`", "key_secret_name", "Use liqo_generate's `key_secret_name`"),
    ));
    cases.push(w(
        &[("remote_cluster_id", "\"Rome\"")],
        &[],
        ("Invalid cluster ID for `remote_cluster_id`", "remote_cluster_id", dns),
    ));
    cases.push(w(
        &[("timeouts", "{ update = \"1d\" }")],
        &[],
        ("Invalid duration for `timeouts.update`", "update", "unknown unit `d`"),
    ));

    // liqo_tenant
    let tenant = tenant_base();
    let t = |set: &[(&str, &str)], e| resource_case("liqo_tenant", &tenant, set, &[], e);
    cases.push(t(
        &[("consumer_cluster_id", "\"rome_1\"")],
        ("Invalid cluster ID for `consumer_cluster_id`", "consumer_cluster_id", dns),
    ));
    cases.push(t(
        &[("tenant_namespace", "\"Liqo-Tenant\"")],
        ("Invalid namespace name for `tenant_namespace`", "tenant_namespace", "Namespace names are DNS labels"),
    ));
    cases.push(t(
        &[("tenant_condition", "\"Paused\"")],
        ("Unsupported value for `tenant_condition`", "tenant_condition", "`Active`, `Cordoned`, `Drained`"),
    ));
    cases.push(t(
        &[("tenant_condition", "\"active\"")],
        ("Unsupported value for `tenant_condition`", "tenant_condition", "(case-sensitive)"),
    ));
    cases.push(t(
        &[("certificate_validity", "\"1y\"")],
        ("Invalid duration for `certificate_validity`", "certificate_validity", "unknown unit `y`"),
    ));
    cases.push(t(
        &[("certificate_validity", "\"5m\"")],
        ("Certificate validity out of range for `certificate_validity`", "certificate_validity", "at least `10m`"),
    ));
    let shorter = "use a smaller renew_before";
    cases.push(t(
        &[("certificate_validity", "\"720h\""), ("renew_before", "\"8760h\"")],
        ("`renew_before` must be shorter than `certificate_validity`", "renew_before", shorter),
    ));
    cases.push(t(
        &[("certificate_validity", "\"24h\""), ("renew_before", "\"24h\"")],
        ("`renew_before` must be shorter than `certificate_validity`", "renew_before", shorter),
    ));
    cases.push(t(
        &[("renew_before", "\"twenty hours\"")],
        ("Invalid duration for `renew_before`", "renew_before", "Write durations like `90s`"),
    ));
    cases.push(t(
        &[("api_server_url", "\"http://203.0.113.10:6443\"")],
        ("Invalid API server URL for `api_server_url`", "api_server_url", "does not start with `https://`"),
    ));
    cases.push(t(
        &[("csr", "\"-----BEGIN CERTIFICATE REQUEST-----\\nAAAA\\n-----END CERTIFICATE REQUEST-----\\n\"")],
        ("Invalid certificate signing request for `csr`", "csr", "Pass the `csr` output of liqo_consumer_key"),
    ));
    cases.push(t(
        &[("consumer_cluster_id", "\"naples\"")],
        ("`csr` is not for `consumer_cluster_id`", "csr", "Use the liqo_consumer_key of the consumer cluster `naples`"),
    ));

    // liqo_peer
    let base = peer_base();
    let r = |set: &[(&str, &str)], e| resource_case("liqo_peer", &base, set, &[], e);
    let quantity = "Write a Kubernetes quantity";
    cases.push(r(
        &[("resources", "{ cpu = \"4 cores\" }")],
        ("Invalid quantity for `cpu` in `resources`", "resources", quantity),
    ));
    cases.push(r(
        &[("resources", "{ memory = \"8GB\" }")],
        ("Invalid quantity for `memory` in `resources`", "resources", quantity),
    ));
    cases.push(r(
        &[("resources", "{ memory = \"-1Gi\" }")],
        ("Invalid quantity for `memory` in `resources`", "resources", "is negative"),
    ));
    cases.push(r(
        &[("resources", "{ \"bad key!\" = \"1\" }")],
        ("Invalid resource name `bad key!` in `resources`", "resources", "Use a Kubernetes resource name"),
    ));
    let not_yaml = format!("\"clusters: [ {{ client-key-data: {PLANTED_SECRET}\"");
    cases.push(r(
        &[("kubeconfig_wo", not_yaml.as_str())],
        ("Invalid kubeconfig for `kubeconfig_wo`", "kubeconfig_wo", "Pass a kubeconfig for the provider cluster"),
    ));
    let no_users = format!(
        "jsonencode({{ clusters = [{{ name = \"milan\", cluster = {{ server = \"https://127.0.0.1:6443\" }} }}], \"client-key-data\" = \"{PLANTED_SECRET}\" }})"
    );
    cases.push(r(
        &[("kubeconfig_wo", no_users.as_str())],
        ("Invalid kubeconfig for `kubeconfig_wo`", "kubeconfig_wo", "has no `users` entry"),
    ));
    let issued_flow = "from the provider's liqo_tenant";
    cases.push(resource_case(
        "liqo_peer",
        &base,
        &[],
        &["kubeconfig_wo_version"],
        ("`kubeconfig_wo_version` is required with `kubeconfig_wo`", "kubeconfig_wo_version", "increase it"),
    ));
    cases.push(r(
        &[("client_certificate", "\"x\"")],
        ("Conflicting credentials for liqo_peer", "kubeconfig_wo", issued_flow),
    ));
    cases.push(resource_case(
        "liqo_peer",
        &base,
        &[("client_key_secret", "\"controlplane-key-milan\"")],
        &["kubeconfig_wo", "kubeconfig_wo_version"],
        ("`api_server_url` is required with `client_key_secret`", "api_server_url", issued_flow),
    ));
    // No credentials at all is valid (it keeps the identity Liqo minted); a version alone is not.
    cases.push(resource_case(
        "liqo_peer",
        &base,
        &[],
        &["kubeconfig_wo"],
        ("`kubeconfig_wo` is required with `kubeconfig_wo_version`", "kubeconfig_wo", "keep the identity Liqo minted"),
    ));
    cases.push(r(
        &[("provider_cluster_id", "\"Milan\"")],
        ("Invalid cluster ID for `provider_cluster_id`", "provider_cluster_id", dns),
    ));
    cases.push(r(
        &[("provider_tenant_namespace", "\"tenant_rome\"")],
        (
            "Invalid namespace name for `provider_tenant_namespace`",
            "provider_tenant_namespace",
            "Namespace names are DNS labels",
        ),
    ));
    cases.push(r(
        &[("resource_slice_name", "\"Slice_1\"")],
        (
            "Invalid ResourceSlice name for `resource_slice_name`",
            "resource_slice_name",
            "Omit it to use the provider cluster ID",
        ),
    ));
    cases.push(r(&[("class", "\"\"")], ("Empty ResourceSlice class for `class`", "class", "Omit `class`")));
    cases.push(r(
        &[("timeouts", "{ create = \"soon\" }")],
        ("Invalid duration for `timeouts.create`", "create", "Write durations like `90s`"),
    ));

    // data "liqo_peering" (data "liqo_cluster" has no arguments; it rides along in the provider cases)
    cases.push(peering_case("\"Milan\"", "Liqo cluster IDs are DNS labels"));
    cases.push(peering_case("\"\"", "is empty"));
    cases.push(peering_case("\"milan.example.com\"", "contains characters other than lowercase letters"));

    // liqo_offload
    let o = |set: &[(&str, &str)], e| resource_case("liqo_offload", OFFLOAD, set, &[], e);
    let selector = |expr: &str| format!("[{{ match_expressions = [{expr}] }}]");
    cases.push(o(
        &[("namespace_mapping_strategy", "\"SelectedName\"")],
        (
            "Missing `remote_namespace_name` for the SelectedName strategy",
            "remote_namespace_name",
            "choose `DefaultName` or `EnforceSameName`",
        ),
    ));
    cases.push(o(
        &[("remote_namespace_name", "\"remote-demo\"")],
        (
            "`remote_namespace_name` cannot be set with the DefaultName strategy",
            "remote_namespace_name",
            "Remove the argument",
        ),
    ));
    cases.push(o(
        &[("namespace_mapping_strategy", "\"EnforceSameName\""), ("remote_namespace_name", "\"remote-demo\"")],
        (
            "`remote_namespace_name` cannot be set with the EnforceSameName strategy",
            "remote_namespace_name",
            "Remove the argument",
        ),
    ));
    cases.push(o(
        &[("namespace_mapping_strategy", "\"SelectedName\""), ("remote_namespace_name", "\"Remote_Demo\"")],
        (
            "Invalid namespace name for `remote_namespace_name`",
            "remote_namespace_name",
            "Namespace names are DNS labels",
        ),
    ));
    cases.push(o(
        &[("namespace_mapping_strategy", "\"Custom\"")],
        (
            "Unsupported value for `namespace_mapping_strategy`",
            "namespace_mapping_strategy",
            "`DefaultName`, `EnforceSameName`, `SelectedName`",
        ),
    ));
    cases.push(o(
        &[("pod_offloading_strategy", "\"Anywhere\"")],
        (
            "Unsupported value for `pod_offloading_strategy`",
            "pod_offloading_strategy",
            "`LocalAndRemote`, `Local`, `Remote`",
        ),
    ));
    cases.push(o(
        &[("namespace", "\"Demo\"")],
        ("Invalid namespace name for `namespace`", "namespace", "Namespace names are DNS labels"),
    ));
    let sel = selector("{ key = \"liqo.io/remote-cluster-id\", operator = \"Matches\", values = [\"milan\"] }");
    cases.push(o(
        &[("cluster_selector", sel.as_str())],
        ("Unsupported operator in `cluster_selector`", "operator", "`In`, `NotIn`, `Exists`"),
    ));
    let sel = selector("{ key = \"liqo.io/remote-cluster-id\", operator = \"In\" }");
    cases.push(o(
        &[("cluster_selector", sel.as_str())],
        ("Invalid values for operator `In` in `cluster_selector`", "values", "needs at least one value"),
    ));
    let sel = selector("{ key = \"example.com/cores\", operator = \"Gt\", values = [\"two\"] }");
    cases.push(o(
        &[("cluster_selector", sel.as_str())],
        ("Invalid values for operator `Gt` in `cluster_selector`", "values", "exactly one value, a whole number"),
    ));
    let sel = selector("{ key = \"example.com/gpu\", operator = \"Exists\", values = [\"yes\"] }");
    cases.push(o(
        &[("cluster_selector", sel.as_str())],
        ("Invalid values for operator `Exists` in `cluster_selector`", "values", "takes no `values`"),
    ));
    let sel = selector("{ key = \"-bad\", operator = \"Exists\" }");
    cases.push(o(
        &[("cluster_selector", sel.as_str())],
        ("Invalid label key in `cluster_selector`", "key", "Use a Kubernetes label key"),
    ));
    cases.push(o(
        &[("cluster_selector", "[{ match_expressions = [] }]")],
        ("Empty cluster selector term", "cluster_selector", "Add at least one expression"),
    ));
    cases
}

/// One diagnostic of Terraform's human output: `Error: <summary>` up to the next diagnostic.
struct Diagnostic {
    error: bool,
    summary: String,
    text: String,
}

fn diagnostics(output: &str) -> Vec<Diagnostic> {
    let mut out: Vec<Diagnostic> = Vec::new();
    for line in output.lines() {
        let start = line
            .strip_prefix("Error: ")
            .map(|s| (true, s))
            .or_else(|| line.strip_prefix("Warning: ").map(|s| (false, s)));
        match (start, out.last_mut()) {
            (Some((error, summary)), _) => {
                out.push(Diagnostic { error, summary: summary.to_string(), text: format!("{line}\n") })
            }
            (None, Some(d)) => {
                d.text.push_str(line);
                d.text.push('\n');
            }
            (None, None) => {}
        }
    }
    out
}

/// A line of the configuration as Terraform quotes it under a diagnostic: `  18:   kubeconfig = …`.
fn is_source_line(line: &str) -> bool {
    let t = line.trim_start();
    let digits = t.bytes().take_while(u8::is_ascii_digit).count();
    digits > 0 && t[digits..].starts_with(':')
}

/// Terraform wraps details at ~78 columns: compare with every run of whitespace folded into one space.
fn folded(s: &str) -> String {
    s.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// What is wrong with one run of a case, if anything. `block` is where the case's error must sit; when the run
/// held this case `alone`, every error must sit there (an error elsewhere means the valid parts are not).
fn judge(case: &Case, block: &str, run: &tf::Run, alone: bool) -> Option<String> {
    if run.success() {
        return Some(format!("`{}` succeeded: the bad input was accepted", run.command));
    }
    let output = format!("{}\n{}", run.stderr, run.stdout);
    let diags = diagnostics(&output);
    let errors: Vec<&Diagnostic> = diags.iter().filter(|d| d.error).collect();
    if errors.is_empty() {
        return Some(format!("`{}` failed without an error diagnostic:\n{output}", run.command));
    }
    let location = format!(", in {block}:");
    let elsewhere: Vec<&str> =
        errors.iter().filter(|d| !d.text.contains(&location)).map(|d| d.summary.as_str()).collect();
    if alone && !elsewhere.is_empty() {
        return Some(format!(
            "errors not located on `{block}` (a mistake in the case's valid parts?): {elsewhere:?}\n{output}"
        ));
    }
    let Some(d) = errors.iter().find(|d| d.summary.contains(case.summary) && d.text.contains(&location)) else {
        let here: Vec<&String> = errors.iter().filter(|d| d.text.contains(&location)).map(|d| &d.summary).collect();
        return Some(format!("no error on `{block}` with summary containing {:?}; got {here:?}", case.summary));
    };
    let text = folded(&d.text);
    let mut problems = Vec::new();
    if !d.text.contains("on main.tf line ") {
        problems.push("no `on main.tf line N` location".to_string());
    }
    if !text.contains(case.attribute) {
        problems.push(format!("the attribute `{}` is not named", case.attribute));
    }
    if !text.contains(&folded(case.hint)) {
        problems.push(format!("the fix hint {:?} is missing", case.hint));
    }
    // Terraform's own source snippet (`  18:   kubeconfig = "…"`) quotes the configuration line; the provider's
    // words must not quote the kubeconfig.
    let quoted = output.lines().filter(|l| !is_source_line(l)).any(|l| l.contains(PLANTED_SECRET));
    if quoted {
        problems.push("the diagnostic quotes the content of a kubeconfig (its private key would leak)".to_string());
    }
    (!problems.is_empty()).then(|| format!("{}:\n{}", problems.join("; "), d.text.trim_end()))
}

const FAKE_KUBECONFIG_TEXT: &str = "apiVersion: v1\nkind: Config\nclusters:\n- name: fake\n  cluster:\n    server: {api}\n    \
    insecure-skip-tls-verify: true\nusers:\n- name: fake\n  user:\n    token: x\ncontexts:\n- name: fake\n  context:\n    \
    cluster: fake\n    user: fake\ncurrent-context: fake\n";

fn main_tf(provider: &str, body: &str, api: &str) -> String {
    format!("{}\n{}\n{}", tf::required_providers(), provider.replace("{api}", api), body)
}

/// Every case with one client; returns the failures (case name and what was wrong).
async fn run_cases(cli: Cli, api: &CountingApiServer, cases: &[Case]) -> Result<Vec<String>> {
    let generate = render("liqo_generate", GENERATE, &[], &[]);
    let work = Workdir::new(cli, &main_tf(&default_provider(), &generate, &api.url)).await?;
    work.write(FAKE_KUBECONFIG, &FAKE_KUBECONFIG_TEXT.replace("{api}", &api.url))?;
    // Broken YAML right at a key: an error message quoting the offending line would leak it.
    work.write(
        GARBAGE_KUBECONFIG,
        &format!("apiVersion: v1\nusers:\n- name: fake\n  user:\n    client-key-data: [{PLANTED_SECRET}\n"),
    )?;
    std::fs::create_dir_all(work.path().join(DIRECTORY_KUBECONFIG))?;

    // The valid blocks the cases start from must be valid, or every case would fail for the wrong reason.
    // (Validated only: the data source would be read by a plan.)
    let base = [
        generate,
        render("liqo_gateway", GATEWAY_SERVER, &[], &[]).replace("\"case\"", "\"server\""),
        render("liqo_gateway", GATEWAY_SERVER, &[("client", CLIENT)], &["server"]).replace("\"case\"", "\"client\""),
        render("liqo_tenant", &tenant_base(), &[], &[]),
        render("liqo_peer", &peer_base(), &[], &[]),
        render("liqo_offload", OFFLOAD, &[], &[]),
        "data \"liqo_peering\" \"case\" {\n  remote_cluster_id = \"milan\"\n}\n".to_string(),
    ]
    .join("\n");
    work.write("main.tf", &main_tf(&default_provider(), &base, &api.url))?;
    let run = work.run(Stage::Validate.args()).await?;
    ensure!(run.success(), "{cli}: the valid starting blocks do not validate:\n{run}");

    // Every case with `plan`, the command that configures the provider and could reach the cluster.
    let started = Instant::now();
    let mut seen = api.connections().await;
    let mut failures = Vec::new();
    for case in cases {
        work.write("main.tf", &main_tf(&case.provider, &case.body, &api.url))?;
        let run = work.run(Stage::Plan.args()).await?;
        let total = api.connections().await;
        let reached = total - std::mem::replace(&mut seen, total);
        let mut problems: Vec<String> = judge(case, &case.block, &run, true).into_iter().collect();
        if reached > 0 {
            problems.push(format!("{reached} connection(s) reached the API server"));
        }
        if !problems.is_empty() {
            failures.push(format!("[{cli}] {} (plan): {}", case.name, problems.join("\n")));
        }
    }

    // What static checks catch must already fail `validate`: the resource and data source cases in one
    // configuration (each block named after its case), the provider-block cases one by one (a configuration has
    // one such block).
    let at_validate: Vec<(usize, &Case)> =
        cases.iter().enumerate().filter(|(_, c)| c.stage == Stage::Validate).collect();
    let named = |i: usize, c: &Case| {
        (
            c.body.replace("\"case\" {", &format!("\"case_{i}\" {{")),
            c.block.replace("\"case\"", &format!("\"case_{i}\"")),
        )
    };
    let batch: Vec<(usize, &Case)> =
        at_validate.iter().copied().filter(|(_, c)| !c.block.starts_with("provider")).collect();
    let body: String = batch.iter().map(|(i, c)| named(*i, c).0).collect::<Vec<_>>().join("\n");
    work.write("main.tf", &main_tf(&default_provider(), &body, &api.url))?;
    let run = work.run(Stage::Validate.args()).await?;
    for (i, case) in &batch {
        if let Some(problem) = judge(case, &named(*i, case).1, &run, false) {
            failures.push(format!("[{cli}] {} (validate): {problem}", case.name));
        }
    }
    for (_, case) in at_validate.iter().filter(|(_, c)| c.block.starts_with("provider")) {
        work.write("main.tf", &main_tf(&case.provider, &case.body, &api.url))?;
        let run = work.run(Stage::Validate.args()).await?;
        if let Some(problem) = judge(case, &case.block, &run, true) {
            failures.push(format!("[{cli}] {} (validate): {problem}", case.name));
        }
    }
    ensure!(api.connections().await == seen, "{cli}: `validate` reached the API server");

    eprintln!(
        "[bad_input] {cli}: {} cases with `plan`, {} also with `validate`, in {:.1}s after init",
        cases.len(),
        at_validate.len(),
        started.elapsed().as_secs_f64()
    );

    // Control: the counter does see a provider that needs the API (reading the data source at plan).
    let before = api.connections().await;
    work.write("main.tf", &main_tf(&default_provider(), "data \"liqo_cluster\" \"this\" {}\n", &api.url))?;
    let run = work.run(Stage::Plan.args()).await?;
    ensure!(!run.success(), "{cli}: reading liqo_cluster from a server that closes every connection must fail:\n{run}");
    ensure!(
        api.connections().await > before,
        "{cli}: the counting API server saw no connection from a data source read, so it proves nothing"
    );
    Ok(failures)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_input_is_rejected_before_any_api_request_with_path_and_fix() -> Result<()> {
    let cases = cases();
    assert!(cases.len() >= 40, "only {} cases", cases.len());
    let started = Instant::now();
    // The clients run side by side, each against its own counting server, so a connection is always pinned on
    // the case (and client) that made it.
    let clients = Cli::available();
    let total = clients.len() * cases.len();
    let runs = clients.into_iter().map(|cli| {
        let cases = &cases;
        (cli, async move { run_cases(cli, &CountingApiServer::start().await?, cases).await })
    });
    let failures: Vec<String> = tf::each_client(runs).await?.concat();
    eprintln!("[bad_input] {total} case runs in {:.1}s, {} failed", started.elapsed().as_secs_f64(), failures.len());
    assert!(failures.is_empty(), "{} of {total} case runs failed:\n\n{}", failures.len(), failures.join("\n\n"));
    Ok(())
}
