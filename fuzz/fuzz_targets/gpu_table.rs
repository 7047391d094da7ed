//! The host GPU table parser: text → `GpuTable::parse`, and `GpuUuid::parse` /
//! `MigUuid::parse` / `canonicalize_gpu_uuid` on each line and each comma-separated field.
//! Invariants: a parsed table is non-empty, and each row is found again by index and UUID.
#![no_main]

use gpu_uuid::{GpuTable, GpuUuid, MigUuid, canonicalize_gpu_uuid};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    if let Ok(table) = GpuTable::parse(text) {
        assert!(!table.is_empty());
        assert_eq!(table.len(), table.rows().len());
        for row in table.rows() {
            assert_eq!(table.by_index(row.index), Some(row));
            assert_eq!(table.by_uuid(&row.uuid), Some(row));
        }
        let _ = table.is_homogeneous();
    }
    for line in text.lines() {
        parse_token(line);
        for field in line.split(',') {
            parse_token(field.trim());
        }
    }
});

fn parse_token(token: &str) {
    if let Ok(uuid) = GpuUuid::parse(token) {
        // Documented: the canonical token equals canonicalize_gpu_uuid of every accepted spelling.
        assert_eq!(uuid.canonical_token(), canonicalize_gpu_uuid(token));
        assert_eq!(GpuUuid::parse(&uuid.to_string()), Ok(uuid));
    }
    if let Ok(mig) = MigUuid::parse(token) {
        let _ = mig.parent_gpu();
    }
    let _ = canonicalize_gpu_uuid(token);
}
