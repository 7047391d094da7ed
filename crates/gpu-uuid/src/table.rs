//! The host GPU table from `nvidia-smi --query-gpu=index,uuid,name,pci.bus_id`.

use std::fmt;

use serde::{Deserialize, Serialize};

use crate::uuid::GpuUuid;

/// The columns of the host GPU query, in order.
pub const TABLE_COLUMNS: [&str; 4] = ["index", "uuid", "name", "pci.bus_id"];

/// The `nvidia-smi` arguments whose standard output [`GpuTable::parse`] reads.
pub const TABLE_QUERY_ARGS: [&str; 2] = [
    "--query-gpu=index,uuid,name,pci.bus_id",
    "--format=csv,noheader",
];

/// One physical GPU as NVML / `nvidia-smi` lists it. NVML ignores `CUDA_VISIBLE_DEVICES`, so
/// `index` is the host (PCI-order) index, which is CUDA's index only under
/// `CUDA_DEVICE_ORDER=PCI_BUS_ID` or on a host whose GPUs are all alike.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct GpuRow {
    /// The NVML index ("can change at each boot").
    pub index: u32,
    /// The GPU's UUID.
    pub uuid: GpuUuid,
    /// The product name, e.g. `NVIDIA H100 80GB HBM3`.
    pub name: String,
    /// The PCI bus id, `domain:bus:device.function` in hex, e.g. `00000000:17:00.0`.
    pub pci_bus_id: String,
}

/// Why `nvidia-smi` output is not a usable GPU table. A table is all or nothing: never partial.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum TableError {
    /// No row at all.
    #[error(
        "the GPU table is unavailable: `nvidia-smi {}` printed no GPU rows; if nvidia-smi says \"No devices were found\", no GPU is bound to the driver — check `nvidia-smi -L`",
        TABLE_QUERY_ARGS.join(" ")
    )]
    NoRows,
    /// A row that does not parse.
    #[error(
        "the GPU table is unavailable: line {line} ({text:?}) {problem}; run `nvidia-smi {}` and check its output",
        TABLE_QUERY_ARGS.join(" ")
    )]
    Malformed {
        /// The line number in the output, from 1.
        line: usize,
        /// The line.
        text: String,
        /// What is wrong with it.
        problem: String,
    },
    /// Two rows with the same index.
    #[error(
        "the GPU table is unavailable: lines {first_line} and {line} both have index {index}; the output is not one consistent `nvidia-smi` listing, so run the query again"
    )]
    DuplicateIndex {
        /// The repeated index.
        index: u32,
        /// Where it first appears, from 1.
        first_line: usize,
        /// Where it appears again, from 1.
        line: usize,
    },
    /// Two rows with the same UUID.
    #[error(
        "the GPU table is unavailable: lines {first_line} and {line} both have UUID {uuid}; the output is not one consistent `nvidia-smi` listing, so run the query again"
    )]
    DuplicateUuid {
        /// The repeated UUID.
        uuid: GpuUuid,
        /// Where it first appears, from 1.
        first_line: usize,
        /// Where it appears again, from 1.
        line: usize,
    },
    /// Indices that are not exactly 0..n-1.
    #[error(
        "the GPU table is unavailable: {gpus} GPU{} listed but index {missing} is missing, so host indices cannot be mapped to CUDA indices; check `nvidia-smi -L` for a GPU in an error state",
        if *gpus == 1 { " is" } else { "s are" }
    )]
    IndexGap {
        /// How many rows there are.
        gpus: usize,
        /// The smallest index below `gpus` that no row has.
        missing: u32,
    },
}

/// The host's physical GPUs, ordered by index, as `nvidia-smi` / NVML enumerate them. Always
/// complete: at least one row, indices exactly `0..len`, no repeated index or UUID.
///
/// ```
/// use gpu_uuid::GpuTable;
/// let stdout = "0, GPU-8932f937-d72c-4106-c12f-20bd9faed9f6, NVIDIA H100 80GB HBM3, 00000000:17:00.0\n\
///               1, GPU-8932aaaa-1111-2222-3333-444455556666, NVIDIA H100 80GB HBM3, 00000000:65:00.0\n";
/// let table = GpuTable::parse(stdout)?;
/// assert_eq!(table.len(), 2);
/// assert_eq!(table.rows()[1].pci_bus_id, "00000000:65:00.0");
/// assert!(table.is_homogeneous());
/// # Ok::<(), gpu_uuid::TableError>(())
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(try_from = "Vec<GpuRow>", into = "Vec<GpuRow>")]
pub struct GpuTable {
    rows: Vec<GpuRow>,
}

impl GpuTable {
    /// Parses the standard output of `nvidia-smi` run with [`TABLE_QUERY_ARGS`].
    ///
    /// Fields are split on `,` and trimmed. A GPU name may itself contain a comma, so the
    /// first two fields are the index and UUID, the last is the PCI bus id, and everything in
    /// between is the name. Blank lines are skipped.
    ///
    /// # Errors
    /// [`TableError`] for output without rows, any malformed row (a header line, missing
    /// columns, a bad index, UUID or bus id), a repeated index or UUID, or indices that are
    /// not `0..n`. One bad row makes the whole table unavailable.
    pub fn parse(stdout: &str) -> Result<Self, TableError> {
        GpuTableView::parse(stdout).map(Self::from)
    }

    /// Builds a table from rows (fixtures, a recorded snapshot), with the same checks as
    /// [`Self::parse`]: a non-empty name, a PCI bus id, no repeats, indices `0..n`. Line
    /// numbers in errors count rows from 1.
    ///
    /// # Errors
    /// As [`Self::parse`].
    pub fn from_rows(rows: Vec<GpuRow>) -> Result<Self, TableError> {
        for (i, row) in rows.iter().enumerate() {
            let line = i + 1;
            let fields = check_name(&row.name).and_then(|()| check_bus_id(&row.pci_bus_id));
            if let Err(problem) = fields {
                let text = format!(
                    "{}, {}, {}, {}",
                    row.index, row.uuid, row.name, row.pci_bus_id
                );
                return Err(TableError::Malformed {
                    line,
                    text,
                    problem,
                });
            }
        }
        Self::check(rows, |i| i + 1)
    }

    /// The checks common to [`Self::parse`] and [`Self::from_rows`]; `line(i)` is the line
    /// number of `rows[i]`, for errors.
    fn check(rows: Vec<GpuRow>, line: impl Fn(usize) -> usize) -> Result<Self, TableError> {
        check(rows, line).map(|rows| Self { rows })
    }

    /// The GPUs, by index: `rows()[i].index == i`.
    pub fn rows(&self) -> &[GpuRow] {
        &self.rows
    }

    /// How many GPUs.
    pub fn len(&self) -> usize {
        self.rows.len()
    }

    /// Always false: a table has at least one row.
    pub fn is_empty(&self) -> bool {
        self.rows.is_empty()
    }

    /// The GPU with this host index.
    pub fn by_index(&self, index: u32) -> Option<&GpuRow> {
        self.rows.get(usize::try_from(index).ok()?)
    }

    /// The GPU with this UUID.
    pub fn by_uuid(&self, uuid: &GpuUuid) -> Option<&GpuRow> {
        self.rows.iter().find(|row| row.uuid == *uuid)
    }

    /// Whether every GPU has the same name. On such a host CUDA's default fastest-first order
    /// cannot reorder GPUs by speed, so indices are far more likely to agree with `nvidia-smi`.
    pub fn is_homogeneous(&self) -> bool {
        same_model(&self.rows)
    }
}

/// One row of a [`GpuTableView`]: a [`GpuRow`] whose name and bus id borrow the `nvidia-smi`
/// output, so reading a table allocates no string per row.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct GpuRowView<'a> {
    /// The NVML index.
    pub index: u32,
    /// The GPU's UUID.
    pub uuid: GpuUuid,
    /// The product name, trimmed.
    pub name: &'a str,
    /// The PCI bus id, trimmed.
    pub pci_bus_id: &'a str,
}

/// A [`GpuTable`] borrowed from the `nvidia-smi` output it was parsed from: the same rows,
/// checks and errors, for a caller (the validator) that only reads the table once.
///
/// ```
/// use gpu_uuid::{GpuTable, GpuTableView};
/// let stdout = "0, GPU-8932f937-d72c-4106-c12f-20bd9faed9f6, NVIDIA H100 80GB HBM3, 00000000:17:00.0\n";
/// let view = GpuTableView::parse(stdout)?;
/// assert_eq!(view.rows()[0].name, "NVIDIA H100 80GB HBM3");
/// assert_eq!(GpuTable::from(view), GpuTable::parse(stdout)?);
/// # Ok::<(), gpu_uuid::TableError>(())
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct GpuTableView<'a> {
    rows: Vec<GpuRowView<'a>>,
}

impl<'a> GpuTableView<'a> {
    /// Parses `nvidia-smi` output exactly as [`GpuTable::parse`] does.
    ///
    /// # Errors
    /// As [`GpuTable::parse`].
    pub fn parse(stdout: &'a str) -> Result<Self, TableError> {
        let mut rows = Vec::new();
        for (line, text) in row_lines(stdout) {
            let row = parse_row(text).map_err(|problem| TableError::Malformed {
                line,
                text: text.to_owned(),
                problem,
            })?;
            rows.push(row);
        }
        // Line numbers are needed only for an error: found again then, not kept per row.
        let rows = check(rows, |i| {
            row_lines(stdout).nth(i).map_or(0, |(line, _)| line)
        })?;
        Ok(Self { rows })
    }

    /// The GPUs, by index: `rows()[i].index == i`.
    pub fn rows(&self) -> &[GpuRowView<'a>] {
        &self.rows
    }

    /// How many GPUs.
    pub fn len(&self) -> usize {
        self.rows.len()
    }

    /// Always false: a table has at least one row.
    pub fn is_empty(&self) -> bool {
        self.rows.is_empty()
    }

    /// As [`GpuTable::is_homogeneous`].
    pub fn is_homogeneous(&self) -> bool {
        same_model(&self.rows)
    }
}

impl From<GpuTableView<'_>> for GpuTable {
    fn from(view: GpuTableView<'_>) -> Self {
        let rows = view.rows.iter().map(|row| GpuRow {
            index: row.index,
            uuid: row.uuid,
            name: row.name.to_owned(),
            pci_bus_id: row.pci_bus_id.to_owned(),
        });
        Self {
            rows: rows.collect(),
        }
    }
}

impl TryFrom<Vec<GpuRow>> for GpuTable {
    type Error = TableError;

    fn try_from(rows: Vec<GpuRow>) -> Result<Self, Self::Error> {
        Self::from_rows(rows)
    }
}

impl From<GpuTable> for Vec<GpuRow> {
    fn from(table: GpuTable) -> Self {
        table.rows
    }
}

impl fmt::Display for GpuRow {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "host GPU {} ({}, {}, {})",
            self.index, self.uuid, self.name, self.pci_bus_id
        )
    }
}

mod check;
mod row;

use check::{check, same_model};
use row::{check_bus_id, check_name, parse_row, row_lines};
