//! The host GPU table from `nvidia-smi --query-gpu=index,uuid,name,pci.bus_id`.

use std::collections::HashMap;
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

/// The index, UUID and name of a row, owned or borrowed, for the checks both tables share.
trait Row {
    fn index(&self) -> u32;
    fn uuid(&self) -> GpuUuid;
    fn name(&self) -> &str;
}

impl Row for GpuRow {
    fn index(&self) -> u32 {
        self.index
    }
    fn uuid(&self) -> GpuUuid {
        self.uuid
    }
    fn name(&self) -> &str {
        &self.name
    }
}

impl Row for GpuRowView<'_> {
    fn index(&self) -> u32 {
        self.index
    }
    fn uuid(&self) -> GpuUuid {
        self.uuid
    }
    fn name(&self) -> &str {
        self.name
    }
}

/// Whether every row is the same model ([`GpuTable::is_homogeneous`]).
fn same_model<R: Row>(rows: &[R]) -> bool {
    rows.windows(2)
        .all(|pair| matches!(pair, [a, b] if a.name() == b.name()))
}

/// The checks common to [`GpuTable::parse`] and [`GpuTable::from_rows`]: rows, no repeats,
/// indices `0..n`; then sorted by index. `line(i)` is the line number of `rows[i]`, for errors.
fn check<R: Row>(mut rows: Vec<R>, line: impl Fn(usize) -> usize) -> Result<Vec<R>, TableError> {
    if rows.is_empty() {
        return Err(TableError::NoRows);
    }
    // Linear in the rows (issue 16 part 3: a pairwise scan took 40 s for 150k rows). For each
    // row, the first earlier row with its index or its UUID, whichever comes first (the index
    // on a tie), is the one reported, as the pairwise scan did.
    let mut indices = HashMap::with_capacity(rows.len());
    let mut uuids = HashMap::with_capacity(rows.len());
    for (i, row) in rows.iter().enumerate() {
        let same_index = indices.get(&row.index()).copied();
        let same_uuid = uuids.get(&row.uuid()).copied();
        match (same_index, same_uuid) {
            (Some(index_at), Some(first)) if first < index_at => {
                return Err(TableError::DuplicateUuid {
                    uuid: row.uuid(),
                    first_line: line(first),
                    line: line(i),
                });
            }
            (Some(first), _) => {
                return Err(TableError::DuplicateIndex {
                    index: row.index(),
                    first_line: line(first),
                    line: line(i),
                });
            }
            (None, Some(first)) => {
                return Err(TableError::DuplicateUuid {
                    uuid: row.uuid(),
                    first_line: line(first),
                    line: line(i),
                });
            }
            (None, None) => {}
        }
        indices.insert(row.index(), i);
        uuids.insert(row.uuid(), i);
    }
    // No repeats: the indices are `0..n` exactly when every one below n is present.
    let gpus = rows.len();
    let mut present = vec![false; gpus];
    for row in &rows {
        if let Some(seen) = usize::try_from(row.index())
            .ok()
            .and_then(|index| present.get_mut(index))
        {
            *seen = true;
        }
    }
    if let Some(missing) = present.iter().position(|seen| !seen) {
        let missing = u32::try_from(missing).unwrap_or(u32::MAX);
        return Err(TableError::IndexGap { gpus, missing });
    }
    rows.sort_by_key(Row::index);
    Ok(rows)
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

/// The non-blank lines of `stdout` with their line numbers (from 1): the lines that must be rows.
fn row_lines(stdout: &str) -> impl Iterator<Item = (usize, &str)> {
    stdout
        .lines()
        .enumerate()
        .filter(|(_, text)| !trim(text).is_empty())
        .map(|(number, text)| (number + 1, text))
}

fn parse_row(text: &str) -> Result<GpuRowView<'_>, String> {
    // One pass: index and UUID up to the first two commas; the name up to the last comma
    // (it may hold commas itself); the PCI bus id after it.
    let mut parts = text.splitn(3, ',');
    let first = trim(parts.next().unwrap_or_default());
    if first.eq_ignore_ascii_case("index") {
        return Err(
            "is a header; pass `--format=csv,noheader` so only GPU rows are printed".to_owned(),
        );
    }
    // At least TABLE_COLUMNS.len() (4) fields: a comma after the second one.
    let (Some(uuid), Some((name, pci_bus_id))) = (
        parts.next(),
        parts.next().and_then(|rest| rest.rsplit_once(',')),
    ) else {
        let count = text.split(',').count();
        let fields = if count == 1 {
            "1 field".to_owned()
        } else {
            format!("{count} fields")
        };
        return Err(format!(
            "is not a GPU row: it has {fields} where the query prints {} ({})",
            TABLE_COLUMNS.len(),
            TABLE_COLUMNS.join(", ")
        ));
    };
    let (uuid, name, pci_bus_id) = (trim(uuid), trim(name), trim(pci_bus_id));
    let index = parse_index(first)?;
    let uuid = if uuid.starts_with("GPU-") {
        GpuUuid::parse(uuid).map_err(|e| format!("has a bad uuid field: {e}"))?
    } else {
        return Err(format!(
            "has {uuid:?} in the uuid field, which is not a `GPU-` UUID"
        ));
    };
    check_bus_id(pci_bus_id)?;
    check_name(name)?;
    Ok(GpuRowView {
        index,
        uuid,
        name,
        pci_bus_id,
    })
}

/// [`str::trim`], answered from the ASCII bytes at the ends when it can: `nvidia-smi` fields
/// are ASCII, and the Unicode search costs more than the rest of a row.
fn trim(field: &str) -> &str {
    let ascii = field.trim_ascii();
    // `trim_ascii` keeps U+000B, which `trim` removes; a non-ASCII end may be whitespace too.
    let settled = |b: &u8| b.is_ascii() && *b != 0x0b;
    if ascii.as_bytes().first().is_none_or(settled) && ascii.as_bytes().last().is_none_or(settled) {
        ascii
    } else {
        field.trim()
    }
}

fn check_name(name: &str) -> Result<(), String> {
    if trim(name).is_empty() {
        Err("has an empty name field".to_owned())
    } else {
        Ok(())
    }
}

fn parse_index(field: &str) -> Result<u32, String> {
    if field.is_empty() || !field.bytes().all(|b| b.is_ascii_digit()) {
        return Err(format!(
            "has {field:?} in the index field, which is not a number"
        ));
    }
    field
        .parse()
        .map_err(|_| format!("has index {field}, which is too large"))
}

/// `domain:bus:device.function`, hex: 4 or 8 domain digits, then 2, 2 and 1.
fn check_bus_id(field: &str) -> Result<(), String> {
    // Hex digits hold no `:` or `.`, so the field is the domain and then exactly
    // `:BB:DD.F`: checked byte by byte, without splitting.
    let bytes = field.as_bytes();
    let ok = match bytes
        .len()
        .checked_sub(8)
        .and_then(|at| bytes.split_at_checked(at))
    {
        Some((domain, [b':', bus1, bus2, b':', dev1, dev2, b'.', function])) => {
            matches!(domain.len(), 4 | 8)
                && domain.iter().all(u8::is_ascii_hexdigit)
                && [bus1, bus2, dev1, dev2, function]
                    .into_iter()
                    .all(u8::is_ascii_hexdigit)
        }
        _ => false,
    };
    if ok {
        Ok(())
    } else {
        Err(format!(
            "has {field:?} in the pci.bus_id field, which is not a PCI bus id like 00000000:17:00.0"
        ))
    }
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;

    /// The pairwise check that the linear one replaced, kept as its reference.
    fn pairwise(rows: &[GpuRow]) -> Result<(), TableError> {
        for (i, row) in rows.iter().enumerate() {
            for (first, earlier) in rows.iter().take(i).enumerate() {
                if earlier.index == row.index {
                    let (index, first_line, line) = (row.index, first + 1, i + 1);
                    return Err(TableError::DuplicateIndex {
                        index,
                        first_line,
                        line,
                    });
                }
                if earlier.uuid == row.uuid {
                    let (uuid, first_line, line) = (row.uuid, first + 1, i + 1);
                    return Err(TableError::DuplicateUuid {
                        uuid,
                        first_line,
                        line,
                    });
                }
            }
        }
        let gpus = rows.len();
        match (0..)
            .take(gpus)
            .find(|i| !rows.iter().any(|row| row.index == *i))
        {
            Some(missing) => Err(TableError::IndexGap { gpus, missing }),
            None => Ok(()),
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(256))]

        /// Small indices and UUIDs, so repeats and gaps are common.
        #[test]
        fn the_linear_check_agrees_with_the_pairwise_one(
            cells in proptest::collection::vec((0_u32..6, 0_u8..6), 1..8),
        ) {
            let rows: Vec<GpuRow> = cells
                .iter()
                .map(|(index, uuid)| GpuRow {
                    index: *index,
                    uuid: GpuUuid::from_bytes([*uuid; 16]),
                    name: "NVIDIA H100".to_owned(),
                    pci_bus_id: "00000000:18:00.0".to_owned(),
                })
                .collect();
            let linear = check(rows.clone(), |i| i + 1).map(|_| ());
            prop_assert_eq!(linear, pairwise(&rows));
        }
    }

    /// The split-based check that `check_bus_id` replaced, kept as its reference.
    fn reference(field: &str) -> bool {
        let hex = |s: &str, lens: &[usize]| {
            lens.contains(&s.len()) && s.bytes().all(|b| b.is_ascii_hexdigit())
        };
        let mut parts = field.split(':');
        match (parts.next(), parts.next(), parts.next(), parts.next()) {
            (Some(domain), Some(bus), Some(rest), None) => match rest.split_once('.') {
                Some((device, function)) => {
                    hex(domain, &[4, 8])
                        && hex(bus, &[2])
                        && hex(device, &[2])
                        && hex(function, &[1])
                }
                None => false,
            },
            _ => false,
        }
    }

    #[test]
    fn trim_agrees_with_str_trim() {
        let ends = [
            "", " ", "\t", "\n", "\r", "\x0b", "\x0c", "\u{a0}", "\u{3000}", "\u{85}", "é", "x",
        ];
        for head in ends {
            for tail in ends {
                for middle in ["", "a", " a b ", "\x0b"] {
                    let field = format!("{head}{middle}{tail}");
                    assert_eq!(trim(&field), field.trim(), "{field:?}");
                }
            }
        }
    }

    #[test]
    fn bus_id_check_agrees_with_splitting() {
        const ALPHABET: [char; 6] = ['0', 'F', 'g', ':', '.', 'é'];
        let mut fields = vec![String::new()];
        // Every string of up to 6 characters over the alphabet...
        let mut last = vec![String::new()];
        for _ in 0..6 {
            last = last
                .iter()
                .flat_map(|s| ALPHABET.iter().map(move |c| format!("{s}{c}")))
                .collect();
            fields.extend(last.iter().cloned());
        }
        // ...and every one-character change, insertion and deletion of valid ids.
        for valid in ["0000:17:00.0", "00000000:2A:0f.7"] {
            let chars: Vec<char> = valid.chars().collect();
            for at in 0..=chars.len() {
                let (head, tail) = chars.split_at(at);
                let (head, tail): (String, String) = (head.iter().collect(), tail.iter().collect());
                fields.push(format!(
                    "{head}{}",
                    tail.chars().skip(1).collect::<String>()
                ));
                for c in ALPHABET {
                    fields.push(format!("{head}{c}{tail}"));
                    fields.push(format!(
                        "{head}{c}{}",
                        tail.chars().skip(1).collect::<String>()
                    ));
                }
            }
        }
        let mut accepted = 0;
        for field in &fields {
            assert_eq!(check_bus_id(field).is_ok(), reference(field), "{field:?}");
            accepted += usize::from(reference(field));
        }
        assert!(accepted > 10, "only {accepted} valid ids were tried");
    }
}
