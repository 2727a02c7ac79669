//! `liqo_tenant` against the test ground (real Liqo on `milan`), once per client
//! (Terraform 1.16.4, Terraform 1.0.11, OpenTofu 1.11.7).
//!
//! The test plays the consumer: it makes a key and CSR as liqo_consumer_key does and keeps the key, hands only
//! the CSR to liqo_tenant, and authenticates with the issued certificate for real: kube-apiserver checks it and
//! RBAC decides what the consumer user may do, and Liqo's ResourceSlice approval follows the Tenant's condition.
use std::collections::BTreeMap;
use std::time::Duration;

use anyhow::{Context, Result, bail};
use k8s_openapi::ByteString;
use k8s_openapi::api::authentication::v1::SelfSubjectReview;
use k8s_openapi::api::certificates::v1::CertificateSigningRequest;
use k8s_openapi::api::rbac::v1::RoleBinding;
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use kube::api::{DeleteParams, ListParams, Patch, PatchParams, PostParams};
use kube::{Api, Client};
use liqo_acceptance::ground::kubeconfig::ConsumerKey;
use liqo_acceptance::observe::{apply_planned, attributes, eventually, plan_text, planned_change};
use liqo_acceptance::tf::{self, Cli, Workdir};
use liqo_acceptance::{Ground, MILAN, ROME};
use liqo_schema::liqo::labels;
use liqo_schema::liqo::{
    RESOURCE_SLICE_ACCEPTED, RESOURCE_SLICE_CONDITION_RESOURCES, RESOURCE_SLICE_DENIED,
    RESOURCE_SLICE_RESOURCES_DENIED_REASON, ResourceSlice, ResourceSliceSpec, Tenant,
};
use serde_json::{Value, json};

const ADDRESS: &str = "liqo_tenant.consumer";
/// Labels liqo_tenant puts on its CSRs (`kube_ops::FIELD_MANAGER` as the manager).
const MANAGED_BY: &str = "terraform-provider-liqo";

/// A consumer cluster ID per client, so that nothing one client leaves behind can satisfy the other's checks.
fn consumer_id(cli: Cli) -> String {
    format!("tenant-consumer-{}", cli.name())
}

/// A working directory with the ground's providers and the consumer's CSR in `consumer.csr` (what the HCL files
/// beside this test read); the consumer's key stays with the caller.
async fn with_key(ground: &Ground, cli: Cli, consumer: &str) -> Result<(Workdir, ConsumerKey)> {
    let key = ConsumerKey::new(consumer)?;
    let work = Workdir::new(cli, &tf::provider_config(ground)).await?;
    work.write("consumer.csr", &key.csr_pem)?;
    Ok((work, key))
}

/// Writes tenant/tenant.tf for `consumer`, with `vars` filling in its other variables (`tenant_condition`, …).
fn write_tenant(work: &Workdir, consumer: &str, mut vars: Value) -> Result<()> {
    vars["consumer_cluster_id"] = json!(consumer);
    work.write("tenant.tf", include_str!("tenant/tenant.tf"))?;
    work.write_vars(&vars)
}

/// Key material that must never be printed: each line of the key's PEM body.
fn secrets_of(key: &ConsumerKey) -> Vec<String> {
    key.key_pem.lines().filter(|l| !l.starts_with("-----") && l.len() > 16).map(str::to_owned).collect()
}

/// No command output kept in the working directory contains any of `secrets`.
fn assert_never_printed(work: &Workdir, secrets: &[String]) -> Result<()> {
    let runs = work.path().parent().context("working directory layout")?.join("runs");
    for entry in std::fs::read_dir(&runs)? {
        let path = entry?.path();
        let text = std::fs::read_to_string(&path)?;
        for secret in secrets {
            assert!(!text.contains(secret.as_str()), "{} prints material of the consumer's key", path.display());
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

/// A ResourceSlice as the consumer's crd-replicator writes the provider's copy, with the CSR Liqo's consumer side
/// makes for the virtual kubelet's identity: Liqo handles only replicated slices that carry one, and checks its
/// subject (CN `<slice>-<first 6 bytes of sha256(consumer ID)>`, O the consumer ID).
fn replicated_slice(name: &str, consumer: &str) -> Result<ResourceSlice> {
    use sha2::Digest;
    let hash = sha2::Sha256::digest(consumer.as_bytes());
    let common_name = format!("{name}-{}", hash[..6].iter().map(|b| format!("{b:02x}")).collect::<String>());
    let (_key, csr) = liqo_acceptance::ground::pki::client_key_and_csr(&common_name, Some(consumer))?;
    let mut rs = ResourceSlice::new(
        name,
        ResourceSliceSpec {
            consumer_cluster_id: Some(consumer.into()),
            provider_cluster_id: Some(MILAN.into()),
            class: Some("default".into()),
            resources: Some(BTreeMap::from([("cpu".to_owned(), Quantity("1".into()))])),
            csr: Some(ByteString(csr.into_bytes())),
        },
    );
    rs.metadata.labels = Some(BTreeMap::from([
        (labels::REPLICATED.to_owned(), labels::TRUE.to_owned()),
        (labels::ORIGIN_ID.to_owned(), consumer.to_owned()),
        (labels::REMOTE_CLUSTER_ID.to_owned(), consumer.to_owned()),
    ]));
    Ok(rs)
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
    let (work, key) = with_key(ground, cli, &consumer).await?;
    write_tenant(&work, &consumer, json!({"tenant_condition": "Active"}))?;

    // Nothing this resource handles is secret: the plan hides nothing.
    let plan = work.plan().await?;
    assert!(plan_text(&plan).contains("client_certificate"), "{cli}: the plan lists the certificate");
    assert!(!plan_text(&plan).contains("(sensitive value)"), "{cli}: {}", plan_text(&plan));

    work.apply().await?;
    assert!(work.plan().await?.is_empty(), "{cli}: the plan after apply must be empty");
    let attrs = attributes(&work, ADDRESS)?;
    let ns = attrs["tenant_namespace"].as_str().context("tenant_namespace")?.to_owned();
    assert_eq!(attrs["id"], json!(format!("{ns}/{consumer}")));
    let expires = attrs["certificate_expires_at"].as_str().context("certificate_expires_at")?;
    let expires = time::OffsetDateTime::parse(expires, &time::format_description::well_known::Rfc3339)?;
    let lifetime = expires - time::OffsetDateTime::now_utc();
    assert!(lifetime > time::Duration::days(300), "{cli}: default validity is about a year, got {lifetime}");
    let certificate = attrs["client_certificate"].as_str().context("client_certificate in state")?.to_owned();

    // Tenant adopted by Liqo.
    let tenants: Api<Tenant> = Api::namespaced(admin.clone(), &ns);
    let tenant = tenants.get(&consumer).await?;
    assert_eq!(
        tenant.status.and_then(|s| s.tenant_namespace).as_deref(),
        Some(ns.as_str()),
        "{cli}: Tenant status.tenantNamespace"
    );
    assert_eq!(tenant.spec.authz_policy.as_deref(), Some("TolerateNoHandshake"));

    // The consumer's key with the issued certificate authenticates as the consumer user, in Liqo's control-plane
    // group, scoped by RBAC.
    let as_consumer = key.client(&attrs).await?;
    let (user, groups) = whoami(&as_consumer).await?;
    assert_eq!(user, consumer, "{cli}: certificate CN");
    assert!(
        groups.iter().any(|g| g == labels::CONTROL_PLANE_ORGANIZATION),
        "{cli}: certificate O=liqo.io, got {groups:?}"
    );
    let slices: Api<ResourceSlice> = Api::namespaced(as_consumer.clone(), &ns);
    slices
        .create(&PostParams::default(), &replicated_slice("accepted", &consumer)?)
        .await
        .context("the consumer may create a ResourceSlice in its tenant namespace")?;
    let outside: Api<ResourceSlice> = Api::namespaced(as_consumer.clone(), "default");
    match outside.create(&PostParams::default(), &replicated_slice("outside", &consumer)?).await {
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
    write_tenant(&work, &consumer, json!({"tenant_condition": "Cordoned"}))?;
    let plan = work.plan().await?;
    assert!(
        plan_text(&plan).contains("0 to add, 1 to change, 0 to destroy"),
        "{cli}: cordoning updates in place:\n{}",
        plan_text(&plan)
    );
    work.apply().await?;
    assert_eq!(tenants.get(&consumer).await?.spec.tenant_condition.as_deref(), Some("Cordoned"));
    assert_eq!(
        attributes(&work, ADDRESS)?["client_certificate"],
        json!(certificate),
        "{cli}: cordoning keeps the certificate"
    );
    slices.create(&PostParams::default(), &replicated_slice("denied", &consumer)?).await?;
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
    let renewed = attributes(&work, ADDRESS)?;
    assert_ne!(renewed["client_certificate"], json!(certificate), "{cli}: recreation signs a new certificate");
    Api::<ResourceSlice>::namespaced(key.client(&renewed).await?, &ns)
        .list(&ListParams::default())
        .await
        .context("the same key with the new certificate is authorised")?;
    assert!(work.plan().await?.is_empty(), "{cli}: the plan after the repair must be empty");

    // Import: everything but the certificate is recovered; the plan signs the configured CSR again, nothing else.
    let rm = work.run(&["state", "rm", ADDRESS]).await?;
    anyhow::ensure!(rm.success(), "{rm}");
    work.import(ADDRESS, &format!("{ns}/{consumer}")).await?;
    let change = planned_change(&work, ADDRESS).await?;
    assert_eq!(change["actions"], json!(["update"]), "{cli}: after import the plan is an in-place update");
    let (before, after) = (&change["before"], &change["after"]);
    let certificate_outputs = ["csr", "client_certificate", "cluster_ca_certificate", "certificate_expires_at"];
    for (name, value) in before.as_object().context("before")? {
        if !certificate_outputs.contains(&name.as_str()) {
            assert_eq!(&after[name], value, "{cli}: import recovers {name}");
        }
    }
    assert_eq!(change["after_unknown"]["client_certificate"], json!(true), "{cli}: import plans a new certificate");
    assert_eq!(change["after_unknown"]["certificate_expires_at"], json!(true));
    apply_planned(&work).await?;
    assert!(work.plan().await?.is_empty(), "{cli}: the plan after applying the import must be empty");
    assert_eq!(whoami(&key.client(&attributes(&work, ADDRESS)?).await?).await?.0, consumer);

    // The consumer's key was never given to Terraform, so no command can have printed it.
    assert_never_printed(&work, &secrets_of(&key))?;

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
    let (work, _key) = with_key(ground, cli, &consumer).await?;
    write_tenant(&work, &consumer, json!({"tenant_condition": "Drained", "create_timeout": "1m"}))?;
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

/// The consumer gets a URL and a CA: apply checks that the URL answers with a certificate the CA verifies, fails
/// naming both before signing anything when it does not, and returns the given CA when it does.
async fn api_server_ca(ground: &Ground, cli: Cli) -> Result<()> {
    let admin = ground.client(MILAN).await?;
    let consumer = format!("tenant-ca-{}", cli.name());
    // This test leaves tenant_condition unset: only the CA file changes between its steps.
    let with_ca = |work: &Workdir, file: &str| write_tenant(work, &consumer, json!({"api_server_ca_file": file}));
    let (work, _key) = with_key(ground, cli, &consumer).await?;
    with_ca(&work, "rome-ca.pem")?;
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
    assert!(csrs.items.is_empty(), "{cli}: nothing is signed for an untrusted URL");

    // The CA that does verify it: applied, and returned for the consumer.
    with_ca(&work, "milan-ca.pem")?;
    work.apply().await?;
    assert_eq!(
        attributes(&work, ADDRESS)?["cluster_ca_certificate"],
        json!(ground.ca_certificate(MILAN)?),
        "{cli}: cluster_ca_certificate is api_server_ca"
    );
    assert!(work.plan().await?.is_empty(), "{cli}: the plan after apply must be empty");
    work.destroy().await?;
    Ok(())
}

#[tokio::test]
async fn api_server_ca_is_checked_against_the_url_and_returned_for_the_consumer() -> Result<()> {
    let ground = Ground::shared();
    for cli in Cli::all() {
        api_server_ca(ground, cli).await.with_context(|| format!("with {cli}"))?;
    }
    Ok(())
}

#[tokio::test]
async fn a_missing_tenant_namespace_is_named_before_anything_is_signed() -> Result<()> {
    let ground = Ground::shared();
    for cli in Cli::all() {
        // A namespace that does not exist is reported by name, before anything is signed.
        let (work, _key) = with_key(ground, cli, "nobody").await?;
        work.write("missing.tf", include_str!("tenant/missing.tf"))?;
        let run = work.apply_fails().await?;
        assert!(run.stderr.contains("tenant-ns-missing does not exist"), "{cli}: {}", run.stderr);
        let admin = ground.client(MILAN).await?;
        let selector = format!("{}=nobody", labels::REMOTE_CLUSTER_ID);
        let csrs = Api::<CertificateSigningRequest>::all(admin).list(&ListParams::default().labels(&selector)).await?;
        assert!(csrs.items.is_empty(), "{cli}: no CSR is created for a missing namespace");
    }
    Ok(())
}
