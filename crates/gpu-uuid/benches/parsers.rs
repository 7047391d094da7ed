//! `cargo bench -p gpu-uuid`: the parsers of the pure core.
//!
//! - [`VisibleDevices::parse_bytes`] of a few realistic `CUDA_VISIBLE_DEVICES` masks;
//! - [`GpuTable::parse`] of an 8-GPU `nvidia-smi` table (and [`resolve`] of masks against it),
//!   and of tables of 1k to 150k rows (linear time);
//! - [`GpuUuid::parse`] of the spellings users paste, and [`MigUuid::parse`].
//!
//! Inputs are built before timing; each sample times one parse (one item). BENCHMARKS.md at the
//! repository root has the figures.

// A benchmark is not shipped code: an input that stops parsing should fail loudly.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing,
    clippy::disallowed_methods
)]

use std::hint::black_box;

use divan::Bencher;
use divan::counter::{BytesCount, ItemsCount};
use gpu_uuid::{GpuTable, GpuUuid, MigUuid, VisibleDevices, resolve};

fn main() {
    divan::main();
}

/// `CUDA_VISIBLE_DEVICES` values, by a short name (divan's argument label).
const MASKS: &[(&str, Option<&str>)] = &[
    ("unset", None),
    ("empty", Some("")),
    ("one-index", Some("0")),
    ("four-indices", Some("0,1,2,3")),
    ("eight-indices", Some("7,6,5,4,3,2,1,0")),
    ("stop-at-minus-one", Some("2,1,-1,0")),
    ("uuid", Some("GPU-8932f937-d72c-4106-c12f-20bd9faed9f6")),
    (
        "two-uuids",
        Some("GPU-8932f937-d72c-4106-c12f-20bd9faed9f6,GPU-5a88edbe-90c4-2449-8c43-70c57591cca1"),
    ),
    ("uuid-prefix", Some("GPU-8932f9")),
    ("mig", Some("MIG-c6d4f1ef-42e4-5de3-91c7-45d71c87eb3f")),
];

fn mask_names() -> impl Iterator<Item = &'static str> {
    MASKS.iter().map(|(name, _)| *name)
}

fn mask(name: &str) -> Option<&'static [u8]> {
    MASKS
        .iter()
        .find(|(mask, _)| *mask == name)
        .map(|(_, value)| value.map(str::as_bytes))
        .expect("a mask of that name")
}

/// An 8-GPU host as `nvidia-smi --query-gpu=index,uuid,name,pci.bus_id --format=csv,noheader`
/// prints it.
const TABLE_8: &str = "\
0, GPU-8932f937-d72c-4106-c12f-20bd9faed9f6, NVIDIA H100 80GB HBM3, 00000000:18:00.0
1, GPU-5a88edbe-90c4-2449-8c43-70c57591cca1, NVIDIA H100 80GB HBM3, 00000000:2A:00.0
2, GPU-3eb79704-0b5c-4c6e-9a3d-1f2e3d4c5b6a, NVIDIA H100 80GB HBM3, 00000000:3A:00.0
3, GPU-0f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f0, NVIDIA H100 80GB HBM3, 00000000:5D:00.0
4, GPU-11223344-5566-7788-99aa-bbccddeeff00, NVIDIA H100 80GB HBM3, 00000000:9A:00.0
5, GPU-deadbeef-cafe-f00d-1234-56789abcdef0, NVIDIA H100 80GB HBM3, 00000000:AB:00.0
6, GPU-a1b2c3d4-e5f6-0718-293a-4b5c6d7e8f90, NVIDIA H100 80GB HBM3, 00000000:BA:00.0
7, GPU-0a0b0c0d-0e0f-1011-1213-141516171819, NVIDIA H100 80GB HBM3, 00000000:DB:00.0
";

/// `VisibleDevices::parse_bytes` of each mask.
#[divan::bench(args = mask_names())]
fn visible_devices_parse(bencher: Bencher, name: &str) {
    let raw = mask(name);
    bencher
        .counter(ItemsCount::new(1_usize))
        .bench(|| VisibleDevices::parse_bytes(black_box(raw)));
}

/// `GpuTable::parse` of the 8-GPU table.
#[divan::bench]
fn gpu_table_parse_8(bencher: Bencher) {
    GpuTable::parse(TABLE_8).expect("the table parses");
    bencher
        .counter(BytesCount::of_str(TABLE_8))
        .bench(|| GpuTable::parse(black_box(TABLE_8)));
}

/// An `nvidia-smi` table of `rows` GPUs with distinct indices and UUIDs.
fn big_table(rows: usize) -> String {
    use std::fmt::Write as _;
    let mut text = String::new();
    for i in 0..rows {
        let _ = writeln!(
            text,
            "{i}, GPU-{:08x}-0000-0000-0000-{i:012x}, NVIDIA H100 80GB HBM3, 00000000:{:02X}:00.0",
            i + 1,
            i % 256
        );
    }
    text
}

/// `GpuTable::parse` by table size: linear, so time per byte stays flat from
/// 1k to 150k rows (the pairwise repeat check it replaced took 40 s at 150k).
#[divan::bench(args = [1_000, 10_000, 40_000, 150_000], sample_count = 10)]
fn gpu_table_parse_rows(bencher: Bencher, rows: usize) {
    let text = big_table(rows);
    GpuTable::parse(&text).expect("the table parses");
    bencher
        .counter(BytesCount::of_str(&text))
        .bench(|| GpuTable::parse(black_box(&text)));
}

/// `resolve` of each (already parsed) mask against the (already parsed) 8-GPU table.
#[divan::bench(args = mask_names())]
fn resolve_8(bencher: Bencher, name: &str) {
    let table = GpuTable::parse(TABLE_8).expect("the table parses");
    let devices = VisibleDevices::parse_bytes(mask(name));
    bencher
        .counter(ItemsCount::new(1_usize))
        .bench(|| resolve(black_box(&devices), black_box(&table)));
}

/// Spellings of one GPU UUID: as `nvidia-smi` prints it, as torch prints it, bare hex, and one
/// that is refused.
const UUIDS: &[(&str, &str)] = &[
    ("nvidia-smi", "GPU-8932f937-d72c-4106-c12f-20bd9faed9f6"),
    ("torch", "8932F937-D72C-4106-C12F-20BD9FAED9F6"),
    ("bare-hex", "8932f937d72c4106c12f20bd9faed9f6"),
    ("invalid", "GPU-8932f937-d72c-4106-c12f-20bd9faed9fX"),
];

fn uuid_names() -> impl Iterator<Item = &'static str> {
    UUIDS.iter().map(|(name, _)| *name)
}

/// `GpuUuid::parse` of each spelling.
#[divan::bench(args = uuid_names())]
fn gpu_uuid_parse(bencher: Bencher, name: &str) {
    let input = UUIDS
        .iter()
        .find(|(spelling, _)| *spelling == name)
        .map(|(_, input)| *input)
        .expect("a spelling of that name");
    bencher
        .counter(ItemsCount::new(1_usize))
        .bench(|| GpuUuid::parse(black_box(input)));
}

/// `MigUuid::parse` of the current and the legacy form.
#[divan::bench(args = [
    "MIG-c6d4f1ef-42e4-5de3-91c7-45d71c87eb3f",
    "MIG-GPU-5d5ba0d6-d33d-2b2c-524d-9e3d8d2b8a77/1/0",
])]
fn mig_uuid_parse(bencher: Bencher, input: &str) {
    bencher
        .counter(ItemsCount::new(1_usize))
        .bench(|| MigUuid::parse(black_box(input)));
}
