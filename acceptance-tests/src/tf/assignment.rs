//! Which client runs each real-Liqo scenario when the test command runs every scenario once (its default; `--full`
//! runs the whole matrix).
//!
//! Real Liqo behaves the same whichever client drives the provider: what differs between clients (import and
//! `removed` blocks, deferral, `query`, write-only attributes, identities, the 0.x names, state upgrade) is protocol,
//! and the light lane proves it with every client. So the default run gives each real-Liqo scenario one client, by
//! this table: Terraform 1.16.4 and OpenTofu 1.11.7 about half of the scenarios each, the heavy ones (by their CPU
//! in a warm run) spread evenly; Terraform 1.0.11 keeps one real-Liqo scenario, the gateway lifecycle, whose nested
//! `server`/`client` attributes are what crashes the 1.0 line before 1.0.5. A scenario whose point is a difference
//! between clients keeps every client it needs (adoption: Terraform's `query` against OpenTofu's import blocks).
//!
//! `LIQO_TEST_MATRIX=one` (set by `scripts/run-tests.py` for the real-Liqo binaries of a default run) turns the table
//! on; unset, or `full`, every test keeps its whole list of clients. `LIQO_TEST_CLIENTS` decides over both.

use super::Cli;
use Cli::{OpenTofu, Terraform, Terraform10};

/// `(test file stem, test name, clients)`: the clients a real-Liqo test runs with in a default run. Every test of
/// a real-Liqo file that drives a client is here; one missing fails with a message naming this table.
/// The figures are a warm run's CPU-seconds of the binary, or of the test where it runs as a process of its own.
const ASSIGNED: &[(&str, &str, &[Cli])] = &[
    ("drift", "every_owned_object_deleted_or_changed_out_of_band_is_planned_and_repaired", &[Terraform]), // 456
    ("resource_examples", "resource_examples_apply_replan_empty_and_destroy_cleanly", &[OpenTofu]),       // 141
    ("gateway", "gateway_lifecycle_server_on_milan_client_on_rome", &[Terraform10]), // 347, three clients
    ("examples", "bidirectional_example_applies_replans_empty_and_destroys_cleanly", &[OpenTofu]),
    ("peer", "peering_lifecycle_on_the_full_chain", &[Terraform]),
    ("offload", "offloading_lifecycle_on_the_full_chain", &[OpenTofu]),
    ("version_lifecycle", "the_peering_example_lifecycle_runs_on_this_liqo_version", &[Terraform]),
    // secrets: 493 in all.
    ("secrets", "the_peering_example_peers_offloads_and_leaks_no_key_and_no_token", &[OpenTofu]),
    ("secrets", "the_hub_example_serves_three_consumers_targets_one_and_leaks_no_key_and_no_token", &[Terraform]),
    ("secrets", "a_peering_without_networking_leaks_no_key_and_no_token", &[Terraform]),
    ("secrets", "a_peering_left_by_0_2_0_migrates_in_one_apply_and_its_key_leaves_the_state", &[OpenTofu]),
    ("tenant", "tenant_lifecycle_with_real_credentials", &[Terraform]),
    ("tenant", "a_tenant_created_drained_finishes_on_what_liqo_writes", &[OpenTofu]),
    ("tenant", "api_server_ca_is_checked_against_the_url_and_returned_for_the_consumer", &[Terraform]),
    ("tenant", "a_missing_tenant_namespace_is_named_before_anything_is_signed", &[OpenTofu]),
    ("generate", "generate_outputs_liqo_facts_and_keeps_the_private_key_in_the_cluster", &[OpenTofu]),
    ("generate", "an_existing_namespace_is_adopted_and_kept_on_destroy", &[Terraform]),
    ("generate", "a_namespace_held_by_its_content_is_explained_on_destroy", &[OpenTofu]),
    ("generate", "missing_liqo_and_unreachable_clusters_are_named", &[Terraform]),
    ("generate", "a_provider_block_known_only_at_apply_works_and_explains_two_step_applies", &[OpenTofu]),
    ("generate", "cluster_data_source_reads_the_same_facts", &[Terraform]),
    ("peering_data_source", "peering_reports_the_foreign_cluster_liqo_keeps", &[OpenTofu]),
    ("peering_data_source", "every_written_status_field_comes_through", &[Terraform]),
    ("peering_data_source", "an_invalid_remote_cluster_id_is_refused_at_plan", &[OpenTofu]),
    // real_fabric: each test a process of its own.
    ("real_fabric", "provider_peering_connects_over_a_real_tunnel", &[Terraform]),
    ("real_fabric", "a_wrong_remote_public_key_fails_the_apply_with_the_real_connection_error", &[OpenTofu]),
    ("real_fabric", "the_apply_survives_a_gateway_killed_before_it_connected", &[Terraform]),
    ("real_fabric", "the_apply_completes_after_the_controller_manager_restarts", &[OpenTofu]),
    ("real_fabric", "a_cordoned_tenant_denies_the_slice_with_liqos_reason", &[Terraform]),
    ("real_fabric", "an_api_server_restart_mid_apply_converges_without_orphans", &[OpenTofu]),
    ("real_fabric", "overlapping_pod_cidrs_are_remapped_and_reported", &[Terraform]),
    ("real_fabric", "one_cordoned_slice_refuses_new_pods_while_the_other_serves", &[OpenTofu]),
    ("real_fabric", "virtual_node_placement_reaches_the_pods_and_taints_keep_others_off", &[Terraform]),
    // peer_gone: each case a process and a ground of its own, and one client even in the whole matrix.
    ("peer_gone", "provider_gone_killed_then_back", &[Terraform]),
    ("peer_gone", "provider_gone_frozen", &[OpenTofu]),
    ("peer_gone", "consumer_gone_killed", &[OpenTofu]),
    ("peer_gone", "consumer_gone_frozen_then_made_anew", &[Terraform]),
    // upgrade: each test a process of its own.
    ("upgrade", "liqo_upgraded_under_a_live_peering", &[OpenTofu]),
    ("upgrade", "a_peering_across_liqo_versions", &[Terraform]),
    ("real_ground", "provider_peers_two_real_liqo_clusters_without_networking", &[OpenTofu]),
    // Liqo's tutorial: the issue asks for both clients (Liqo installed by hashicorp/helm under each).
    (
        "provision_with_terraform",
        "liqos_terraform_tutorial_installs_peers_and_uninstalls_cleanly",
        &[Terraform, OpenTofu],
    ),
    ("renamed_liqo", "a_renamed_liqo_installation_gets_a_binding_to_its_own_role", &[OpenTofu]),
    // The deferral build joins Terraform (tests/one_run.rs); OpenTofu's depends_on path runs in the whole matrix.
    ("one_run", "clusters_and_peering_in_one_apply", &[Terraform]),
    // The point is the difference: Terraform adopts with `query`, OpenTofu with import blocks.
    ("adopt", "a_liqoctl_peering_is_adopted_without_touching_an_object", &[Terraform, OpenTofu]),
];

/// How much of the client matrix a run covers (`LIQO_TEST_MATRIX`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Matrix {
    /// Each real-Liqo scenario with the clients [`ASSIGNED`] gives it.
    One,
    /// Every test with its whole list of clients.
    Full,
}

impl Matrix {
    pub fn from_env() -> Matrix {
        match std::env::var("LIQO_TEST_MATRIX").as_deref().map(str::trim) {
            Err(_) | Ok("" | "full") => Matrix::Full,
            Ok("one") => Matrix::One,
            Ok(other) => panic!("LIQO_TEST_MATRIX={other:?}: expected one or full"),
        }
    }
}

/// The test running on this thread, as `(file stem, test name)`: libtest names each test's thread after the test,
/// and the executable after the file (`drift-0123abcd` for `tests/drift.rs`).
pub(super) fn current_test() -> (String, String) {
    let exe = std::env::current_exe().ok().and_then(|p| p.file_stem().map(|s| s.to_string_lossy().into_owned()));
    let file = exe.map(|stem| stem.rsplit_once('-').map_or(stem.clone(), |(file, _)| file.to_owned()));
    let test = std::thread::current().name().unwrap_or("unnamed").to_owned();
    (file.unwrap_or_default(), test)
}

/// The clients [`ASSIGNED`] gives `test` of `file`, if any.
fn assigned_to(file: &str, test: &str) -> Option<Vec<Cli>> {
    ASSIGNED.iter().find(|(f, t, _)| *f == file && *t == test).map(|(_, _, clients)| clients.to_vec())
}

/// The clients the running test gets: `whole` in the whole matrix, else the ones [`ASSIGNED`] gives it.
pub(super) fn clients_for_current_test(whole: Vec<Cli>) -> Vec<Cli> {
    match Matrix::from_env() {
        Matrix::Full => whole,
        Matrix::One => assigned(),
    }
}

/// The clients [`ASSIGNED`] gives the running test, whatever the matrix: for a scenario that runs once in every run
/// (tests/peer_gone.rs). Panics, naming the table, for a test it does not list.
pub fn assigned() -> Vec<Cli> {
    let (file, test) = current_test();
    assigned_to(&file, &test).unwrap_or_else(|| {
        panic!(
            "tests/{file}.rs's test {test} runs on real Liqo but acceptance-tests/src/tf/assignment.rs gives it no \
             client: add it to ASSIGNED there (about half of the scenarios each to terraform and tofu)"
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_test_is_listed_once_and_the_two_current_clients_share_the_work() {
        let mut seen = std::collections::HashSet::new();
        for (file, test, clients) in ASSIGNED {
            assert!(seen.insert((file, test)), "{file}::{test} is listed twice");
            assert!(!clients.is_empty(), "{file}::{test} has no client");
        }
        let count = |cli| ASSIGNED.iter().filter(|(_, _, clients)| clients.contains(&cli)).count();
        let (terraform, tofu) = (count(Terraform), count(OpenTofu));
        assert!(terraform.abs_diff(tofu) <= 2, "Terraform runs {terraform} scenarios, OpenTofu {tofu}");
    }

    /// What the lookup rests on: libtest names the thread after the test and cargo the executable after the file.
    #[test]
    fn the_running_test_is_named_by_its_executable_and_thread() {
        let (file, test) = current_test();
        assert_eq!(file, "liqo_acceptance");
        assert_eq!(test, "tf::assignment::tests::the_running_test_is_named_by_its_executable_and_thread");
    }

    #[test]
    fn the_assignment_is_found_by_file_and_test() {
        assert_eq!(assigned_to("adopt", "a_liqoctl_peering_is_adopted_without_touching_an_object").unwrap().len(), 2);
        assert_eq!(assigned_to("drift", "no_such_test"), None);
        assert_eq!(assigned_to("peer", "peering_lifecycle_on_the_full_chain"), Some(vec![Terraform]));
    }
}
