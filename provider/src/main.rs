//! `terraform-provider-liqo`: started by Terraform or OpenTofu as a plugin, or by hand with `--debug`.
use std::process::ExitCode;
use terraform_provider_liqo::protocol::{self, Mode, ServeError};
use terraform_provider_liqo::provider::LiqoProvider;

/// The address users write in `required_providers`; debug mode announces the provider under it.
const PROVIDER_ADDRESS: &str = "registry.terraform.io/liqotech/liqo";

const USAGE: &str = "usage: terraform-provider-liqo [--debug | --version]

Terraform and OpenTofu start this program themselves. Options for running it by hand:
  --debug    serve without Terraform's handshake and print a TF_REATTACH_PROVIDERS value to export
  --version  print the version";

#[tokio::main]
async fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let mode = match args.iter().map(String::as_str).collect::<Vec<_>>().as_slice() {
        [] => Mode::Plugin,
        ["--version" | "-version" | "version"] => {
            println!("terraform-provider-liqo {}", env!("CARGO_PKG_VERSION"));
            return ExitCode::SUCCESS;
        }
        ["--debug" | "-debug"] => Mode::Debug { address: PROVIDER_ADDRESS.to_string() },
        ["--help" | "-help" | "-h"] => {
            println!("{USAGE}");
            return ExitCode::SUCCESS;
        }
        _ => {
            eprintln!("{USAGE}");
            return ExitCode::from(2);
        }
    };
    match protocol::serve(LiqoProvider::default(), mode).await {
        // Exit right away: background work (DNS lookups on blocking threads, watches) must not delay the
        // exit Terraform waits for after Shutdown.
        Ok(()) => std::process::exit(0),
        Err(e @ ServeError::NotLaunchedByPluginHost) => {
            eprintln!("{e}");
            ExitCode::FAILURE
        }
        Err(e) => {
            eprintln!("terraform-provider-liqo: {e}");
            ExitCode::FAILURE
        }
    }
}
