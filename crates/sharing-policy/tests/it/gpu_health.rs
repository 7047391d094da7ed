//! The GPU health columns: a GPU that needs a recovery action is rejected, columns an older
//! driver rejected or did not report are unverified, persistence off is a warning, and a
//! snapshot recorded with the base query is judged exactly as before.

use proptest::prelude::*;
use sharing_policy::{
    BASE_GPU_QUERY_ARGS, CapturedText, Code, GPU_QUERY_ARGS, HostFacts, QueryOutcome,
    field_rejected, validate, warnings,
};

use crate::hosts;
use crate::props_served::set_health;
use crate::support::{code, message, mps};

/// A served host (the caller owns the daemon, `Default` mode) whose GPU query reports `health`.
fn host(health: &str) -> HostFacts {
    let mut facts = crate::props_reach::with_reach(hosts::served("100.0\n", 1000, "Default"));
    set_health(&mut facts, health);
    facts
}

/// What an older driver prints for a field it does not know, and how it exits
/// (CoHDI/composable-resource-operator#37: exit status 2, standard output, a blank line after).
const OLD_DRIVER: &str = "Field \"gpu_recovery_action\" is not a valid field to query.\n\n";

/// The host as the probe records it on an older driver: the rejected query, then the base one.
fn old_driver() -> HostFacts {
    let mut facts = crate::props_reach::with_reach(hosts::served("100.0\n", 1000, "Default"));
    let base = facts.gpu_query.clone().unwrap();
    assert_eq!(base.args, BASE_GPU_QUERY_ARGS);
    let mut rejected = base;
    rejected.args = GPU_QUERY_ARGS.map(str::to_owned).to_vec();
    rejected.outcome = QueryOutcome::Exited {
        code: Some(2),
        signal: None,
        stdout: CapturedText::from_bytes(OLD_DRIVER.as_bytes(), false),
        stderr: CapturedText::default(),
    };
    facts.gpu_query_rejected = Some(rejected);
    facts
}

#[test]
fn a_healthy_gpu_with_persistence_is_validated_without_warnings() {
    let facts = host(hosts::HEALTHY);
    let request = mps("cuda:0", Some("cuda:0"));
    let evidence = validate(&request, &facts).unwrap();
    assert!(evidence.unverified.is_empty(), "{:?}", evidence.unverified);
    assert!(warnings(&request, &facts).is_empty());
    // A GPU without page retirement or row remapping has nothing pending.
    assert_eq!(
        code(&request, &host("Enabled, None, [N/A], [N/A], [N/A]")),
        None
    );
}

#[test]
fn a_gpu_that_needs_a_reset_is_rejected_as_a_node_fault() {
    let request = mps("cuda:0", Some("cuda:0"));
    let facts = host("Enabled, Reset, No, No, No");
    assert_eq!(code(&request, &facts), Some(Code::GpuNeedsRecovery));
    assert_eq!(Code::GpuNeedsRecovery.class().as_str(), "node-fault");
    let text = message(&request, &facts);
    assert!(text.contains("gpu_recovery_action 'Reset'"), "{text}");
    assert!(text.contains("every client of the GPU down"), "{text}");
    assert!(text.contains("nvidia-smi -r -i GPU-8932f937"), "{text}");
    // Not even with --require-verified off is it a warning.
    let mut lenient = request;
    lenient.require_verified = false;
    assert!(validate(&lenient, &facts).is_err());
}

#[test]
fn pending_retired_pages_and_remapped_rows_and_a_failed_remap_are_rejected() {
    let request = mps("cuda:0", Some("cuda:0"));
    for (health, named) in [
        ("Enabled, None, Yes, No, No", "retired_pages.pending 'Yes'"),
        ("Enabled, None, No, Yes, No", "remapped_rows.pending 'Yes'"),
        ("Enabled, None, No, No, Yes", "remapped_rows.failure 'Yes'"),
        (
            "Enabled, [GPU requires reset], [GPU requires reset], No, No",
            "gpu_recovery_action '[GPU requires reset]', retired_pages.pending '[GPU requires reset]'",
        ),
    ] {
        let facts = host(health);
        assert_eq!(
            code(&request, &facts),
            Some(Code::GpuNeedsRecovery),
            "{health}"
        );
        let text = message(&request, &facts);
        assert!(text.contains(named), "{health}: {text}");
    }
}

#[test]
fn persistence_off_is_a_warning_and_a_rejection_only_when_verification_is_required() {
    let mut request = mps("cuda:0", Some("cuda:0"));
    let facts = host("Disabled, None, No, No, No");
    let evidence = validate(&request, &facts).unwrap();
    assert_eq!(evidence.unverified, vec![Code::PersistenceModeDisabled]);
    let found = warnings(&request, &facts);
    assert_eq!(found.len(), 1);
    assert!(
        found[0].message.contains("only a snapshot"),
        "{}",
        found[0].message
    );
    assert!(
        found[0].message.contains("nvidia-smi -pm 1"),
        "{}",
        found[0].message
    );
    request.require_verified = true;
    assert_eq!(code(&request, &facts), Some(Code::PersistenceModeDisabled));
}

#[test]
fn an_older_driver_that_rejected_the_fields_leaves_the_health_unverified() {
    let mut request = mps("cuda:0", Some("cuda:0"));
    let facts = old_driver();
    assert_eq!(
        field_rejected(facts.gpu_query_rejected.as_ref().unwrap()).as_deref(),
        Some("Field \"gpu_recovery_action\" is not a valid field to query.")
    );
    let evidence = validate(&request, &facts).unwrap();
    assert_eq!(evidence.unverified, vec![Code::GpuHealthUnverified]);
    assert_eq!(evidence.compute_mode.as_deref(), Some("Default"));
    request.require_verified = true;
    let text = message(&request, &facts);
    assert!(
        text.contains("could not verify the health of GPU"),
        "{text}"
    );
    assert!(text.contains("is not a valid field to query"), "{text}");
}

#[test]
fn a_snapshot_of_the_base_query_alone_is_judged_as_before() {
    let facts = crate::props_reach::with_reach(hosts::served("100.0\n", 1000, "Default"));
    let mut request = mps("cuda:0", Some("cuda:0"));
    request.require_verified = true;
    let evidence = validate(&request, &facts).unwrap();
    assert!(evidence.unverified.is_empty());
}

#[test]
fn unreported_health_columns_are_unverified_never_a_pass() {
    let mut request = mps("cuda:0", Some("cuda:0"));
    for health in [
        "Enabled, [N/A], No, No, No",
        "Enabled, [Unknown Error], No, No, No",
        "Enabled, None, [Unknown Error], No, No",
        "Enabled, None, No, , No",
    ] {
        let facts = host(health);
        let evidence = validate(&request, &facts).unwrap();
        assert_eq!(
            evidence.unverified,
            vec![Code::GpuHealthUnverified],
            "{health}"
        );
        request.require_verified = true;
        assert_eq!(
            code(&request, &facts),
            Some(Code::GpuHealthUnverified),
            "{health}"
        );
        request.require_verified = false;
    }
}

#[test]
fn a_row_without_its_health_columns_leaves_no_table() {
    let mut facts = host(hosts::HEALTHY);
    let query = facts.gpu_query.as_mut().unwrap();
    if let QueryOutcome::Exited { stdout, .. } = &mut query.outcome {
        stdout.text = "Default, 550.163.01, 0, GPU-8932f937-d72c-4106-c12f-20bd9faed9f6, NVIDIA H100 80GB HBM3, 00000000:18:00.0\n".to_owned();
    }
    let request = mps("cuda:0", Some("cuda:0"));
    assert_eq!(code(&request, &facts), Some(Code::CudaUnavailable));
}

/// A health column: what drivers print, and anything else without a comma or a line break.
fn column() -> impl Strategy<Value = String> {
    prop_oneof![
        proptest::sample::select(vec![
            "None",
            "Reset",
            "Reboot",
            "Drain P2P",
            "Yes",
            "No",
            "Enabled",
            "Disabled",
            "[N/A]",
            "[Not Supported]",
            "[Unknown Error]",
            "[GPU requires reset]",
            "",
        ])
        .prop_map(str::to_owned),
        "[^,\n\r]{0,12}",
    ]
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    /// Whatever the health columns hold, the GPU is validated only when every column reads
    /// healthy; a recovery action, a pending page or remap or a failed remap is always a
    /// rejection, and nothing turns it into a pass or a mere warning.
    #[test]
    fn health_columns_only_pass_when_healthy(columns in proptest::collection::vec(column(), 5)) {
        let health = columns.join(", ");
        let facts = host(&health);
        let request = mps("cuda:0", Some("cuda:0"));
        let trimmed: Vec<&str> = columns.iter().map(|c| c.trim()).collect();
        let na = |v: &str| matches!(v, "[N/A]" | "N/A" | "[Not Supported]" | "Not Supported");
        let needs = trimmed.contains(&"[GPU requires reset]")
            || !(trimmed[1] == "None" || trimmed[1].is_empty() || trimmed[1].starts_with('[') || na(trimmed[1]))
            || trimmed[2..].contains(&"Yes");
        let verdict = validate(&request, &facts);
        if needs {
            prop_assert_eq!(verdict.err().map(|r| r.code()), Some(Code::GpuNeedsRecovery));
        } else {
            let evidence = verdict.unwrap();
            let healthy = trimmed[1] == "None"
                && trimmed[2..].iter().all(|v| *v == "No" || na(v));
            prop_assert_eq!(
                evidence.unverified.contains(&Code::GpuHealthUnverified),
                !healthy
            );
            prop_assert_eq!(
                evidence.unverified.contains(&Code::PersistenceModeDisabled),
                trimmed[0] != "Enabled"
            );
        }
    }
}
