//! Provider block: schema, environment fallbacks, kubeconfig selection and overrides, validation with attribute
//! paths, unknown configuration. Kubeconfig files live in a temp dir; the environment is injected; nothing here
//! contacts a cluster (servers point at loopback ports nobody listens on).
use super::*;
use liqo_schema::tf::{AttributePath, Severity};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// A kubeconfig with contexts `a` (server port 1111, namespace `team-a`) and `b` (port 2222), users with tokens.
fn two_context_kubeconfig(current: Option<&str>) -> String {
    let current = current.map(|c| format!("current-context: {c}\n")).unwrap_or_default();
    format!(
        "apiVersion: v1\nkind: Config\n{current}clusters:\n\
         - name: ca\n  cluster:\n    server: https://127.0.0.1:1111\n\
         - name: cb\n  cluster:\n    server: https://127.0.0.1:2222\n    tls-server-name: b.internal\n\
         contexts:\n\
         - name: a\n  context:\n    cluster: ca\n    user: ua\n    namespace: team-a\n\
         - name: b\n  context:\n    cluster: cb\n    user: ub\n\
         users:\n\
         - name: ua\n  user:\n    token: token-a\n\
         - name: ub\n  user:\n    token: token-b\n"
    )
}

fn write(dir: &Path, name: &str, text: &str) -> PathBuf {
    let p = dir.join(name);
    std::fs::write(&p, text).unwrap();
    p
}

/// A provider config value with the given `kubernetes` attributes (the others absent, i.e. null).
fn block(attrs: Vec<(&str, Value)>) -> Value {
    Value::object([("kubernetes", Value::object(attrs))])
}

fn s(p: &Path) -> Value {
    Value::string(p.to_str().unwrap())
}

/// A fake environment holding exactly `pairs`.
fn env_of(pairs: &[(&str, &str)]) -> impl Fn(&str) -> Option<String> + Sync + use<> {
    let owned: Vec<(String, String)> = pairs.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect();
    move |k: &str| owned.iter().find(|(n, _)| n == k).map(|(_, v)| v.clone())
}

fn no_env(_: &str) -> Option<String> {
    None
}

async fn build(config: &Value, env: connection::Env<'_>) -> Result<kube::Config, Diagnostics> {
    connection::build(config, env).await
}

fn error_paths(d: &Diagnostics) -> Vec<String> {
    d.iter()
        .filter(|d| d.severity == Severity::Error)
        .map(|d| d.attribute.as_ref().map(|p| p.to_string()).unwrap_or_default())
        .collect()
}

fn token(c: &kube::Config) -> Option<String> {
    use secrecy::ExposeSecret;
    c.auth_info.token.as_ref().map(|t| t.expose_secret().to_string())
}

#[test]
fn schema_follows_hashicorp_kubernetes_and_marks_secrets() {
    let b = provider_block();
    let k = b.attribute("kubernetes").unwrap();
    let nested = k.nested.as_ref().expect("kubernetes is a nested attribute");
    assert_eq!(nested.nesting, liqo_schema::tf::Nesting::Single);
    assert!(k.optional && !k.required);
    let names: Vec<&str> = nested.attributes.iter().map(|a| a.name.as_str()).collect();
    for n in [
        "config_path",
        "config_paths",
        "config_context",
        "config_context_cluster",
        "config_context_auth_info",
        "host",
        "token",
        "client_certificate",
        "client_key",
        "cluster_ca_certificate",
        "insecure",
        "tls_server_name",
        "proxy_url",
        "exec",
    ] {
        assert!(names.contains(&n), "missing kubernetes.{n}");
    }
    let exec = nested.attributes.iter().find(|a| a.name == "exec").unwrap().nested.as_ref().unwrap();
    assert_eq!(
        exec.attributes.iter().map(|a| a.name.as_str()).collect::<Vec<_>>(),
        ["api_version", "command", "args", "env"]
    );

    fn walk(attrs: &[liqo_schema::tf::Attribute], prefix: AttributePath, sensitive: &mut Vec<String>) {
        for a in attrs {
            let p = prefix.clone().attr_named(&a.name);
            assert!(!a.description.is_empty(), "{p} has no description");
            if a.sensitive {
                sensitive.push(p.to_string());
            }
            if let Some(n) = &a.nested {
                walk(&n.attributes, p, sensitive);
            }
        }
    }
    let mut sensitive = Vec::new();
    walk(&b.attributes, AttributePath::default(), &mut sensitive);
    assert_eq!(sensitive, ["kubernetes.token", "kubernetes.client_key"]);
    assert!(b.attribute("liqo_namespace").unwrap().optional);
}

#[tokio::test]
async fn kubeconfig_current_context_and_config_context() {
    let dir = tempfile::tempdir().unwrap();
    let f = write(dir.path(), "kc", &two_context_kubeconfig(Some("a")));

    let c = build(&block(vec![("config_path", s(&f))]), &no_env).await.unwrap();
    assert_eq!(crate::cluster_api::server_url(&c), "https://127.0.0.1:1111");
    assert_eq!(c.default_namespace, "team-a");
    assert_eq!(token(&c).as_deref(), Some("token-a"));

    let c = build(&block(vec![("config_path", s(&f)), ("config_context", Value::string("b"))]), &no_env).await.unwrap();
    assert_eq!(crate::cluster_api::server_url(&c), "https://127.0.0.1:2222");
    assert_eq!(c.tls_server_name.as_deref(), Some("b.internal"));
    assert_eq!(token(&c).as_deref(), Some("token-b"));

    // Cluster and user can be picked independently of the context.
    let c = build(
        &block(vec![
            ("config_path", s(&f)),
            ("config_context_cluster", Value::string("cb")),
            ("config_context_auth_info", Value::string("ua")),
        ]),
        &no_env,
    )
    .await
    .unwrap();
    assert_eq!(crate::cluster_api::server_url(&c), "https://127.0.0.1:2222");
    assert_eq!(token(&c).as_deref(), Some("token-a"));
}

#[tokio::test]
async fn unknown_context_cluster_and_user_name_the_attribute_and_the_choices() {
    let dir = tempfile::tempdir().unwrap();
    let f = write(dir.path(), "kc", &two_context_kubeconfig(Some("a")));

    let d = build(&block(vec![("config_path", s(&f)), ("config_context", Value::string("rome"))]), &no_env)
        .await
        .unwrap_err();
    assert_eq!(error_paths(&d), ["kubernetes.config_context"]);
    assert!(d.0[0].detail.contains("`rome`") && d.0[0].detail.contains("`a`, `b`"), "{}", d.0[0].detail);

    let d = build(&block(vec![("config_path", s(&f)), ("config_context_cluster", Value::string("nope"))]), &no_env)
        .await
        .unwrap_err();
    assert_eq!(error_paths(&d), ["kubernetes.config_context_cluster"]);
    assert!(d.0[0].detail.contains("`ca`, `cb`"));

    let d = build(&block(vec![("config_path", s(&f)), ("config_context_auth_info", Value::string("nobody"))]), &no_env)
        .await
        .unwrap_err();
    assert_eq!(error_paths(&d), ["kubernetes.config_context_auth_info"]);

    // No current-context and none chosen.
    let g = write(dir.path(), "nocurrent", &two_context_kubeconfig(None));
    let d = build(&block(vec![("config_path", s(&g))]), &no_env).await.unwrap_err();
    assert_eq!(error_paths(&d), ["kubernetes.config_context"]);
    assert!(d.0[0].detail.contains("no `current-context`"));

    // A current-context that does not exist points at the file.
    let h = write(dir.path(), "badcurrent", &two_context_kubeconfig(Some("gone")));
    let d = build(&block(vec![("config_path", s(&h))]), &no_env).await.unwrap_err();
    assert_eq!(error_paths(&d), ["kubernetes.config_path"]);
}

#[tokio::test]
async fn unreadable_kubeconfig_names_path_and_origin() {
    let dir = tempfile::tempdir().unwrap();
    let missing = dir.path().join("missing.kubeconfig");
    let d = build(&block(vec![("config_path", s(&missing))]), &no_env).await.unwrap_err();
    assert_eq!(error_paths(&d), ["kubernetes.config_path"]);
    assert!(d.0[0].detail.contains("missing.kubeconfig") && d.0[0].detail.contains("cannot be read"));

    let garbage = write(dir.path(), "garbage", "clusters: [this is: not, a kubeconfig");
    let d = build(&block(vec![("config_path", s(&garbage))]), &no_env).await.unwrap_err();
    assert!(d.0[0].detail.contains("not a valid kubeconfig"), "{}", d.0[0].detail);

    // From the environment: the error says which variable supplied the path.
    let d = build(&Value::Null, &env_of(&[("KUBE_CONFIG_PATH", "/nonexistent/kc")])).await.unwrap_err();
    assert_eq!(error_paths(&d), ["kubernetes.config_path"]);
    assert!(d.0[0].detail.contains("KUBE_CONFIG_PATH"));
}

#[tokio::test]
async fn config_paths_merge_in_order_and_errors_carry_the_index() {
    let dir = tempfile::tempdir().unwrap();
    // The first file only sets current-context `b` and a cluster `cb` pointing elsewhere: first file wins.
    let first = write(
        dir.path(),
        "first",
        "apiVersion: v1\nkind: Config\ncurrent-context: b\nclusters:\n- name: cb\n  cluster:\n    server: https://127.0.0.1:3333\n",
    );
    let second = write(dir.path(), "second", &two_context_kubeconfig(Some("a")));
    let c = build(&block(vec![("config_paths", Value::List(vec![s(&first), s(&second)]))]), &no_env).await.unwrap();
    assert_eq!(crate::cluster_api::server_url(&c), "https://127.0.0.1:3333");
    assert_eq!(token(&c).as_deref(), Some("token-b"));

    let d =
        build(&block(vec![("config_paths", Value::List(vec![s(&first), Value::string("/nonexistent/kc")]))]), &no_env)
            .await
            .unwrap_err();
    assert_eq!(error_paths(&d), ["kubernetes.config_paths[1]"]);
}

#[tokio::test]
async fn environment_is_a_fallback_and_the_block_wins() {
    let dir = tempfile::tempdir().unwrap();
    let f = write(dir.path(), "kc", &two_context_kubeconfig(Some("a")));
    let path = f.to_str().unwrap();
    let env = [("KUBE_CONFIG_PATH", path), ("KUBE_CTX", "b"), ("KUBE_TOKEN", "env-token")];

    let c = build(&Value::Null, &env_of(&env)).await.unwrap();
    assert_eq!(crate::cluster_api::server_url(&c), "https://127.0.0.1:2222");
    assert_eq!(token(&c).as_deref(), Some("env-token"));

    let c = build(
        &block(vec![("config_context", Value::string("a")), ("token", Value::string("block-token"))]),
        &env_of(&env),
    )
    .await
    .unwrap();
    assert_eq!(crate::cluster_api::server_url(&c), "https://127.0.0.1:1111");
    assert_eq!(token(&c).as_deref(), Some("block-token"));

    // A bad boolean in the environment is named.
    let d = build(&block(vec![("host", Value::string("https://127.0.0.1:1"))]), &env_of(&[("KUBE_INSECURE", "maybe")]))
        .await
        .unwrap_err();
    assert_eq!(error_paths(&d), ["kubernetes.insecure"]);
    assert!(d.0[0].detail.contains("KUBE_INSECURE"));
    let c = build(&block(vec![("host", Value::string("https://127.0.0.1:1"))]), &env_of(&[("KUBE_INSECURE", "true")]))
        .await
        .unwrap();
    assert!(c.accept_invalid_certs);

    // KUBE_CONFIG_PATHS is a PATH-like list.
    let list = format!("/nonexistent/first:{path}");
    let d = build(&Value::Null, &env_of(&[("KUBE_CONFIG_PATHS", &list)])).await.unwrap_err();
    assert!(d.0[0].detail.contains("/nonexistent/first") && d.0[0].detail.contains("KUBE_CONFIG_PATHS"));
}

#[tokio::test]
async fn explicit_attributes_override_the_kubeconfig() {
    let dir = tempfile::tempdir().unwrap();
    let f = write(dir.path(), "kc", &two_context_kubeconfig(Some("a")));
    let c = build(
        &block(vec![
            ("config_path", s(&f)),
            ("host", Value::string("https://127.0.0.1:4444/prefix")),
            ("token", Value::string("override")),
            ("tls_server_name", Value::string("api.milan")),
            ("insecure", Value::Bool(true)),
        ]),
        &no_env,
    )
    .await
    .unwrap();
    assert_eq!(crate::cluster_api::server_url(&c), "https://127.0.0.1:4444/prefix");
    assert_eq!(token(&c).as_deref(), Some("override"));
    assert_eq!(c.tls_server_name.as_deref(), Some("api.milan"));
    assert!(c.accept_invalid_certs);
    // The context's namespace is kept: only connection fields are overridden.
    assert_eq!(c.default_namespace, "team-a");
}

#[tokio::test]
async fn host_and_certificates_without_a_kubeconfig() {
    let ck = rcgen::generate_simple_self_signed(vec!["localhost".to_string()]).unwrap();
    let (cert, key) = (ck.cert.pem(), ck.signing_key.serialize_pem());
    let c = build(
        &block(vec![
            ("host", Value::string("https://127.0.0.1:6443")),
            ("cluster_ca_certificate", Value::string(cert.clone())),
            ("client_certificate", Value::string(cert.clone())),
            ("client_key", Value::string(key.clone())),
        ]),
        &no_env,
    )
    .await
    .unwrap();
    assert_eq!(crate::cluster_api::server_url(&c), "https://127.0.0.1:6443");
    assert_eq!(c.root_cert.as_ref().map(Vec::len), Some(1));

    // Certificate without key (and nothing in a kubeconfig to supply it).
    let d = build(
        &block(vec![
            ("host", Value::string("https://127.0.0.1:6443")),
            ("client_certificate", Value::string(cert.clone())),
        ]),
        &no_env,
    )
    .await
    .unwrap_err();
    assert_eq!(error_paths(&d), ["kubernetes.client_key"]);

    // base64 of a PEM instead of the PEM: the error says what to do.
    use base64::Engine;
    let b64 = base64::engine::general_purpose::STANDARD.encode(cert.as_bytes());
    let d = build(
        &block(vec![("host", Value::string("https://127.0.0.1:6443")), ("cluster_ca_certificate", Value::string(b64))]),
        &no_env,
    )
    .await
    .unwrap_err();
    assert_eq!(error_paths(&d), ["kubernetes.cluster_ca_certificate"]);
    assert!(d.0[0].detail.contains("base64decode()"));

    // Key in the place of a certificate.
    let d = build(
        &block(vec![
            ("host", Value::string("https://127.0.0.1:6443")),
            ("client_certificate", Value::string(key.clone())),
            ("client_key", Value::string(key)),
        ]),
        &no_env,
    )
    .await
    .unwrap_err();
    assert_eq!(error_paths(&d), ["kubernetes.client_certificate"]);

    // Credentials but no host.
    let d = build(&block(vec![("token", Value::string("t"))]), &no_env).await.unwrap_err();
    assert_eq!(error_paths(&d), ["kubernetes.host"]);
}

#[tokio::test]
async fn exec_plugin_is_passed_through_non_interactive() {
    let exec = Value::object([
        ("api_version", Value::string("client.authentication.k8s.io/v1beta1")),
        ("command", Value::string("aws")),
        ("args", Value::string_list(["eks", "get-token"])),
        ("env", Value::string_map([("AWS_PROFILE", "milan")])),
    ]);
    let c =
        build(&block(vec![("host", Value::string("https://127.0.0.1:6443")), ("exec", exec)]), &no_env).await.unwrap();
    let e = c.auth_info.exec.as_ref().unwrap();
    assert_eq!(e.command.as_deref(), Some("aws"));
    assert_eq!(e.args.as_deref(), Some(&["eks".to_string(), "get-token".to_string()][..]));
    assert_eq!(e.interactive_mode, Some(kube::config::ExecInteractiveMode::Never));
    let env = &e.env.as_ref().unwrap()[0];
    assert_eq!(
        (env.get("name").map(String::as_str), env.get("value").map(String::as_str)),
        (Some("AWS_PROFILE"), Some("milan"))
    );

    let bad =
        block(vec![("exec", Value::object([("api_version", Value::string("v1")), ("command", Value::string("x"))]))]);
    assert_eq!(error_paths(&connection::validate_block(&bad)), ["kubernetes.exec.api_version"]);
}

#[test]
fn static_validation_names_attributes() {
    let both = block(vec![("config_path", Value::string("a")), ("config_paths", Value::string_list(["b"]))]);
    assert_eq!(error_paths(&connection::validate_block(&both)), ["kubernetes.config_paths"]);
    // Conflict is detected even while one side is unknown.
    let both_unknown = block(vec![("config_path", Value::Unknown), ("config_paths", Value::string_list(["b"]))]);
    assert_eq!(error_paths(&connection::validate_block(&both_unknown)), ["kubernetes.config_paths"]);

    let no_scheme = block(vec![("host", Value::string("203.0.113.10:6443"))]);
    let d = connection::validate_block(&no_scheme);
    assert_eq!(error_paths(&d), ["kubernetes.host"]);
    assert!(d.0[0].detail.contains("https://"));

    let ftp = block(vec![("proxy_url", Value::string("ftp://proxy:21"))]);
    assert_eq!(error_paths(&connection::validate_block(&ftp)), ["kubernetes.proxy_url"]);

    let insecure_ca = block(vec![
        ("insecure", Value::Bool(true)),
        (
            "cluster_ca_certificate",
            Value::string(rcgen::generate_simple_self_signed(["ca".to_string()]).unwrap().cert.pem()),
        ),
    ]);
    assert_eq!(error_paths(&connection::validate_block(&insecure_ca)), ["kubernetes.insecure"]);

    // The CA-bundle rule of every attribute: a PEM block that is not a parseable certificate is refused.
    let not_x509 = block(vec![(
        "cluster_ca_certificate",
        Value::string("-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n"),
    )]);
    assert_eq!(error_paths(&connection::validate_block(&not_x509)), ["kubernetes.cluster_ca_certificate"]);

    // Unknown values pass.
    let unknown = block(vec![("host", Value::Unknown), ("proxy_url", Value::Unknown)]);
    assert!(connection::validate_block(&unknown).is_empty());

    let p = LiqoProvider::default();
    let bad_ns = Value::object([("liqo_namespace", Value::string("Liqo_System"))]);
    assert_eq!(error_paths(&p.validate_config(&bad_ns)), ["liqo_namespace"]);
}

#[tokio::test]
async fn host_from_environment_without_scheme_names_the_variable() {
    let d = build(&Value::Null, &env_of(&[("KUBE_HOST", "10.0.0.1:6443")])).await.unwrap_err();
    assert_eq!(error_paths(&d), ["kubernetes.host"]);
    assert!(d.0[0].detail.contains("KUBE_HOST"));
}

#[tokio::test]
async fn kubeconfig_env_var_is_not_read() {
    let dir = tempfile::tempdir().unwrap();
    let f = write(dir.path(), "kc", &two_context_kubeconfig(Some("a")));
    let d = build(&Value::Null, &env_of(&[("KUBECONFIG", f.to_str().unwrap())])).await.unwrap_err();
    assert_eq!(error_paths(&d), ["kubernetes"]);
    assert!(d.0[0].summary.contains("No Kubernetes cluster configured"));
    assert!(d.0[0].detail.contains("KUBECONFIG is set") && d.0[0].detail.contains("pathexpand"), "{}", d.0[0].detail);

    // Context selection without a kubeconfig in the block is a mistake; from a shell-wide KUBE_CTX it is ignored.
    let d = build(
        &block(vec![("host", Value::string("https://127.0.0.1:1")), ("config_context", Value::string("a"))]),
        &no_env,
    )
    .await
    .unwrap_err();
    assert_eq!(error_paths(&d), ["kubernetes.config_context"]);
    assert!(
        build(&block(vec![("host", Value::string("https://127.0.0.1:1"))]), &env_of(&[("KUBE_CTX", "a")]))
            .await
            .is_ok()
    );
}

#[tokio::test]
async fn configure_contacts_nothing_and_the_first_use_names_an_unreachable_cluster() {
    let dir = tempfile::tempdir().unwrap();
    let ck = rcgen::generate_simple_self_signed(vec!["localhost".to_string()]).unwrap();
    // Port 1 on loopback: nobody listens, so any API call fails — configure must not make one.
    let kc = format!(
        "apiVersion: v1\nkind: Config\ncurrent-context: milan\nclusters:\n- name: milan\n  cluster:\n    server: https://127.0.0.1:1\n    certificate-authority-data: {ca}\n\
         contexts:\n- name: milan\n  context:\n    cluster: milan\n    user: admin\nusers:\n- name: admin\n  user:\n    client-certificate-data: {ca}\n    client-key-data: {key}\n",
        ca = b64(&ck.cert.pem()),
        key = b64(&ck.signing_key.serialize_pem()),
    );
    let f = write(dir.path(), "milan.kubeconfig", &kc);
    let cluster = ClusterApi::default();
    let config = Value::object([
        ("kubernetes", Value::object([("config_path", s(&f))])),
        ("liqo_namespace", Value::string("liqo-system")),
    ]);
    let d = configure(&cluster, &config, &no_env).await;
    assert!(d.is_empty(), "{d:?}");
    assert_eq!(cluster.liqo_namespace(), "liqo-system");
    assert_eq!(cluster.api_server_url().await.unwrap(), "https://127.0.0.1:1");
    // Nothing listens: the first use of the client tries for the reach budget, then names the cluster, where
    // its settings come from, and the way out if it is gone for good.
    let started = std::time::Instant::now();
    let Err(e) = cluster.client().await else { panic!("nobody listens on port 1") };
    assert!(started.elapsed() < std::time::Duration::from_secs(45), "{:?}", started.elapsed());
    assert!(e.summary.starts_with("Cluster unreachable: https://127.0.0.1:1 (kubeconfig "), "{}", e.summary);
    assert!(e.detail.contains("permanently_unreachable = true"), "{}", e.detail);
    // The outcome is kept: the block's other resources do not wait the budget again.
    let again = std::time::Instant::now();
    let Err(kept) = cluster.client().await else { panic!("the failure is kept") };
    assert_eq!(kept.summary, e.summary);
    assert!(again.elapsed() < std::time::Duration::from_secs(1));
}

fn b64(s: &str) -> String {
    use base64::Engine;
    base64::engine::general_purpose::STANDARD.encode(s.as_bytes())
}

#[tokio::test]
async fn unknown_configuration_configures_and_fails_clearly_on_use() {
    let cluster = ClusterApi::default();
    let config = Value::object([
        (
            "kubernetes",
            Value::object([
                ("host", Value::Unknown),
                ("cluster_ca_certificate", Value::Unknown),
                ("token", Value::string("t")),
            ]),
        ),
        ("liqo_namespace", Value::Null),
    ]);
    let d = configure(&cluster, &config, &no_env).await;
    assert!(d.is_empty(), "configure must not fail on unknown values: {d:?}");
    assert!(cluster.is_unknown(), "a client that allows deferral is answered deferred");
    let e = cluster.client().await.err().expect("no client while the configuration is unknown");
    assert!(
        e.detail.contains("`kubernetes.host`") && e.detail.contains("`kubernetes.cluster_ca_certificate`"),
        "{}",
        e.detail
    );
    assert!(e.detail.contains("-target"));
    // The one-run path comes first: data sources (and modules) that depend on the cluster resources.
    let (depends_on, two_steps) = (e.detail.find("depends_on").unwrap(), e.detail.find("-target").unwrap());
    assert!(depends_on < two_steps, "{}", e.detail);
    assert!(cluster.api_server_url().await.unwrap_err().detail.contains("-target"));
    assert_eq!(cluster.liqo_namespace(), "liqo");

    // A wholly unknown block is reported as such.
    assert_eq!(connection::unknown_attributes(&Value::object([("kubernetes", Value::Unknown)])), ["kubernetes"]);
    let mut m = BTreeMap::new();
    m.insert("AWS_PROFILE".to_string(), Value::Unknown);
    let exec_env = block(vec![("exec", Value::object([("env", Value::Map(m))]))]);
    assert_eq!(connection::unknown_attributes(&exec_env), [r#"kubernetes.exec.env["AWS_PROFILE"]"#]);
}

#[tokio::test]
async fn configure_reports_errors_and_a_bad_liqo_namespace() {
    let cluster = ClusterApi::default();
    let d = configure(
        &cluster,
        &Value::object([
            ("liqo_namespace", Value::string("Bad_NS")),
            ("kubernetes", Value::object([("host", Value::string("https://127.0.0.1:1"))])),
        ]),
        &no_env,
    )
    .await;
    assert_eq!(error_paths(&d), ["liqo_namespace"]);
    assert!(cluster.client().await.is_err(), "a failed configure leaves no client");
}

#[test]
fn kubeconfig_parse_errors_never_quote_the_file() {
    let msg = "failed to parse kubeconfig YAML: error: line 3 column 7: unclosed bracket\n --> <input>:3:7\n  |\n3 | client-key-data: [LS0tLS1CRUdJTi\n";
    let out = super::connection::parse_error_location(msg);
    assert_eq!(out, "YAML error at line 3, column 7; the content is not shown because it may hold credentials");
    assert!(!super::connection::parse_error_location("invalid type: string \"LS0tLS1\"").contains("LS0t"));
}

/// `permanently_unreachable_peers` takes cluster IDs: each element is checked as every other cluster ID is.
#[test]
fn permanently_unreachable_peers_are_cluster_ids() {
    let config = Value::object([(
        attr::permanently_unreachable_peers,
        Value::Set(vec![Value::string("milan"), Value::string("Rome_1")]),
    )]);
    let d = validate_declared(&config);
    assert_eq!(d.iter().count(), 1, "{d:?}");
    let e = d.iter().next().unwrap();
    assert!(
        e.summary.contains("Invalid cluster ID") && e.summary.contains("permanently_unreachable_peers"),
        "{}",
        e.summary
    );
    assert!(e.detail.contains("`Rome_1`"), "{}", e.detail);
}
