//! Every adaptation the ground makes to Liqo because its pods run as plain processes on one host, with no pod
//! network, no Service routing and no container filesystem — in this one file, each with its reason. Liqo's chart
//! itself is installed as it is: what a cluster's network would do for it is the ground's
//! ([`super::pod_network`]).
//!
//! Three kinds:
//! * [`values`]: Helm values. The first group is what any user passes (`liqoctl install` passes the same);
//!   the second group is the ground's and says why.
//! * [`seed_webhook_certificate`]: an object the ground creates before any installer runs, as an administrator
//!   who brings certificates would (to save CPU, not because of the processes; the reason is there).
//! * [`adapt_process`]: rewrites of one pod's command line and files before the ground's kubelet starts it
//!   (ports and addresses that pods would own alone in their network namespace, files a pod would mount),
//!   [`with_volumes`]: a pod's `emptyDir` volumes, and [`in_sandbox`]: how a gateway container enters its pod's
//!   network namespace.
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result, bail};
use k8s_openapi::api::core::v1::{Container, Pod, Secret};
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;
use kube::api::PostParams;
use kube::{Api, Client};
use serde_json::{Value, json};

use crate::ground::Cluster;
use crate::ground::control_plane::SERVICE_CIDR;

/// The Helm values for one cluster.
pub fn values(cluster: &Cluster, liqo_version: &str) -> Value {
    json!({
        // What a user passes (`liqoctl install` sets the same from its flags). The chart in the module has no
        // appVersion (the published chart gets it when packaged), so the version goes in as the image tag.
        "tag": liqo_version,
        "discovery": {"config": {"clusterID": cluster.name}},
        // The external CIDR too, so that each cluster's is the one the ground announces (Liqo's default,
        // 10.70.0.0/16, would be the same on every cluster and remapped).
        "ipam": {
            "podCIDR": cluster.pod_cidr,
            "serviceCIDR": SERVICE_CIDR,
            "externalCIDR": cluster.external_cidr,
        },
        // The address peers reach this API server at. Users set it when Liqo cannot find it from the nodes
        // (here: there are no real nodes; the API server listens on loopback, which is where peers are).
        "apiServer": {"address": cluster.api_server},
        "networking": {"gatewayTemplates": {"wireguard": {
            // No WireGuard kernel module on the machines the ground runs on: wireguard-go on /dev/net/tun.
            "implementation": "userspace",
        }}},

        // The ground's own choices.
        // The metric agent registers an APIService backed by a pod the ground does not run; an unavailable
        // aggregated API makes discovery fail and keeps the namespace controller from finishing deletions.
        "metricAgent": {"enabled": false},
        // The telemetry CronJob reports to liqo.io; the ground never talks to the Internet.
        "telemetry": {"enabled": false},
        // Virtual storage needs a real storage class and provisioner; the ground has neither.
        "storage": {"enabled": false},
    })
}

/// The Secret Liqo's chart gives its webhook (`liqo-webhook-certs`, empty), with the names the chart uses.
const WEBHOOK_SECRET: &str = "liqo-webhook-certs";
pub const WEBHOOK_SERVICE: &str = "liqo-webhook";

/// Creates the webhook's certificate Secret before Liqo's chart is installed, by whatever installer.
///
/// Why: Liqo's webhook fills that Secret itself when it is empty (`pkg/webhooks/secretcontroller`: a CA and a
/// serving certificate for its Service, two 4096-bit RSA keys) — 2 to 3 CPU-seconds a cluster, which on a machine
/// of two cores starting about a hundred clusters a run is minutes of the test command (measured: the webhooks
/// used 176 CPU-seconds of a run, about as much as every Terraform process of it). The webhook keeps what it
/// finds, so the ground gives it an ECDSA P-256 CA and certificate for the same Service names instead (made in
/// microseconds). Helm's ownership labels let the chart's install adopt the Secret (Helm 3 adopts an object
/// annotated with its release); its `type` is the chart's own spelling, since a Secret's type cannot change.
/// Liqo does everything else with it as on any cluster: writes the files, patches the CA bundles.
pub async fn seed_webhook_certificate(client: &Client, namespace: &str, release: &str) -> Result<()> {
    let ca = crate::ground::pki::Ca::generate(WEBHOOK_SERVICE)?;
    let names = [
        WEBHOOK_SERVICE.to_owned(),
        format!("{WEBHOOK_SERVICE}.{namespace}"),
        format!("{WEBHOOK_SERVICE}.{namespace}.svc"),
        format!("{WEBHOOK_SERVICE}.{namespace}.svc.cluster.local"),
    ];
    let sans: Vec<&str> = names.iter().map(String::as_str).collect();
    let serving = ca.issue_server(&names[3], &sans)?;
    // The ground seeds a fresh cluster, so the namespace is new; Helm installs the chart into it.
    crate::observe::create_namespace(client, namespace).await?;
    let secret: Secret = serde_json::from_value(json!({
        "metadata": {
            "name": WEBHOOK_SECRET,
            "namespace": namespace,
            "labels": {"liqo.io/webhook": "true", "app.kubernetes.io/managed-by": "Helm"},
            "annotations": {
                "liqo.io/webhook-service-name": WEBHOOK_SERVICE,
                "meta.helm.sh/release-name": release,
                "meta.helm.sh/release-namespace": namespace,
            },
        },
        "type": "opaque",
        "stringData": {"ca": ca.cert_pem, "tls.crt": serving.cert_pem, "tls.key": serving.key_pem},
    }))?;
    Api::<Secret>::namespaced(client.clone(), namespace)
        .create(&PostParams::default(), &secret)
        .await
        .with_context(|| format!("creating Secret {namespace}/{WEBHOOK_SECRET} (the webhook's certificate)"))?;
    Ok(())
}

/// Per-cluster ports the ground fixes at start, because both ends of a connection must know them: the
/// controller-manager dials the IPAM on loopback (no cluster DNS, no Service routing for it). Ports the API server
/// calls (the webhook's) need no fixing: it reaches them through the pod network ([`super::pod_network`]), which
/// asks the kubelet where each pod's port listens ([`ProcessPlan::ports`]).
#[derive(Clone, Copy, Debug, serde::Serialize, serde::Deserialize, PartialEq, Eq)]
pub struct FixedPorts {
    pub ipam: u16,
}

/// The Liqo binaries the ground's kubelet runs, by the base name of the container's command. Other containers
/// (the proxy's Envoy, the fabric and the gateways' geneve, which need kernel Geneve and real nodes) are left to
/// kwok, which reports them Running without running anything. The uninstaller is the chart's pre-delete hook Job
/// (`helm uninstall` waits for it): it runs to completion (`restartPolicy: Never`), and kwok leaves such pods to
/// the kubelet (`super::nodes`).
pub const RUNNABLE: [&str; 6] =
    ["liqo-controller-manager", "webhook", "ipam", "crd-replicator", "virtual-kubelet", "uninstaller"];

/// The gateway pods' containers the kubelet runs. Their images have no command (the image's entrypoint runs the
/// binary), so they are known by image (see [`gateway_binary`]). The gateway runs without the geneve container:
/// with `--leader-election=false` (the templates' value) it does not wait for its sibling containers.
pub const GATEWAY: [&str; 2] = ["gateway", "wireguard"];

/// The gateway binary an image runs: `…/gateway:<tag>` → `gateway`, `…/gateway/wireguard:<tag>` → `wireguard`.
pub fn gateway_binary(image: &str) -> Option<&'static str> {
    let repository = image.rsplit_once(':').map_or(image, |(repository, _)| repository);
    GATEWAY.into_iter().find(|binary| match *binary {
        "gateway" => repository.ends_with("/gateway"),
        other => repository.ends_with(&format!("/gateway/{other}")),
    })
}

/// The Liqo binary a container runs, when the kubelet runs it.
pub fn runnable(container: &Container) -> Option<String> {
    if let Some(binary) = container.image.as_deref().and_then(gateway_binary) {
        return Some(binary.to_owned());
    }
    let command = container.command.as_ref()?.first()?;
    let binary = Path::new(command).file_name()?.to_str()?;
    RUNNABLE.contains(&binary).then(|| binary.to_owned())
}

/// The binaries whose readiness probe the ground's kubelet runs (an HTTP GET, as the chart declares it; both take
/// their health endpoint's address as [`HEALTH_PROBE_FLAG`]). Until the probe passes the pod is not Ready (kwok
/// leaves their readiness to the kubelet: `super::nodes`), so `helm --wait`, a Deployment's rollout and the
/// Service's traffic wait for the process as on a cluster. Other containers are Ready once started, as kwok
/// reports them.
pub const PROBED: [&str; 2] = ["liqo-controller-manager", "webhook"];
const HEALTH_PROBE_FLAG: &str = "--health-probe-address";

/// The readiness probe the kubelet runs for `container`: an HTTP GET of `path` at container port `port`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Readiness {
    pub port: u16,
    pub path: String,
}

/// The readiness probe of `container` when it runs a [`PROBED`] binary and declares one (`httpGet`, its port by
/// number or by the name of a container port).
pub fn readiness(container: &Container) -> Option<Readiness> {
    let binary = runnable(container)?;
    PROBED.contains(&binary.as_str()).then_some(())?;
    let get = container.readiness_probe.as_ref()?.http_get.as_ref()?;
    let port = match &get.port {
        IntOrString::Int(number) => *number,
        IntOrString::String(named) => {
            container.ports.iter().flatten().find(|p| p.name.as_deref() == Some(named.as_str()))?.container_port
        }
    };
    Some(Readiness { port: u16::try_from(port).ok()?, path: get.path.clone().unwrap_or_else(|| "/".to_owned()) })
}

/// A pod's command line and environment, adapted to run beside every other pod on the host.
pub struct ProcessPlan {
    pub args: Vec<String>,
    pub env: BTreeMap<String, String>,
    /// Container ports that listen elsewhere on the host (container port, host port): in a pod they would be the
    /// pod's alone; on the host each process gets a free port. The pod network and the readiness probe find
    /// them here.
    pub ports: Vec<(u16, u16)>,
    /// Directories of the pod (`dir`) the process sees at a path of its container's own filesystem (`path`), bound
    /// there as its `emptyDir` volumes are ([`with_volumes`]): where Liqo writes to a fixed path that every
    /// process on the host would share.
    pub private_dirs: Vec<(PathBuf, String)>,
}

/// Adapts `args` (already expanded as the kubelet does) of a container of `pod` running `binary`, preparing files
/// the process needs in `pod_dir`.
pub async fn adapt_process(
    binary: &str,
    container: &Container,
    mut args: Vec<String>,
    ports: FixedPorts,
    pod_dir: &Path,
    client: &Client,
    pod: &Pod,
) -> Result<ProcessPlan> {
    let mut env = BTreeMap::new();
    let mut private_dirs = Vec::new();
    let mut moved = Vec::new();
    // Temporary files go under $TMPDIR: one per pod, as each pod has its own filesystem.
    let tmp = pod_dir.join("tmp");
    std::fs::create_dir_all(&tmp).with_context(|| format!("creating {}", tmp.display()))?;
    env.insert("TMPDIR".to_owned(), tmp.display().to_string());
    env.insert("HOME".to_owned(), pod_dir.display().to_string());
    match binary {
        "liqo-controller-manager" => {
            // Metrics and health endpoints would take fixed ports (8082, 8081) that every component shares on
            // one host: nothing scrapes metrics; the health endpoint moves to a free port the kubelet probes.
            set_flag(&mut args, "--metrics-address", "0");
            move_health_endpoint(&mut args, container, &mut moved)?;
            // The chart names the IPAM by its Service (`liqo-ipam.liqo:6000`); there is no cluster DNS.
            set_flag(&mut args, "--ipam-server", &format!("127.0.0.1:{}", ports.ipam));
        }
        "webhook" => {
            set_flag(&mut args, "--metrics-address", "0");
            move_health_endpoint(&mut args, container, &mut moved)?;
            // Its serving port (chart value `webhook.port`, 9443) on a free port of the host: while a Deployment
            // rolls, the old and the new webhook both run, as they do in pods of their own.
            let port = flag(&args, "--webhook-port").unwrap_or_else(|| "9443".to_owned());
            let port: u16 = port.parse().with_context(|| format!("--webhook-port={port} is not a port"))?;
            let host = crate::ground::control_plane::free_ports(1)?[0];
            set_flag(&mut args, "--webhook-port", &host.to_string());
            moved.push((port, host));
            // Liqo writes its
            // serving certificate to /tmp/k8s-webhook-server (the pod's emptyDir there, which the kubelet mounts:
            // see `with_volumes`) and controller-runtime reads it from $TMPDIR/k8s-webhook-server: in a pod both
            // are /tmp (set here: the kubelet's own $TMPDIR would be inherited).
            env.insert("TMPDIR".to_owned(), "/tmp".to_owned());
        }
        "crd-replicator" => set_flag(&mut args, "--metrics-address", "0"),
        // The chart fixes the IPAM's gRPC port (6000) in its Service; here the controller-manager dials the
        // cluster's own port on loopback.
        "ipam" => set_flag(&mut args, "--port", &ports.ipam.to_string()),
        // Every virtual-kubelet would listen on 10250 (the kubelet port, fine in its own pod).
        "virtual-kubelet" => {
            set_flag(&mut args, "--listen-port", &crate::ground::control_plane::free_ports(1)?[0].to_string());
            // Keeps its serving certificate in /tmp/certs (a path fixed in Liqo's code, in the container's own
            // filesystem): on the host every virtual kubelet of every ground would load, rotate and leave there
            // the others' certificates.
            let certs = pod_dir.join("certs");
            std::fs::create_dir_all(&certs).with_context(|| format!("creating {}", certs.display()))?;
            private_dirs.push((certs, "/tmp/certs".to_owned()));
        }
        // Runs in the pod's own network namespace (see `in_sandbox`): nothing to move. Its sibling containers
        // include geneve, which the ground does not run (no kernel Geneve); Liqo before 1.1 always waits for every
        // sibling to join on /ipc before it starts, so geneve leaves that list.
        "gateway" => {
            if let Some(siblings) = flag(&args, "--concurrent-containers-names") {
                let kept: Vec<&str> = siblings.split(',').filter(|c| *c != "geneve").collect();
                set_flag(&mut args, "--concurrent-containers-names", &kept.join(","));
            }
        }
        // Reads its private key from a Secret volume mounted at /etc/wireguard/keys (its default --keys-dir); the
        // kubelet writes that Secret's keys as files, as for a Secret volume, and points --keys-dir at them.
        "wireguard" => {
            let keys = pod_dir.join("wireguard-keys");
            write_secret_volume(client, pod, "/etc/wireguard/keys", &keys).await?;
            set_flag(&mut args, "--keys-dir", &keys.display().to_string());
        }
        // Nothing to adapt: it listens on no port and writes no file; it finds its cluster by $KUBECONFIG (the
        // kubelet's, with the pod's ServiceAccount token) and its namespace by POD_NAMESPACE (the chart's
        // fieldRef, which the kubelet resolves).
        "uninstaller" => {}
        other => bail!("the ground does not know how to run Liqo binary {other:?} (runnable: {RUNNABLE:?})"),
    }
    Ok(ProcessPlan { args, env, ports: moved, private_dirs })
}

/// Points a [`PROBED`] binary's health endpoint at a free port of the host, recorded in `moved` under the probe's
/// container port; without a readiness probe to run, the endpoint is off (`0`).
fn move_health_endpoint(args: &mut Vec<String>, container: &Container, moved: &mut Vec<(u16, u16)>) -> Result<()> {
    match readiness(container) {
        Some(probe) => {
            let host = crate::ground::control_plane::free_ports(1)?[0];
            set_flag(args, HEALTH_PROBE_FLAG, &format!("127.0.0.1:{host}"));
            moved.push((probe.port, host));
        }
        None => set_flag(args, HEALTH_PROBE_FLAG, "0"),
    }
    Ok(())
}

/// Writes the keys of the Secret volume that `pod` mounts at `mount_path` as files in `dir`.
async fn write_secret_volume(client: &Client, pod: &Pod, mount_path: &str, dir: &Path) -> Result<()> {
    let namespace = pod.metadata.namespace.as_deref().unwrap_or_default();
    let spec = pod.spec.as_ref().context("the pod has no spec")?;
    let volume = spec
        .containers
        .iter()
        .flat_map(|c| c.volume_mounts.iter().flatten())
        .find(|m| m.mount_path == mount_path)
        .with_context(|| format!("no container of the pod mounts {mount_path}"))?;
    let secret = spec
        .volumes
        .iter()
        .flatten()
        .find(|v| v.name == volume.name)
        .and_then(|v| v.secret.as_ref())
        .and_then(|s| s.secret_name.clone())
        .with_context(|| format!("volume {} is not a Secret", volume.name))?;
    let data = Api::<Secret>::namespaced(client.clone(), namespace)
        .get(&secret)
        .await
        .with_context(|| format!("reading Secret {namespace}/{secret}"))?
        .data
        .unwrap_or_default();
    std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    for (key, value) in data {
        std::fs::write(dir.join(&key), &value.0).with_context(|| format!("writing {key} in {}", dir.display()))?;
    }
    Ok(())
}

/// Program and arguments that run a gateway container's `program ARGS` as in its pod: inside the pod's network
/// namespace (`netns`, a `/proc/<pid>/ns/net`) and in a mount namespace of its own whose root (a tmpfs at
/// `root`) shows the host's top-level directories, plus:
/// * a private tmpfs on `/run`: wireguard-go keeps its control socket in /run/wireguard, where two instances on
///   one host would collide;
/// * the container's top-level `emptyDir` mounts, each a directory of the pod shared by its containers: the
///   gateway and its wireguard meet on a Unix socket at /ipc/leader.sock (a path fixed in Liqo's code; Liqo
///   before 1.1 always uses it);
/// * with `image`, the files its image adds to /usr/bin (`<image>/usr/bin`, laid over the host's): Liqo's
///   wireguard before 1.2 runs /usr/bin/wireguard-go;
/// * a PID namespace of its own, so the processes it starts (that wireguard-go) die with it as in a container:
///   `unshare` stays the parent the kubelet stops (it ignores SIGTERM while it waits, so it takes SIGKILL), and
///   its death kills the container's first process, whose end kills the rest.
pub fn in_sandbox(
    program: &Path,
    args: Vec<String>,
    netns: &Path,
    root: &Path,
    image: Option<&Path>,
    empty_dirs: &[(PathBuf, String)],
) -> (PathBuf, Vec<String>) {
    let mut wrapped = vec![format!("--net={}", netns.display()), "--".to_owned()];
    wrapped.extend(
        [
            "unshare",
            "--mount",
            "--propagation",
            "private",
            "--pid",
            "--fork",
            "--kill-child=SIGKILL",
            "--mount-proc",
            "--",
            "sh",
            "-c",
            CONTAINER_ROOT,
            "container",
        ]
        .map(str::to_owned),
    );
    wrapped.push(root.display().to_string());
    wrapped.push(image.map_or("-".to_owned(), |image| image.join("usr/bin").display().to_string()));
    push_volumes_and_program(&mut wrapped, empty_dirs, program, args);
    (PathBuf::from("nsenter"), wrapped)
}

/// Appends `[DIR MOUNT_PATH]… -- PROGRAM ARGS`, the arguments both wrapper scripts ([`CONTAINER_ROOT`],
/// [`BIND_VOLUMES`]) read after their own.
fn push_volumes_and_program(
    wrapped: &mut Vec<String>,
    volumes: &[(PathBuf, String)],
    program: &Path,
    args: Vec<String>,
) {
    for (dir, mount_path) in volumes {
        wrapped.extend([dir.display().to_string(), mount_path.clone()]);
    }
    wrapped.push("--".to_owned());
    wrapped.push(program.display().to_string());
    wrapped.extend(args);
}

/// Program and arguments that run a host process `program ARGS` with its pod's `emptyDir` volumes at their
/// mount paths, as a container sees them: in a mount namespace of its own, each volume's directory of the pod
/// (`dir`) bound at its `mount_path`. A missing mount point is made on the host, empty (the volume's files stay in
/// the pod's directory). Without volumes, the program as it is. `unshare` and `sh` exec the program, so it keeps
/// the PID the kubelet started and stops.
pub fn with_volumes(program: &Path, args: Vec<String>, volumes: &[(PathBuf, String)]) -> (PathBuf, Vec<String>) {
    if volumes.is_empty() {
        return (program.to_owned(), args);
    }
    let mut wrapped: Vec<String> =
        ["--mount", "--propagation", "private", "--", "sh", "-c", BIND_VOLUMES, "volumes"].map(str::to_owned).into();
    push_volumes_and_program(&mut wrapped, volumes, program, args);
    (PathBuf::from("unshare"), wrapped)
}

/// `sh -c` script of [`with_volumes`]: `[DIR MOUNT_PATH]… -- PROGRAM ARGS`.
const BIND_VOLUMES: &str = r#"set -e
while [ "$1" != -- ]; do mkdir -p "$2"; mount --bind "$1" "$2"; shift 2; done
shift
exec "$@""#;

/// `sh -c` script of [`in_sandbox`]: `ROOT IMAGE_BIN|- [DIR MOUNT_PATH]… -- PROGRAM ARGS`.
const CONTAINER_ROOT: &str = r#"set -e
root=$1; image_bin=$2; shift 2
mount -t tmpfs liqo-container "$root"
for entry in /*; do
  if [ -L "$entry" ]; then ln -s "$(readlink "$entry")" "$root$entry"
  elif [ -d "$entry" ]; then mkdir "$root$entry"; mount --rbind "$entry" "$root$entry"
  fi
done
mount -t tmpfs liqo-run "$root/run"
if [ "$image_bin" != - ]; then
  mount -t overlay liqo-image -o "lowerdir=$image_bin:/usr/bin" "$root/usr/bin"
fi
while [ "$1" != -- ]; do mkdir -p "$root$2"; mount --bind "$1" "$root$2"; shift 2; done
shift
exec chroot "$root" "$@""#;

/// The `emptyDir` mounts of `container` in `pod` (mount path, volume name). [`in_sandbox`] can give a container
/// only its top-level ones (`top_level`): deeper ones would need directories made in the host's tree, which a
/// host process's mounts ([`with_volumes`]) may.
pub fn empty_dirs(
    pod: &Pod,
    container: &k8s_openapi::api::core::v1::Container,
    top_level: bool,
) -> Vec<(String, String)> {
    let volumes = pod.spec.as_ref().and_then(|s| s.volumes.as_ref());
    container
        .volume_mounts
        .iter()
        .flatten()
        .filter(|m| m.mount_path.len() > 1 && (!top_level || m.mount_path.rfind('/') == Some(0)))
        .filter(|m| volumes.into_iter().flatten().any(|v| v.name == m.name && v.empty_dir.is_some()))
        .map(|m| (m.mount_path.clone(), m.name.clone()))
        .collect()
}

/// Replaces `--name=…` (or `--name …`) in place, or appends it.
fn set_flag(args: &mut Vec<String>, name: &str, value: &str) {
    let prefix = format!("{name}=");
    if let Some(k) = args.iter().position(|a| a.starts_with(&prefix)) {
        args[k] = format!("{name}={value}");
    } else if let Some(k) = args.iter().position(|a| a == name) {
        args[k] = format!("{name}={value}");
        if k + 1 < args.len() && !args[k + 1].starts_with("--") {
            args.remove(k + 1);
        }
    } else {
        args.push(format!("{name}={value}"));
    }
}

/// The value of `--name=…` in `args`.
pub fn flag(args: &[String], name: &str) -> Option<String> {
    let prefix = format!("{name}=");
    args.iter().find_map(|a| a.strip_prefix(&prefix).map(str::to_owned))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn set_flag_replaces_both_forms_and_appends() {
        let mut args: Vec<String> = ["--port=6000", "--a", "x", "--b=1"].iter().map(|s| (*s).to_owned()).collect();
        set_flag(&mut args, "--port", "7");
        set_flag(&mut args, "--a", "y");
        set_flag(&mut args, "--c", "2");
        assert_eq!(args, ["--port=7", "--a=y", "--b=1", "--c=2"]);
    }

    #[test]
    fn gateway_binaries_are_known_by_image() {
        assert_eq!(gateway_binary("ghcr.io/liqotech/gateway:v1.2.0"), Some("gateway"));
        assert_eq!(gateway_binary("ghcr.io/liqotech/gateway/wireguard:v1.0.3"), Some("wireguard"));
        assert_eq!(gateway_binary("ghcr.io/liqotech/gateway/geneve:v1.2.0"), None);
        assert_eq!(gateway_binary("ghcr.io/liqotech/webhook:v1.2.0"), None);
    }

    #[test]
    fn a_host_process_sees_its_volumes_at_their_paths_and_the_host_does_not() -> Result<()> {
        let scratch = tempfile::tempdir()?;
        let volume = scratch.path().join("pod/volumes/certs");
        std::fs::create_dir_all(&volume)?;
        std::fs::write(volume.join("tls.crt"), "pod's own")?;
        let mount_path = scratch.path().join("tmp/k8s-webhook-server");
        let (program, args) = with_volumes(
            Path::new("/bin/sh"),
            vec!["-c".into(), format!("cat {0}/tls.crt && echo written > {0}/new", mount_path.display())],
            &[(volume.clone(), mount_path.display().to_string())],
        );
        let output = std::process::Command::new(program).args(args).output()?;
        assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
        assert_eq!(String::from_utf8_lossy(&output.stdout), "pod's own");
        // What the process wrote went to the pod's volume; the host's mount point stayed empty.
        assert_eq!(std::fs::read_to_string(volume.join("new"))?, "written\n");
        assert_eq!(std::fs::read_dir(&mount_path)?.count(), 0);
        Ok(())
    }
}
