//! `data "liqo_peering"` against the test ground, once per client (Terraform 1.16.4 and
//! OpenTofu 1.11.7). The peer IDs are made up per test and client; the objects that name them on `milan` are written with
//! the admin client the way the provider's resources write them, and real Liqo's ForeignCluster controller makes
//! and keeps the ForeignCluster. Every output is compared with the ForeignCluster (and the peer's Configuration)
//! read directly from the cluster.
//! Each field's mapping is checked on a ground without Liqo's controllers, where a written status stays as written.
//! A healthy peering (every module Healthy) is read in `real_fabric`, over a real tunnel.
use std::collections::BTreeMap;
use std::time::Duration;

use anyhow::{Context, Result, bail, ensure};
use k8s_openapi::api::core::v1::Namespace;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kube::api::{DeleteParams, ListParams, Patch, PatchParams, PostParams};
use kube::{Api, Client};
use liqo_acceptance::ground::{LiqoMode, Options};
use liqo_acceptance::observe::{Seen, flat, until};
use liqo_acceptance::tf::{self, Cli, Workdir};
use liqo_acceptance::{Ground, MILAN, ROME};
use liqo_schema::liqo::core::{
    AUTH_TENANT_STATUS, NETWORK_CONNECTION_STATUS, OFFLOADING_NODE_STATUS, OFFLOADING_VIRTUAL_NODE_STATUS,
    ROLE_CONSUMER, ROLE_PROVIDER, ROLE_UNKNOWN, STATUS_NOT_READY, STATUS_READY, STATUS_SOME_NOT_READY,
};
use liqo_schema::liqo::labels::{self, REMOTE_CLUSTER_ID};
use liqo_schema::liqo::{
    AUTHZ_POLICY_TOLERATE_NO_HANDSHAKE, ClusterConfig, ClusterConfigCidr, Configuration, ConfigurationSpec,
    ForeignCluster, ForeignClusterSpec, Module, Tenant, TenantSpec,
};
use serde_json::{Value as Json, json};

const TIMEOUT: Duration = Duration::from_secs(60);
const POLL: Duration = Duration::from_millis(100);

/// A working directory reading one `liqo_peering` on milan for `peer` (tests/peering_data_source/peering.tf),
/// exported whole as output `peering`.
async fn workdir(ground: &Ground, cli: Cli, peer: &str) -> Result<Workdir> {
    let work = Workdir::new(cli, &tf::provider_config(ground)).await?;
    work.write("peering.tf", include_str!("peering_data_source/peering.tf"))?;
    work.write_vars(&json!({ "peer": peer }))?;
    Ok(work)
}

/// The ForeignCluster named `name` once `ready` holds for it (polled: Liqo writes status in several steps).
async fn wait_fc(
    api: &Api<ForeignCluster>,
    name: &str,
    what: &str,
    ready: impl Fn(&ForeignCluster) -> bool,
) -> Result<ForeignCluster> {
    until(TIMEOUT, POLL, &format!("ForeignCluster {name}: {what}"), || async {
        Ok(match api.get_opt(name).await? {
            Some(fc) if ready(&fc) => Seen::Done(fc),
            seen => Seen::NotYet(format!("{:?}", seen.map(|fc| fc.status))),
        })
    })
    .await
}

fn modules(fc: &ForeignCluster) -> Option<&liqo_schema::liqo::Modules> {
    fc.status.as_ref()?.modules.as_ref()
}

/// The output the data source must give for `module`, whose status the test states.
fn module_json(module: &Module, status: &str) -> Json {
    let conditions: Vec<Json> = module
        .conditions
        .iter()
        .flatten()
        .map(|c| json!({"type": c.type_, "status": c.status, "reason": c.reason, "message": c.message}))
        .collect();
    json!({"enabled": module.enabled, "status": status, "conditions": conditions})
}

/// Everything the data source outputs, from the ForeignCluster and the module statuses the test expects.
fn expected(
    fc: &ForeignCluster,
    remapped: Option<&ClusterConfigCidr>,
    role: &str,
    statuses: [&str; 3],
    healthy: bool,
) -> Result<Json> {
    let status = fc.status.as_ref().context("ForeignCluster without status")?;
    let m = status.modules.as_ref().context("ForeignCluster without modules")?;
    let ns = status.tenant_namespace.clone().unwrap_or_default();
    let name = fc.metadata.name.clone().context("ForeignCluster without name")?;
    ensure!(status.role == role, "ForeignCluster {name} has role {}, the test expects {role}", status.role);
    Ok(json!({
        "id": name,
        "remote_cluster_id": name,
        "role": role,
        "api_server_url": status.api_server_url,
        "tenant_namespace_local": ns.local,
        "tenant_namespace_remote": ns.remote,
        "remapped_pod_cidrs": remapped.map(ClusterConfigCidr::pods),
        "remapped_external_cidr": remapped.and_then(ClusterConfigCidr::first_external),
        "networking": module_json(&m.networking, statuses[0]),
        "authentication": module_json(&m.authentication, statuses[1]),
        "offloading": module_json(&m.offloading, statuses[2]),
        "api_server_status": status.conditions.iter().flatten().find(|c| c.type_ == "APIServerStatus").map(|c| c.status.clone()),
        "permanently_unreachable": fc.metadata.annotations.as_ref().and_then(|a| a.get("liqo.io/foreign-cluster-permanently-unreachable")).is_some_and(|v| v == "true"),
        "healthy": healthy,
    }))
}

/// The peer's CIDRs as Liqo remapped them on the cluster of `client`: the status of the one Configuration labelled
/// for the peer, if there is one.
async fn remapped(client: &Client, peer: &str) -> Result<Option<ClusterConfigCidr>> {
    let api: Api<Configuration> = Api::all(client.clone());
    let found = api.list(&ListParams::default().labels(&format!("{REMOTE_CLUSTER_ID}={peer}"))).await?.items;
    ensure!(found.len() <= 1, "{} Configurations are labelled for {peer}", found.len());
    Ok(found.first().map(Configuration::remapped))
}

async fn output(work: &Workdir) -> Result<Json> {
    Ok(work.output_json().await?["peering"]["value"].clone())
}

/// Applies and returns the outputs with the ForeignCluster they came from. Liqo may still rewrite the
/// ForeignCluster's status while Terraform reads it (a cold run saw it reorder the networking conditions between
/// the test's read and the apply), so a pair counts only when the ForeignCluster did not change across the apply;
/// else the apply runs again.
async fn apply_and_read(work: &Workdir, fcs: &Api<ForeignCluster>, peer: &str) -> Result<(Json, ForeignCluster)> {
    const ATTEMPTS: usize = 5;
    for _ in 0..ATTEMPTS {
        let before = fcs.get(peer).await?.metadata.resource_version;
        work.apply().await?;
        let out = output(work).await?;
        let fc = fcs.get(peer).await?;
        if fc.metadata.resource_version == before {
            return Ok((out, fc));
        }
    }
    bail!("ForeignCluster {peer} changed during each of {ATTEMPTS} applies: Liqo's status never settled")
}

async fn create_tenant_namespace(client: &Client, name: &str, peer: &str) -> Result<()> {
    let ns = Namespace {
        metadata: ObjectMeta {
            name: Some(name.into()),
            labels: Some(BTreeMap::from([
                (labels::TENANT_NAMESPACE.to_owned(), labels::TRUE.to_owned()),
                (REMOTE_CLUSTER_ID.to_owned(), peer.to_owned()),
            ])),
            ..Default::default()
        },
        ..Default::default()
    };
    Api::<Namespace>::all(client.clone())
        .create(&PostParams::default(), &ns)
        .await
        .with_context(|| format!("creating Namespace {name}"))?;
    Ok(())
}

/// Deletes the namespace, waits until it is gone (so nothing names the peer any more), then the ForeignCluster,
/// which Liqo itself never deletes.
async fn clean_up(client: &Client, namespace: &str, peer: &str) -> Result<()> {
    let namespaces: Api<Namespace> = Api::all(client.clone());
    namespaces.delete(namespace, &DeleteParams::default()).await?;
    until(TIMEOUT, POLL, &format!("Namespace {namespace} to go"), || async {
        Ok(match namespaces.get_opt(namespace).await? {
            None => Seen::Done(()),
            Some(_) => Seen::NotYet("present".into()),
        })
    })
    .await?;
    Api::<ForeignCluster>::all(client.clone()).delete(peer, &DeleteParams::default()).await?;
    Ok(())
}

async fn lifecycle(ground: &Ground, cli: Cli) -> Result<()> {
    let peer = format!("peering-life-{}", cli.name());
    let namespace = format!("liqo-tenant-{peer}");
    let client = ground.client(MILAN).await?;
    let fcs: Api<ForeignCluster> = Api::all(client.clone());
    let work = workdir(ground, cli, &peer).await?;

    // Nothing names the peer yet: no ForeignCluster, and the error says so and how Liqo creates it.
    ensure!(fcs.get_opt(&peer).await?.is_none(), "{cli}: ForeignCluster {peer} left over from an earlier run");
    let run = work.apply_fails().await?;
    for needle in
        [format!("ForeignCluster {peer} not found"), "once any peering object for that peer exists".to_owned()]
    {
        assert!(flat(&run.stderr).contains(&needle), "{cli}: missing {needle:?} in:\n{}", run.stderr);
    }

    // A Configuration for the peer: Liqo creates the ForeignCluster with networking enabled, and with no gateway
    // and no connection for it the module is Unhealthy.
    create_tenant_namespace(&client, &namespace, &peer).await?;
    let mut conf = Configuration::new(
        &peer,
        ConfigurationSpec {
            local: None,
            remote: Some(ClusterConfig {
                cidr: Some(ClusterConfigCidr {
                    pod: Some(vec!["10.70.0.0/16".into()]),
                    external: Some(vec!["10.71.0.0/16".into()]),
                }),
            }),
        },
    );
    conf.metadata.namespace = Some(namespace.clone());
    conf.metadata.labels = Some(BTreeMap::from([(REMOTE_CLUSTER_ID.to_owned(), peer.clone())]));
    let confs: Api<Configuration> = Api::namespaced(client.clone(), &namespace);
    confs.create(&PostParams::default(), &conf).await?;
    // Liqo's IPAM maps the peer's CIDRs: wait for it, so that the read sees what Liqo settled on.
    until(TIMEOUT, POLL, &format!("Configuration {namespace}/{peer}: CIDRs configured"), || async {
        Ok(match confs.get(&peer).await? {
            c if c.cidrs_configured() => Seen::Done(()),
            c => Seen::NotYet(format!("{:?}", c.status)),
        })
    })
    .await?;
    wait_fc(&fcs, &peer, "networking enabled, connection NotReady", |fc| {
        modules(fc).is_some_and(|m| {
            m.networking.enabled
                && m.networking
                    .conditions
                    .iter()
                    .flatten()
                    .any(|c| c.type_ == NETWORK_CONNECTION_STATUS && c.status == STATUS_NOT_READY)
        })
    })
    .await?;
    let (out, fc) = apply_and_read(&work, &fcs, &peer).await?;
    let written = remapped(&client, &peer).await?;
    ensure!(
        written.as_ref().is_some_and(|r| !r.pods().is_empty()),
        "{cli}: Liqo wrote no remapped pod CIDR: {written:?}"
    );
    let want = expected(&fc, written.as_ref(), ROLE_UNKNOWN, ["Unhealthy", "Disabled", "Disabled"], false)?;
    assert_eq!(out, want, "{cli}: outputs while networking is not ready");
    // Liqo records no tenant namespace for networking objects.
    for field in ["api_server_url", "tenant_namespace_local", "tenant_namespace_remote"] {
        assert!(out[field].is_null(), "{cli}: {field} is null for a networking-only peering: {out}");
    }

    // The documented postcondition stops the run and shows Liqo's message.
    work.write("guard.tf", include_str!("peering_data_source/guard.tf"))?;
    let run = work.apply_fails().await?;
    let condition = modules(&fc)
        .context("modules")?
        .networking
        .conditions
        .iter()
        .flatten()
        .find(|c| c.type_ == NETWORK_CONNECTION_STATUS)
        .context("Liqo's connection condition")?;
    for needle in [
        format!("The peering with {peer} is not healthy:"),
        format!(
            "{NETWORK_CONNECTION_STATUS} is {STATUS_NOT_READY}: {}",
            condition.message.as_deref().unwrap_or_default()
        ),
    ] {
        assert!(flat(&run.stderr).contains(&flat(&needle)), "{cli}: missing {needle:?} in:\n{}", run.stderr);
    }

    // A Tenant for the peer (it is our consumer): the authentication module is Healthy and the role Consumer;
    // networking stays Unhealthy without a tunnel.
    let mut tenant = Tenant::new(
        &peer,
        TenantSpec {
            cluster_id: Some(peer.clone()),
            authz_policy: Some(AUTHZ_POLICY_TOLERATE_NO_HANDSHAKE.into()),
            ..Default::default()
        },
    );
    tenant.metadata.namespace = Some(namespace.clone());
    tenant.metadata.labels = Some(BTreeMap::from([(REMOTE_CLUSTER_ID.to_owned(), peer.clone())]));
    Api::<Tenant>::namespaced(client.clone(), &namespace).create(&PostParams::default(), &tenant).await?;
    let ready = |m: &Module, type_: &str| {
        m.enabled && m.conditions.iter().flatten().any(|c| c.type_ == type_ && c.status == STATUS_READY)
    };
    wait_fc(&fcs, &peer, "authentication ready", |fc| {
        fc.status.as_ref().is_some_and(|s| s.role == ROLE_CONSUMER)
            && modules(fc).is_some_and(|m| ready(&m.authentication, AUTH_TENANT_STATUS))
    })
    .await?;
    work.write("guard.tf", "")?;
    let (out, fc) = apply_and_read(&work, &fcs, &peer).await?;
    assert_eq!(
        out,
        expected(
            &fc,
            remapped(&client, &peer).await?.as_ref(),
            ROLE_CONSUMER,
            ["Unhealthy", "Healthy", "Disabled"],
            false
        )?,
        "{cli}: outputs with a Tenant"
    );
    assert_eq!(out["tenant_namespace_local"], namespace.as_str(), "{cli}: the Tenant's status.tenantNamespace");
    assert!(work.plan().await?.is_empty(), "{cli}: re-reading an unchanged peering plans nothing");

    work.destroy().await?;
    clean_up(&client, &namespace, &peer).await
}

#[tokio::test]
async fn peering_reports_the_foreign_cluster_liqo_keeps() -> Result<()> {
    let ground = Ground::shared();
    for cli in Cli::available() {
        lifecycle(ground, cli).await.with_context(|| format!("with {cli}"))?;
    }
    Ok(())
}

/// Every status field (the peer's API server, the remote tenant namespace, reasons, each module's conditions)
/// comes through one to one, on a ground without Liqo's controllers: real Liqo would rewrite a hand-written
/// status at once.
async fn written_status(ground: &Ground, cli: Cli) -> Result<()> {
    let peer = format!("peering-written-{}", cli.name());
    let client = ground.client(MILAN).await?;
    let fcs: Api<ForeignCluster> = Api::all(client.clone());
    let mut fc = ForeignCluster::new(&peer, ForeignClusterSpec { cluster_id: Some(peer.clone()) });
    fc.metadata.labels = Some(BTreeMap::from([(REMOTE_CLUSTER_ID.to_owned(), peer.clone())]));
    fcs.create(&PostParams::default(), &fc).await?;
    let status = json!({
        "role": ROLE_PROVIDER,
        "apiServerUrl": "https://203.0.113.7:6443",
        "tenantNamespace": {"local": format!("liqo-tenant-{peer}"), "remote": "liqo-tenant-milan"},
        "modules": {
            "networking": {"enabled": false},
            // The declarative identity Secret: enabled, no condition (reference §3.15) — healthy for liqoctl.
            "authentication": {"enabled": true},
            "offloading": {"enabled": true, "conditions": [
                {"type": OFFLOADING_VIRTUAL_NODE_STATUS, "status": STATUS_READY, "reason": "VirtualNodesReady", "message": "1/1 running"},
                {"type": OFFLOADING_NODE_STATUS, "status": STATUS_SOME_NOT_READY},
            ]},
        },
    });
    fcs.patch_status(&peer, &PatchParams::default(), &Patch::Merge(json!({"status": status}))).await?;
    // The peer's Configuration, with the remapping as Liqo's IPAM would write it.
    let namespace = format!("liqo-tenant-{peer}");
    create_tenant_namespace(&client, &namespace, &peer).await?;
    let mut conf = Configuration::new(&peer, ConfigurationSpec::default());
    conf.metadata.labels = Some(BTreeMap::from([(REMOTE_CLUSTER_ID.to_owned(), peer.clone())]));
    let confs: Api<Configuration> = Api::namespaced(client.clone(), &namespace);
    confs.create(&PostParams::default(), &conf).await?;
    let remote = json!({"cidr": {"pod": ["10.71.0.0/18"], "external": ["10.72.0.0/16"]}});
    confs.patch_status(&peer, &PatchParams::default(), &Patch::Merge(json!({"status": {"remote": remote}}))).await?;

    let result = async {
        let work = workdir(ground, cli, &peer).await?;
        work.apply().await?;
        let out = output(&work).await?;
        let fc = fcs.get(&peer).await?;
        let written = remapped(&client, &peer).await?;
        assert_eq!(written.as_ref().map(ClusterConfigCidr::pods), Some(vec!["10.71.0.0/18".to_owned()]), "{cli}");
        assert_eq!(
            out,
            expected(&fc, written.as_ref(), ROLE_PROVIDER, ["Disabled", "Healthy", "Unhealthy"], false)?,
            "{cli}"
        );
        assert_eq!(out["api_server_url"], "https://203.0.113.7:6443");
        assert_eq!(out["tenant_namespace_remote"], "liqo-tenant-milan");
        assert_eq!(
            out["offloading"]["conditions"][1],
            json!({"type": OFFLOADING_NODE_STATUS, "status": STATUS_SOME_NOT_READY, "reason": null, "message": null})
        );

        // Liqo's next status write shows on the next read.
        fcs.patch_status(
            &peer,
            &PatchParams::default(),
            &Patch::Merge(json!({"status": {"modules": {"offloading": {"enabled": true, "conditions": [
                {"type": OFFLOADING_VIRTUAL_NODE_STATUS, "status": STATUS_READY},
                {"type": OFFLOADING_NODE_STATUS, "status": STATUS_READY},
            ]}}}})),
        )
        .await?;
        let plan = work.plan().await?;
        ensure!(!plan.is_empty(), "{cli}: the changed status must show in the output plan");
        work.apply().await?;
        let out = output(&work).await?;
        assert_eq!(
            (out["offloading"]["status"].as_str(), out["healthy"].as_bool()),
            (Some("Healthy"), Some(true)),
            "{cli}: {out}"
        );
        work.destroy().await?;
        anyhow::Ok(())
    }
    .await;
    fcs.delete(&peer, &DeleteParams::default()).await?;
    Api::<Namespace>::all(client.clone()).delete(&namespace, &DeleteParams::default()).await?;
    result
}

#[tokio::test]
async fn every_written_status_field_comes_through() -> Result<()> {
    let options = Options { liqo: LiqoMode::ObjectsOnly, ..Options::default() };
    let ground = &Ground::start_with(&[MILAN, ROME], options).await?;
    for cli in Cli::available() {
        written_status(ground, cli).await.with_context(|| format!("with {cli}"))?;
    }
    Ok(())
}

async fn bad_input(ground: &Ground, cli: Cli) -> Result<()> {
    let work = workdir(ground, cli, "Rome_1").await?;
    let run = work.run(&["plan", "-input=false", "-no-color"]).await?;
    ensure!(!run.success(), "{cli}: an invalid remote_cluster_id must fail the plan");
    assert!(run.stderr.contains("Invalid cluster ID for `remote_cluster_id`"), "{cli}: {}", run.stderr);
    Ok(())
}

#[tokio::test]
async fn an_invalid_remote_cluster_id_is_refused_at_plan() -> Result<()> {
    let ground = Ground::shared();
    for cli in Cli::available() {
        bad_input(ground, cli).await.with_context(|| format!("with {cli}"))?;
    }
    Ok(())
}
