//! The host GPU tables of docs/cuda-visibility.md §2, as `nvidia-smi` would print them.

use std::fmt::Write as _;

use gpu_uuid::GpuTable;

/// Builds `nvidia-smi --query-gpu=index,uuid,name,pci.bus_id --format=csv,noheader` output.
fn smi(name: &str, uuids: &[&str]) -> String {
    let mut stdout = String::new();
    for (i, uuid) in uuids.iter().enumerate() {
        let bus = 0x10 + i * 0x10;
        let _ = writeln!(stdout, "{i}, {uuid}, {name}, 00000000:{bus:02X}:00.0");
    }
    stdout
}

fn table(stdout: &str) -> GpuTable {
    GpuTable::parse(stdout).expect("fixture tables parse")
}

/// H1: one GPU (an H100 UUID from the MIG guide).
pub(crate) fn h1() -> GpuTable {
    table(&smi(
        "NVIDIA H100 80GB HBM3",
        &["GPU-c08d91cb-e324-655c-71ba-7570956445bc"],
    ))
}

const H2: [&str; 2] = [
    "GPU-8932f937-d72c-4106-c12f-20bd9faed9f6",
    "GPU-8932aaaa-1111-2222-3333-444455556666",
];

/// H2: two GPUs sharing the prefix `GPU-8932`.
pub(crate) fn h2() -> GpuTable {
    table(&smi("NVIDIA H100 80GB HBM3", &H2))
}

/// H3: H2 plus `GPU-5a88edbe…`.
pub(crate) fn h3() -> GpuTable {
    let [a, b] = H2;
    table(&smi(
        "NVIDIA H100 80GB HBM3",
        &[a, b, "GPU-5a88edbe-90c4-2449-8c43-70c57591cca1"],
    ))
}

/// H8's UUIDs, from PyTorch's `test_partial_uuid_resolver`.
pub(crate) const H8: [&str; 8] = [
    "GPU-9942190a-aa31-4ff1-4aa9-c388d80f85f1",
    "GPU-9e8d35e3-a134-0fdd-0e01-23811fdbd293",
    "GPU-e429a63e-c61c-4795-b757-5132caeb8e70",
    "GPU-eee1dfbc-0a0f-6ad8-5ff6-dc942a8b9d98",
    "GPU-bbcd6503-5150-4e92-c266-97cc4390d04e",
    "GPU-472ea263-58d7-410d-cc82-f7fdece5bd28",
    "GPU-e56257c4-947f-6a5b-7ec9-0f45567ccf4e",
    "GPU-1c20e77d-1c1a-d9ed-fe37-18b8466a78ad",
];

/// H8: eight GPUs.
pub(crate) fn h8() -> GpuTable {
    table(&smi("NVIDIA A100-SXM4-80GB", &H8))
}

/// H4: modelled on ptrblck's host.
pub(crate) fn h4() -> GpuTable {
    table(&smi(
        "NVIDIA A100-SXM4-80GB",
        &[
            "GPU-5a88edbe-90c4-2449-8c43-70c57591cca1",
            "GPU-0c519389-096c-c814-0000-000000000001",
            "GPU-121d0000-0000-0000-0000-000000000002",
            "GPU-7d1a2244-0000-0000-0000-000000000003",
        ],
    ))
}

/// HX: heterogeneous (koboldcpp#1023): nvidia-smi 0 = GTX 1660 SUPER, 1 = RTX 3090. The
/// UUIDs are synthetic.
pub(crate) fn hx() -> GpuTable {
    table(
        "0, GPU-16600000-0000-0000-0000-000000000000, NVIDIA GeForce GTX 1660 SUPER, 00000000:01:00.0\n\
         1, GPU-30900000-0000-0000-0000-000000000000, NVIDIA GeForce RTX 3090, 00000000:02:00.0\n",
    )
}

/// HM: the MIG host's physical GPUs (the table lists no MIG devices).
pub(crate) fn hm() -> GpuTable {
    table(&smi(
        "NVIDIA A100-SXM4-40GB",
        &[
            "GPU-5d5ba0d6-d33d-2b2c-524d-9e3d8d2b8a77",
            "GPU-0aa11ebd-627f-af3f-1a0d-4e1fd92fd7b0",
            "GPU-ffff0000-0000-0000-0000-000000000000",
        ],
    ))
}
