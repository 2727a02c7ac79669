//! Configurations and states of the Go provider published as `liqotech/liqo` before this one (0.0.x for Liqo 0.x,
//! whose resources Liqo's "Provision with Terraform" tutorial uses; 0.1.x, a wrapper of `liqoctl peer`), met as a
//! user upgrading meets them:
//! - a configuration gets one error per block that names the 1.x way and the upgrade guide, never Terraform's bare
//!   "Unsupported argument" / "Missing required argument" (`go_provider/tutorial.tf`, `go_provider/v0.1.tf`);
//! - a state that provider wrote is neither changed nor destroyed: an apply that would destroy it fails naming the
//!   way out, and the ways the guide gives (a `removed` block with `destroy = false`, `terraform state rm` on
//!   Terraform 1.0) take it out of the state. The state is made here in the shape Terraform stores for a 0.1.x
//!   `liqo_peer` (its documented attributes, schema version 0): building that Go provider is not part of the ground.
//!
//! Needs no test ground: the provider block points at a loopback listener that counts connections, and none may
//! come.
use anyhow::{Context, Result, ensure};
use liqo_acceptance::tf::{self, Cli, CountingApiServer, PROVIDER_SOURCE, Workdir};
use serde_json::{Value as Json, json};

const GUIDE: &str = "docs/guides/upgrading-from-the-go-provider.md";
/// What Terraform and OpenTofu print when a block does not fit the schema: none of it may appear.
const BARE: &[&str] = &[
    "Unsupported argument",
    "Unsupported attribute",
    "is required, but no definition was found",
    "Missing required argument \"",
];

/// `validate -json`'s error diagnostics as (summary, detail).
async fn validate(work: &Workdir) -> Result<Vec<(String, String)>> {
    let run = work.run(&["validate", "-json", "-no-color"]).await?;
    let out: Json = serde_json::from_str(&run.stdout).with_context(|| format!("validate -json printed:\n{run}"))?;
    let errors = out["diagnostics"].as_array().cloned().unwrap_or_default();
    Ok(errors
        .iter()
        .filter(|d| d["severity"] == "error")
        .map(|d| (d["summary"].as_str().unwrap_or_default().into(), d["detail"].as_str().unwrap_or_default().into()))
        .collect())
}

/// Exactly the errors whose summaries start with `expected` (in any order: independent blocks are validated side by
/// side), each pointing to the guide; nothing Terraform says of a block that does not fit the schema.
fn only(cli: Cli, what: &str, errors: &[(String, String)], expected: &[&str]) -> Result<()> {
    let summaries: Vec<&str> = errors.iter().map(|(s, _)| s.as_str()).collect();
    ensure!(
        summaries.len() == expected.len() && expected.iter().all(|e| summaries.iter().any(|s| s.starts_with(e))),
        "{cli}: {what}: errors {summaries:?}, expected {expected:?}"
    );
    for (summary, detail) in errors {
        ensure!(detail.contains(GUIDE), "{cli}: {what}: `{summary}` does not name the guide:\n{detail}");
        ensure!(
            !BARE.iter().any(|b| summary.contains(b) || detail.contains(b)),
            "{cli}: {what}: Terraform's bare error: {summary}\n{detail}"
        );
    }
    Ok(())
}

async fn configurations(cli: Cli) -> Result<()> {
    let required = tf::required_providers();
    let tutorial = include_str!("go_provider/tutorial.tf");
    let work = Workdir::new(cli, &format!("{required}\n{tutorial}")).await?;
    let errors = validate(&work).await?;
    only(
        cli,
        "the tutorial",
        &errors,
        &["liqo_peer of the Go provider 0.x: `cluster_id`, `cluster_name`, `cluster_authurl`, `cluster_token`"],
    )?;
    ensure!(errors[0].1.contains("- `cluster_token`: no token in Liqo 1.x"), "{cli}: {}", errors[0].1);

    // Its liqo_generate, which took no arguments, is refused when applied, before any request to the cluster.
    let api = CountingApiServer::start().await?;
    work.write(
        "main.tf",
        &format!(
            "{required}\nprovider \"liqo\" {{\n  kubernetes = {{ host = \"{}\", insecure = true, token = \"x\" }}\n}}\n\
             resource \"liqo_generate\" \"generate\" {{}}\n",
            api.url
        ),
    )?;
    let apply = work.apply_fails().await?;
    let said = liqo_acceptance::observe::flat(&apply.stderr);
    ensure!(
        said.contains("Missing required argument `remote_cluster_id`") && said.contains(GUIDE),
        "{cli}: the apply of the tutorial's liqo_generate said:\n{apply}"
    );
    ensure!(api.connections().await == 0, "{cli}: applying liqo_generate reached the API server");

    work.write("main.tf", &format!("{required}\n{}", include_str!("go_provider/v0.1.tf")))?;
    let errors = validate(&work).await?;
    only(
        cli,
        "0.1.x's examples",
        &errors,
        &[
            "liqo_peer of the Go provider 0.x: `remote_kubeconfig`, `cpu`",
            "liqo_offload of the Go provider 0.x: `cluster_selector_terms`",
        ],
    )?;
    ensure!(
        errors.iter().any(|(_, detail)| detail.contains("- `cluster_selector_terms`: `cluster_selector`")),
        "{cli}: liqo_offload's error does not say what replaces `cluster_selector_terms`: {errors:?}"
    );
    Ok(())
}

/// The state Terraform keeps for a `liqo_peer` of the Go provider 0.1.x made as its example shows.
fn v01_state(cli: Cli) -> Json {
    let attributes = json!({
        "remote_kubeconfig": "/path/to/remote/kubeconfig", "timeout": "10m", "skip_validation": false,
        "liqo_namespace": "liqo", "remote_liqo_namespace": "liqo", "networking_disabled": false,
        "gw_server_service_type": "LoadBalancer", "gw_server_service_port": 51840, "gw_server_service_nodeport": null,
        "gw_server_service_loadbalancer_ip": null, "gw_client_address": null, "gw_client_port": null, "mtu": 1340,
        "create_resource_slice": true, "resource_slice_class": "default", "in_band": false, "proxy_url": null,
        "create_virtual_node": true, "cpu": null, "memory": null, "pods": null, "peer_status": "ready",
    });
    json!({
        "version": 4, "terraform_version": "1.0.0", "serial": 3, "lineage": "3f0c2a8e-0d1b-4c57-9a8e-5b1f6f0e2d41",
        "outputs": {},
        "resources": [{
            "mode": "managed", "type": "liqo_peer", "name": "basic_peer",
            "provider": format!("provider[\"{}/{PROVIDER_SOURCE}\"]", cli.registry_host()),
            "instances": [{"schema_version": 0, "attributes": attributes, "sensitive_attributes": []}],
        }],
    })
}

fn resources_in_state(work: &Workdir) -> Result<usize> {
    let state: Json = serde_json::from_str(&std::fs::read_to_string(work.path().join("terraform.tfstate"))?)?;
    Ok(state["resources"].as_array().map_or(0, Vec::len))
}

async fn takeover(cli: Cli) -> Result<()> {
    let api = CountingApiServer::start().await?;
    let main = format!(
        "{}\nprovider \"liqo\" {{\n  kubernetes = {{ host = \"{}\", insecure = true, token = \"x\" }}\n}}\n",
        tf::required_providers(),
        api.url
    );
    let work = Workdir::new(cli, &main).await?;
    let state = serde_json::to_string_pretty(&v01_state(cli))?;
    work.write("terraform.tfstate", &state)?;
    // Gone from the configuration: Terraform plans its destroy without asking the provider; the apply refuses.
    let apply = work.apply_fails().await?;
    let out = format!("{}{}", apply.stdout, apply.stderr);
    ensure!(out.contains("liqo_peer in the state was made by the Go provider 0.x"), "{cli}: the apply said:\n{apply}");
    ensure!(out.contains("destroy = false") && out.contains("state rm"), "{cli}: no way out named:\n{apply}");
    ensure!(resources_in_state(&work)? == 1, "{cli}: the refused apply dropped the resource from the state");

    if cli == Cli::Terraform10 {
        // No `removed` block before Terraform 1.7.
        let rm = work.run(&["state", "rm", "-no-color", "liqo_peer.basic_peer"]).await?;
        ensure!(rm.success(), "{cli}: {rm}");
    } else {
        work.write(
            "removed.tf",
            "removed {\n  from = liqo_peer.basic_peer\n  lifecycle {\n    destroy = false\n  }\n}\n",
        )?;
        work.apply().await.with_context(|| format!("{cli}: the apply with the removed block"))?;
    }
    ensure!(resources_in_state(&work)? == 0, "{cli}: the resource is still in the state");
    ensure!(api.connections().await == 0, "{cli}: the provider reached the API server");
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_go_providers_configurations_and_states_meet_the_way_to_1x() -> Result<()> {
    let runs = Cli::available().into_iter().map(|cli| {
        (cli, async move {
            configurations(cli).await?;
            takeover(cli).await
        })
    });
    tf::each_client(runs).await?;
    Ok(())
}
