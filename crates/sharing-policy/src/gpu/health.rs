//! The GPU health columns of the host GPU query: the persistence mode, the driver's recovery
//! action, and whether a retired page or a row remap is pending or a row remap has failed
//! (docs/mps-daemon.md, "GPU health"). An older driver rejects the query when it does not
//! know one of these fields; the probe then asks the base query ([`BASE_GPU_QUERY_ARGS`])
//! within the same deadline and records the rejected one.

use crate::{QueryOutcome, QueryRecord};

/// The health columns, in the order [`super::GPU_QUERY_ARGS`] asks them, between the
/// driver version and the table's four columns.
pub const GPU_HEALTH_COLUMNS: [&str; 5] = [
    "persistence_mode",
    "gpu_recovery_action",
    "retired_pages.pending",
    "remapped_rows.pending",
    "remapped_rows.failure",
];

/// The `nvidia-smi` arguments of the base GPU query: the compute mode and the driver version,
/// then the table's four columns. It was the whole query of host-facts v2 and v3 snapshots;
/// the probe asks it only when `nvidia-smi` rejected [`super::GPU_QUERY_ARGS`]
/// ([`field_rejected`]).
pub const BASE_GPU_QUERY_ARGS: [&str; 2] = [
    "--query-gpu=compute_mode,driver_version,index,uuid,name,pci.bus_id",
    "--format=csv,noheader",
];

/// What `nvidia-smi` prints (on standard output, exit status 2) for a field it does not know:
/// `Field "device_minor" is not a valid field to query.` (CoHDI/composable-resource-operator#37).
const NOT_A_VALID_FIELD: &str = "is not a valid field to query";

/// The health columns of one GPU row, as printed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct GpuHealth<'a> {
    /// `persistence_mode`: `Enabled` or `Disabled`.
    pub(crate) persistence_mode: &'a str,
    /// `gpu_recovery_action`: `None`, or the action the driver asks for (`Reset`, …).
    pub(crate) recovery_action: &'a str,
    /// `retired_pages.pending`: `Yes` or `No` (`[N/A]` without ECC page retirement).
    pub(crate) retired_pages_pending: &'a str,
    /// `remapped_rows.pending`: `Yes` or `No` (`[N/A]` without row remapping).
    pub(crate) remapped_rows_pending: &'a str,
    /// `remapped_rows.failure`: `Yes` or `No` (`[N/A]` without row remapping).
    pub(crate) remapped_rows_failure: &'a str,
}

impl<'a> GpuHealth<'a> {
    /// The five columns, trimmed, in [`GPU_HEALTH_COLUMNS`]' order.
    pub(crate) fn from_columns(columns: [&'a str; 5]) -> Self {
        let [persistence, recovery, retired, remap_pending, remap_failure] = columns.map(str::trim);
        Self {
            persistence_mode: persistence,
            recovery_action: recovery,
            retired_pages_pending: retired,
            remapped_rows_pending: remap_pending,
            remapped_rows_failure: remap_failure,
        }
    }

    /// Each column's name and value, in [`GPU_HEALTH_COLUMNS`]' order.
    pub(crate) fn columns(&self) -> [(&'static str, &'a str); 5] {
        let [p, a, r, rp, rf] = GPU_HEALTH_COLUMNS;
        [
            (p, self.persistence_mode),
            (a, self.recovery_action),
            (r, self.retired_pages_pending),
            (rp, self.remapped_rows_pending),
            (rf, self.remapped_rows_failure),
        ]
    }
}

/// When `record` is an `nvidia-smi` run that ended because it does not know one of the fields
/// asked (`Field "…" is not a valid field to query.`, exit status 2, as an older driver
/// answers a newer field), the line that says so. The probe asks the base query
/// ([`BASE_GPU_QUERY_ARGS`]) only then: every other failure is the GPU query's own answer.
///
/// # Examples
///
/// ```
/// use std::collections::BTreeMap;
/// use sharing_policy::{field_rejected, CapturedText, QueryOutcome, QueryRecord};
///
/// let record = |code: i32, stdout: &str| QueryRecord {
///     program: "nvidia-smi".into(),
///     args: sharing_policy::GPU_QUERY_ARGS.map(String::from).to_vec(),
///     stdin: String::new(),
///     env: BTreeMap::new(),
///     env_removed: vec![],
///     timeout_ms: 5000,
///     elapsed_ms: 40,
///     outcome: QueryOutcome::Exited {
///         code: Some(code),
///         signal: None,
///         stdout: CapturedText::from_bytes(stdout.as_bytes(), false),
///         stderr: CapturedText::default(),
///     },
///     earlier_attempts: vec![],
/// };
/// let old = "Field \"gpu_recovery_action\" is not a valid field to query.\n\n";
/// assert_eq!(
///     field_rejected(&record(2, old)).as_deref(),
///     Some("Field \"gpu_recovery_action\" is not a valid field to query.")
/// );
/// assert_eq!(field_rejected(&record(9, "NVIDIA-SMI has failed\n")), None);
/// ```
pub fn field_rejected(record: &QueryRecord) -> Option<String> {
    let QueryOutcome::Exited {
        code: Some(code),
        stdout,
        stderr,
        ..
    } = &record.outcome
    else {
        return None;
    };
    if *code == 0 {
        return None;
    }
    [&stdout.text, &stderr.text]
        .into_iter()
        .flat_map(|text| text.lines())
        .map(str::trim)
        .find(|line| line.contains(NOT_A_VALID_FIELD))
        .map(str::to_owned)
}
