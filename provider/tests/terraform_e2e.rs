//! The tfplugin6 layer end to end with real Terraform and OpenTofu: the pinned clients that
//! `acceptance-tests/scripts/build-upstream.sh` builds into the cache (`$LIQO_TEST_CACHE/bin`, default
//! `~/.cache/terraform-provider-liqo/bin`); whatever is on PATH is not used.
//!
//! This test binary is also the provider: Terraform starts it through a small wrapper script (via
//! `dev_overrides`) with `DUMMY_PROVIDER_MODE=plugin`, so the real go-plugin handshake, mTLS with Terraform's
//! P-521 client certificate, and GRPCController shutdown are exercised. The dummy resource keeps its objects
//! as files in a store directory, which lets the test delete one out of band. `harness = false` because a
//! plugin's stdout must carry nothing but the handshake.
//!
//! Fails, naming the script to run, when the cache does not hold the clients: a skip would pass untested.
use async_trait::async_trait;
use liqo_schema::tf::{Attribute, AttributePath, Block, Diagnostic, Diagnostics, Nesting, Schema, Type, Value};
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};
use terraform_provider_liqo::protocol::{
    self, ApplyRequest, ApplyResponse, Ctx, DataSource, ImportedResource, Mode, PlanRequest, PlanResponse, Provider,
    ReadResponse, Resource, codec,
};

const ADDRESS: &str = "example.com/test/dummy";

// ---------------------------------------------------------------------------------------------------------
// The dummy provider

struct DummyProvider;

#[async_trait]
impl Provider for DummyProvider {
    fn provider_schema(&self) -> Schema {
        Schema {
            version: 0,
            block: Block::new(
                "Dummy provider",
                vec![
                    Attribute::nested("options", Nesting::Single, vec![Attribute::optional("label", Type::String)])
                        .with_optional(),
                ],
            ),
        }
    }
    fn resources(&self) -> Vec<Arc<dyn Resource>> {
        vec![Arc::new(Thing)]
    }
    fn data_sources(&self) -> Vec<Arc<dyn DataSource>> {
        vec![Arc::new(Echo)]
    }
    fn validate_config(&self, config: &Value) -> Diagnostics {
        match config.get_named("options").get_named("label").as_str() {
            Some("") => Diagnostic::error("Empty label", "Set a non-empty label.")
                .at(AttributePath::root_named("options").attr_named("label"))
                .into(),
            _ => Diagnostics::new(),
        }
    }
    async fn configure(&self, _: Value, _: &str) -> Diagnostics {
        Diagnostics::new()
    }
}

/// `dummy_thing`: `name` forces replacement, `size` updates in place and bumps the computed `revision`,
/// `server` and `rules` are nested attributes, `wait_seconds` makes apply wait (until StopProvider).
struct Thing;

fn thing_ty() -> Type {
    Thing.schema().block.implied_type()
}

fn store_path(id: &str) -> PathBuf {
    PathBuf::from(std::env::var("DUMMY_STORE").expect("DUMMY_STORE is set")).join(id)
}

#[async_trait]
impl Resource for Thing {
    fn type_name(&self) -> &'static str {
        "dummy_thing"
    }
    fn schema(&self) -> Schema {
        Schema {
            version: 1,
            block: Block::new(
                "A thing",
                vec![
                    Attribute::computed("id", Type::String),
                    Attribute::required("name", Type::String),
                    Attribute::optional("size", Type::Number),
                    Attribute::optional("wait_seconds", Type::Number),
                    Attribute::computed("revision", Type::Number),
                    Attribute::nested(
                        "server",
                        Nesting::Single,
                        vec![
                            Attribute::required("port", Type::Number),
                            Attribute::optional("addresses", Type::list(Type::String)),
                        ],
                    )
                    .with_optional(),
                    Attribute::nested("rules", Nesting::List, vec![Attribute::required("name", Type::String)])
                        .with_optional(),
                    Attribute::optional("secret", Type::String).sensitive(),
                ],
            ),
        }
    }
    fn validate(&self, config: &Value) -> Diagnostics {
        match config.get_named("server").get_named("port").as_f64() {
            Some(p) if !(1.0..=65535.0).contains(&p) => {
                Diagnostic::error("Invalid port", format!("server.port must be between 1 and 65535, got {p}."))
                    .at(AttributePath::root_named("server").attr_named("port"))
                    .into()
            }
            _ => Diagnostics::new(),
        }
    }
    async fn plan(&self, _: &Ctx, req: PlanRequest) -> PlanResponse {
        let mut planned = req.proposed.clone();
        let mut requires_replace = Vec::new();
        if !planned.is_null() {
            if req.prior.is_null() {
                planned.set_named("id", Value::Unknown);
                planned.set_named("revision", Value::Unknown);
            } else {
                planned.set_named("id", req.prior.get_named("id").clone());
                let revision = if req.prior.get_named("size") == planned.get_named("size") {
                    req.prior.get_named("revision").clone()
                } else {
                    Value::Unknown
                };
                planned.set_named("revision", revision);
                if req.prior.get_named("name") != planned.get_named("name") {
                    requires_replace.push(AttributePath::root_named("name"));
                }
            }
        }
        PlanResponse { planned, requires_replace, private: Vec::new(), diagnostics: Diagnostics::new() }
    }
    async fn apply(&self, ctx: &Ctx, req: ApplyRequest) -> ApplyResponse {
        if req.planned.is_null() {
            let _ = std::fs::remove_file(store_path(req.prior.get_named("id").as_str().unwrap_or_default()));
            return ApplyResponse { new_state: Value::Null, private: Vec::new(), diagnostics: Diagnostics::new() };
        }
        if let Some(secs) = req.planned.get_named("wait_seconds").as_f64() {
            std::fs::write(store_path("waiting"), b"").unwrap();
            tokio::select! {
                _ = ctx.cancel.cancelled() => {
                    return ApplyResponse {
                        new_state: Value::Null,
                        private: Vec::new(),
                        diagnostics: Diagnostic::error("Interrupted", "Terraform asked the provider to stop.").into(),
                    };
                }
                _ = tokio::time::sleep(Duration::from_secs_f64(secs)) => {}
            }
        }
        let mut state = req.planned;
        let name = state.get_named("name").as_str().unwrap_or_default().to_string();
        state.set_named("id", Value::string(&name));
        let revision = req.prior.get_named("revision").as_f64().map_or(1.0, |r| r + 1.0);
        if state.get_named("revision").is_unknown() {
            state.set_named("revision", Value::Number(revision));
        }
        std::fs::write(store_path(&name), codec::encode(&state, &thing_ty()).unwrap()).unwrap();
        ApplyResponse { new_state: state, private: Vec::new(), diagnostics: Diagnostics::new() }
    }
    async fn read(&self, _: &Ctx, state: Value, private: Vec<u8>) -> ReadResponse {
        let new_state = match std::fs::read(store_path(state.get_named("id").as_str().unwrap_or_default())) {
            Ok(bytes) => codec::decode(&bytes, &thing_ty()).unwrap(),
            Err(_) => Value::Null,
        };
        ReadResponse { new_state, private, diagnostics: Diagnostics::new() }
    }
    async fn import(&self, _: &Ctx, id: &str) -> Result<Vec<ImportedResource>, Diagnostics> {
        match std::fs::read(store_path(id)) {
            Ok(bytes) => {
                Ok(vec![ImportedResource { state: codec::decode(&bytes, &thing_ty()).unwrap(), private: Vec::new() }])
            }
            Err(e) => Err(Diagnostic::error("Cannot import", format!("no thing {id:?}: {e}")).into()),
        }
    }
    /// One schema version: stored state is current as it is.
    fn upgrade(&self, _: i64, state: serde_json::Value) -> Result<serde_json::Value, Diagnostics> {
        Ok(state)
    }
}

/// `dummy_echo`: `output` is `input` upper-cased.
struct Echo;

#[async_trait]
impl DataSource for Echo {
    fn type_name(&self) -> &'static str {
        "dummy_echo"
    }
    fn schema(&self) -> Schema {
        Schema {
            version: 0,
            block: Block::new(
                "Echo",
                vec![Attribute::required("input", Type::String), Attribute::computed("output", Type::String)],
            ),
        }
    }
    async fn read(&self, _: &Ctx, mut config: Value) -> (Value, Diagnostics) {
        let out = config.get_named("input").as_str().map(str::to_uppercase);
        config.set_named("output", Value::opt_string(out));
        (config, Diagnostics::new())
    }
}

// ---------------------------------------------------------------------------------------------------------
// Driving Terraform

/// A pinned client in the cache, or a panic that says how to build it.
fn cached_client(name: &str) -> PathBuf {
    let cache = std::env::var_os("LIQO_TEST_CACHE").map(PathBuf::from).unwrap_or_else(|| {
        PathBuf::from(std::env::var_os("HOME").expect("HOME or LIQO_TEST_CACHE must be set"))
            .join(".cache/terraform-provider-liqo")
    });
    let client = cache.join("bin").join(name);
    assert!(
        client.is_file(),
        "terraform_e2e: {} is missing; run acceptance-tests/scripts/build-upstream.sh (acceptance-tests/test does)",
        client.display()
    );
    client
}

struct Workspace {
    _tmp: tempfile::TempDir,
    dir: PathBuf,
    store: PathBuf,
    cli_config: PathBuf,
    client: PathBuf,
}

impl Workspace {
    fn new(client: &Path) -> Workspace {
        let tmp = tempfile::tempdir().unwrap();
        let root = tmp.path().to_path_buf();
        let (bin, dir, store) = (root.join("bin"), root.join("work"), root.join("store"));
        for d in [&bin, &dir, &store] {
            std::fs::create_dir_all(d).unwrap();
        }
        let exe = std::env::current_exe().unwrap();
        let wrapper = bin.join("terraform-provider-dummy");
        std::fs::write(&wrapper, format!("#!/bin/sh\nDUMMY_PROVIDER_MODE=plugin exec '{}'\n", exe.display())).unwrap();
        std::fs::set_permissions(&wrapper, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
        let cli_config = root.join("cli.tfrc");
        std::fs::write(
            &cli_config,
            format!(
                "provider_installation {{\n  dev_overrides {{ \"{ADDRESS}\" = \"{}\" }}\n  direct {{}}\n}}\n",
                bin.display()
            ),
        )
        .unwrap();
        Workspace { _tmp: tmp, dir, store, cli_config, client: client.to_path_buf() }
    }

    fn write_config(&self, resource_body: &str) {
        let tf = format!(
            r#"terraform {{
  required_providers {{
    dummy = {{ source = "{ADDRESS}" }}
  }}
}}
provider "dummy" {{
  options = {{ label = "e2e" }}
}}
data "dummy_echo" "e" {{
  input = "hello"
}}
resource "dummy_thing" "a" {{
{resource_body}
}}
output "echo" {{ value = data.dummy_echo.e.output }}
output "revision" {{ value = dummy_thing.a.revision }}
"#
        );
        std::fs::write(self.dir.join("main.tf"), tf).unwrap();
    }

    fn command(&self, args: &[&str]) -> Command {
        let mut c = Command::new(&self.client);
        c.args(args)
            .current_dir(&self.dir)
            .env("TF_CLI_CONFIG_FILE", &self.cli_config)
            .env("DUMMY_STORE", &self.store)
            .env("TF_IN_AUTOMATION", "1")
            .env("NO_COLOR", "1")
            .env_remove("TF_LOG")
            .env_remove("TF_REATTACH_PROVIDERS");
        c
    }

    fn run(&self, args: &[&str]) -> Output {
        let started = Instant::now();
        let out = self.command(args).output().unwrap();
        eprintln!(
            "  {} {} -> {:?} in {:?}",
            self.client.display(),
            args.join(" "),
            out.status.code(),
            started.elapsed()
        );
        out
    }

    /// Runs a command that must exit with `code`; returns stdout + stderr.
    fn expect(&self, args: &[&str], code: i32) -> String {
        let out = self.run(args);
        let text = format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
        assert_eq!(out.status.code(), Some(code), "{} {}:\n{text}", self.client.display(), args.join(" "));
        text
    }
}

const BASE: &str = r#"  name = "alpha"
  size = 1
  server = { port = 51840, addresses = ["10.0.0.1"] }
  rules = [{ name = "r1" }, { name = "r2" }]
  secret = "s3cret""#;

fn scenario(ws: &Workspace) {
    ws.write_config(BASE);
    // Plan with unknown computed values, then apply: handshake, mTLS, every core RPC, nested attributes.
    let plan = ws.expect(&["plan", "-no-color"], 0);
    for parts in [
        &["+ id", "= (known after apply)"][..],
        &["+ revision", "= (known after apply)"],
        &["+ server", "= {"],
        &["+ port", "= 51840"],
        &["+ name", "= \"r2\""],
        &["+ secret", "= (sensitive value)"],
    ] {
        assert!(has_line(&plan, parts), "no line with {parts:?} in:\n{plan}");
    }
    let apply = ws.expect(&["apply", "-auto-approve", "-no-color"], 0);
    assert!(apply.contains("Apply complete! Resources: 1 added"), "{apply}");
    assert!(apply.contains(r#"echo = "HELLO""#), "{apply}");
    assert!(apply.contains("revision = 1"), "{apply}");
    assert!(ws.store.join("alpha").exists());

    // Refresh round trip (UpgradeResourceState + ReadResource) leaves nothing to do.
    ws.expect(&["plan", "-detailed-exitcode", "-no-color"], 0);

    // In-place update: the computed revision becomes unknown because it will change.
    ws.write_config(&BASE.replace("size = 1", "size = 2"));
    let plan = ws.expect(&["plan", "-detailed-exitcode", "-no-color"], 2);
    assert!(plan.contains("~ update in-place"), "{plan}");
    assert!(has_line(&plan, &["~ revision", "1 -> (known after apply)"]), "{plan}");

    // RequiresReplace.
    ws.write_config(&BASE.replace("alpha", "beta"));
    let plan = ws.expect(&["plan", "-no-color"], 0);
    assert!(plan.contains("must be replaced"), "{plan}");
    assert!(has_line(&plan, &["~ name", "\"alpha\" -> \"beta\"", "# forces replacement"]), "{plan}");

    // Validation errors point at the nested attribute.
    ws.write_config(&BASE.replace("port = 51840", "port = 70000"));
    let invalid = ws.expect(&["plan", "-no-color"], 1);
    assert!(invalid.contains("Invalid port") && invalid.contains("server.port must be between"), "{invalid}");
    assert!(invalid.contains("main.tf line"), "the diagnostic points at the configuration: {invalid}");

    // Import after forgetting the object, then no changes.
    ws.write_config(BASE);
    ws.expect(&["state", "rm", "dummy_thing.a"], 0);
    let import = ws.expect(&["import", "-no-color", "dummy_thing.a", "alpha"], 0);
    assert!(import.contains("Import successful"), "{import}");
    ws.expect(&["plan", "-detailed-exitcode", "-no-color"], 0);

    // Out-of-band deletion: Read returns null and Terraform plans to create it again.
    std::fs::remove_file(ws.store.join("alpha")).unwrap();
    let plan = ws.expect(&["plan", "-detailed-exitcode", "-no-color"], 2);
    assert!(plan.contains("will be created"), "{plan}");
    ws.expect(&["apply", "-auto-approve", "-no-color"], 0);

    let destroy = ws.expect(&["destroy", "-auto-approve", "-no-color"], 0);
    assert!(destroy.contains("Destroy complete! Resources: 1 destroyed"), "{destroy}");
    assert!(!ws.store.join("alpha").exists());
}

fn has_line(text: &str, parts: &[&str]) -> bool {
    text.lines().any(|l| parts.iter().all(|p| l.contains(p)))
}

/// Ctrl-C during a long apply: Terraform sends StopProvider, the wait ends, Terraform exits promptly.
fn stop_provider_interrupts_apply(ws: &Workspace) {
    ws.write_config(&format!("{BASE}\n  wait_seconds = 60"));
    let mut child = ws
        .command(&["apply", "-auto-approve", "-no-color"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let marker = ws.store.join("waiting");
    let deadline = Instant::now() + Duration::from_secs(30);
    while !marker.exists() {
        assert!(Instant::now() < deadline, "the apply never started waiting");
        std::thread::sleep(Duration::from_millis(50));
    }
    let interrupted = Instant::now();
    Command::new("kill").args(["-INT", &child.id().to_string()]).status().unwrap();
    let out = wait_with_timeout(&mut child, Duration::from_secs(20));
    let text = format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    eprintln!("  interrupted apply ended in {:?}", interrupted.elapsed());
    assert_eq!(out.status.code(), Some(1), "{text}");
    assert!(text.contains("Interrupted"), "{text}");
    assert!(interrupted.elapsed() < Duration::from_secs(10), "took {:?}", interrupted.elapsed());
    std::fs::remove_file(marker).unwrap();
}

fn wait_with_timeout(child: &mut std::process::Child, limit: Duration) -> Output {
    let deadline = Instant::now() + limit;
    while child.try_wait().unwrap().is_none() {
        if Instant::now() > deadline {
            let _ = child.kill();
            panic!("process {} did not exit within {limit:?}", child.id());
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    let mut stdout = Vec::new();
    let mut stderr = Vec::new();
    use std::io::Read;
    child.stdout.take().map(|mut s| s.read_to_end(&mut stdout));
    child.stderr.take().map(|mut s| s.read_to_end(&mut stderr));
    Output { status: child.wait().unwrap(), stdout, stderr }
}

/// Terraform's own log: every provider process exits cleanly after Shutdown, and the plugin layer raises
/// no warnings (absent GRPCStdio/GRPCBroker services included).
fn plugin_log_is_clean(ws: &Workspace) {
    ws.write_config(BASE);
    let log = ws.dir.join("tf.log");
    let out = ws.command(&["plan", "-no-color"]).env("TF_LOG", "trace").env("TF_LOG_PATH", &log).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let text = std::fs::read_to_string(&log).unwrap();
    let exits = text.lines().filter(|l| l.contains("[DEBUG] provider: plugin exited")).count();
    assert!(exits >= 3, "Terraform starts three provider processes per plan; {exits} exited cleanly");
    assert!(!text.contains("failed to exit gracefully"), "a provider process had to be killed");
    let problems: Vec<&str> = text
        .lines()
        .filter(|l| l.contains("[WARN]") || l.contains("[ERROR]"))
        .filter(|l| l.contains("provider") || l.contains("plugin"))
        // go-plugin client race when a plugin exits quickly (hashicorp/go-plugin#298), not a provider fault.
        .filter(|l| !l.contains("error encountered while scanning stdout"))
        .filter(|l| !l.contains("Provider development overrides"))
        .collect();
    assert!(problems.is_empty(), "plugin warnings or errors in Terraform's log:\n{}", problems.join("\n"));
    // Provider logs arrive as parsed hclog entries, not raw stderr lines. (Any one of them: go-plugin 1.6.0's
    // stderr reader can lose a process's last lines when it exits quickly, the same race as above.)
    assert!(
        text.lines().any(|l| l.contains("provider.terraform-provider-dummy: ") && l.contains(": @module=provider ")),
        "no structured provider log entry in Terraform's log"
    );
}

/// `--debug`-style serving: Terraform attaches through TF_REATTACH_PROVIDERS, twice, and the provider keeps
/// serving until interrupted.
fn debug_mode_reattach(ws: &Workspace) {
    let exe = std::env::current_exe().unwrap();
    let mut child = Command::new(exe)
        .env("DUMMY_PROVIDER_MODE", "debug")
        .env("DUMMY_STORE", &ws.store)
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut line = String::new();
    BufReader::new(child.stdout.take().unwrap()).read_line(&mut line).unwrap();
    let value = line
        .trim()
        .strip_prefix("TF_REATTACH_PROVIDERS='")
        .and_then(|s| s.strip_suffix('\''))
        .unwrap_or_else(|| panic!("unexpected debug line {line:?}"))
        .to_string();
    let j: serde_json::Value = serde_json::from_str(&value).unwrap();
    assert_eq!(j[ADDRESS]["Pid"], child.id());

    ws.write_config(BASE);
    for _ in 0..2 {
        let out = ws
            .command(&["plan", "-no-color"])
            .env("TF_REATTACH_PROVIDERS", &value)
            .env_remove("TF_CLI_CONFIG_FILE")
            .output()
            .unwrap();
        let text = format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
        assert!(out.status.success(), "{text}");
        assert!(text.contains("will be created"), "{text}");
        assert!(child.try_wait().unwrap().is_none(), "the debug server exited after one command");
    }
    Command::new("kill").args(["-INT", &child.id().to_string()]).status().unwrap();
    let out = wait_with_timeout(&mut child, Duration::from_secs(5));
    assert!(out.status.success(), "debug server exit: {:?}", out.status);
}

fn main() {
    match std::env::var("DUMMY_PROVIDER_MODE").as_deref() {
        Ok("plugin") => return serve(Mode::Plugin),
        Ok("debug") => {
            return serve(Mode::Debug { address: ADDRESS.to_string() });
        }
        _ => {}
    }
    let started = Instant::now();
    // libtest's lines, so that the test command's summary and CI count this harness-less binary like the others:
    // one `test … ok|FAILED` line per check and the closing `test result:` line, passed or failed.
    type Check = (&'static str, fn(&Workspace));
    let clients: [(&str, &[Check]); 2] = [
        (
            "terraform",
            &[
                ("scenario", scenario),
                ("plugin_log_is_clean", plugin_log_is_clean),
                ("stop_provider_interrupts_apply", stop_provider_interrupts_apply),
                ("debug_mode_reattach", debug_mode_reattach),
            ],
        ),
        ("tofu", &[("scenario", scenario)]),
    ];
    let (mut passed, mut failed) = (0, 0);
    for (client, checks) in clients {
        // A client missing from the cache fails its checks (with the script to run in the panic message).
        let ws = std::panic::catch_unwind(|| {
            let program = cached_client(client);
            eprintln!("terraform_e2e: {}", program.display());
            Workspace::new(&program)
        });
        for (name, check) in checks {
            let ok = match &ws {
                Ok(ws) => std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| check(ws))).is_ok(),
                Err(_) => false,
            };
            println!("test {client}::{name} ... {}", if ok { "ok" } else { "FAILED" });
            if ok { passed += 1 } else { failed += 1 }
        }
    }
    println!(
        "test result: {}. {passed} passed; {failed} failed; 0 ignored; 0 measured; 0 filtered out; finished in {:.2}s",
        if failed == 0 { "ok" } else { "FAILED" },
        started.elapsed().as_secs_f64()
    );
    if failed > 0 {
        std::process::exit(101);
    }
}

fn serve(mode: Mode) {
    let rt = tokio::runtime::Runtime::new().unwrap();
    match rt.block_on(protocol::serve(DummyProvider, mode)) {
        Ok(()) => std::process::exit(0),
        Err(e) => {
            eprintln!("{e}");
            std::process::exit(1);
        }
    }
}
