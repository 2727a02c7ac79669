//! 3. The full two-cluster peering of `examples/modules/peering` (generate, gateways, tenant, peer, offload of
//!    one namespace) vs. the same objects written with hashicorp/kubernetes `kubernetes_manifest` (see
//!    `manifest.rs`), alternating one apply + destroy of each per run; 4. peak RSS of every provider process and
//!    the API requests each side made (the ground's audit logs).
use std::path::Path;
use std::time::Duration;

use anyhow::{Context, Result};
use liqo_acceptance::ground::{Ground, MILAN, ROME, audit, repository_root};
use liqo_acceptance::tf::{self, Workdir};

use super::manifest::{GATEWAY_NODE_PORT, ManifestSide};
use super::rss::RssRecorder;
use super::{Report, list_secs, median, secs, slowest};

pub const OFFLOAD_NAMESPACE: &str = "liqo-demo";

/// The other side, when its provider binary was given.
pub struct Comparison<'a> {
    pub kubernetes_provider: &'a Path,
    pub recorder: &'a RssRecorder,
}

/// `required_providers` and one `provider "liqo"` per cluster, with the ground's provider kubeconfig: its user
/// appears in the audit log only for requests made by a provider, so they can be counted.
pub fn provider_blocks(ground: &Ground, clusters: &[&str]) -> String {
    let mut hcl = tf::required_providers();
    for name in clusters {
        hcl.push_str(&format!(
            "\nprovider \"liqo\" {{\n  alias      = \"{name}\"\n  kubernetes = {{\n    config_path    = \"{}\"\n    \
             config_context = \"{name}\"\n  }}\n}}\n",
            ground.provider_kubeconfig(name).display()
        ));
    }
    hcl
}

/// One `examples/modules/peering` call: `consumer` peers with `provider`.
pub fn peering_module(label: &str, provider: &str, consumer: &str, extra: &str) -> String {
    format!(
        "\nmodule \"{label}\" {{\n  source    = \"{}\"\n  providers = {{ liqo.provider = liqo.{provider}, liqo.consumer = liqo.{consumer} }}\n  \
         resources = {{ cpu = \"4\", memory = \"8Gi\", pods = \"110\" }}\n{extra}}}\n",
        repository_root().join("examples/modules/peering").display()
    )
}

/// rome peers with milan through `examples/modules/peering` and offloads [`OFFLOAD_NAMESPACE`], which it creates.
pub fn offload_config(ground: &Ground) -> String {
    format!(
        "{}{}",
        provider_blocks(ground, &[MILAN, ROME]),
        peering_module(
            "rome_to_milan",
            MILAN,
            ROME,
            &format!(
                "  offload_namespaces        = [\"{OFFLOAD_NAMESPACE}\"]\n  create_offload_namespaces = true\n  \
                 gateway_node_port         = {GATEWAY_NODE_PORT}\n"
            )
        )
    )
}

/// Requests made with the provider kubeconfig's user, in all the given clusters so far.
pub fn provider_requests(ground: &Ground, clusters: &[&str]) -> Result<usize> {
    let mut count = 0;
    for name in clusters {
        let events = audit::read(&ground.audit_log(name))?;
        count += events.iter().filter(|e| e.user == audit::PROVIDER_USER).count();
    }
    Ok(count)
}

/// The report groups of one run of the comparison: the simulated ground's, or the real-Liqo ground's.
#[derive(Clone, Copy)]
pub struct Groups {
    pub peering: &'static str,
    pub requests: &'static str,
    pub memory: &'static str,
}

pub const SIMULATED: Groups = Groups { peering: "peering", requests: "requests", memory: "memory" };
pub const REAL: Groups = Groups { peering: "real peering", requests: "real requests", memory: "real memory" };

/// What one side measured.
#[derive(Default)]
struct Side {
    applies: Vec<Duration>,
    destroys: Vec<Duration>,
    /// API requests of the first apply and the first destroy.
    requests: Option<(usize, usize)>,
}

impl Side {
    fn cycles(&self) -> Vec<Duration> {
        self.applies.iter().zip(&self.destroys).map(|(a, d)| *a + *d).collect()
    }
}

pub async fn full_peering(
    args: &super::Args,
    ground: &Ground,
    recorder: &RssRecorder,
    other: Option<Comparison<'_>>,
    groups: Groups,
    report: &mut Report,
) -> Result<()> {
    let clusters = [MILAN, ROME];
    let work = Workdir::new(args.cli, &offload_config(ground)).await?;
    let manifest = match &other {
        Some(c) => Some(
            ManifestSide::new(args.cli, ground, c.kubernetes_provider, MILAN, ROME, OFFLOAD_NAMESPACE)
                .context("preparing the kubernetes_manifest configuration")?,
        ),
        None => None,
    };
    let (mut ours, mut theirs) = (Side::default(), Side::default());
    // Every run's provider processes count; recording is off between the sides' runs.
    recorder.start()?;
    recorder.stop();
    if let Some(c) = &other {
        c.recorder.start()?;
        c.recorder.stop();
    }
    let result: Result<()> = async {
        for run in 0..args.peering_runs {
            let before = provider_requests(ground, &clusters)?;
            recorder.resume()?;
            let applied = work.apply_with(&["-json"]).await;
            let after_apply = provider_requests(ground, &clusters)?;
            let destroyed = match &applied {
                Ok(_) => Some(work.destroy_with(&["-json"]).await),
                Err(_) => None,
            };
            recorder.stop();
            let (applied, destroyed) = (applied?, destroyed.expect("destroy follows a successful apply")?);
            ours.applies.push(applied.duration);
            ours.destroys.push(destroyed.duration);
            if run == 0 {
                let after_destroy = provider_requests(ground, &clusters)?;
                ours.requests = Some((after_apply.saturating_sub(before), after_destroy.saturating_sub(after_apply)));
                report.notes.push(format!(
                    "{}: slowest resources of the first apply: {}",
                    groups.peering,
                    slowest(&applied.stdout, 4)
                ));
                report.notes.push(format!(
                    "{}: slowest resources of the first destroy: {}",
                    groups.peering,
                    slowest(&destroyed.stdout, 4)
                ));
            }
            if let (Some(side), Some(c)) = (&manifest, &other) {
                let before = provider_requests(ground, &clusters)?;
                c.recorder.resume()?;
                let applied = tokio::task::block_in_place(|| side.apply());
                let after_apply = provider_requests(ground, &clusters)?;
                let destroyed = applied.as_ref().ok().map(|_| tokio::task::block_in_place(|| side.destroy()));
                c.recorder.stop();
                let (applied, destroyed) = (applied?, destroyed.expect("destroy follows a successful apply")?);
                theirs.applies.push(applied.duration);
                theirs.destroys.push(destroyed.duration);
                if run == 0 {
                    let after_destroy = provider_requests(ground, &clusters)?;
                    theirs.requests =
                        Some((after_apply.saturating_sub(before), after_destroy.saturating_sub(after_apply)));
                }
            }
        }
        Ok(())
    }
    .await;
    if let Err(err) = &result {
        report.notes.push(format!(
            "{}: full peering FAILED after {} cycle(s): {err:#}",
            groups.peering,
            ours.destroys.len()
        ));
    }

    let n = ours.destroys.len();
    if n > 0 {
        report.add(groups.peering, format!("liqo: apply, median of {n}"), secs(median(&ours.applies)), "", None);
        report.add(groups.peering, format!("liqo: destroy, median of {n}"), secs(median(&ours.destroys)), "", None);
        report.add(groups.peering, "liqo: apply + destroy, median", secs(median(&ours.cycles())), "", None);
        report.notes.push(format!(
            "{}: liqo runs (s): apply {}; destroy {}",
            groups.peering,
            list_secs(&ours.applies),
            list_secs(&ours.destroys)
        ));
    }
    let m = theirs.destroys.len();
    if m > 0 {
        report.add(
            groups.peering,
            format!("kubernetes_manifest: apply, median of {m}"),
            secs(median(&theirs.applies)),
            "",
            None,
        );
        report.add(
            groups.peering,
            format!("kubernetes_manifest: destroy, median of {m}"),
            secs(median(&theirs.destroys)),
            "",
            None,
        );
        report.add(
            groups.peering,
            "kubernetes_manifest: apply + destroy, median",
            secs(median(&theirs.cycles())),
            "",
            None,
        );
        report.notes.push(format!(
            "{}: kubernetes_manifest runs (s): apply {}; destroy {}",
            groups.peering,
            list_secs(&theirs.applies),
            list_secs(&theirs.destroys)
        ));
        if n > 0 {
            let ratio = |a: &[Duration], b: &[Duration]| median(a).as_secs_f64() / median(b).as_secs_f64().max(1e-9);
            let cycle = ratio(&ours.cycles(), &theirs.cycles());
            report.add(
                groups.peering,
                "liqo ÷ kubernetes_manifest, apply + destroy",
                format!("{cycle:.2}×"),
                "≤ 0.25×",
                Some(cycle <= 0.25),
            );
            report.add(
                groups.peering,
                "liqo ÷ kubernetes_manifest, apply only",
                format!("{:.2}×", ratio(&ours.applies, &theirs.applies)),
                "",
                None,
            );
            report.add(
                groups.peering,
                "liqo ÷ kubernetes_manifest, destroy only",
                format!("{:.2}×", ratio(&ours.destroys, &theirs.destroys)),
                "",
                None,
            );
        }
    } else if other.is_none() {
        report.notes.push(
            "kubernetes_manifest side not run: no --kubernetes-provider-bin (acceptance-tests/bench passes the binary \
             that scripts/build-kubernetes-provider.sh builds)"
                .into(),
        );
    }
    for (who, side) in [("liqo", &ours), ("kubernetes_manifest", &theirs)] {
        if let Some((apply, destroy)) = side.requests {
            report.add(
                groups.requests,
                format!("{who}: API requests, one peering apply / destroy"),
                format!("{apply} / {destroy}"),
                "",
                None,
            );
        }
    }
    if let Some((text, max_kb)) = recorder.summary()? {
        report.add(
            groups.memory,
            "liqo: peak RSS per provider process (peering runs)",
            text,
            "≤ 20 MB",
            Some(max_kb <= 20 * 1024),
        );
    }
    if let Some(c) = &other
        && let Some((text, _)) = c.recorder.summary()?
    {
        report.add(groups.memory, "hashicorp/kubernetes: peak RSS per provider process (peering runs)", text, "", None);
    }
    result
}
