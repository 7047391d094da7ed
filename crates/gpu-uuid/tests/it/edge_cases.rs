//! Every row of the edge-case table in docs/cuda-visibility.md §3 that a parser and resolver can
//! decide without a driver, as data: (row, value, host) → the host GPUs CUDA sees, in order.
//!
//! Out of scope here, because the answer is not in the value and the `nvidia-smi` table:
//! - rows 51–52 (HM unset, `2,0`): which MIG devices CUDA enumerates depends on the driver
//!   (R450–R525 vs R570+), and the table lists physical GPUs only; a MIG *entry* is refused
//!   with `ResolveError::Mig` (rows 48–50, 53);
//! - rows 54–57: indices inside an MPS client or a container are relative to the server's or
//!   the container's mask, which this crate is not told; `mps_visibility_entries` exists so
//!   that such clients get UUIDs (tests/it/mps.rs covers rows 54–55's rewrite);
//! - row 58 (no driver): there is no table to resolve against; tests/it/table.rs checks that
//!   every `nvidia-smi` failure output is "no table" and never "zero GPUs".
//!
//! Rows 46–47 (heterogeneous host): the resolver maps indices in `nvidia-smi` (PCI) order,
//! which is row 47's `CUDA_DEVICE_ORDER=PCI_BUS_ID` answer; for row 46 it cannot know CUDA's
//! fastest-first order, so it must flag the result as order-dependent on a mixed host.

use std::fmt::Write as _;

use gpu_uuid::{GpuTable, ResolveError, VisibleDevices, resolve};

use crate::hosts;

#[derive(Debug, Clone, Copy)]
enum Expect {
    /// These host indices, in this order.
    Visible(&'static [u32]),
    /// These host indices in PCI order, flagged as depending on CUDA's device order on a
    /// heterogeneous host.
    OrderDependent(&'static [u32]),
    /// A MIG list, which the table cannot place.
    Mig,
}

use Expect::{Mig, OrderDependent, Visible};

struct Case {
    row: &'static str,
    value: Option<&'static str>,
    host: &'static str,
    expect: Expect,
}

const fn case(row: &'static str, value: &'static str, host: &'static str, expect: Expect) -> Case {
    Case {
        row,
        value: Some(value),
        host,
        expect,
    }
}

const MIG_A: &str = "MIG-c6d4f1ef-42e4-5de3-91c7-45d71c87eb3f";

const CASES: &[Case] = &[
    Case {
        row: "1",
        value: None,
        host: "H8",
        expect: Visible(&[0, 1, 2, 3, 4, 5, 6, 7]),
    },
    case("2", "", "H8", Visible(&[])),
    case(
        "3",
        "0,1,2,3,4,5,6,7",
        "H8",
        Visible(&[0, 1, 2, 3, 4, 5, 6, 7]),
    ),
    case("4", "2,1", "H3", Visible(&[2, 1])),
    case("5", "0,2,-1,1", "H3", Visible(&[0, 2])),
    case("6", "0,1,2,3,-1,5,6,7", "H8", Visible(&[0, 1, 2, 3])),
    case("7", "0,1,2,3,-1,0,6,7", "H8", Visible(&[0, 1, 2, 3])),
    case("8", "0,1,2,1", "H8", Visible(&[])),
    case("9", "0,0", "H8", Visible(&[])),
    case("10", "-1", "H8", Visible(&[])),
    case("11", "2", "H1", Visible(&[])),
    case("12", "1,5,0", "H2", Visible(&[1])),
    case("13", "1gpu2,2ampere", "H8", Visible(&[1, 2])),
    case("14", "0, 1, 2, -1, 3", "H8", Visible(&[0, 1, 2])),
    case("15", "2, +3, -0, 5", "H8", Visible(&[2, 3, 0, 5])),
    case("16", "one,two,3,4", "H8", Visible(&[])),
    case("17", "4,3,two,one", "H8", Visible(&[4, 3])),
    case("18", "00,07", "H8", Visible(&[0, 7])),
    case("19", "0x1", "H8", Visible(&[0])),
    case("20", "0-2", "H8", Visible(&[0])),
    case("21", "0,,1", "H8", Visible(&[0])),
    case("22", "0,1,", "H8", Visible(&[0, 1])),
    case("23", " ", "H8", Visible(&[])),
    case("24", "all", "H8", Visible(&[])),
    case("25", "none", "H8", Visible(&[])),
    case("25", "void", "H8", Visible(&[])),
    case("25", "NoDevFiles", "H8", Visible(&[])),
    case(
        "26",
        "GPU-9e8d35e3-a134-0fdd-0e01-23811fdbd293",
        "H8",
        Visible(&[1]),
    ),
    case("27", "GPU-9e8d35e3", "H8", Visible(&[1])),
    case("28", "GPU-e4,GPU-9e8d35e3", "H8", Visible(&[2, 1])),
    case("29", "GPU-9e8d35e3,GPU-1,GPU-47", "H8", Visible(&[1, 7, 5])),
    case("30", "GPU-123,GPU-9e8d35e3", "H8", Visible(&[])),
    case("31", "GPU-9e8d35e3,GPU-123,GPU-47", "H8", Visible(&[1])),
    case("32", "GPU-9e8d35e3,GPU-e,GPU-47", "H8", Visible(&[1])),
    case("33", "GPU-9e8d35e3,GPU-47,GPU-9e8", "H8", Visible(&[])),
    case("34", "GPU-8932", "H2", Visible(&[])),
    case("35", "GPU-8932f", "H2", Visible(&[0])),
    case("36", "GPU-", "H1", Visible(&[0])),
    case("36", "GPU-", "H8", Visible(&[])),
    case(
        "37",
        "GPU-5a88edbe,GPU-7d1a2244-,GPU-121d,GPU-0c519389-096c-c814",
        "H4",
        Visible(&[0, 3, 2, 1]),
    ),
    case("38", "GPU-9e8d35e3, 2", "H8", Visible(&[1])),
    case("39", "0,GPU-9e8d35e3", "H8", Visible(&[0])),
    case(
        "40",
        "1c20e77d-1c1a-d9ed-fe37-18b8466a78ad",
        "H8",
        Visible(&[1]),
    ),
    case("41", "9e8d35e3", "H8", Visible(&[])),
    case("42", "gpu-9e8d35e3", "H8", Visible(&[])),
    case("43", "GPU-9E8D35E3", "H8", Visible(&[])),
    case("44", " GPU-9e8d35e3", "H8", Visible(&[])),
    case("45", "GPU-9e8d35e3 ", "H8", Visible(&[])),
    case("46/47", "0", "HX", OrderDependent(&[0])),
    case("48", MIG_A, "HM", Mig),
    case(
        "49",
        "MIG-c6d4f1ef-42e4-5de3-91c7-45d71c87eb3f,MIG-0c757cd7-e942-5726-a0b8-0e8fb7067135",
        "HM",
        Mig,
    ),
    case(
        "50",
        "MIG-66dd01d7-8cdb-5a13-a45d-c6eb0ee11810,MIG-03c649cb-e6ae-5284-8e94-4b1cf767e06c",
        "HM",
        Mig,
    ),
    case(
        "53",
        "MIG-GPU-5d5ba0d6-d33d-2b2c-524d-9e3d8d2b8a77/1/0",
        "HM",
        Mig,
    ),
    // §9 item 5, [U]: PyTorch finds the repeat before cutting at the out-of-range 5 (empty);
    // strictly sequential parsing would give [0]. We follow PyTorch until a device check.
    case("§9.5", "0,5,0", "H2", Visible(&[])),
];

fn host(name: &str) -> GpuTable {
    match name {
        "H1" => hosts::h1(),
        "H2" => hosts::h2(),
        "H3" => hosts::h3(),
        "H4" => hosts::h4(),
        "H8" => hosts::h8(),
        "HX" => hosts::hx(),
        "HM" => hosts::hm(),
        other => panic!("no host table {other}"),
    }
}

/// Checks one row; returns the rendering for the snapshot, or what went wrong.
fn check(case: &Case) -> Result<String, String> {
    let table = host(case.host);
    let devices = VisibleDevices::parse_bytes(case.value.map(str::as_bytes));
    let shown = case
        .value
        .map_or_else(|| "(unset)".to_owned(), |v| format!("{v:?}"));
    let mut out = format!(
        "row {}: CUDA_VISIBLE_DEVICES={shown} on {}",
        case.row, case.host
    );
    match (resolve(&devices, &table), case.expect) {
        (Ok(resolution), Visible(want) | OrderDependent(want)) => {
            let got = resolution.host_indices();
            if got != want {
                return Err(format!("{out}: want {want:?}, got {got:?}"));
            }
            let order = resolution.relies_on_index_order() && !table.is_homogeneous();
            if order != matches!(case.expect, OrderDependent(_)) {
                return Err(format!("{out}: order-dependent flag is {order}"));
            }
            let _ = write!(out, " → host GPUs {got:?}");
            if order {
                out.push_str(" (in PCI order; CUDA's default order may differ on this mixed host)");
            }
            for warning in devices.warnings() {
                let _ = write!(out, "\n  warning: {warning}");
            }
            if let Some(stop) = resolution.stop() {
                let _ = write!(out, "\n  stop: {stop}");
            }
            if let Some(duplicate) = resolution.duplicate() {
                let _ = write!(out, "\n  duplicate: {duplicate}");
            }
        }
        (Err(error @ ResolveError::Mig { .. }), Mig) => {
            let _ = write!(out, " → error\n  {error}");
        }
        (got, want) => return Err(format!("{out}: want {want:?}, got {got:?}")),
    }
    Ok(out)
}

#[test]
fn every_row_of_the_edge_case_table() {
    let (rendered, failures): (Vec<_>, Vec<_>) = CASES.iter().map(check).partition(Result::is_ok);
    let failures: Vec<String> = failures.into_iter().filter_map(Result::err).collect();
    assert!(
        failures.is_empty(),
        "edge-case rows that disagree:\n{}",
        failures.join("\n")
    );
    let rendered: Vec<String> = rendered.into_iter().filter_map(Result::ok).collect();
    insta::assert_snapshot!("edge_cases", rendered.join("\n\n"));
}

/// A value set to nothing is not the same as an unset one (row 1 vs 2), at the parser.
#[test]
fn unset_is_not_empty() {
    let unset = VisibleDevices::parse_bytes(None);
    let empty = VisibleDevices::parse_bytes(Some(b""));
    assert!(unset.is_all() && !unset.is_empty());
    assert!(empty.is_blank() && empty.is_empty() && !empty.is_all());
}

/// Non-UTF-8 bytes: an index keeps its digits; a UUID entry matches nothing.
#[test]
fn non_utf8_values() {
    let table = hosts::h8();
    let index = VisibleDevices::parse_bytes(Some(b"1\xff,2"));
    assert_eq!(resolve(&index, &table).unwrap().host_indices(), [1, 2]);
    let uuid = VisibleDevices::parse_bytes(Some(b"GPU-9e8d35e3,GPU-\xff"));
    let resolution = resolve(&uuid, &table).unwrap();
    assert_eq!(resolution.host_indices(), [1]);
    assert_eq!(resolution.stop().unwrap().entry, "GPU-\u{fffd}");
}

/// `OsStr` and bytes give the same parse.
#[test]
fn os_str_and_bytes_agree() {
    for value in ["", " ", "0,1", "GPU-9e8d35e3, 2", "MIG-x", "-1"] {
        assert_eq!(
            VisibleDevices::parse(Some(std::ffi::OsStr::new(value))),
            VisibleDevices::parse_bytes(Some(value.as_bytes())),
        );
    }
    assert_eq!(
        VisibleDevices::parse(None),
        VisibleDevices::parse_bytes(None)
    );
}

/// The index CUDA reads from a UUID-looking entry without `GPU-` comes with a `BareUuid`
/// warning only for at least 8 hex digits and dashes with a letter among them.
#[test]
fn bare_uuid_warnings_need_eight_hex_digits_or_dashes_with_a_letter() {
    use gpu_uuid::WarningKind;
    let kinds = |value: &str| -> Vec<WarningKind> {
        VisibleDevices::parse_bytes(Some(value.as_bytes()))
            .warnings()
            .iter()
            .map(|warning| warning.kind)
            .collect()
    };
    for bare in ["9e8d35e3", "9e8d35e3-a134", "1c20e77d-0fdd-0e01"] {
        assert_eq!(kinds(bare), [WarningKind::BareUuid], "{bare}");
    }
    for not_bare in ["1abc", "9e8d35e3zz", "9e8d35e3-xyz"] {
        let got = kinds(not_bare);
        assert_eq!(got.len(), 1, "{not_bare}");
        assert_ne!(got[0], WarningKind::BareUuid, "{not_bare}");
    }
}

/// In a `GPU-` list, a number stops reading as an entry of another kind, and a negative
/// number (not `-0`) as a negative one.
#[test]
fn negative_numbers_in_a_uuid_list() {
    use gpu_uuid::{Mode, StopReason};
    let reason = |value: &str| {
        VisibleDevices::parse_bytes(Some(value.as_bytes()))
            .stop()
            .map(|stop| stop.reason.clone())
    };
    assert_eq!(reason("GPU-8932f937,-1"), Some(StopReason::Negative));
    for other in ["GPU-8932f937,-0", "GPU-8932f937,1"] {
        assert_eq!(
            reason(other),
            Some(StopReason::OtherKind { list: Mode::Uuid }),
            "{other}"
        );
    }
}

/// `raw` is the value exactly as given (`None` when unset); only an empty or
/// whitespace-only value is blank.
#[test]
fn raw_is_the_value_as_given_and_only_whitespace_is_blank() {
    let unset = VisibleDevices::parse_bytes(None);
    assert_eq!(unset.raw(), None);
    assert!(!unset.is_blank());
    let set = VisibleDevices::parse_bytes(Some(b" 0,\xff"));
    assert_eq!(set.raw(), Some(&b" 0,\xff"[..]));
    assert!(!set.is_blank());
    for blank in [&b""[..], b" \t"] {
        let devices = VisibleDevices::parse_bytes(Some(blank));
        assert_eq!(devices.raw(), Some(blank));
        assert!(devices.is_blank());
    }
}

/// Entries compare as text shown lossily, as `VisibleEntry` holds them: two `GPU-` or `MIG-`
/// entries whose different bad bytes both show as U+FFFD are one entry written twice.
#[test]
fn entries_that_differ_only_in_bytes_shown_as_u_fffd_repeat() {
    use gpu_uuid::Same;
    for value in [&b"GPU-a\xff,GPU-a\xfe"[..], b"MIG-\xc3,MIG-\xff"] {
        let devices = VisibleDevices::parse_bytes(Some(value));
        let duplicate = devices.duplicate().unwrap();
        assert_eq!((duplicate.first, duplicate.second), (0, 1));
        assert_eq!(duplicate.same, Same::Text);
        assert!(devices.entries().is_empty());
    }
    let different = VisibleDevices::parse_bytes(Some(b"GPU-a\xff,GPU-b\xff"));
    assert!(different.duplicate().is_none());
    assert_eq!(different.entries().len(), 2);
}
