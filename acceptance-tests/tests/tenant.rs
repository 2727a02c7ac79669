//! `liqo_tenant` against the test ground (the simulator plays Liqo's controllers on `milan`), once per client
//! (Terraform 1.16.4, Terraform 1.0.11, OpenTofu 1.11.7).
//!
//! The minted kubeconfig is exercised for real: kube-apiserver authenticates its certificate and RBAC decides
//! what the consumer user may do, and the simulator's ResourceSlice approval follows the Tenant's condition.
use std::collections::BTreeMap;
use std::time::Duration;

use anyhow::{Context, Result, bail};
use base64::Engine;
use k8s_openapi::api::authentication::v1::SelfSubjectReview;
use k8s_openapi::api::certificates::v1::CertificateSigningRequest;
use k8s_openapi::api::rbac::v1::RoleBinding;
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use kube::api::{DeleteParams, ListParams, Patch, PatchParams, PostParams};
use kube::{Api, Client};
use liqo_acceptance::ground::kubeconfig;
use liqo_acceptance::observe::{attributes, eventually, plan_text, planned_change};
use liqo_acceptance::tf::{self, Cli, Workdir};
use liqo_acceptance::{Ground, MILAN, ROME};
use liqo_schema::liqo::labels;
use liqo_schema::liqo::{
    RESOURCE_SLICE_ACCEPTED, RESOURCE_SLICE_CONDITION_RESOURCES, RESOURCE_SLICE_DENIED,
    RESOURCE_SLICE_RESOURCES_DENIED_REASON, ResourceSlice, ResourceSliceSpec, Tenant,
};
use serde_json::json;

const ADDRESS: &str = "liqo_tenant.consumer";
/// Labels liqo_tenant puts on its CSRs (`kube_ops::FIELD_MANAGER` as the manager).
const MANAGED_BY: &str = "terraform-provider-liqo";

/// A consumer cluster ID per client, so that nothing one client leaves behind can satisfy the other's checks.
fn consumer_id(cli: Cli) -> String {
    format!("tenant-consumer-{}", cli.name())
}

/// liqo_generate makes the tenant namespace on milan for the consumer; liqo_tenant authenticates the consumer.
fn config(ground: &Ground, consumer: &str, condition: &str) -> String {
    format!(
        "{}\nresource \"liqo_generate\" \"ns\" {{\n  provider          = liqo.milan\n  remote_cluster_id = \"{consumer}\"\n}}\n\n\
         resource \"liqo_tenant\" \"consumer\" {{\n  provider            = liqo.milan\n  tenant_namespace    = liqo_generate.ns.tenant_namespace\n  \
         consumer_cluster_id = \"{consumer}\"\n  tenant_condition    = \"{condition}\"\n}}\n",
        tf::provider_config(ground)
    )
}

/// Key material of a kubeconfig that must never be printed: the base64 of the key and each line of its PEM body.
fn secrets_of(kubeconfig_yaml: &str) -> Result<Vec<String>> {
    let doc: serde_json::Value = serde_yaml::from_str(kubeconfig_yaml)?;
    let key_b64 =
        doc["users"][0]["user"]["client-key-data"].as_str().context("kubeconfig without client-key-data")?.to_owned();
    let pem = String::from_utf8(base64::engine::general_purpose::STANDARD.decode(&key_b64)?)?;
    let mut secrets: Vec<String> =
        pem.lines().filter(|l| !l.starts_with("-----") && l.len() > 16).map(str::to_owned).collect();
    secrets.push(key_b64);
    Ok(secrets)
}

/// No command output kept in the working directory contains any of `secrets`.
fn assert_never_printed(work: &Workdir, secrets: &[String]) -> Result<()> {
    let runs = work.path().parent().context("working directory layout")?.join("runs");
    for entry in std::fs::read_dir(&runs)? {
        let path = entry?.path();
        let text = std::fs::read_to_string(&path)?;
        for secret in secrets {
            assert!(!text.contains(secret.as_str()), "{} prints key material of the kubeconfig", path.display());
        }
    }
    Ok(())
}

/// The user name and groups kube-apiserver sees for a client.
async fn whoami(client: &Client) -> Result<(String, Vec<String>)> {
    let review = Api::<SelfSubjectReview>::all(client.clone())
        .create(&PostParams::default(), &SelfSubjectReview::default())
        .await?;
    let user = review.status.and_then(|s| s.user_info).context("SelfSubjectReview without userInfo")?;
    Ok((user.username.unwrap_or_default(), user.groups.unwrap_or_default()))
}

/// A ResourceSlice as the consumer's crd-replicator writes the provider's copy (the simulator approves those).
fn replicated_slice(name: &str, consumer: &str) -> ResourceSlice {
    let mut rs = ResourceSlice::new(
        name,
        ResourceSliceSpec {
            consumer_cluster_id: Some(consumer.into()),
            provider_cluster_id: Some(MILAN.into()),
            class: Some("default".into()),
            resources: Some(BTreeMap::from([("cpu".to_owned(), Quantity("1".into()))])),
            ..Default::default()
        },
    );
    rs.metadata.labels = Some(BTreeMap::from([
        (labels::REPLICATED.to_owned(), labels::TRUE.to_owned()),
        (labels::ORIGIN_ID.to_owned(), consumer.to_owned()),
        (labels::REMOTE_CLUSTER_ID.to_owned(), consumer.to_owned()),
    ]));
    rs
}

/// Waits for the slice's Resources condition and returns (status, reason).
async fn resources_condition(api: &Api<ResourceSlice>, name: &str) -> Result<(String, String)> {
    eventually(Duration::from_secs(30), &format!("ResourceSlice {name} getting a Resources condition"), || async {
        let rs = api.get(name).await?;
        Ok(rs
            .status
            .as_ref()
            .and_then(|s| s.condition(RESOURCE_SLICE_CONDITION_RESOURCES))
            .map(|c| (c.status.clone(), c.reason.clone().unwrap_or_default())))
    })
    .await
}

async fn lifecycle(ground: &Ground, cli: Cli) -> Result<()> {
    let admin = ground.client(MILAN).await?;
    let consumer = consumer_id(cli);
    let work = Workdir::new(cli, &config(ground, &consumer, "Active")).await?;

    // The plan shows the kubeconfig only as a sensitive value.
    let plan = work.plan().await?;
    let line =
        plan_text(&plan).lines().find(|l| l.contains("kubeconfig")).context("the create plan lists kubeconfig")?;
    assert!(line.contains("(sensitive value)"), "{cli}: kubeconfig must be shown as sensitive, got {line:?}");

    work.apply().await?;
    assert!(work.plan().await?.is_empty(), "{cli}: the plan after apply must be empty");
    let attrs = attributes(&work, ADDRESS)?;
    let ns = attrs["tenant_namespace"].as_str().context("tenant_namespace")?.to_owned();
    assert_eq!(attrs["id"], json!(format!("{ns}/{consumer}")));
    let expires = attrs["certificate_expires_at"].as_str().context("certificate_expires_at")?;
    let expires = time::OffsetDateTime::parse(expires, &time::format_description::well_known::Rfc3339)?;
    let lifetime = expires - time::OffsetDateTime::now_utc();
    assert!(lifetime > time::Duration::days(300), "{cli}: default validity is about a year, got {lifetime}");
    let kubeconfig_yaml = attrs["kubeconfig"].as_str().context("kubeconfig in state")?.to_owned();

    // Tenant adopted by (simulated) Liqo.
    let tenants: Api<Tenant> = Api::namespaced(admin.clone(), &ns);
    let tenant = tenants.get(&consumer).await?;
    assert_eq!(
        tenant.status.and_then(|s| s.tenant_namespace).as_deref(),
        Some(ns.as_str()),
        "{cli}: Tenant status.tenantNamespace"
    );
    assert_eq!(tenant.spec.authz_policy.as_deref(), Some("TolerateNoHandshake"));

    // The kubeconfig authenticates as the consumer user, in Liqo's control-plane group, scoped by RBAC.
    let doc: serde_json::Value = serde_yaml::from_str(&kubeconfig_yaml)?;
    assert_eq!(
        doc["clusters"][0]["name"],
        json!(MILAN),
        "{cli}: the kubeconfig's cluster is named after the provider's cluster ID"
    );
    assert_eq!(doc["contexts"][0]["context"]["namespace"], json!(ns));
    let as_consumer = kubeconfig::client_from_yaml(&kubeconfig_yaml).await?;
    let (user, groups) = whoami(&as_consumer).await?;
    assert_eq!(user, consumer, "{cli}: certificate CN");
    assert!(
        groups.iter().any(|g| g == labels::CONTROL_PLANE_ORGANIZATION),
        "{cli}: certificate O=liqo.io, got {groups:?}"
    );
    let slices: Api<ResourceSlice> = Api::namespaced(as_consumer.clone(), &ns);
    slices
        .create(&PostParams::default(), &replicated_slice("accepted", &consumer))
        .await
        .context("the consumer may create a ResourceSlice in its tenant namespace")?;
    let outside: Api<ResourceSlice> = Api::namespaced(as_consumer.clone(), "default");
    match outside.create(&PostParams::default(), &replicated_slice("outside", &consumer)).await {
        Err(kube::Error::Api(s)) if s.code == 403 => {}
        other => bail!("{cli}: creating a ResourceSlice in `default` as the consumer must be Forbidden, got {other:?}"),
    }
    let admin_slices: Api<ResourceSlice> = Api::namespaced(admin.clone(), &ns);
    assert_eq!(
        resources_condition(&admin_slices, "accepted").await?.0,
        RESOURCE_SLICE_ACCEPTED,
        "{cli}: an Active tenant's slice is accepted"
    );

    // Cordoned: in place; new slices are denied, the existing one keeps its resources.
    work.write("main.tf", &config(ground, &consumer, "Cordoned"))?;
    let plan = work.plan().await?;
    assert!(
        plan_text(&plan).contains("0 to add, 1 to change, 0 to destroy"),
        "{cli}: cordoning updates in place:\n{}",
        plan_text(&plan)
    );
    work.apply().await?;
    assert_eq!(tenants.get(&consumer).await?.spec.tenant_condition.as_deref(), Some("Cordoned"));
    assert_eq!(
        attributes(&work, ADDRESS)?["kubeconfig"],
        json!(kubeconfig_yaml),
        "{cli}: cordoning keeps the credentials"
    );
    slices.create(&PostParams::default(), &replicated_slice("denied", &consumer)).await?;
    assert_eq!(
        resources_condition(&admin_slices, "denied").await?,
        (RESOURCE_SLICE_DENIED.to_owned(), RESOURCE_SLICE_RESOURCES_DENIED_REASON.to_owned()),
        "{cli}: a new slice of a cordoned tenant is denied"
    );
    assert_eq!(
        resources_condition(&admin_slices, "accepted").await?.0,
        RESOURCE_SLICE_ACCEPTED,
        "{cli}: the existing slice keeps its resources"
    );

    // A condition changed out of band is drift, and apply restores it.
    tenants
        .patch(&consumer, &PatchParams::default(), &Patch::Merge(json!({"spec": {"tenantCondition": "Active"}})))
        .await?;
    let plan = work.plan().await?;
    assert!(
        !plan.is_empty() && plan_text(&plan).contains("tenant_condition"),
        "{cli}: out-of-band tenantCondition shows as drift:\n{}",
        plan_text(&plan)
    );
    work.apply().await?;
    assert_eq!(
        tenants.get(&consumer).await?.spec.tenant_condition.as_deref(),
        Some("Cordoned"),
        "{cli}: apply restores the condition"
    );

    // The RoleBinding deleted out of band: the plan recreates the resource, with working credentials.
    let bindings: Api<RoleBinding> = Api::namespaced(admin.clone(), &ns);
    bindings.delete(labels::REMOTE_CONTROLPLANE_ROLE_BINDING, &DeleteParams::default()).await?;
    let plan = work.plan().await?;
    assert!(
        plan_text(&plan).contains("1 to add, 0 to change, 0 to destroy"),
        "{cli}: a missing RoleBinding is recreated:\n{}",
        plan_text(&plan)
    );
    work.apply().await?;
    bindings.get(labels::REMOTE_CONTROLPLANE_ROLE_BINDING).await.context("the RoleBinding is back")?;
    let renewed = attributes(&work, ADDRESS)?["kubeconfig"].as_str().context("kubeconfig")?.to_owned();
    assert_ne!(renewed, kubeconfig_yaml, "{cli}: recreation mints new credentials");
    let renewed_client = kubeconfig::client_from_yaml(&renewed).await?;
    Api::<ResourceSlice>::namespaced(renewed_client, &ns)
        .list(&ListParams::default())
        .await
        .context("the new kubeconfig is authorised")?;
    assert!(work.plan().await?.is_empty(), "{cli}: the plan after the repair must be empty");

    // Import: everything but the credentials is recovered; the plan proposes new credentials only.
    let rm = work.run(&["state", "rm", ADDRESS]).await?;
    anyhow::ensure!(rm.success(), "{rm}");
    work.import(ADDRESS, &format!("{ns}/{consumer}")).await?;
    let change = planned_change(&work, ADDRESS).await?;
    assert_eq!(change["actions"], json!(["update"]), "{cli}: after import the plan is an in-place update");
    let (before, after) = (&change["before"], &change["after"]);
    for (key, value) in before.as_object().context("before")? {
        if key != "kubeconfig" && key != "certificate_expires_at" {
            assert_eq!(&after[key], value, "{cli}: import recovers {key}");
        }
    }
    assert_eq!(change["after_unknown"]["kubeconfig"], json!(true), "{cli}: import plans new credentials");
    assert_eq!(change["after_unknown"]["certificate_expires_at"], json!(true));
    work.apply().await?;
    assert!(work.plan().await?.is_empty(), "{cli}: the plan after applying the import must be empty");
    let final_kubeconfig = attributes(&work, ADDRESS)?["kubeconfig"].as_str().context("kubeconfig")?.to_owned();
    assert_eq!(whoami(&kubeconfig::client_from_yaml(&final_kubeconfig).await?).await?.0, consumer);

    // Key material never reached any command's output.
    let mut secrets = Vec::new();
    for yaml in [&kubeconfig_yaml, &renewed, &final_kubeconfig] {
        secrets.extend(secrets_of(yaml)?);
    }
    assert_never_printed(&work, &secrets)?;

    // Destroy removes the Tenant, the RoleBinding and every CSR liqo_tenant made for this consumer.
    for name in ["accepted", "denied"] {
        admin_slices.delete(name, &DeleteParams::default()).await?;
    }
    work.destroy().await?;
    assert!(tenants.get_opt(&consumer).await?.is_none(), "{cli}: Tenant deleted");
    assert!(bindings.get_opt(labels::REMOTE_CONTROLPLANE_ROLE_BINDING).await?.is_none(), "{cli}: RoleBinding deleted");
    let selector = format!("{}={consumer},{}={MANAGED_BY}", labels::REMOTE_CLUSTER_ID, labels::MANAGED_BY);
    let csrs =
        Api::<CertificateSigningRequest>::all(admin.clone()).list(&ListParams::default().labels(&selector)).await?;
    assert!(
        csrs.items.is_empty(),
        "{cli}: CSRs left after destroy: {:?}",
        csrs.items.iter().map(|c| c.metadata.name.clone()).collect::<Vec<_>>()
    );
    Ok(())
}

#[tokio::test]
async fn tenant_lifecycle_with_real_credentials() -> Result<()> {
    let ground = Ground::shared();
    for cli in Cli::all() {
        lifecycle(ground, cli).await.with_context(|| format!("with {cli}"))?;
    }
    Ok(())
}

/// Liqo's tenant controller never writes status.tenantNamespace for a Drained Tenant (it returns early), so a
/// liqo_tenant created Drained must finish on what Liqo does write, on create and on re-create.
async fn created_drained(ground: &Ground, cli: Cli) -> Result<()> {
    let admin = ground.client(MILAN).await?;
    let consumer = format!("tenant-drained-{}", cli.name());
    // A short create timeout makes the failure quick where the wait is for something Liqo never writes.
    let main = config(ground, &consumer, "Drained").replace(
        "tenant_condition    = \"Drained\"\n",
        "tenant_condition    = \"Drained\"\n  timeouts {\n    create = \"1m\"\n  }\n",
    );
    let work = Workdir::new(cli, &main).await?;
    work.apply().await?;
    assert!(work.plan().await?.is_empty(), "{cli}: the plan after creating a Drained tenant must be empty");
    let ns = attributes(&work, ADDRESS)?["tenant_namespace"].as_str().context("tenant_namespace")?.to_owned();
    let tenants: Api<Tenant> = Api::namespaced(admin.clone(), &ns);
    let tenant = tenants.get(&consumer).await?;
    assert_eq!(tenant.spec.tenant_condition.as_deref(), Some("Drained"));
    assert!(
        tenant.metadata.finalizers.iter().flatten().any(|f| f == labels::TENANT_FINALIZER),
        "{cli}: Liqo has taken the Tenant (its finalizer)"
    );
    let bindings: Api<RoleBinding> = Api::namespaced(admin.clone(), &ns);
    assert!(
        bindings.get_opt(labels::REMOTE_CONTROLPLANE_ROLE_BINDING).await?.is_none(),
        "{cli}: a drained consumer has no RoleBinding"
    );

    // Deleted out of band: the plan re-creates it, and the re-create finishes too.
    tenants.delete(&consumer, &DeleteParams::default()).await?;
    eventually(Duration::from_secs(30), "the Tenant to be gone", || async {
        Ok(tenants.get_opt(&consumer).await?.is_none().then_some(()))
    })
    .await?;
    let plan = work.plan().await?;
    assert!(plan_text(&plan).contains("1 to add"), "{cli}: a deleted Tenant is re-created:\n{}", plan_text(&plan));
    work.apply().await?;
    assert!(tenants.get_opt(&consumer).await?.is_some(), "{cli}: the Tenant is back");
    assert!(work.plan().await?.is_empty(), "{cli}: the plan after re-creating must be empty");
    work.destroy().await?;
    assert!(tenants.get_opt(&consumer).await?.is_none(), "{cli}: Tenant deleted");
    Ok(())
}

#[tokio::test]
async fn a_tenant_created_drained_finishes_on_what_liqo_writes() -> Result<()> {
    let ground = Ground::shared();
    for cli in Cli::all() {
        created_drained(ground, cli).await.with_context(|| format!("with {cli}"))?;
    }
    Ok(())
}

/// The consumer's kubeconfig carries a URL and a CA: apply checks that the URL answers with a certificate the CA
/// verifies, fails naming both before minting anything when it does not, and writes the given CA when it does.
async fn api_server_ca(ground: &Ground, cli: Cli) -> Result<()> {
    let admin = ground.client(MILAN).await?;
    let consumer = format!("tenant-ca-{}", cli.name());
    let with_ca = |file: &str| {
        config(ground, &consumer, "Active")
            .replace("  tenant_condition    = \"Active\"\n", &format!("  api_server_ca       = file(\"{file}\")\n"))
    };
    let work = Workdir::new(cli, &with_ca("rome-ca.pem")).await?;
    // rome's CA did not sign milan's API server certificate: what a proxy with its own certificate looks like.
    work.write("rome-ca.pem", &ground.ca_certificate(ROME)?)?;
    work.write("milan-ca.pem", &ground.ca_certificate(MILAN)?)?;
    let failed = work.apply_fails().await?;
    let stderr = liqo_acceptance::observe::flat(&failed.stderr);
    let server = &ground.cluster(MILAN).api_server;
    for needle in
        [server.as_str(), "does not present a certificate the CA in `api_server_ca` verifies", "api_server_ca"]
    {
        assert!(stderr.contains(needle), "{cli}: the error names {needle:?}:\n{}", failed.stderr);
    }
    let selector = format!("{}={consumer}", labels::REMOTE_CLUSTER_ID);
    let csrs =
        Api::<CertificateSigningRequest>::all(admin.clone()).list(&ListParams::default().labels(&selector)).await?;
    assert!(csrs.items.is_empty(), "{cli}: nothing is minted for an untrusted URL");

    // The CA that does verify it: applied, and written into the kubeconfig.
    work.write("main.tf", &with_ca("milan-ca.pem"))?;
    work.apply().await?;
    let kubeconfig_yaml = attributes(&work, ADDRESS)?["kubeconfig"].as_str().context("kubeconfig")?.to_owned();
    let doc: serde_json::Value = serde_yaml::from_str(&kubeconfig_yaml)?;
    let ca = base64::engine::general_purpose::STANDARD
        .decode(doc["clusters"][0]["cluster"]["certificate-authority-data"].as_str().context("CA data")?)?;
    assert_eq!(String::from_utf8(ca)?, ground.ca_certificate(MILAN)?, "{cli}: the kubeconfig carries api_server_ca");
    assert!(work.plan().await?.is_empty(), "{cli}: the plan after apply must be empty");
    work.destroy().await?;
    Ok(())
}

#[tokio::test]
async fn api_server_ca_is_checked_against_the_url_and_written_into_the_kubeconfig() -> Result<()> {
    let ground = Ground::shared();
    for cli in Cli::all() {
        api_server_ca(ground, cli).await.with_context(|| format!("with {cli}"))?;
    }
    Ok(())
}

#[tokio::test]
async fn tenant_inputs_are_checked_before_anything_is_written() -> Result<()> {
    let ground = Ground::shared();
    for cli in Cli::all() {
        let bad = format!(
            "{}\nresource \"liqo_tenant\" \"bad\" {{\n  provider             = liqo.milan\n  tenant_namespace     = \"liqo-tenant-x\"\n  \
             consumer_cluster_id  = \"Not_An_ID\"\n  tenant_condition     = \"active\"\n  certificate_validity = \"24h\"\n  \
             renew_before         = \"48h\"\n  api_server_url       = \"http://10.0.0.1:6443\"\n}}\n",
            tf::provider_config(ground)
        );
        let work = Workdir::new(cli, &bad).await?;
        let run = work.run(&["plan", "-input=false", "-no-color"]).await?;
        assert!(!run.success(), "{cli}: invalid inputs must fail the plan");
        for needle in ["consumer_cluster_id", "tenant_condition", "renew_before", "api_server_url"] {
            assert!(run.stderr.contains(needle), "{cli}: the error names `{needle}`:\n{}", run.stderr);
        }

        // A namespace that does not exist is reported by name, before any credentials are minted.
        let missing = format!(
            "{}\nresource \"liqo_tenant\" \"missing\" {{\n  provider            = liqo.milan\n  tenant_namespace    = \"tenant-ns-missing\"\n  \
             consumer_cluster_id = \"nobody\"\n}}\n",
            tf::provider_config(ground)
        );
        work.write("main.tf", &missing)?;
        let run = work.apply_fails().await?;
        assert!(run.stderr.contains("tenant-ns-missing does not exist"), "{cli}: {}", run.stderr);
        let admin = ground.client(MILAN).await?;
        let selector = format!("{}=nobody", labels::REMOTE_CLUSTER_ID);
        let csrs = Api::<CertificateSigningRequest>::all(admin).list(&ListParams::default().labels(&selector)).await?;
        assert!(csrs.items.is_empty(), "{cli}: no CSR is created for a missing namespace");
    }
    Ok(())
}
