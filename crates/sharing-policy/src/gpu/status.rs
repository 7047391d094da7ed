//! What the GPU query and `CUDA_VISIBLE_DEVICES` show where they prove no GPU: why there is no
//! host GPU table, why a device's physical GPU is not proven, why the health columns are
//! missing. The values each case quotes, never words: `message/gpu.rs` words them.

use gpu_uuid::{Duplicate, GpuUuid, ResolveError, Stop, TableError};

use super::ModelsUnknown;
use crate::device::Role;
use crate::{Code, OsText, QueryRecord};

/// Why the health columns are missing although the probe asked them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum HealthRejected {
    /// `nvidia-smi` does not know one of the fields: the line it printed ([`super::field_rejected`]).
    Field(String),
    /// The rejected query's record shows no such line.
    NotAnswered,
}

/// Why a recorded GPU query gives no host GPU table, as found: [`super::HostTableError`]'s cases with
/// the values they quote.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum ReadError {
    /// The record is another program or other arguments than the query read here.
    NotTheQuery(OtherQuery),
    /// No usable table.
    Unavailable(Unavailable),
}

/// A recorded query that is not the one read: the program and the arguments it ran.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct OtherQuery {
    pub(crate) program: String,
    pub(crate) args: Vec<String>,
}

impl OtherQuery {
    pub(super) fn of(query: &QueryRecord) -> Self {
        Self {
            program: query.program.clone(),
            args: query.args.clone(),
        }
    }
}

/// Why a GPU query that is the one read gives no usable table.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Unavailable {
    /// The snapshot records no GPU query.
    NotRecorded,
    /// `nvidia-smi` gave no complete answer.
    NoAnswer(NoAnswer),
    /// A row lacks the columns before the table's: the row, without its line end, and whether
    /// the query asked the health columns too.
    RowLacksExtras { row: String, health: bool },
    /// A row of the reference's `index,uuid` query without exactly two columns.
    NotTwoColumns(String),
    /// The rows do not parse as a table.
    Table(TableError),
}

/// Why an `nvidia-smi` query gave no complete UTF-8 answer of exit status 0.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum NoAnswer {
    /// It could not be started: the OS error.
    SpawnFailed(String),
    /// It did not finish within its deadline.
    TimedOut { timeout_ms: u64 },
    /// Its output was cut at the cap.
    CutShort,
    /// Its output is not UTF-8.
    NotUtf8,
    /// It ended otherwise than with status 0: how, and the first non-blank line it printed
    /// (standard output first: that is where `nvidia-smi` writes its failures).
    Failed {
        code: Option<i32>,
        signal: Option<i32>,
        said: Option<String>,
    },
}

/// Why a device's physical GPU could not be proven.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Failure {
    /// No host GPU table.
    NoTable(Unavailable),
    /// The GPU query record is another query.
    NotTheQuery(OtherQuery),
    /// The mask makes no GPU visible (or is not UTF-8, so what it selects is unproven).
    NoneVisible(NoneVisible),
    /// The index is at or beyond the number of visible GPUs.
    OutOfRange(OutOfRange),
    /// The mask names MIG devices.
    Mig(ResolveError),
    /// Index mapping through `nvidia-smi` is not trustworthy on this host (boxed: the largest
    /// case, on the error path only).
    UntrustedOrder(Box<UntrustedOrder>),
}

/// Why a set `CUDA_VISIBLE_DEVICES` (the mask, as recorded) makes no GPU visible, or none
/// proven.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum NoneVisible {
    /// The mask is not UTF-8.
    NotUtf8(OsText),
    /// The mask does not resolve on the table.
    Unresolved { mask: OsText, error: ResolveError },
    /// The mask resolves to no GPU, and why the list is shorter than written, when it is.
    Empty {
        mask: OsText,
        shortened: Option<Shortened>,
    },
}

/// Why CUDA sees fewer GPUs than the mask lists: a repeated GPU, or the entry where CUDA stops.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Shortened {
    Duplicate(Duplicate),
    Stop(Stop),
}

/// A device index at or beyond the number of visible GPUs: how many are, under which mask
/// (`None`: unset), and why the list is shorter than written, when it is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct OutOfRange {
    pub(crate) visible: usize,
    pub(crate) mask: Option<OsText>,
    pub(crate) shortened: Option<Shortened>,
}

/// Why a device index mapped through the table is not trusted: the mask (`None`: unset), what
/// makes the models doubtful, `CUDA_DEVICE_ORDER` (`None`: unset), and what this process's CUDA
/// runtime reported for the index, when it contradicts the table.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct UntrustedOrder {
    pub(crate) mask: Option<OsText>,
    pub(crate) models: ModelsDoubt,
    pub(crate) order: Option<OsText>,
    pub(crate) contradiction: Option<Contradiction>,
}

/// This process's CUDA runtime reports `cuda:index` as `reported`, not the table's `uuid`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Contradiction {
    pub(crate) index: u32,
    pub(crate) reported: String,
    pub(crate) uuid: GpuUuid,
}

/// What makes index order doubtful on a table: its models are unknown, and why, or they
/// differ (the names, in table order).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum ModelsDoubt {
    Unknown(ModelsUnknown),
    Different(Vec<String>),
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
}
