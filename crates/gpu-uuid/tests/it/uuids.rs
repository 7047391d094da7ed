//! `GpuUuid`, `MigUuid` and the seed's `canonicalize_gpu_uuid`.

use std::collections::HashSet;

use gpu_uuid::{GpuUuid, MigUuid, UuidError, canonicalize_gpu_uuid};

const SMI: &str = "GPU-8932f937-d72c-4106-c12f-20bd9faed9f6";
const TOKEN: &str = "8932F937D72C4106C12F20BD9FAED9F6";

#[test]
fn every_spelling_is_one_uuid() {
    let spellings = [
        SMI,
        "gpu-8932f937-d72c-4106-c12f-20bd9faed9f6",
        "GPU-8932F937-D72C-4106-C12F-20BD9FAED9F6",
        "8932f937-d72c-4106-c12f-20bd9faed9f6",
        TOKEN,
        "GPU-8932f937d72c4106c12f20bd9faed9f6",
        "  GPU-8932f937-d72c-4106-c12f-20bd9faed9f6\n",
    ];
    let parsed: HashSet<GpuUuid> = spellings.iter().map(|s| s.parse().unwrap()).collect();
    assert_eq!(parsed.len(), 1);
    let uuid = GpuUuid::parse(SMI).unwrap();
    assert_eq!(uuid.to_string(), SMI);
    assert_eq!(format!("{uuid:?}"), format!("GpuUuid(\"{SMI}\")"));
    assert_eq!(uuid.canonical_token(), TOKEN);
    for spelling in spellings {
        assert_eq!(canonicalize_gpu_uuid(spelling), TOKEN, "{spelling:?}");
    }
    assert_eq!(GpuUuid::from_bytes(*uuid.as_bytes()), uuid);
}

#[test]
fn zero_bytes_survive() {
    // nvitop#99: raw UUID bytes may contain 0x00; they are bytes, not a C string.
    let uuid = GpuUuid::from_bytes([0; 16]);
    assert_eq!(uuid.to_string(), "GPU-00000000-0000-0000-0000-000000000000");
    assert_eq!(GpuUuid::parse(&uuid.to_string()).unwrap(), uuid);
}

#[test]
fn serde_uses_the_display_form_and_the_parser() {
    let uuid = GpuUuid::parse(TOKEN).unwrap();
    assert_eq!(serde_json::to_string(&uuid).unwrap(), format!("\"{SMI}\""));
    assert_eq!(
        serde_json::from_str::<GpuUuid>(&format!("\"{TOKEN}\"")).unwrap(),
        uuid
    );
    let error = serde_json::from_str::<GpuUuid>("\"GPU-8932\"").unwrap_err();
    assert!(error.to_string().contains("rule: length"), "{error}");
    let mig = MigUuid::parse("MIG-GPU-5d5ba0d6-d33d-2b2c-524d-9e3d8d2b8a77/1/0").unwrap();
    let json = serde_json::to_string(&mig).unwrap();
    assert_eq!(serde_json::from_str::<MigUuid>(&json).unwrap(), mig);
}

#[test]
fn errors_echo_the_input() {
    assert_eq!(
        GpuUuid::parse(" GPU-8932 "),
        Err(UuidError::Length {
            input: " GPU-8932 ".into(),
            digits: 4
        })
    );
    assert_eq!(
        GpuUuid::parse("MIG-c6d4f1ef-42e4-5de3-91c7-45d71c87eb3f"),
        Err(UuidError::MigNotGpu {
            input: "MIG-c6d4f1ef-42e4-5de3-91c7-45d71c87eb3f".into()
        })
    );
}

#[test]
fn mig_forms() {
    let new = MigUuid::parse("mig-C6D4F1EF-42E4-5DE3-91C7-45D71C87EB3F").unwrap();
    assert_eq!(new.to_string(), "MIG-c6d4f1ef-42e4-5de3-91c7-45d71c87eb3f");
    assert_eq!(new.parent_gpu(), None);
    let legacy: MigUuid = "MIG-GPU-5d5ba0d6-d33d-2b2c-524d-9e3d8d2b8a77/7/1"
        .parse()
        .unwrap();
    assert_eq!(
        legacy,
        MigUuid::Legacy {
            gpu: GpuUuid::parse("GPU-5d5ba0d6-d33d-2b2c-524d-9e3d8d2b8a77").unwrap(),
            gpu_instance: 7,
            compute_instance: 1,
        }
    );
}

/// The seed's function, kept exactly, quirks included (docs/cuda-visibility.md §5).
#[test]
fn canonicalize_is_the_seed_function() {
    // Python: value.strip().upper().removeprefix("GPU-").replace("-", "")
    assert_eq!(canonicalize_gpu_uuid(""), "");
    assert_eq!(canonicalize_gpu_uuid("GPU-GPU-ab"), "GPUAB");
    assert_eq!(
        canonicalize_gpu_uuid("MIG-c6d4f1ef-42e4"),
        "MIGC6D4F1EF42E4"
    );
    assert_eq!(
        canonicalize_gpu_uuid("\u{1c}\u{a0} gpu-ab-cd \u{3000}"),
        "ABCD"
    );
    assert_eq!(canonicalize_gpu_uuid("straße"), "STRASSE");
    // Not idempotent with whitespace inside: Python gives the same.
    assert_eq!(canonicalize_gpu_uuid("GPU- ab"), " AB");
    assert_eq!(canonicalize_gpu_uuid(" AB"), "AB");
}

/// A byte whose two digits are both not hex is refused like one with a single bad digit, in
/// the dashed and the undashed layout.
#[test]
fn two_bad_digits_in_one_byte_are_not_hex() {
    for input in [
        "GPU-zz32f937-d72c-4106-c12f-20bd9faed9f6",
        "GPU-8932f937-d72c-4106-c12f-20bd9faed9gg",
        "8932f937d72c4106c12f20bd9faed9zz",
    ] {
        assert!(
            matches!(GpuUuid::parse(input), Err(UuidError::NotHex { .. })),
            "{input}: {:?}",
            GpuUuid::parse(input)
        );
    }
}
