//! `CUDA_VISIBLE_DEVICES` parsing and resolution: raw bytes → `VisibleDevices::parse_bytes`,
//! resolved against a fixed four-GPU table (two UUIDs share the prefix `GPU-e`, so ambiguous
//! prefixes are reachable), and `mps_visibility_entries` with and without that table.
//! Invariants: the resolved list is duplicate-free and a subset of the table.
#![no_main]

use std::collections::HashSet;
use std::sync::OnceLock;

use gpu_uuid::{GpuTable, VisibleDevices, mps_visibility_entries, resolve};
use libfuzzer_sys::fuzz_target;

const TABLE: &str = "\
0, GPU-8932f937-d72c-4106-c12f-20bd9faed9f6, NVIDIA H100 80GB HBM3, 00000000:18:00.0
1, GPU-5a88edbe-90c4-2449-8c43-70c57591cca1, NVIDIA H100 80GB HBM3, 00000000:2A:00.0
2, GPU-e0aa11eb-627f-af3f-1a0d-4e1fd92fd7b0, NVIDIA GeForce GTX 1660 SUPER, 00000000:3A:00.0
3, GPU-e9e8d35e-a134-0fdd-0e01-23811fdbd293, NVIDIA GeForce RTX 3090, 00000000:5D:00.0
";

fn table() -> &'static GpuTable {
    static TABLE_CELL: OnceLock<GpuTable> = OnceLock::new();
    TABLE_CELL.get_or_init(|| GpuTable::parse(TABLE).expect("the fixed table parses"))
}

fuzz_target!(|data: &[u8]| {
    let table = table();
    let devices = VisibleDevices::parse_bytes(Some(data));
    assert_eq!(devices.raw(), Some(data));
    // Cheap accessors must not panic either.
    let _ = (
        devices.mode(),
        devices.is_all(),
        devices.is_blank(),
        devices.is_empty(),
    );
    let _ = (
        devices.stop(),
        devices.duplicate(),
        devices.warnings().len(),
    );
    assert!(devices.raw_entries().len() >= devices.entries().len());

    if let Ok(resolution) = resolve(&devices, table) {
        let visible = resolution.visible();
        let mut seen = HashSet::new();
        for row in visible {
            assert!(seen.insert(row.index), "GPU {} resolved twice", row.index);
            assert_eq!(
                table.by_index(row.index),
                Some(row),
                "resolved row not in the table"
            );
        }
        assert!(visible.len() <= table.len());
        assert_eq!(resolution.host_indices().len(), visible.len());
        assert_eq!(resolution.is_empty(), visible.is_empty());
        let _ = resolution.relies_on_index_order();
    }

    if let Ok(text) = std::str::from_utf8(data) {
        let _ = mps_visibility_entries(text, None);
        let _ = mps_visibility_entries(text, Some(table));
    }
});
