//! Every configuration file under `examples/` is valid for both clients (Terraform 1.16.4 and OpenTofu 1.11.7):
//! `init -backend=false` (the provider from the test mirror) and `validate`, no cluster needed.
//!
//! The documentation examples (`examples/provider`, `examples/resources/*`, `examples/data-sources/*`) are
//! fragments of one configuration: each names the provider blocks of `examples/provider/provider.tf` and
//! resources another example defines. Each fragment is validated with provider.tf and, for what it references but
//! does not define, the resource blocks of the other fragments (its own blocks first, so a resource two
//! fragments define is checked as the fragment itself writes it). `.tfquery.hcl` files (Terraform's `terraform
//! query`, which OpenTofu lacks) are validated by Terraform with `validate -query`.
//!
//! `examples/resources/liqo_offload` also uses hashicorp/kubernetes (`kubernetes_namespace`), and
//! `examples/provision-with-terraform` hashicorp/kubernetes and hashicorp/helm: the test mirror serves them (built by
//! `scripts/build-kubernetes-provider.sh` and `scripts/build-helm-provider.sh`, which `acceptance-tests/test` runs),
//! and this test fails if one is not there rather than leave those examples out.
//!
//! Applied on real Liqo elsewhere: examples/bidirectional (tests/examples.rs), examples/peering and hub
//! (tests/secrets.rs), examples/provision-with-terraform (tests/provision_with_terraform.rs), examples/adopt
//! (tests/adopt.rs), the resource examples with provider.tf (tests/resource_examples.rs).
use std::collections::BTreeSet;
use std::path::PathBuf;

use anyhow::{Context, Result, ensure};
use liqo_acceptance::chain::copy_example;
use liqo_acceptance::doc_examples::{self, blocks};
use liqo_acceptance::tf::{Cli, Workdir, mirror};

/// The fragment that needs hashicorp/kubernetes (`kubernetes_namespace`): the test mirror serves it once
/// `scripts/build-kubernetes-provider.sh` has built it (`acceptance-tests/test` does).
const NEEDS_KUBERNETES: &str = "resources/liqo_offload/resource.tf";

fn examples() -> PathBuf {
    doc_examples::dir()
}

/// Every file under `examples/`, relative to it.
fn files() -> Result<Vec<String>> {
    let root = examples();
    let (mut files, mut dirs) = (Vec::new(), vec![root.clone()]);
    while let Some(dir) = dirs.pop() {
        for entry in std::fs::read_dir(&dir).with_context(|| format!("listing {}", dir.display()))? {
            let path = entry?.path();
            if path.is_dir() {
                dirs.push(path);
            } else {
                files.push(path.strip_prefix(&root)?.display().to_string());
            }
        }
    }
    files.sort();
    Ok(files)
}

/// A fragment, then the resources of the other fragments it does not define itself, then provider.tf.
fn assembled(fragment: &str, others: &[String]) -> Result<String> {
    let read = doc_examples::read;
    let own = read(fragment)?;
    let mut defined: BTreeSet<String> = blocks(&own).into_iter().map(|(header, _)| header).collect();
    let mut text = format!("# examples/{fragment}\n{own}\n# from the other examples\n");
    for other in others.iter().filter(|o| o.as_str() != fragment) {
        for (header, body) in blocks(&read(other)?) {
            // Any resource block (the liqo_offload example's liqo_offload.demo needs its kubernetes_namespace).
            if header.starts_with("resource \"") && defined.insert(header) {
                text.push_str(&body);
            }
        }
    }
    if fragment != "provider/provider.tf" {
        text.push_str(&format!("\n# examples/provider/provider.tf\n{}", read("provider/provider.tf")?));
    }
    Ok(text)
}

/// `init -backend=false` then `validate` (with `extra`) in a working directory holding `files`.
async fn validate(cli: Cli, what: &str, write: impl FnOnce(&Workdir) -> Result<()>, extra: &[&str]) -> Result<()> {
    let work = Workdir::uninitialised(cli).await?;
    write(&work).with_context(|| format!("{what}: writing the configuration"))?;
    let init = work.run(&["init", "-backend=false", "-input=false", "-no-color"]).await?;
    ensure!(init.success(), "{what} with {cli}: init failed:\n{init}");
    let mut args = vec!["validate", "-no-color"];
    args.extend_from_slice(extra);
    let validated = work.run(&args).await?;
    ensure!(validated.success(), "{what} with {cli}: validate failed:\n{validated}");
    Ok(())
}

fn copy(work: &Workdir, from: &std::path::Path, to: &str) -> Result<()> {
    work.write(to, &std::fs::read_to_string(from).with_context(|| format!("reading {}", from.display()))?)
}

#[tokio::test]
async fn every_example_file_validates_with_both_clients() -> Result<()> {
    let all = files()?;
    let fragments: Vec<String> = all
        .iter()
        .filter(|f| f.starts_with("resources/") || f.starts_with("data-sources/") || f.starts_with("provider/"))
        .filter(|f| f.ends_with(".tf"))
        .cloned()
        .collect();
    let queries: Vec<&String> = all.iter().filter(|f| f.ends_with(".tfquery.hcl")).collect();
    let mut checked: BTreeSet<String> = BTreeSet::new();
    let mirror = tokio::task::spawn_blocking(mirror::get).await??;
    mirror.require(&mirror::KUBERNETES).with_context(|| format!("examples/{NEEDS_KUBERNETES}"))?;
    mirror.require(&mirror::HELM).context("examples/provision-with-terraform")?;
    for cli in Cli::available() {
        for name in ["peering", "hub", "bidirectional", "provision-with-terraform"] {
            let mut copied = Vec::new();
            let write = |w: &Workdir| {
                copied = copy_example(w, name)?;
                Ok(())
            };
            validate(cli, &format!("examples/{name}"), write, &[]).await?;
            checked.extend(copied);
        }
        // `validate` checks the modules a configuration calls: examples/modules/peering through the three above
        // (alone it cannot be validated: its provider blocks are the caller's, `configuration_aliases`).
        checked.extend(all.iter().filter(|f| f.starts_with("modules/peering/")).cloned());
        for fragment in &fragments {
            let config = assembled(fragment, &fragments)?;
            validate(cli, &format!("examples/{fragment}"), |w| w.write("main.tf", &config), &[]).await?;
            checked.insert(fragment.clone());
        }
        // examples/adopt/import.tf: the import blocks of OpenTofu's adoption path, with the provider blocks.
        let import = assembled("adopt/import.tf", &[])?;
        validate(cli, "examples/adopt/import.tf", |w| w.write("main.tf", &import), &[]).await?;
        checked.insert("adopt/import.tf".into());
        if cli == Cli::Terraform {
            for query in &queries {
                let provider = assembled("provider/provider.tf", &[])?;
                let name = query.rsplit('/').next().unwrap_or(query).to_string();
                validate(
                    cli,
                    &format!("examples/{query}"),
                    |w| {
                        w.write("main.tf", &provider)?;
                        copy(w, &examples().join(query), &name)
                    },
                    &["-query"],
                )
                .await?;
                checked.insert(query.to_string());
            }
        }
    }
    let unchecked: Vec<&String> = all.iter().filter(|f| !checked.contains(*f)).collect();
    eprintln!("[example_files] validated with {:?}: {} files", Cli::available(), checked.len());
    eprintln!("[example_files] not validated by a client: {unchecked:?}");
    // What no client can validate: import.sh (shell commands naming import IDs); anything else left out is a new
    // example this test must learn.
    let expected = |f: &&String| f.ends_with("/import.sh");
    ensure!(unchecked.iter().all(expected), "examples this test does not validate: {unchecked:?}");
    Ok(())
}
