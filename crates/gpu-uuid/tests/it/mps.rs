//! `mps_visibility_entries`: the seed's rewrite of indices to UUIDs, with its pitfalls fixed
//! (docs/cuda-visibility.md §9 item 14).

use gpu_uuid::{VisibilityError, VisibleDevices, mps_visibility_entries, resolve};

use crate::hosts::{self, H8};

fn rewrite(raw: &str) -> Result<Vec<String>, VisibilityError> {
    mps_visibility_entries(raw, Some(&hosts::h8()))
}

#[test]
fn indices_become_host_uuids() {
    // Rows 54–55: an MPS client must name the GPU by UUID, since its indices count only the
    // devices its server sees.
    assert_eq!(rewrite("3").unwrap(), [H8[3]]);
    assert_eq!(rewrite("2,1").unwrap(), [H8[2], H8[1]]);
}

#[test]
fn strtoul_indices_map_by_value() {
    // The seed's `isdigit` passed " 1", "+1" and "1abc" through and missed "01".
    for raw in ["01", "+1", " 1", "1 ", "1abc", "001"] {
        assert_eq!(rewrite(raw).unwrap(), [H8[1]], "{raw:?}");
    }
    assert_eq!(rewrite("-0").unwrap(), [H8[0]]);
}

#[test]
fn what_cuda_does_not_read_is_kept_as_written() {
    assert_eq!(rewrite("0,-1,9").unwrap(), [H8[0], "-1", "9"]);
    assert_eq!(rewrite("0,,1").unwrap(), [H8[0], "", "1"]);
    assert_eq!(rewrite("0,1,").unwrap(), [H8[0], H8[1], ""]);
    assert_eq!(
        rewrite("4,3,two,one").unwrap(),
        [H8[4], H8[3], "two", "one"]
    );
}

#[test]
fn other_values_pass_through_without_a_table() {
    for raw in [
        "",
        " ",
        "-1",
        "all",
        "GPU-9e8d35e3",
        "GPU-9e8d35e3, 2",
        "GPU-9e8d35e3,2",
        "MIG-c6d4f1ef-42e4-5de3-91c7-45d71c87eb3f",
        "gpu-9e8d35e3",
        " GPU-9e8d35e3",
        "0,0",
    ] {
        let entries = mps_visibility_entries(raw, None).unwrap();
        assert_eq!(entries.join(","), raw, "{raw:?}");
    }
}

#[test]
fn the_rewrite_keeps_what_cuda_sees() {
    let table = hosts::h8();
    for raw in [
        "3",
        "0,2,-1,1",
        "1gpu2,2ampere",
        "2, +3, -0, 5",
        "0,,1",
        "0,1,",
        "0,0",
        "00,07",
        "one,1",
    ] {
        let before = resolve(&VisibleDevices::parse_bytes(Some(raw.as_bytes())), &table).unwrap();
        let rewritten = rewrite(raw).unwrap().join(",");
        let after = resolve(
            &VisibleDevices::parse_bytes(Some(rewritten.as_bytes())),
            &table,
        )
        .unwrap();
        assert_eq!(
            before.host_indices(),
            after.host_indices(),
            "{raw:?} → {rewritten:?}"
        );
    }
}

#[test]
fn errors_name_the_entry() {
    let h2 = hosts::h2();
    let cases: [(&str, Result<Vec<String>, VisibilityError>); 5] = [
        (
            "\"0\" with no host table",
            mps_visibility_entries("0", None),
        ),
        (
            "\"1, 0\" with no host table",
            mps_visibility_entries("1, 0", None),
        ),
        ("\"0,5\" on H2", mps_visibility_entries("0,5", Some(&h2))),
        (
            "\"0,GPU-8932f\" on H2",
            mps_visibility_entries("0,GPU-8932f", Some(&h2)),
        ),
        (
            "\"1, MIG-c6d4f1ef\" on H2",
            mps_visibility_entries("1, MIG-c6d4f1ef", Some(&h2)),
        ),
    ];
    let out: Vec<String> = cases
        .into_iter()
        .map(|(what, result)| format!("{what}:\n  {}", result.expect_err(what)))
        .collect();
    insta::assert_snapshot!("visibility_errors", out.join("\n"));
}
