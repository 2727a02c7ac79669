//! `liqo_peer`'s attributes and its plan-time checks.
use std::collections::BTreeMap;

use liqo_schema::liqo::RESOURCE_SLICE_CLASS_DEFAULT;
use liqo_schema::tf::{Type, Value};

use crate::attributes::{Check, Key};
use crate::crypto;
use crate::resources::lifecycle::Declared;
use crate::validate::{Validator, check_dns_label};

/// 1: `kubeconfig` (with the consumer's private key) replaced by the public parts and the key Secret's name.
pub const SCHEMA_VERSION: i64 = 1;
/// The issued-certificate flow's inputs: all four or none.
pub const ISSUED: [Key; 4] =
    [attr::api_server_url, attr::cluster_ca_certificate, attr::client_certificate, attr::client_key_secret];

/// How this cluster's Liqo authenticates to the provider.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Flow {
    /// The issued certificate's public parts (from liqo_tenant) and this cluster's key ([`ISSUED`]).
    Issued,
    /// A kubeconfig the user brings (`kubeconfig_wo`).
    Brought,
    /// No credentials: the identity Liqo minted in its handshake (`liqoctl peer`) is kept as it is.
    Minted,
}

impl Flow {
    /// The flow a configuration, plan or state names, decided here for validation, apply and read alike (a value
    /// set, known or not, names its flow). A configuration brings a kubeconfig by `kubeconfig_wo`; a plan or a state,
    /// which never hold that write-only value, by its version, unless they set the issued-certificate attributes
    /// (beside which validation lets a version stand, versioning nothing). Naming both flows is a conflict that
    /// validation reports.
    pub fn of(block: &Value) -> Flow {
        if !block.get(attr::kubeconfig_wo).is_null() {
            Flow::Brought
        } else if ISSUED.iter().any(|key| !block.get(*key).is_null()) {
            Flow::Issued
        } else if !block.get(attr::kubeconfig_wo_version).is_null() {
            Flow::Brought
        } else {
            Flow::Minted
        }
    }
}

/// `liqo_peer`'s attributes.
pub mod attr {
    use super::*;
    use crate::attributes::*;

    attributes! {
        struct Peer;
        id: Unset = computed(Type::String)
            .describe("`<tenant_namespace>/<resource_slice_name>`; also the import ID.");
        tenant_namespace: String = required(Type::String).replace_on_change().check(Check::Namespace).describe(
            "Tenant namespace for the provider on this (consumer) cluster, usually \
             `liqo_generate.<consumer>.tenant_namespace`. The identity Secret and the ResourceSlice are created in \
             it: Liqo only replicates ResourceSlices from the namespace of the identity Secret. Changing it \
             replaces the resource.",
        );
        // Null in a read whose objects have lost it (repaired in place, see `plan.rs`), as the provider's tenant
        // namespace, the class and whether Liqo makes a virtual node may be.
        provider_cluster_id: Option<String> = required(Type::String).replace_on_change().check(Check::ClusterId).describe(
            "Liqo cluster ID of the provider cluster (the one sharing resources), e.g. \
             `liqo_generate.<provider>.cluster_id`. Changing it replaces the resource.",
        );
        provider_tenant_namespace: Option<String> = required(Type::String).replace_on_change().check(Check::Namespace).describe(
            "Tenant namespace for this consumer on the provider cluster, where Liqo replicates the ResourceSlice: \
             `liqo_tenant.<name>.tenant_namespace`. Changing it replaces the resource.",
        );
        api_server_url: Option<String> = optional(Type::String).describe(
            "URL of the provider cluster's API server as this cluster reaches it: `liqo_tenant.<name>.api_server_url`. \
             One of the four attributes of the issued-certificate flow (with `cluster_ca_certificate`, \
             `client_certificate` and `client_key_secret`), which carries no secret through Terraform. A new value \
             updates the identity Secret in place.",
        );
        proxy_url: Option<String> = optional(Type::String).check(Check::ProxyUrl).describe(
            "URL of an HTTP proxy through which this cluster's Liqo reaches the provider's API server, e.g. \
             `http://proxy.example.com:8118` (`liqoctl peer --proxy-url`): the control-plane identity's kubeconfig \
             names it (`proxy-url`). Give the provider's liqo_tenant the same URL (`liqo_tenant.<name>.proxy_url`), \
             which Liqo passes on to the virtual kubelets' credentials. With the issued-certificate flow only (a \
             brought kubeconfig names its own proxy). A new value updates the identity Secret in place.",
        );
        cluster_ca_certificate: Option<String> = optional(Type::String).describe(
            "PEM CA that verifies `api_server_url`: `liqo_tenant.<name>.cluster_ca_certificate`. A new value updates \
             the identity Secret in place.",
        );
        client_certificate: Option<String> = optional(Type::String).describe(
            "PEM client certificate the provider issued for this cluster's key: \
             `liqo_tenant.<name>.client_certificate`. It must be issued for the key in `client_key_secret` (checked \
             before the identity Secret is written). A renewed certificate updates the identity Secret in place, \
             and Liqo reconnects with it.",
        );
        client_key_secret: Option<String> = optional(Type::String).describe(
            "Name of the Secret in `tenant_namespace` holding this cluster's private key (data `privateKey`): \
             `liqo_consumer_key.<name>.key_secret_name`. The key is read inside this cluster and written into the \
             identity Secret; it never reaches Terraform.",
        );
        // Write-only: no plan or state holds it; apply reads it from the configuration (`Peer::credentials`).
        kubeconfig_wo: Unset = optional(Type::String).sensitive().write_only().describe(
            "A kubeconfig you bring instead of the issued-certificate flow, for provider clusters that cannot issue \
             client certificates (e.g. EKS: a token or an `exec` plugin). **Write-only**: Terraform passes it to the \
             provider on each apply and never stores it in state or plans (Terraform 1.11 or OpenTofu 1.11 and \
             later; older clients are refused). It is the one path where a credential passes through Terraform: \
             it lives in your configuration or wherever you read it from (prefer an ephemeral source), and in the \
             identity Secret on this cluster. Set `kubeconfig_wo_version` with it and change that number to push a \
             new kubeconfig.",
        );
        // The user's number, kept as written.
        kubeconfig_wo_version: Value = optional(Type::Number).describe(
            "Version of `kubeconfig_wo`: Terraform cannot see a write-only value change, so change this number (e.g. \
             increment it) to have the identity Secret rewritten with the current `kubeconfig_wo`. Required with \
             `kubeconfig_wo`.",
        );
        resources: Option<BTreeMap<String, String>> = optional(Type::map(Type::String)).check(Check::Quantities).describe(
            "Resources requested from the provider, as Kubernetes quantities keyed by resource name: `cpu`, \
             `memory`, `pods`, `ephemeral-storage` or any extended resource (e.g. `nvidia.com/gpu`), e.g. \
             `{ cpu = \"4\", memory = \"8Gi\", pods = \"110\" }`. Omitted keys (or the whole map) get the \
             provider's defaults. Changing it updates the ResourceSlice in place and waits until the provider has \
             accepted the new request.",
        );
        class: Option<String> = optional_computed(Type::String).replace_on_change().default(Value::string(RESOURCE_SLICE_CLASS_DEFAULT)).describe(
            "ResourceSlice class (default `default`, served by Liqo's built-in controller, which grants exactly \
             what is requested; other classes are served by custom controllers on the provider). Changing it \
             replaces the resource.",
        );
        create_virtual_node: Option<bool> = optional_computed(Type::Bool).replace_on_change().default(Value::Bool(true)).describe(
            "Whether Liqo creates a virtual node for this slice once it is accepted (default `true`). Changing it \
             replaces the resource.",
        );
        resource_slice_name: String = optional_computed(Type::String).replace_on_change().describe(
            "Name of the ResourceSlice and of the virtual node Liqo derives from it (default: the provider cluster \
             ID). Must be unique among this cluster's ResourceSlices. Changing it replaces the resource.",
        );
        wait_for_virtual_node: bool = optional_computed(Type::Bool).default(Value::Bool(true)).describe(
            "Whether create and update also wait for the VirtualNode to run and its Node to be `Ready` (default \
             `true`). With networking configured for the provider, Liqo keeps the Node NotReady until the \
             Connection is `Connected`, so make this resource depend on the client `liqo_gateway` (whose create \
             waits for it); a timeout names the Connection and its state. Has no effect when \
             `create_virtual_node` is `false`. Changing it never touches the cluster.",
        );
        virtual_node_name: Option<String> = computed(Type::String).describe(
            "Name of the VirtualNode and of the core Node that represent the provider on this cluster (null when \
             `create_virtual_node` is `false`).",
        );
        accepted_resources: Option<BTreeMap<String, String>> = computed(Type::map(Type::String)).output().describe(
            "Resources the provider granted (the ResourceSlice's `status.resources`), refreshed on every read.",
        );
        // Names of the Go provider 0.0.x (Liqo 0.x) and 0.1.x (`liqoctl peer`'s flags); module variables are
        // examples/modules/peering's.
        cluster_id: Unset = removed("`provider_cluster_id` (the provider's `data.liqo_cluster` `cluster_id`).");
        cluster_name: Unset = removed("nothing: Liqo 1.x knows clusters by cluster ID only.");
        cluster_authurl: Unset = removed(
            "`api_server_url`: Liqo 1.x has no authentication endpoint; the consumer reaches the provider's API server \
             (`liqo_tenant.<name>.api_server_url`).",
        );
        cluster_token: Unset = removed("no token in Liqo 1.x: the provider signs the consumer's own key (liqo_consumer_key, liqo_tenant, liqo_peer), so no secret passes through Terraform.");
        liqo_namespace: Unset = removed("`liqo_namespace` in the provider block.");
        remote_kubeconfig: Unset = removed(
            "a provider block for the provider cluster (`provider \"liqo\" { alias = \"provider\" ... }`) and the \
             module with `providers = { liqo.provider = liqo.provider, liqo.consumer = liqo }`.",
        );
        remote_liqo_namespace: Unset = removed("`liqo_namespace` in the provider cluster's provider block.");
        timeout: Unset = removed("a `timeouts` block: `timeouts { create = \"10m\" }`.");
        skip_validation: Unset = removed("nothing: every resource checks its inputs at plan, before any cluster is touched.");
        networking_disabled: Unset = removed(
            "leave `liqo_gateway` out (declare the resources instead of the module): the peering works without it.",
        );
        gw_server_service_type: Unset = removed("the module's `gateway_service_type` (liqo_gateway `server.service_type`).");
        gw_server_service_port: Unset = removed("the module's `gateway_port` (liqo_gateway `server.port`).");
        gw_server_service_nodeport: Unset = removed("the module's `gateway_node_port` (liqo_gateway `server.node_port`).");
        gw_server_service_loadbalancer_ip: Unset = removed(
            "the module's `gateway_load_balancer_ip` (liqo_gateway `server.load_balancer_ip`).",
        );
        gw_client_address: Unset = removed("the module's `gateway_client_addresses` (liqo_gateway `client.addresses`).");
        gw_client_port: Unset = removed("the module's `gateway_client_port` (liqo_gateway `client.port`).");
        mtu: Unset = removed("the module's `mtu` (liqo_gateway `mtu`, the same on both sides).");
        create_resource_slice: Unset = removed(
            "nothing: liqo_peer is the ResourceSlice; for a peering without one, declare it without liqo_peer.",
        );
        resource_slice_class: Unset = removed("`class` (the module's `resource_slice_class`).");
        in_band: Unset = removed(
            "`api_server_url`: the consumer reaches the provider's API server at that URL, through `proxy_url` if \
             given (with liqo_tenant's `proxy_url`). In-band peering (`liqoctl peer --in-band`: the API server \
             through the WireGuard tunnel, at Liqo's remapped address of the provider's API-server proxy) is not \
             offered yet: it is not yet proven on real Liqo here (docs/guides/liqoctl-flags.md).",
        );
        cpu: Unset = removed("`resources = { cpu = \"4\", memory = \"8Gi\", pods = \"110\" }` (the module's `resources`).");
        memory: Unset = removed("`resources = { cpu = \"4\", memory = \"8Gi\", pods = \"110\" }` (the module's `resources`).");
        pods: Unset = removed("`resources = { cpu = \"4\", memory = \"8Gi\", pods = \"110\" }` (the module's `resources`).");
        peer_status: Unset = removed(
            "`data.liqo_peering`'s `healthy` and module statuses; liqo_peer's apply itself waits for the peering.",
        );
    }
}

pub const DESCRIPTION: &str = "Peers this (consumer) cluster with a provider cluster: writes the control-plane identity Secret and a \
             ResourceSlice, waits for the provider to accept it and for the virtual node to be Ready. Destroying \
             it unpeers (the virtual node goes away) and leaves networking (`liqo_gateway`) and authentication \
             (`liqo_tenant`) in place. With no credentials configured (neither the issued-certificate flow nor \
             `kubeconfig_wo`) it keeps the identity Liqo minted in its handshake (`liqoctl peer`, an Identity owns \
             the Secret): never written, nothing of it read into state, and destroy deletes that Identity as \
             `liqoctl unpeer` does.";

/// The slice's name and class, and one way to authenticate (`resources` is a declared check).
pub fn validate(c: &mut Validator<'_>) {
    let config = c.config;
    if let Some(name) = config.get(attr::resource_slice_name).as_str()
        && let Err(why) = check_dns_label(name)
    {
        c.error(
            attr::resource_slice_name.path(),
            "Invalid ResourceSlice name for `resource_slice_name`",
            format!(
                "`{name}` {why}. The name is also used for the virtual node, so it must be a DNS label: lowercase \
                 letters, digits and '-', at most 63 characters. Omit it to use the provider cluster ID."
            ),
        );
    }
    if attr::Peer::of(config).class.as_deref() == Some("") {
        c.error(
            attr::class.path(),
            "Empty ResourceSlice class for `class`",
            "Omit `class` (or set it to `default`) for Liqo's built-in class, or name the custom class the \
             provider serves.",
        );
    }
    check_credentials(c);
}

/// At most one way to authenticate: the four attributes of the issued-certificate flow, or `kubeconfig_wo` with
/// its version; none keeps the identity Liqo minted (an adopted `liqoctl peer` peering). Values are checked when
/// known; an unknown value counts as set, except that two flows conflict only when one of them is known to be set:
/// `kubeconfig_wo = var.bring ? file(…) : null` beside issued attributes under the opposite condition is valid, and
/// `terraform validate` sees both unknown (apply validates again with every value known).
fn check_credentials(c: &mut Validator<'_>) {
    let config = c.config;
    let set = |key: Key| !config.get(key).is_null();
    let known_set = |key: Key| set(key) && !config.get(key).is_unknown();
    let issued: Vec<Key> = ISSUED.iter().copied().filter(|a| set(*a)).collect();
    let flows = "Either pass the issued-certificate flow's four attributes (`api_server_url`, `cluster_ca_certificate` \
                 and `client_certificate` from the provider's liqo_tenant, `client_key_secret` from liqo_consumer_key \
                 on this cluster), or bring a kubeconfig as `kubeconfig_wo` with `kubeconfig_wo_version`.";
    if set(attr::kubeconfig_wo) && !issued.is_empty() {
        if known_set(attr::kubeconfig_wo) || ISSUED.iter().any(|a| known_set(*a)) {
            c.error(
                attr::kubeconfig_wo.path(),
                "Conflicting credentials for liqo_peer",
                format!("`kubeconfig_wo` and {} are both set. {flows}", quoted(&issued)),
            );
        }
        return;
    }
    let flow = Flow::of(config);
    if flow != Flow::Issued && set(attr::proxy_url) {
        c.error(
            attr::proxy_url.path(),
            "`proxy_url` goes with the issued-certificate flow",
            "Pass it with `api_server_url`, `cluster_ca_certificate`, `client_certificate` and `client_key_secret`. \
             A brought kubeconfig (`kubeconfig_wo`) is used as it is: name the proxy in it (`proxy-url` of its \
             cluster); the identity Liqo minted keeps its own.",
        );
    }
    match flow {
        // The identity Liqo minted in its handshake (`liqoctl peer`) is kept; apply fails if there is none.
        Flow::Minted => {}
        Flow::Brought if !set(attr::kubeconfig_wo) => c.error(
            attr::kubeconfig_wo.path(),
            "`kubeconfig_wo` is required with `kubeconfig_wo_version`",
            format!(
                "`kubeconfig_wo_version` only versions a brought kubeconfig. {flows} Set none of them to keep \
                 the identity Liqo minted (an adopted `liqoctl peer` peering)."
            ),
        ),
        Flow::Brought => {
            if !set(attr::kubeconfig_wo_version) {
                c.error(
                    attr::kubeconfig_wo_version.path(),
                    "`kubeconfig_wo_version` is required with `kubeconfig_wo`",
                    "Terraform never stores `kubeconfig_wo`, so it cannot tell when it changes: set \
                     `kubeconfig_wo_version = 1` and increase it whenever the kubeconfig changes.",
                );
            }
            if let Some(kubeconfig) = config.get(attr::kubeconfig_wo).as_str()
                && let Err(why) = check_kubeconfig(kubeconfig)
            {
                // Never echo the value: it may hold a key or a token.
                c.error(
                    attr::kubeconfig_wo.path(),
                    "Invalid kubeconfig for `kubeconfig_wo`",
                    format!("{why}. Pass a kubeconfig for the provider cluster, e.g. `file(\"milan.kubeconfig\")`."),
                );
            }
        }
        Flow::Issued => check_issued(c, &issued, flows),
    }
}

/// The issued-certificate flow, of which `issued` are set: all four attributes, and their values.
fn check_issued(c: &mut Validator<'_>, issued: &[Key], flows: &str) {
    for missing in ISSUED.iter().filter(|a| !issued.contains(a)) {
        c.error(
            missing.path(),
            format!("`{missing}` is required with {}", quoted(issued)),
            format!("The issued-certificate flow needs all four attributes. {flows}"),
        );
    }
    // Checked only once the flow is complete: an incomplete one has its own errors above.
    let config = c.config;
    for (key, check) in [
        (attr::api_server_url, Check::ApiServerUrl("Pass the provider's `liqo_tenant.<name>.api_server_url`.")),
        (
            attr::cluster_ca_certificate,
            Check::CaBundle("Pass the provider's `liqo_tenant.<name>.cluster_ca_certificate`."),
        ),
    ] {
        c.check(&check, key.path(), config.get(key));
    }
    let peer = attr::Peer::of(config);
    if let Some(cert) = &peer.client_certificate
        && let Err(why) = crypto::certificate_public_key(cert.as_bytes())
    {
        c.error(
            attr::client_certificate.path(),
            "Invalid certificate for `client_certificate`",
            format!("The value is not one PEM certificate: {why}. Pass the provider's `liqo_tenant.<name>.client_certificate`."),
        );
    }
    if let Some(name) = &peer.client_key_secret
        && let Err(why) = check_dns_label(name)
    {
        c.error(
            attr::client_key_secret.path(),
            "Invalid Secret name for `client_key_secret`",
            format!("`{name}` {why}. Pass `liqo_consumer_key.<name>.key_secret_name`."),
        );
    }
}

fn quoted(attrs: &[Key]) -> String {
    attrs.iter().map(|a| format!("`{a}`")).collect::<Vec<_>>().join(", ")
}

/// A kubeconfig must be YAML with at least one cluster and one user; the message never quotes the content.
fn check_kubeconfig(text: &str) -> Result<(), String> {
    if text.trim().is_empty() {
        return Err("The kubeconfig is empty".into());
    }
    let doc: serde_yaml::Value =
        serde_yaml::from_str(text).map_err(|_| "The kubeconfig is not valid YAML".to_string())?;
    for section in ["clusters", "users"] {
        let ok = doc.get(section).and_then(|s| s.as_sequence()).is_some_and(|s| !s.is_empty());
        if !ok {
            return Err(format!("The kubeconfig has no `{section}` entry"));
        }
    }
    Ok(())
}

/// What `liqo_peer` declares to the lifecycle driver.
pub const DECLARED: Declared = Declared {
    description: DESCRIPTION,
    attributes: attr::declared,
    validate,
    rules: super::plan::RULES,
    version: SCHEMA_VERSION,
};
