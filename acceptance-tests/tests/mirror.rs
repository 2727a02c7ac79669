//! The provider under test is installed the way users get it: from its release archive in a filesystem
//! mirror, by every available client (OpenTofu always, Terraform when on PATH).
use anyhow::{Context, Result};
use liqo_acceptance::tf::{self, Cli, PROVIDER_VERSION, Workdir};

#[tokio::test]
async fn the_provider_installs_from_the_mirror_and_serves_its_schema_with_every_cli() -> Result<()> {
    for cli in Cli::available() {
        let work = Workdir::new(cli, &tf::required_providers()).await.with_context(|| format!("{cli} init"))?;

        // init recorded the mirrored archive's checksum for the registry address this client resolves.
        let host = match cli {
            Cli::Terraform => "registry.terraform.io",
            Cli::OpenTofu => "registry.opentofu.org",
        };
        let lock = std::fs::read_to_string(work.path().join(".terraform.lock.hcl"))?;
        assert!(lock.contains(&format!("provider \"{host}/liqotech/liqo\"")), "{cli}: lock file names {host}:\n{lock}");
        assert!(
            lock.contains(&format!("version     = \"{PROVIDER_VERSION}\"")),
            "{cli}: lock file pins the version:\n{lock}"
        );

        // The client starts the installed plugin and gets its schema over the plugin protocol.
        let run = work.run(&["providers", "schema", "-json"]).await?;
        assert!(run.success(), "{cli} providers schema:\n{run}");
        let schema: serde_json::Value = serde_json::from_str(&run.stdout)?;
        let provider = &schema["provider_schemas"][format!("{host}/liqotech/liqo")];
        assert!(
            provider["provider"]["block"].is_object(),
            "{cli}: the plugin must serve a provider schema: {provider}"
        );
    }
    Ok(())
}
