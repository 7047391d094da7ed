//! Which physical GPU a `cuda:N` device is, from `CUDA_VISIBLE_DEVICES` and the recorded host
//! GPU table, without initialising CUDA (deliberate changes 1–3).

use std::borrow::Cow;

use gpu_uuid::{GpuTable, GpuTableView, GpuUuid, Placement, ResolveError, TABLE_QUERY_ARGS};

use crate::{EnvFacts, GPU_QUERY_PROGRAM, HostFacts, QueryOutcome, QueryRecord};

mod health;
mod reference;
mod status;

pub(crate) use health::GpuHealth;
pub use health::{BASE_GPU_QUERY_ARGS, GPU_HEALTH_COLUMNS, field_rejected};
pub(crate) use reference::ModelsUnknown;
pub use reference::{
    MODELS_QUERY_ARGS, REFERENCE_GPU_QUERY_ARGS, needs_gpu_models, reference_gpu_table,
};
pub(crate) use status::{
    Contradiction, Failure, HealthRejected, ModelsDoubt, NoAnswer, NoneVisible, OtherQuery,
    OutOfRange, ReadError, Shortened, Unavailable, UntrustedOrder,
};

/// The `nvidia-smi` arguments of the host GPU query: the compute mode and the driver version,
/// then the GPU health columns ([`GPU_HEALTH_COLUMNS`]), then [`TABLE_QUERY_ARGS`]'s four
/// columns, in one process. None of the first seven columns holds a comma, so the rest of each
/// row is read exactly as a v1 row. Snapshots recorded with [`BASE_GPU_QUERY_ARGS`] (v2, v3,
/// or an older driver's fallback) are read by those arguments.
pub const GPU_QUERY_ARGS: [&str; 2] = [
    "--query-gpu=compute_mode,driver_version,persistence_mode,gpu_recovery_action,retired_pages.pending,remapped_rows.pending,remapped_rows.failure,index,uuid,name,pci.bus_id",
    "--format=csv,noheader",
];

/// The v2 columns of one GPU row.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct GpuExtras<'a> {
    /// The row's UUID, when it parses.
    pub(crate) uuid: Option<GpuUuid>,
    /// `compute_mode`, as printed (`Default`, `Exclusive_Process`, …).
    pub(crate) compute_mode: &'a str,
    /// `driver_version`, as printed.
    pub(crate) driver_version: &'a str,
    /// The health columns, when the query asked them ([`GPU_QUERY_ARGS`]).
    pub(crate) health: Option<GpuHealth<'a>>,
}

/// A recorded GPU query's table rows (the four [`TABLE_QUERY_ARGS`] columns) and, for the v2
/// query ([`GPU_QUERY_ARGS`]), each row's extra columns.
pub(crate) struct TableText<'a> {
    rows: Cow<'a, str>,
    pub(crate) extras: Vec<GpuExtras<'a>>,
    /// Why the GPUs' models are unknown, when they are (the reference's `index,uuid` query
    /// names none, and no models query answered for it): each row then has a model of its own.
    pub(crate) unknown_models: Option<ModelsUnknown>,
    /// Why the GPUs' health columns are missing, when the probe asked them and `nvidia-smi`
    /// rejected the query ([`HostFacts::gpu_query_rejected`]).
    pub(crate) health_rejected: Option<HealthRejected>,
}

impl TableText<'_> {
    /// The extra columns of the row of `gpu` (none for a v1 query).
    pub(crate) fn extras_of(&self, gpu: GpuUuid) -> Option<&GpuExtras<'_>> {
        self.extras.iter().find(|extras| extras.uuid == Some(gpu))
    }
}

/// Splits the columns before the table's off each row of `stdout`: the compute mode and the
/// driver version, then, when `health` (the query is [`GPU_QUERY_ARGS`]), the health columns.
fn split_extras(stdout: &str, health: bool) -> Result<TableText<'_>, ReadError> {
    let mut rows = String::with_capacity(stdout.len());
    let mut extras = Vec::new();
    let leading = if health { 7 } else { 2 };
    for line in stdout.split_inclusive('\n') {
        if line.trim().is_empty() {
            rows.push_str(line);
            continue;
        }
        let mut columns = line.splitn(leading + 1, ',');
        let mut front = [""; 7];
        for slot in front.iter_mut().take(leading) {
            *slot = columns.next().ok_or_else(|| lacks_extras(line, health))?;
        }
        let row = columns
            .next()
            .ok_or_else(|| lacks_extras(line, health))?
            .trim_start();
        let uuid = row
            .split(',')
            .nth(1)
            .and_then(|field| GpuUuid::parse(field.trim()).ok());
        let [mode, driver, p, a, r, rp, rf] = front;
        extras.push(GpuExtras {
            uuid,
            compute_mode: mode.trim(),
            driver_version: driver.trim(),
            health: health.then(|| GpuHealth::from_columns([p, a, r, rp, rf])),
        });
        rows.push_str(row);
    }
    Ok(TableText {
        rows: Cow::Owned(rows),
        extras,
        unknown_models: None,
        health_rejected: None,
    })
}

fn lacks_extras(line: &str, health: bool) -> ReadError {
    ReadError::Unavailable(Unavailable::RowLacksExtras {
        row: line.trim_end().to_owned(),
        health,
    })
}

/// Why a recorded GPU query gives no host GPU table ([`host_gpu_table`]). Its message says what
/// was found.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum HostTableError {
    /// The record is not the table query this validator interprets (another program, or other
    /// arguments than [`TABLE_QUERY_ARGS`]): the snapshot is inconsistent.
    #[error("{0}")]
    NotTheQuery(String),
    /// No usable table: the query was not recorded, could not be started, timed out, failed,
    /// was cut short, printed text that is not UTF-8, or printed a table that does not parse.
    #[error("{0}")]
    Unavailable(String),
}

fn first_line(text: &str) -> &str {
    text.lines()
        .map(str::trim)
        .find(|line| !line.is_empty())
        .unwrap_or("")
}

/// The host GPU table from a recorded `nvidia-smi` query, the way the validator reads it.
///
/// Only a complete, UTF-8 answer of exit status 0 from `nvidia-smi` run with
/// [`TABLE_QUERY_ARGS`] counts; everything else is an error whose message says what was found
/// (an `nvidia-smi` that failed is quoted by the first non-blank line it printed, standard
/// output first: that is where `nvidia-smi` writes its failures). [`validate`](crate::validate)
/// resolves devices through this function; a caller that runs the query itself (the command
/// line's `visibility`) uses it to read the table exactly as the validator would.
///
/// # Errors
/// [`HostTableError::NotTheQuery`] when the record is another program or other arguments;
/// [`HostTableError::Unavailable`] when the query could not be started, timed out, exited
/// otherwise than with status 0, was cut short, is not UTF-8 or does not parse.
///
/// # Examples
///
/// ```
/// use std::collections::BTreeMap;
/// use sharing_policy::{host_gpu_table, CapturedText, HostTableError, QueryOutcome, QueryRecord};
///
/// let record = |code: i32, stdout: &str| QueryRecord {
///     program: "nvidia-smi".into(),
///     args: gpu_uuid::TABLE_QUERY_ARGS.map(String::from).to_vec(),
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
/// let row = "0, GPU-8932f937-d72c-4106-c12f-20bd9faed9f6, NVIDIA H100 80GB HBM3, 00000000:18:00.0\n";
/// let table = host_gpu_table(&record(0, row))?;
/// assert_eq!(table.rows().len(), 1);
///
/// let failed = record(9, "NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver.\n");
/// assert_eq!(
///     host_gpu_table(&failed).unwrap_err().to_string(),
///     "nvidia-smi exited with status 9: NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver."
/// );
///
/// let mut other = record(0, row);
/// other.args = vec!["-L".into()];
/// assert!(matches!(host_gpu_table(&other), Err(HostTableError::NotTheQuery(_))));
/// # Ok::<(), HostTableError>(())
/// ```
pub fn host_gpu_table(query: &QueryRecord) -> Result<GpuTable, HostTableError> {
    let text = table_text(query, None)?;
    Ok(GpuTable::from(parse_rows(&text.rows)?))
}

/// The table of a recorded query's rows.
fn parse_rows(rows: &str) -> Result<GpuTableView<'_>, ReadError> {
    GpuTableView::parse(rows).map_err(|err| ReadError::Unavailable(Unavailable::Table(err)))
}

/// The table rows of a recorded query, borrowed when it is v1's: the validator reads the table
/// once, so it need not copy each row's name and bus id. `models` is the models query that
/// completes the reference's two-column table ([`mod@reference`]).
fn table_text<'a>(
    query: &'a QueryRecord,
    models: Option<&QueryRecord>,
) -> Result<TableText<'a>, ReadError> {
    let health = query.args == GPU_QUERY_ARGS;
    let v2 = health || query.args == BASE_GPU_QUERY_ARGS;
    let reference = query.args == REFERENCE_GPU_QUERY_ARGS;
    if query.program.rsplit('/').next() != Some(GPU_QUERY_PROGRAM)
        || !(v2 || reference || query.args == TABLE_QUERY_ARGS)
    {
        return Err(ReadError::NotTheQuery(OtherQuery::of(query)));
    }
    let stdout = answer(query).map_err(|why| ReadError::Unavailable(Unavailable::NoAnswer(why)))?;
    if v2 {
        split_extras(stdout, health)
    } else if reference {
        reference::rows(stdout, models)
    } else {
        Ok(TableText {
            rows: Cow::Borrowed(stdout),
            extras: Vec::new(),
            unknown_models: None,
            health_rejected: None,
        })
    }
}

/// What an `nvidia-smi` query printed, when it is a complete UTF-8 answer of exit status 0;
/// else why not.
fn answer(query: &QueryRecord) -> Result<&str, NoAnswer> {
    match &query.outcome {
        QueryOutcome::SpawnFailed { error } => Err(NoAnswer::SpawnFailed(error.clone())),
        QueryOutcome::TimedOut { .. } => Err(NoAnswer::TimedOut {
            timeout_ms: query.timeout_ms,
        }),
        QueryOutcome::Exited {
            code: Some(0),
            stdout,
            ..
        } => {
            if stdout.truncated {
                Err(NoAnswer::CutShort)
            } else if stdout.non_utf8 {
                Err(NoAnswer::NotUtf8)
            } else {
                Ok(&stdout.text)
            }
        }
        QueryOutcome::Exited {
            code,
            signal,
            stdout,
            stderr,
        } => Err(NoAnswer::Failed {
            code: *code,
            signal: *signal,
            said: [first_line(&stdout.text), first_line(&stderr.text)]
                .into_iter()
                .find(|line| !line.is_empty())
                .map(str::to_owned),
        }),
    }
}

/// The recorded host GPU table text of a snapshot ([`host_gpu_table`], completed by its models
/// query when it has one; a snapshot with no GPU query has none). [`parse_table`] reads it.
pub(crate) fn host_text(facts: &HostFacts) -> Result<TableText<'_>, ReadError> {
    facts.gpu_query.as_ref().map_or_else(
        || Err(ReadError::Unavailable(Unavailable::NotRecorded)),
        |query| {
            let mut text = table_text(query, facts.gpu_models_query.as_ref())?;
            if query.args == BASE_GPU_QUERY_ARGS {
                text.health_rejected = facts
                    .gpu_query_rejected
                    .as_ref()
                    .filter(|rejected| rejected.args == GPU_QUERY_ARGS)
                    .map(|rejected| {
                        field_rejected(rejected)
                            .map_or(HealthRejected::NotAnswered, HealthRejected::Field)
                    });
            }
            Ok(text)
        },
    )
}

/// The host GPU table of [`host_text`]'s rows.
pub(crate) fn parse_table<'a>(
    text: &'a Result<TableText<'a>, ReadError>,
) -> Result<GpuTableView<'a>, ReadError> {
    match text {
        Ok(text) => parse_rows(&text.rows),
        Err(err) => Err(err.clone()),
    }
}

/// Whether CUDA numbers this host's GPUs in the table's (`nvidia-smi`'s) order, so that a
/// device index (`cuda:N`, or an index in `CUDA_VISIBLE_DEVICES`) can be mapped through the
/// table: true when `CUDA_DEVICE_ORDER` is exactly `PCI_BUS_ID`, or when every GPU in the table
/// is the same model (CUDA's default fastest-first order cannot then reorder them in a way
/// that matters). Deliberate change 3; the command line's `visibility` applies the same rule.
///
/// # Examples
///
/// ```
/// use gpu_uuid::GpuTable;
/// use sharing_policy::{index_order_trusted, EnvFacts, OsText};
///
/// let mixed = GpuTable::parse(
///     "0, GPU-8932f937-d72c-4106-c12f-20bd9faed9f6, NVIDIA GeForce GTX 1660 SUPER, 00000000:01:00.0\n\
///      1, GPU-5a88edbe-90c4-2449-8c43-70c57591cca1, NVIDIA GeForce RTX 3090, 00000000:02:00.0\n",
/// )?;
/// let mut env = EnvFacts::default(); // CUDA_DEVICE_ORDER unset: CUDA puts the fastest first
/// assert!(!index_order_trusted(&env, &mixed));
/// env.cuda_device_order = Some(OsText::from("PCI_BUS_ID"));
/// assert!(index_order_trusted(&env, &mixed));
/// env.cuda_device_order = Some(OsText::from("pci_bus_id")); // CUDA compares exactly
/// assert!(!index_order_trusted(&env, &mixed));
///
/// let one_model = GpuTable::parse(
///     "0, GPU-8932f937-d72c-4106-c12f-20bd9faed9f6, NVIDIA H100 80GB HBM3, 00000000:18:00.0\n",
/// )?;
/// assert!(index_order_trusted(&EnvFacts::default(), &one_model));
/// # Ok::<(), gpu_uuid::TableError>(())
/// ```
pub fn index_order_trusted(env: &EnvFacts, table: &GpuTable) -> bool {
    pci_bus_order(env) || table.is_homogeneous()
}

/// What makes index order doubtful on a table of these models: that they are unknown, and why,
/// or that they differ.
fn models_doubt<'a>(
    unknown: Option<&ModelsUnknown>,
    names: impl Iterator<Item = &'a str>,
) -> ModelsDoubt {
    unknown.map_or_else(
        || ModelsDoubt::Different(names.map(str::to_owned).collect()),
        |why| ModelsDoubt::Unknown(why.clone()),
    )
}

/// `CUDA_DEVICE_ORDER` is exactly `PCI_BUS_ID` ([`index_order_trusted`]).
fn pci_bus_order(env: &EnvFacts) -> bool {
    env.cuda_device_order
        .as_ref()
        .is_some_and(|order| order.as_bytes() == b"PCI_BUS_ID")
}

/// The GPUs a CUDA process would see, once proven ([`visible`]): the part of a device's
/// resolution that does not depend on its index, so two devices of one host share it.
pub(crate) struct Visible<'a> {
    env: &'a EnvFacts,
    table: &'a GpuTableView<'a>,
    /// `None` when `CUDA_VISIBLE_DEVICES` is unset: every GPU in table order, nothing stopped,
    /// index order relied on with more than one GPU — what [`gpu_uuid::place`] returns then,
    /// without listing the indices.
    placement: Option<Placement<'a>>,
    /// What this process's own CUDA runtime reported per device index
    /// ([`HostFacts::cuda_device_uuids`]).
    witness: Option<&'a std::collections::BTreeMap<u32, String>>,
    /// Why the GPUs' models are unknown, when they are ([`TableText::unknown_models`]).
    unknown_models: Option<&'a ModelsUnknown>,
}

/// Why the list is shorter than written, when it is.
fn shortened(placement: &Placement<'_>) -> Option<Shortened> {
    placement
        .duplicate()
        .map(Shortened::Duplicate)
        .or_else(|| placement.stop().map(Shortened::Stop))
}

/// The visible GPUs, or why none is proven. With [`Visible::uuid`], the physical GPU of device
/// `cuda:index`, proven from the mask and the host table.
///
/// Visibility follows CUDA's rules (`gpu_uuid`): unset = every GPU, empty = none, the first
/// invalid entry stops the list, no "same number" fallback. Index-based mapping (mask unset or
/// made of indices) is trusted only under `CUDA_DEVICE_ORDER=PCI_BUS_ID` or on a host whose
/// GPUs are all the same model. MIG masks are not mapped.
/// An index is also proven when this process's own CUDA runtime reports, for it, the UUID of
/// the row it maps to ([`HostFacts::cuda_device_uuids`]).
pub(crate) fn visible<'a>(
    facts: &'a HostFacts,
    text: &'a Result<TableText<'a>, ReadError>,
    table: &'a Result<GpuTableView<'a>, ReadError>,
) -> Result<Visible<'a>, Failure> {
    let env = &facts.env;
    let witness = facts.cuda_device_uuids.as_ref();
    let unknown_models = text
        .as_ref()
        .ok()
        .and_then(|text| text.unknown_models.as_ref());
    let table = match table {
        Ok(table) => table,
        Err(ReadError::Unavailable(why)) => return Err(Failure::NoTable(why.clone())),
        Err(ReadError::NotTheQuery(query)) => return Err(Failure::NotTheQuery(query.clone())),
    };
    let Some(raw) = env.cuda_visible_devices.as_ref() else {
        return Ok(Visible {
            env,
            table,
            placement: None,
            witness,
            unknown_models,
        });
    };
    if raw.as_str().is_none() {
        // CUDA reads bytes, but a mask that is not text is unproven here: fail closed.
        return Err(Failure::NoneVisible(NoneVisible::NotUtf8(raw.clone())));
    }
    let placement = match gpu_uuid::place(Some(raw.as_bytes()), table) {
        Ok(placement) => placement,
        Err(err @ ResolveError::Mig { .. }) => return Err(Failure::Mig(err)),
        Err(error) => {
            let mask = raw.clone();
            return Err(Failure::NoneVisible(NoneVisible::Unresolved {
                mask,
                error,
            }));
        }
    };
    if placement.is_empty() {
        return Err(Failure::NoneVisible(NoneVisible::Empty {
            mask: raw.clone(),
            shortened: shortened(&placement),
        }));
    }
    Ok(Visible {
        env,
        table,
        placement: Some(placement),
        witness,
        unknown_models,
    })
}

impl Visible<'_> {
    /// The physical GPU of device `cuda:index`, or why it is not proven.
    pub(crate) fn uuid(&self, index: u32) -> Result<GpuUuid, Failure> {
        let (env, table, placement) = (self.env, self.table, self.placement.as_ref());
        let rows = table.rows();
        // Unset: CUDA device `i` is host GPU `i`.
        let (gpus, host) = placement.map_or((rows.len(), Some(index)), |placement| {
            let visible = placement.host_indices();
            let position = usize::try_from(index).unwrap_or(usize::MAX);
            (visible.len(), visible.get(position).copied())
        });
        let row = host.and_then(|host| rows.get(usize::try_from(host).ok()?));
        let Some(uuid) = row.map(|row| row.uuid) else {
            return Err(Failure::OutOfRange(OutOfRange {
                visible: gpus,
                mask: env.cuda_visible_devices.clone(),
                shortened: placement.and_then(shortened),
            }));
        };
        let relies_on_index_order =
            placement.map_or(table.len() > 1, Placement::relies_on_index_order);
        if !relies_on_index_order || pci_bus_order(env) || table.is_homogeneous() {
            return Ok(uuid);
        }
        let reported = self.witness.and_then(|witness| witness.get(&index));
        let witnessed = reported.and_then(|reported| GpuUuid::parse(reported).ok());
        if witnessed == Some(uuid) {
            return Ok(uuid);
        }
        Err(Failure::UntrustedOrder(Box::new(UntrustedOrder {
            mask: env.cuda_visible_devices.clone(),
            models: models_doubt(self.unknown_models, rows.iter().map(|row| row.name)),
            order: env.cuda_device_order.clone(),
            contradiction: reported.map(|reported| Contradiction {
                index,
                reported: reported.clone(),
                uuid,
            }),
        })))
    }
}
