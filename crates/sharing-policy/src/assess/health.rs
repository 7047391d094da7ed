//! The GPU's health (docs/mps-daemon.md, "GPU health"): a GPU whose driver asks for a recovery
//! action, or with a retired page or a row remap pending or a row remap failed, is rejected (a
//! node fault: under MPS one fatal fault takes every client of the GPU down); columns that were
//! not recorded or not reported are unverified. Persistence mode `Disabled` is unverified too:
//! the compute mode read is then only a snapshot. Decides only; the words are in
//! `message/health.rs`.

use super::{Context, Findings, Served, message};
use crate::served::HealthRead;

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
    let columns = match &served.facts.health {
        // A v4 probe asks the health columns (or records their rejection); an older snapshot
        // never asked and is judged as before.
        HealthRead::NotAsked if context.facts.schema != crate::SCHEMA => return,
        HealthRead::NotAsked => {
            let finding = message::health::not_asked(context);
            served.unverified(context.request, findings, finding);
            return;
        }
        HealthRead::Rejected(line) => {
            let finding = message::health::rejected(context, line);
            served.unverified(context.request, findings, finding);
            return;
        }
        HealthRead::NoRow => {
            let finding = message::health::no_row(context);
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
    let faults: Vec<(&str, &str)> = judged()
        .filter(|(_, _, reading)| matches!(reading, Reading::NeedsRecovery))
        .map(|(name, value, _)| (name, value))
        .collect();
    if !faults.is_empty() {
        findings.push(|| message::health::needs_recovery(context, &faults));
        return;
    }
    let unreadable: Vec<(&str, &str)> = judged()
        .filter(|(_, _, reading)| matches!(reading, Reading::Unreadable))
        .map(|(name, value, _)| (name, value))
        .collect();
    if !unreadable.is_empty() {
        let finding = message::health::unreadable(context, &unreadable);
        served.unverified(context.request, findings, finding);
    }
}

/// Persistence mode is `Enabled`, so the compute mode read stays set between jobs.
pub(super) fn persistence(context: &Context<'_>, served: &mut Served, findings: &mut Findings) {
    let HealthRead::Columns([(_, mode), ..]) = &served.facts.health else {
        return;
    };
    if mode == "Enabled" {
        return;
    }
    let finding = message::health::persistence_off(context, mode);
    served.unverified(context.request, findings, finding);
}
