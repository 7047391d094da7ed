//! Properties over generated input.

use std::collections::HashSet;
use std::fmt::Write as _;

use gpu_uuid::{
    GpuTable, GpuTableView, GpuUuid, MigUuid, VisibleDevices, canonicalize_gpu_uuid,
    mps_visibility_entries, place, resolve,
};
use proptest::prelude::*;

use crate::hosts;

/// One way of writing 16 bytes as a GPU UUID, as some tool might.
fn spelling() -> impl Strategy<Value = ([u8; 16], String)> {
    (
        any::<[u8; 16]>(),
        prop_oneof![Just(""), Just("GPU-"), Just("gpu-"), Just("Gpu-")],
        any::<bool>(),
        proptest::collection::vec(any::<bool>(), 32),
        prop_oneof![Just(""), Just(" "), Just("\t"), Just("\n")],
    )
        .prop_map(|(bytes, prefix, dashed, upper, pad)| {
            let mut body = String::new();
            for (i, byte) in bytes.iter().enumerate() {
                if dashed && matches!(i, 4 | 6 | 8 | 10) {
                    body.push('-');
                }
                let _ = write!(body, "{byte:02x}");
            }
            let mut flips = upper.iter();
            let body: String = body
                .chars()
                .map(|c| {
                    if c.is_ascii_hexdigit() && *flips.next().unwrap_or(&false) {
                        c.to_ascii_uppercase()
                    } else {
                        c
                    }
                })
                .collect();
            (bytes, format!("{pad}{prefix}{body}{pad}"))
        })
}

/// Values built from pieces that exercise every rule, plus junk.
fn visible_value() -> impl Strategy<Value = Vec<u8>> {
    let piece = prop_oneof![
        Just("0".to_owned()),
        Just("1".to_owned()),
        Just("7".to_owned()),
        Just("8".to_owned()),
        Just("01".to_owned()),
        Just("+2".to_owned()),
        Just("-0".to_owned()),
        Just("-1".to_owned()),
        Just(" 3".to_owned()),
        Just("4gpu".to_owned()),
        Just("0-2".to_owned()),
        Just(String::new()),
        Just(" ".to_owned()),
        Just("all".to_owned()),
        Just("GPU-".to_owned()),
        Just("GPU-e".to_owned()),
        Just("GPU-9e8d35e3".to_owned()),
        Just("GPU-47".to_owned()),
        Just("GPU-1c20e77d-1c1a-d9ed-fe37-18b8466a78ad".to_owned()),
        Just("GPU-9E8D".to_owned()),
        Just("gpu-9e8d".to_owned()),
        Just(" GPU-47".to_owned()),
        Just("GPU-47 ".to_owned()),
        Just("MIG-c6d4f1ef".to_owned()),
        Just("1c20e77d-1c1a-d9ed-fe37-18b8466a78ad".to_owned()),
        "[0-9a-fGPUMI +-]{0,6}",
    ];
    prop_oneof![
        proptest::collection::vec(piece, 0..6).prop_map(|pieces| pieces.join(",").into_bytes()),
        proptest::collection::vec(any::<u8>(), 0..40),
    ]
}

/// The H8 table, or a random homogeneous one.
fn table() -> impl Strategy<Value = GpuTable> {
    prop_oneof![
        Just(hosts::h8()),
        proptest::collection::hash_set(any::<[u8; 16]>(), 1..6).prop_map(|uuids| {
            let mut stdout = String::new();
            for (i, bytes) in uuids.iter().enumerate() {
                let uuid = GpuUuid::from_bytes(*bytes);
                let _ = writeln!(stdout, "{i}, {uuid}, GPU, 00000000:{i:02x}:00.0");
            }
            GpuTable::parse(&stdout).unwrap()
        }),
    ]
}

proptest! {
    #[test]
    fn canonicalisation_ignores_case_dashes_prefix_and_padding((bytes, text) in spelling()) {
        let uuid = GpuUuid::from_bytes(bytes);
        prop_assert_eq!(GpuUuid::parse(&text).unwrap(), uuid);
        prop_assert_eq!(canonicalize_gpu_uuid(&text), uuid.canonical_token());
        prop_assert_eq!(canonicalize_gpu_uuid(&uuid.to_string()), uuid.canonical_token());
    }

    #[test]
    fn canonicalisation_is_idempotent((_, text) in spelling()) {
        let once = canonicalize_gpu_uuid(&text);
        prop_assert_eq!(canonicalize_gpu_uuid(&once), once.clone());
        prop_assert_eq!(GpuUuid::parse(&once).unwrap().canonical_token(), once);
    }

    /// On any text without whitespace (with it, the seed's own function is not idempotent:
    /// see uuids.rs).
    #[test]
    fn canonicalisation_is_idempotent_without_whitespace(text in "\\PC*") {
        let text: String = text.chars().filter(|c| !c.is_whitespace() && !('\u{1c}'..='\u{1f}').contains(c)).collect();
        let once = canonicalize_gpu_uuid(&text);
        prop_assert_eq!(canonicalize_gpu_uuid(&once), once);
    }

    #[test]
    fn display_parse_round_trips(bytes in any::<[u8; 16]>(), gi in any::<u32>(), ci in any::<u32>()) {
        let uuid = GpuUuid::from_bytes(bytes);
        prop_assert_eq!(uuid.to_string().parse::<GpuUuid>().unwrap(), uuid);
        let mut pushed = String::from("x");
        uuid.push_to(&mut pushed);
        prop_assert_eq!(pushed, format!("x{uuid}"));
        let json = serde_json::to_string(&uuid).unwrap();
        prop_assert_eq!(serde_json::from_str::<GpuUuid>(&json).unwrap(), uuid);
        for mig in [MigUuid::Uuid(bytes), MigUuid::Legacy { gpu: uuid, gpu_instance: gi, compute_instance: ci }] {
            prop_assert_eq!(mig.to_string().parse::<MigUuid>().unwrap(), mig);
        }
    }

    #[test]
    fn parsers_never_panic_on_text(text in "\\PC*") {
        let _ = GpuUuid::parse(&text);
        let _ = MigUuid::parse(&text);
        let _ = canonicalize_gpu_uuid(&text);
        let _ = GpuTable::parse(&text);
        let _ = mps_visibility_entries(&text, Some(&hosts::h8()));
        let _ = mps_visibility_entries(&text, None);
        let devices = VisibleDevices::parse_bytes(Some(text.as_bytes()));
        let _ = resolve(&devices, &hosts::h8());
    }

    #[test]
    fn parsers_never_panic_on_bytes(bytes in proptest::collection::vec(any::<u8>(), 0..64)) {
        let devices = VisibleDevices::parse_bytes(Some(&bytes));
        let _ = resolve(&devices, &hosts::h1());
        let text = String::from_utf8_lossy(&bytes);
        let _ = GpuTable::parse(&text);
    }

    /// The parse is self-consistent: entries stop where the stop is, nothing repeats, and the
    /// stop accounts for every entry after it.
    #[test]
    fn parse_structure(value in visible_value()) {
        let devices = VisibleDevices::parse_bytes(Some(&value));
        let entries = devices.entries();
        let distinct: HashSet<_> = entries.iter().collect();
        prop_assert_eq!(distinct.len(), entries.len());
        if let Some(stop) = devices.stop() {
            prop_assert_eq!(stop.position, entries.len());
            prop_assert_eq!(stop.position + 1 + stop.ignored.len(), devices.raw_entries().len());
            prop_assert!(devices.duplicate().is_none());
        }
        if devices.duplicate().is_some() {
            prop_assert!(entries.is_empty());
        }
        prop_assert_eq!(devices.raw_entries().join(","), String::from_utf8_lossy(&value));
    }

    /// A resolved list is always a duplicate-free list of the table's rows, no longer than the
    /// entries, and stops no earlier than it got.
    #[test]
    fn resolution_is_distinct_table_rows(value in visible_value(), table in table()) {
        let devices = VisibleDevices::parse_bytes(Some(&value));
        let Ok(resolution) = resolve(&devices, &table) else { return Ok(()) };
        let visible = resolution.visible();
        let distinct: HashSet<u32> = visible.iter().map(|row| row.index).collect();
        prop_assert_eq!(distinct.len(), visible.len());
        for row in visible {
            prop_assert_eq!(table.by_index(row.index), Some(row));
        }
        prop_assert!(visible.len() <= devices.entries().len());
        if let Some(stop) = resolution.stop() {
            prop_assert_eq!(stop.position, visible.len());
        }
        if resolution.duplicate().is_some() {
            prop_assert!(visible.is_empty());
        }
    }

    /// Rewriting indices to UUIDs for MPS never changes which GPUs CUDA sees.
    #[test]
    fn mps_rewrite_keeps_the_visible_gpus(value in visible_value(), table in table()) {
        let Ok(text) = String::from_utf8(value) else { return Ok(()) };
        let Ok(entries) = mps_visibility_entries(&text, Some(&table)) else { return Ok(()) };
        let rewritten = entries.join(",");
        let before = resolve(&VisibleDevices::parse_bytes(Some(text.as_bytes())), &table);
        let after = resolve(&VisibleDevices::parse_bytes(Some(rewritten.as_bytes())), &table);
        match (before, after) {
            (Ok(before), Ok(after)) => prop_assert_eq!(before.host_indices(), after.host_indices(), "{:?} → {:?}", text, rewritten),
            (before, after) => prop_assert_eq!(before.is_err(), after.is_err(), "{:?} → {:?}", text, rewritten),
        }
    }

    /// The borrowed path the validator takes (`GpuTableView`, `place`) gives the same answers,
    /// stops, repeats and errors as the owned one.
    #[test]
    fn place_agrees_with_resolve(value in visible_value(), table in table(), unset in any::<bool>()) {
        let raw = (!unset).then_some(value.as_slice());
        let mut stdout = String::new();
        for row in table.rows() {
            let _ = writeln!(stdout, "{}, {}, {}, {}", row.index, row.uuid, row.name, row.pci_bus_id);
        }
        let view = GpuTableView::parse(&stdout).unwrap();
        prop_assert_eq!(&GpuTable::from(view.clone()), &table);
        let owned = resolve(&VisibleDevices::parse_bytes(raw), &table);
        match (place(raw, &view), owned) {
            (Ok(placed), Ok(owned)) => {
                prop_assert_eq!(placed.host_indices().to_vec(), owned.host_indices());
                prop_assert_eq!(placed.stop(), owned.stop().cloned());
                prop_assert_eq!(placed.duplicate(), owned.duplicate().cloned());
                prop_assert_eq!(placed.relies_on_index_order(), owned.relies_on_index_order());
            }
            (placed, owned) => prop_assert_eq!(placed.map(|_| ()), owned.map(|_| ())),
        }
    }
}
