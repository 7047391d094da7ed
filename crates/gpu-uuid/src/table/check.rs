//! The checks every table passes, owned or borrowed: at least one row, no repeated index or
//! UUID, indices exactly `0..n` (one hash map per column, so linear in the rows).

use std::collections::HashMap;

use super::{GpuRow, GpuRowView, TableError};
use crate::uuid::GpuUuid;

/// The index, UUID and name of a row, owned or borrowed, for the checks both tables share.
pub(super) trait Row {
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

/// Whether every row is the same model ([`GpuTable::is_homogeneous`](super::GpuTable::is_homogeneous)).
pub(super) fn same_model<R: Row>(rows: &[R]) -> bool {
    rows.windows(2)
        .all(|pair| matches!(pair, [a, b] if a.name() == b.name()))
}

/// The checks common to [`GpuTable::parse`](super::GpuTable::parse) and [`GpuTable::from_rows`](super::GpuTable::from_rows): rows, no repeats,
/// indices `0..n`; then sorted by index. `line(i)` is the line number of `rows[i]`, for errors.
pub(super) fn check<R: Row>(
    mut rows: Vec<R>,
    line: impl Fn(usize) -> usize,
) -> Result<Vec<R>, TableError> {
    if rows.is_empty() {
        return Err(TableError::NoRows);
    }
    // Linear in the rows (a pairwise scan took 40 s for 150k rows). For each
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
}
