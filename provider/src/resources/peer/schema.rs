//! `liqo_peer`'s attributes and its plan-time checks.
use liqo_schema::tf::{Attribute, AttributePath, Block, Diagnostics, Schema, Type, Value};

use super::Peer;
use crate::crypto;
use crate::quantity;
use crate::resources::lifecycle::{Lifecycle, timeouts_block};
use crate::validate::{Validator, check_dns_label, check_qualified_name};

/// 1: `kubeconfig` (with the consumer's private key) replaced by the public parts and the key Secret's name.
const SCHEMA_VERSION: i64 = 1;
/// The issued-certificate flow's inputs: all four or none.
pub const ISSUED: [&str; 4] = ["api_server_url", "cluster_ca_certificate", "client_certificate", "client_key_secret"];

pub fn schema() -> Schema {
    let attributes = vec![
        Attribute::computed("id", Type::String)
            .describe("`<tenant_namespace>/<resource_slice_name>`; also the import ID."),
        Attribute::required("tenant_namespace", Type::String).describe(
            "Tenant namespace for the provider on this (consumer) cluster, usually \
             `liqo_generate.<consumer>.tenant_namespace`. The identity Secret and the ResourceSlice are created in \
             it: Liqo only replicates ResourceSlices from the namespace of the identity Secret. Changing it \
             replaces the resource.",
        ),
        Attribute::required("provider_cluster_id", Type::String).describe(
            "Liqo cluster ID of the provider cluster (the one sharing resources), e.g. \
             `liqo_generate.<provider>.cluster_id`. Changing it replaces the resource.",
        ),
        Attribute::required("provider_tenant_namespace", Type::String).describe(
            "Tenant namespace for this consumer on the provider cluster, where Liqo replicates the ResourceSlice: \
             `liqo_tenant.<name>.tenant_namespace`. Changing it replaces the resource.",
        ),
        Attribute::optional("api_server_url", Type::String).describe(
            "URL of the provider cluster's API server as this cluster reaches it: `liqo_tenant.<name>.api_server_url`. \
             One of the four attributes of the issued-certificate flow (with `cluster_ca_certificate`, \
             `client_certificate` and `client_key_secret`), which carries no secret through Terraform. A new value \
             updates the identity Secret in place.",
        ),
        Attribute::optional("cluster_ca_certificate", Type::String).describe(
            "PEM CA that verifies `api_server_url`: `liqo_tenant.<name>.cluster_ca_certificate`. A new value updates \
             the identity Secret in place.",
        ),
        Attribute::optional("client_certificate", Type::String).describe(
            "PEM client certificate the provider issued for this cluster's key: \
             `liqo_tenant.<name>.client_certificate`. It must be issued for the key in `client_key_secret` (checked \
             before the identity Secret is written). A renewed certificate updates the identity Secret in place, \
             and Liqo reconnects with it.",
        ),
        Attribute::optional("client_key_secret", Type::String).describe(
            "Name of the Secret in `tenant_namespace` holding this cluster's private key (data `privateKey`): \
             `liqo_consumer_key.<name>.key_secret_name`. The key is read inside this cluster and written into the \
             identity Secret; it never reaches Terraform.",
        ),
        Attribute::optional("kubeconfig_wo", Type::String).sensitive().write_only().describe(
            "A kubeconfig you bring instead of the issued-certificate flow, for provider clusters that cannot issue \
             client certificates (e.g. EKS: a token or an `exec` plugin). **Write-only**: Terraform passes it to the \
             provider on each apply and never stores it in state or plans (Terraform 1.11 or OpenTofu 1.11 and \
             later; older clients are refused). It is the one path where a credential passes through Terraform: \
             it lives in your configuration or wherever you read it from (prefer an ephemeral source), and in the \
             identity Secret on this cluster. Set `kubeconfig_wo_version` with it and change that number to push a \
             new kubeconfig.",
        ),
        Attribute::optional("kubeconfig_wo_version", Type::Number).describe(
            "Version of `kubeconfig_wo`: Terraform cannot see a write-only value change, so change this number (e.g. \
             increment it) to have the identity Secret rewritten with the current `kubeconfig_wo`. Required with \
             `kubeconfig_wo`.",
        ),
        Attribute::optional("resources", Type::map(Type::String)).describe(
            "Resources requested from the provider, as Kubernetes quantities keyed by resource name: `cpu`, \
             `memory`, `pods`, `ephemeral-storage` or any extended resource (e.g. `nvidia.com/gpu`), e.g. \
             `{ cpu = \"4\", memory = \"8Gi\", pods = \"110\" }`. Omitted keys (or the whole map) get the \
             provider's defaults. Changing it updates the ResourceSlice in place and waits until the provider has \
             accepted the new request.",
        ),
        Attribute::optional_computed("class", Type::String).describe(
            "ResourceSlice class (default `default`, served by Liqo's built-in controller, which grants exactly \
             what is requested; other classes are served by custom controllers on the provider). Changing it \
             replaces the resource.",
        ),
        Attribute::optional_computed("create_virtual_node", Type::Bool).describe(
            "Whether Liqo creates a virtual node for this slice once it is accepted (default `true`). Changing it \
             replaces the resource.",
        ),
        Attribute::optional_computed("resource_slice_name", Type::String).describe(
            "Name of the ResourceSlice and of the virtual node Liqo derives from it (default: the provider cluster \
             ID). Must be unique among this cluster's ResourceSlices. Changing it replaces the resource.",
        ),
        Attribute::optional_computed("wait_for_virtual_node", Type::Bool).describe(
            "Whether create and update also wait for the VirtualNode to run and its Node to be `Ready` (default \
             `true`). With networking configured for the provider, Liqo keeps the Node NotReady until the \
             Connection is `Connected`, so make this resource depend on the client `liqo_gateway` (whose create \
             waits for it); a timeout names the Connection and its state. Has no effect when \
             `create_virtual_node` is `false`. Changing it never touches the cluster.",
        ),
        Attribute::computed("virtual_node_name", Type::String).describe(
            "Name of the VirtualNode and of the core Node that represent the provider on this cluster (null when \
             `create_virtual_node` is `false`).",
        ),
        Attribute::computed("accepted_resources", Type::map(Type::String)).describe(
            "Resources the provider granted (the ResourceSlice's `status.resources`), refreshed on every read.",
        ),
    ];
    Schema {
        version: SCHEMA_VERSION,
        block: Block::new(
            "Peers this (consumer) cluster with a provider cluster: writes the control-plane identity Secret and a \
             ResourceSlice, waits for the provider to accept it and for the virtual node to be Ready. Destroying \
             it unpeers (the virtual node goes away) and leaves networking (`liqo_gateway`) and authentication \
             (`liqo_tenant`) in place. With no credentials configured (neither the issued-certificate flow nor \
             `kubeconfig_wo`) it keeps the identity Liqo minted in its handshake (`liqoctl peer`, an Identity owns \
             the Secret): never written, nothing of it read into state, and destroy deletes that Identity as \
             `liqoctl unpeer` does.",
            attributes,
        )
        .with_block(timeouts_block(Peer::TIMEOUTS)),
    }
}

pub fn validate(config: &Value) -> Diagnostics {
    let mut c = Validator::new(config);
    c.namespace("tenant_namespace");
    c.cluster_id("provider_cluster_id");
    c.namespace("provider_tenant_namespace");
    if let Some(name) = config.get("resource_slice_name").as_str()
        && let Err(why) = check_dns_label(name)
    {
        c.error(
            AttributePath::root("resource_slice_name"),
            "Invalid ResourceSlice name for `resource_slice_name`",
            format!(
                "`{name}` {why}. The name is also used for the virtual node, so it must be a DNS label: lowercase \
                 letters, digits and '-', at most 63 characters. Omit it to use the provider cluster ID."
            ),
        );
    }
    if config.get("class").as_str() == Some("") {
        c.error(
            AttributePath::root("class"),
            "Empty ResourceSlice class for `class`",
            "Omit `class` (or set it to `default`) for Liqo's built-in class, or name the custom class the \
             provider serves.",
        );
    }
    check_credentials(&mut c);
    if let Some(entries) = config.get("resources").entries() {
        for (key, value) in entries {
            let path = AttributePath::root("resources").key(key);
            if let Err(why) = check_qualified_name(key) {
                c.error(
                    path.clone(),
                    format!("Invalid resource name `{key}` in `resources`"),
                    format!(
                        "`{key}` {why}. Use a Kubernetes resource name: `cpu`, `memory`, `pods`, \
                         `ephemeral-storage` or an extended resource such as `nvidia.com/gpu`."
                    ),
                );
            }
            if let Some(q) = value.as_str()
                && let Err(why) = quantity::parse(q)
            {
                c.error(
                    path,
                    format!("Invalid quantity for `{key}` in `resources`"),
                    format!(
                        "`{q}` {why}. Write a Kubernetes quantity: a non-negative number with an optional suffix, \
                         e.g. `4`, `500m`, `8Gi`, `1e3`."
                    ),
                );
            }
        }
    }
    c.timeouts();
    c.finish()
}

/// At most one way to authenticate: the four attributes of the issued-certificate flow, or `kubeconfig_wo` with
/// its version; none keeps the identity Liqo minted (an adopted `liqoctl peer` peering). Values are checked when
/// known; an unknown value counts as set, except that two flows conflict only when one of them is known to be set:
/// `kubeconfig_wo = var.bring ? file(…) : null` beside issued attributes under the opposite condition is valid, and
/// `terraform validate` sees both unknown (apply validates again with every value known).
fn check_credentials(c: &mut Validator<'_>) {
    let set = |c: &Validator<'_>, a: &str| !c.value(a).is_null();
    let known_set = |c: &Validator<'_>, a: &str| set(c, a) && !c.value(a).is_unknown();
    let issued: Vec<&str> = ISSUED.iter().copied().filter(|a| set(c, a)).collect();
    let brought = set(c, "kubeconfig_wo");
    let one_known = known_set(c, "kubeconfig_wo") || ISSUED.iter().any(|a| known_set(c, a));
    if brought && !issued.is_empty() && !one_known {
        return;
    }
    let flows = "Either pass the issued-certificate flow's four attributes (`api_server_url`, `cluster_ca_certificate` \
                 and `client_certificate` from the provider's liqo_tenant, `client_key_secret` from liqo_consumer_key \
                 on this cluster), or bring a kubeconfig as `kubeconfig_wo` with `kubeconfig_wo_version`.";
    if brought && !issued.is_empty() {
        c.error(
            AttributePath::root("kubeconfig_wo"),
            "Conflicting credentials for liqo_peer",
            format!("`kubeconfig_wo` and {} are both set. {flows}", quoted(&issued)),
        );
        return;
    }
    // Neither: the identity Liqo minted in its handshake (`liqoctl peer`) is kept; apply fails if there is none.
    if !brought && issued.is_empty() {
        if set(c, "kubeconfig_wo_version") {
            c.error(
                AttributePath::root("kubeconfig_wo"),
                "`kubeconfig_wo` is required with `kubeconfig_wo_version`",
                format!(
                    "`kubeconfig_wo_version` only versions a brought kubeconfig. {flows} Set none of them to keep \
                     the identity Liqo minted (an adopted `liqoctl peer` peering)."
                ),
            );
        }
        return;
    }
    if brought {
        if !set(c, "kubeconfig_wo_version") {
            c.error(
                AttributePath::root("kubeconfig_wo_version"),
                "`kubeconfig_wo_version` is required with `kubeconfig_wo`",
                "Terraform never stores `kubeconfig_wo`, so it cannot tell when it changes: set \
                 `kubeconfig_wo_version = 1` and increase it whenever the kubeconfig changes.",
            );
        }
        if let Some(kubeconfig) = c.value("kubeconfig_wo").as_str()
            && let Err(why) = check_kubeconfig(kubeconfig)
        {
            // Never echo the value: it may hold a key or a token.
            c.error(
                AttributePath::root("kubeconfig_wo"),
                "Invalid kubeconfig for `kubeconfig_wo`",
                format!("{why}. Pass a kubeconfig for the provider cluster, e.g. `file(\"milan.kubeconfig\")`."),
            );
        }
        return;
    }
    for missing in ISSUED.iter().filter(|a| !issued.contains(a)) {
        c.error(
            AttributePath::root(missing),
            format!("`{missing}` is required with {}", quoted(&issued)),
            format!("The issued-certificate flow needs all four attributes. {flows}"),
        );
    }
    c.api_server_url("api_server_url", "Pass the provider's `liqo_tenant.<name>.api_server_url`.");
    c.ca_bundle("cluster_ca_certificate", "Pass the provider's `liqo_tenant.<name>.cluster_ca_certificate`.");
    if let Some(cert) = c.value("client_certificate").as_str()
        && let Err(why) = crypto::certificate_public_key(cert.as_bytes())
    {
        c.error(
            AttributePath::root("client_certificate"),
            "Invalid certificate for `client_certificate`",
            format!("The value is not one PEM certificate: {why}. Pass the provider's `liqo_tenant.<name>.client_certificate`."),
        );
    }
    if let Some(name) = c.value("client_key_secret").as_str()
        && let Err(why) = check_dns_label(name)
    {
        c.error(
            AttributePath::root("client_key_secret"),
            "Invalid Secret name for `client_key_secret`",
            format!("`{name}` {why}. Pass `liqo_consumer_key.<name>.key_secret_name`."),
        );
    }
}

fn quoted(attrs: &[&str]) -> String {
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
