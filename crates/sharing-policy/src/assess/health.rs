//! The GPU's health (docs/mps-daemon.md, "GPU health"): a GPU whose driver asks for a recovery
//! action, or with a retired page or a row remap pending or a row remap failed, is rejected (a
//! node fault: under MPS one fatal fault takes every client of the GPU down); columns that were
//! not recorded or not reported are unverified. Persistence mode `Disabled` is unverified too:
//! the compute mode read is then only a snapshot.

use super::{Context, Findings, Served};
use crate::served::HealthRead;
use crate::text::repr;
use crate::{Code, Finding};

/// How to record the health columns.
const VERIFY: &str = "run nvidia-smi -q on the node and read GPU Recovery Action, Retired Pages and Remapped Rows, or capture it again with a driver whose nvidia-smi knows gpu_recovery_action (with --require-verified this is a rejection)";

/// How to keep the compute mode and the GPU initialised between jobs.
const PERSISTENCE: &str = "enable persistence as root (run nvidia-persistenced, or nvidia-smi -pm 1), then set the compute mode again (with --require-verified this is a rejection)";

/// What `nvidia-smi` prints for a column this GPU does not support.
fn not_supported(value: &str) -> bool {
    matches!(value, "[N/A]" | "N/A" | "[Not Supported]" | "Not Supported")
}

/// What one health column says.
enum Reading {
    Healthy,
    NeedsRecovery,
    Unreadable,
}

/// One health column, judged (`persistence_mode` only for the reset it may report: its value
/// is judged by [`persistence`]).
fn read(column: &str, value: &str) -> Reading {
    if value == "[GPU requires reset]" {
        return Reading::NeedsRecovery;
    }
    match column {
        "persistence_mode" => Reading::Healthy,
        "gpu_recovery_action" => match value {
            "None" => Reading::Healthy,
            unknown if unknown.is_empty() || unknown.starts_with('[') || not_supported(unknown) => {
                Reading::Unreadable
            }
            _ => Reading::NeedsRecovery,
        },
        _ => match value {
            "No" => Reading::Healthy,
            "Yes" => Reading::NeedsRecovery,
            // A GPU without page retirement or row remapping has nothing pending.
            absent if not_supported(absent) => Reading::Healthy,
            _ => Reading::Unreadable,
        },
    }
}

/// The proven GPU needs no recovery action.
pub(super) fn check(context: &Context<'_>, served: &mut Served, findings: &mut Findings) {
    let gpu = context.gpu.to_string();
    let what = format!("the health of GPU {gpu}");
    let columns = match &served.facts.health {
        // A v4 probe asks the health columns (or records their rejection); an older snapshot
        // never asked and is judged as before.
        HealthRead::NotAsked if context.facts.schema != crate::SCHEMA => return,
        HealthRead::NotAsked => {
            let why = format!(
                "this v4 snapshot's GPU query did not ask the health columns for {gpu}, and records no rejection of them"
            );
            let finding =
                super::unverified_finding(context, Code::GpuHealthUnverified, &what, why, VERIFY);
            served.unverified(context.request, findings, finding);
            return;
        }
        HealthRead::Rejected(line) => {
            let why = format!(
                "nvidia-smi rejected the GPU health columns as an older driver does ({}), so only the base columns were read",
                repr(line)
            );
            let finding =
                super::unverified_finding(context, Code::GpuHealthUnverified, &what, why, VERIFY);
            served.unverified(context.request, findings, finding);
            return;
        }
        HealthRead::NoRow => {
            let why = format!("the GPU query recorded no health columns for {gpu}");
            let finding =
                super::unverified_finding(context, Code::GpuHealthUnverified, &what, why, VERIFY);
            served.unverified(context.request, findings, finding);
            return;
        }
        HealthRead::Columns(columns) => columns.clone(),
    };
    let judged = || {
        columns
            .iter()
            .map(|(name, value)| (*name, value.as_str(), read(name, value)))
    };
    let faults: Vec<String> = judged()
        .filter(|(_, _, reading)| matches!(reading, Reading::NeedsRecovery))
        .map(|(name, value, _)| format!("{name} {}", repr(value)))
        .collect();
    if !faults.is_empty() {
        findings.push(|| needs_recovery(context, &gpu, &faults));
        return;
    }
    let unreadable: Vec<String> = judged()
        .filter(|(_, _, reading)| matches!(reading, Reading::Unreadable))
        .map(|(name, value, _)| format!("{name} {}", repr(value)))
        .collect();
    if !unreadable.is_empty() {
        let why = format!("nvidia-smi reported {}", unreadable.join(", "));
        let finding =
            super::unverified_finding(context, Code::GpuHealthUnverified, &what, why, VERIFY);
        served.unverified(context.request, findings, finding);
    }
}

fn needs_recovery(context: &Context<'_>, gpu: &str, faults: &[String]) -> Finding {
    let found = format!("GPU {gpu} reports {}", faults.join(", "));
    let fix = format!(
        "drain the node and do what nvidia-smi -q -i {gpu} asks under GPU Recovery Action (Reset: as root, nvidia-smi -r -i {gpu} once no process uses it; Reboot: reboot the node); a pending retired page or row remap is applied by a GPU reset, a failed row remap needs the GPU replaced"
    );
    Finding::new(
        Code::GpuNeedsRecovery,
        context.words(),
        [
            context.words().mps(),
            " cannot share GPU ",
            gpu,
            ": it needs a recovery action (",
            &faults.join(", "),
            "), and under MPS one fatal fault takes every client of the GPU down. To fix it, ",
            &fix,
            ".",
        ]
        .concat(),
        found,
        fix,
    )
}

/// Persistence mode is `Enabled`, so the compute mode read stays set between jobs.
pub(super) fn persistence(context: &Context<'_>, served: &mut Served, findings: &mut Findings) {
    let HealthRead::Columns([(_, mode), ..]) = &served.facts.health else {
        return;
    };
    if mode == "Enabled" {
        return;
    }
    let gpu = context.gpu.to_string();
    let why = format!(
        "nvidia-smi reported persistence_mode {} for GPU {gpu}: the compute mode read is only a snapshot, lost when the GPU deinitialises after its last client, and a new MPS server's initialisation is slow",
        repr(mode)
    );
    let message = [
        context.words().mps(),
        " found persistence mode off: ",
        &why,
        ". To keep it, ",
        PERSISTENCE,
        ".",
    ]
    .concat();
    let finding = Finding::new(
        Code::PersistenceModeDisabled,
        context.words(),
        message,
        why,
        PERSISTENCE.to_owned(),
    );
    served.unverified(context.request, findings, finding);
}
