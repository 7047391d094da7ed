//! Which physical GPU a `cuda:N` device is, from `CUDA_VISIBLE_DEVICES` and the recorded host
//! GPU table, without initialising CUDA (deliberate changes 1–3).

use gpu_uuid::{GpuTable, GpuUuid, ResolveError, TABLE_QUERY_ARGS, VisibleDevices};

use crate::assess::Role;
use crate::text::repr;
use crate::{Code, EnvFacts, GPU_QUERY_PROGRAM, OsText, QueryOutcome, QueryRecord};

/// The recorded host GPU table, or why there is none.
pub(crate) enum Table {
    /// The table `nvidia-smi` printed.
    Ok(GpuTable),
    /// No usable table: not queried, failed, timed out, cut short, or unparsable.
    Unavailable(String),
    /// The record is not the table query this validator interprets.
    NotTheQuery(String),
}

/// Why a device's physical GPU could not be proven.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Failure {
    /// No host GPU table.
    NoTable(String),
    /// The GPU query record is another query.
    NotTheQuery(String),
    /// The mask makes no GPU visible (or is not UTF-8, so what it selects is unproven).
    NoneVisible(String),
    /// The index is at or beyond the number of visible GPUs.
    OutOfRange(String),
    /// The mask names MIG devices.
    Mig(String),
    /// Index mapping through `nvidia-smi` is not trustworthy on this host.
    UntrustedOrder(String),
}

impl Failure {
    /// The code this failure has for a device of `role`.
    pub(crate) fn code(&self, role: Role) -> Code {
        match (self, role) {
            (Self::NotTheQuery(_), _) => Code::InconsistentSnapshot,
            (Self::Mig(_), _) => Code::MigVisibilityUnsupported,
            (Self::UntrustedOrder(_), _) => Code::AmbiguousDeviceOrder,
            (Self::NoTable(_) | Self::NoneVisible(_), Role::Learner) => Code::CudaUnavailable,
            (Self::OutOfRange(_), Role::Learner) => Code::DeviceOutOfRange,
            (Self::NoTable(_) | Self::NoneVisible(_) | Self::OutOfRange(_), Role::Collector) => {
                Code::CollectorUuidUnresolved
            }
        }
    }

    /// What was found, for messages.
    pub(crate) fn describe(&self) -> String {
        match self {
            Self::NoTable(s)
            | Self::NotTheQuery(s)
            | Self::NoneVisible(s)
            | Self::OutOfRange(s)
            | Self::Mig(s)
            | Self::UntrustedOrder(s) => s.clone(),
        }
    }
}

fn first_line(text: &str) -> &str {
    text.lines()
        .map(str::trim)
        .find(|line| !line.is_empty())
        .unwrap_or("")
}

/// Interprets the recorded `nvidia-smi` run.
pub(crate) fn host_table(record: Option<&QueryRecord>) -> Table {
    let Some(record) = record else {
        return Table::Unavailable("no host GPU query was recorded".to_owned());
    };
    if record.program.rsplit('/').next() != Some(GPU_QUERY_PROGRAM)
        || record.args != TABLE_QUERY_ARGS
    {
        return Table::NotTheQuery(format!(
            "its GPU query ran {} {:?} instead of {GPU_QUERY_PROGRAM} {:?}",
            repr(&record.program),
            record.args,
            TABLE_QUERY_ARGS
        ));
    }
    match &record.outcome {
        QueryOutcome::SpawnFailed { error } => {
            Table::Unavailable(format!("{GPU_QUERY_PROGRAM} could not be started: {error}"))
        }
        QueryOutcome::TimedOut { .. } => Table::Unavailable(format!(
            "{GPU_QUERY_PROGRAM} did not finish within {} ms",
            record.timeout_ms
        )),
        QueryOutcome::Exited {
            code: Some(0),
            stdout,
            ..
        } => {
            if stdout.truncated {
                Table::Unavailable(format!("the output of {GPU_QUERY_PROGRAM} was cut short"))
            } else if stdout.non_utf8 {
                Table::Unavailable(format!("the output of {GPU_QUERY_PROGRAM} is not UTF-8"))
            } else {
                GpuTable::parse(&stdout.text)
                    .map_or_else(|err| Table::Unavailable(err.to_string()), Table::Ok)
            }
        }
        QueryOutcome::Exited {
            code,
            signal,
            stdout,
            stderr,
        } => {
            let how = match (code, signal) {
                (Some(code), _) => format!("exited with status {code}"),
                (None, Some(signal)) => format!("was killed by signal {signal}"),
                (None, None) => "ended without an exit status".to_owned(),
            };
            let said = [first_line(&stdout.text), first_line(&stderr.text)]
                .into_iter()
                .find(|line| !line.is_empty())
                .map(|line| format!(": {line}"))
                .unwrap_or_default();
            Table::Unavailable(format!("{GPU_QUERY_PROGRAM} {how}{said}"))
        }
    }
}

/// `CUDA_VISIBLE_DEVICES='…'` or "`CUDA_VISIBLE_DEVICES` unset", for messages.
fn describe_mask(raw: Option<&OsText>) -> String {
    raw.map_or_else(
        || "CUDA_VISIBLE_DEVICES unset".to_owned(),
        |value| format!("CUDA_VISIBLE_DEVICES={}", repr(&value.to_string_lossy())),
    )
}

/// Whether `CUDA_DEVICE_ORDER` is exactly `PCI_BUS_ID` (CUDA then enumerates in nvidia-smi's
/// order).
fn pci_bus_order(env: &EnvFacts) -> bool {
    env.cuda_device_order
        .as_ref()
        .is_some_and(|order| order.as_bytes() == b"PCI_BUS_ID")
}

/// The physical GPU of device `cuda:index`, proven from the mask and the host table.
///
/// Visibility follows CUDA's rules (`gpu_uuid`): unset = every GPU, empty = none, the first
/// invalid entry stops the list, no "same number" fallback. Index-based mapping (mask unset or
/// made of indices) is trusted only under `CUDA_DEVICE_ORDER=PCI_BUS_ID` or on a host whose
/// GPUs are all the same model. MIG masks are not mapped.
pub(crate) fn resolve_index(index: u32, env: &EnvFacts, table: &Table) -> Result<GpuUuid, Failure> {
    let table = match table {
        Table::Ok(table) => table,
        Table::Unavailable(why) => return Err(Failure::NoTable(why.clone())),
        Table::NotTheQuery(why) => return Err(Failure::NotTheQuery(why.clone())),
    };
    let raw = env.cuda_visible_devices.as_ref();
    let mask = describe_mask(raw);
    if raw.is_some_and(|value| value.as_str().is_none()) {
        // CUDA reads bytes, but a mask that is not text is unproven here: fail closed.
        return Err(Failure::NoneVisible(format!(
            "{mask} is not valid UTF-8, so which GPUs it selects is not proven"
        )));
    }
    let visible = VisibleDevices::parse_bytes(raw.map(OsText::as_bytes));
    let resolution = match gpu_uuid::resolve(&visible, table) {
        Ok(resolution) => resolution,
        Err(err @ ResolveError::Mig { .. }) => return Err(Failure::Mig(err.to_string())),
        Err(err) => return Err(Failure::NoneVisible(format!("{mask}: {err}"))),
    };
    // Why the list is shorter than written, when it is.
    let detail = resolution
        .duplicate()
        .map(ToString::to_string)
        .or_else(|| resolution.stop().map(ToString::to_string))
        .map(|why| format!(": {why}"))
        .unwrap_or_default();
    let gpus = resolution.visible();
    if gpus.is_empty() {
        return Err(Failure::NoneVisible(format!(
            "{mask} makes no GPU visible{detail}"
        )));
    }
    let position = usize::try_from(index).unwrap_or(usize::MAX);
    let Some(uuid) = gpus.get(position).map(|row| row.uuid) else {
        let count = if gpus.len() == 1 {
            "1 GPU is".to_owned()
        } else {
            format!("{} GPUs are", gpus.len())
        };
        return Err(Failure::OutOfRange(format!(
            "{count} visible with {mask}{detail}"
        )));
    };
    if resolution.relies_on_index_order() && !pci_bus_order(env) && !table.is_homogeneous() {
        let models: Vec<String> = table.rows().iter().map(|row| row.name.clone()).collect();
        let order = env.cuda_device_order.as_ref().map_or_else(
            || "CUDA_DEVICE_ORDER is unset".to_owned(),
            |order| format!("CUDA_DEVICE_ORDER={}", repr(&order.to_string_lossy())),
        );
        return Err(Failure::UntrustedOrder(format!(
            "with {mask}, device indices follow CUDA's enumeration order; the host GPUs are different models ({}) and {order}",
            models.join(", ")
        )));
    }
    Ok(uuid)
}
