//! The host GPU table: all or nothing.

use gpu_uuid::{GpuRow, GpuTable, GpuUuid, TABLE_COLUMNS, TABLE_QUERY_ARGS, TableError};

use crate::hosts;

const TWO: &str = "0, GPU-8932f937-d72c-4106-c12f-20bd9faed9f6, NVIDIA H100 80GB HBM3, 00000000:17:00.0\n\
                   1, GPU-8932aaaa-1111-2222-3333-444455556666, NVIDIA H100 80GB HBM3, 00000000:65:00.0\n";

#[test]
fn the_query_asks_for_the_columns_it_parses() {
    assert_eq!(
        TABLE_QUERY_ARGS[0],
        format!("--query-gpu={}", TABLE_COLUMNS.join(","))
    );
    assert_eq!(TABLE_QUERY_ARGS[1], "--format=csv,noheader");
}

#[test]
fn parses_rows_in_index_order() {
    let table = GpuTable::parse(TWO).unwrap();
    assert_eq!(table.len(), 2);
    assert!(!table.is_empty());
    let row = &table.rows()[1];
    assert_eq!(row.index, 1);
    assert_eq!(
        row.uuid.to_string(),
        "GPU-8932aaaa-1111-2222-3333-444455556666"
    );
    assert_eq!(row.name, "NVIDIA H100 80GB HBM3");
    assert_eq!(row.pci_bus_id, "00000000:65:00.0");
    assert_eq!(table.by_index(1), Some(row));
    assert_eq!(table.by_index(2), None);
    assert_eq!(table.by_uuid(&row.uuid), Some(row));
    assert!(table.is_homogeneous());
    assert!(!hosts::hx().is_homogeneous());
    assert!(hosts::h1().is_homogeneous());
}

#[test]
fn tolerates_what_nvidia_smi_varies() {
    // CRLF, blank lines, no space after commas, rows out of order, a 4-digit PCI domain.
    let stdout = "\r\n1,GPU-8932AAAA-1111-2222-3333-444455556666,Tesla V100,0000:65:00.0\r\n\n\
                  0 ,  GPU-8932f937-d72c-4106-c12f-20bd9faed9f6 , Tesla V100 , 00000000:17:00.0\r\n";
    let table = GpuTable::parse(stdout).unwrap();
    let indices: Vec<u32> = table.rows().iter().map(|r| r.index).collect();
    assert_eq!(indices, [0, 1]);
    assert_eq!(table.rows()[0].name, "Tesla V100");
    assert_eq!(
        table.rows()[1].uuid.to_string(),
        "GPU-8932aaaa-1111-2222-3333-444455556666"
    );
}

#[test]
fn a_name_with_commas_is_everything_between_uuid_and_bus_id() {
    let stdout =
        "0, GPU-8932f937-d72c-4106-c12f-20bd9faed9f6, NVIDIA A100,PCIe, 40GB , 00000000:17:00.0\n";
    let table = GpuTable::parse(stdout).unwrap();
    assert_eq!(table.rows()[0].name, "NVIDIA A100,PCIe, 40GB");
    assert_eq!(table.rows()[0].pci_bus_id, "00000000:17:00.0");
}

/// Row 58 and §6: every failure output is "no table", never "zero GPUs" or a partial table.
#[test]
fn malformed_output_is_no_table() {
    let cases: &[(&str, &str)] = &[
        ("no output", ""),
        ("only blank lines", "\n  \n"),
        (
            "driver not loaded (exit 9)",
            "NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver. Make sure that the latest NVIDIA driver is installed and running.\n",
        ),
        ("no GPU bound (exit 6)", "No devices were found\n"),
        (
            "NVML mismatch (exit 18)",
            "Failed to initialize NVML: Driver/library version mismatch\n",
        ),
        (
            "with a header",
            "index, uuid, name, pci.bus_id\n0, GPU-8932f937-d72c-4106-c12f-20bd9faed9f6, H100, 00000000:17:00.0\n",
        ),
        (
            "the seed's two-column query",
            "0, GPU-8932f937-d72c-4106-c12f-20bd9faed9f6\n",
        ),
        (
            "a good row then a bad one",
            "0, GPU-8932f937-d72c-4106-c12f-20bd9faed9f6, H100, 00000000:17:00.0\n1, [N/A], H100, 00000000:65:00.0\n",
        ),
        (
            "negative index",
            "-1, GPU-8932f937-d72c-4106-c12f-20bd9faed9f6, H100, 00000000:17:00.0\n",
        ),
        (
            "huge index",
            "99999999999, GPU-8932f937-d72c-4106-c12f-20bd9faed9f6, H100, 00000000:17:00.0\n",
        ),
        (
            "abbreviated uuid",
            "0, GPU-8932f937, H100, 00000000:17:00.0\n",
        ),
        (
            "uuid without GPU-",
            "0, 8932f937-d72c-4106-c12f-20bd9faed9f6, H100, 00000000:17:00.0\n",
        ),
        (
            "MIG uuid",
            "0, MIG-c6d4f1ef-42e4-5de3-91c7-45d71c87eb3f, H100, 00000000:17:00.0\n",
        ),
        (
            "empty name",
            "0, GPU-8932f937-d72c-4106-c12f-20bd9faed9f6, , 00000000:17:00.0\n",
        ),
        (
            "bad bus id",
            "0, GPU-8932f937-d72c-4106-c12f-20bd9faed9f6, H100, [N/A]\n",
        ),
        (
            "bus id without function",
            "0, GPU-8932f937-d72c-4106-c12f-20bd9faed9f6, H100, 00000000:17:00\n",
        ),
        (
            "duplicate index",
            "0, GPU-8932f937-d72c-4106-c12f-20bd9faed9f6, H100, 00000000:17:00.0\n0, GPU-8932aaaa-1111-2222-3333-444455556666, H100, 00000000:65:00.0\n",
        ),
        (
            "duplicate uuid",
            "0, GPU-8932f937-d72c-4106-c12f-20bd9faed9f6, H100, 00000000:17:00.0\n1, GPU-8932F937-D72C-4106-C12F-20BD9FAED9F6, H100, 00000000:65:00.0\n",
        ),
        (
            "index gap",
            "0, GPU-8932f937-d72c-4106-c12f-20bd9faed9f6, H100, 00000000:17:00.0\n2, GPU-8932aaaa-1111-2222-3333-444455556666, H100, 00000000:65:00.0\n",
        ),
        (
            "no index 0",
            "1, GPU-8932f937-d72c-4106-c12f-20bd9faed9f6, H100, 00000000:17:00.0\n",
        ),
    ];
    let mut out = Vec::new();
    for (what, stdout) in cases {
        let error = GpuTable::parse(stdout).expect_err(what);
        out.push(format!("{what}:\n  {error}"));
    }
    insta::assert_snapshot!("table_errors", out.join("\n"));
}

#[test]
fn repeats_name_their_output_lines_past_blank_ones() {
    let a = "0, GPU-8932f937-d72c-4106-c12f-20bd9faed9f6, NVIDIA H100 80GB HBM3, 00000000:17:00.0";
    let b = "1, GPU-8932aaaa-1111-2222-3333-444455556666, NVIDIA H100 80GB HBM3, 00000000:65:00.0";
    let c = "1, GPU-5a88edbe-90c4-2449-8c43-70c57591cca1, NVIDIA H100 80GB HBM3, 00000000:66:00.0";
    assert_eq!(
        GpuTable::parse(&format!("\n{a}\n  \n{b}\n\n{c}\n")),
        Err(TableError::DuplicateIndex {
            index: 1,
            first_line: 4,
            line: 6
        })
    );
    assert!(matches!(
        GpuTable::parse(&format!("{b}\n\n\n{a}\n{}\n", a.replacen('0', "2", 1))),
        Err(TableError::DuplicateUuid {
            first_line: 4,
            line: 5,
            ..
        })
    ));
}

#[test]
fn from_rows_checks_like_parse() {
    let uuid = GpuUuid::parse("GPU-8932f937-d72c-4106-c12f-20bd9faed9f6").unwrap();
    let row = |index| GpuRow {
        index,
        uuid,
        name: "H100".into(),
        pci_bus_id: "00000000:17:00.0".into(),
    };
    assert_eq!(GpuTable::from_rows(vec![]), Err(TableError::NoRows));
    assert!(matches!(
        GpuTable::from_rows(vec![row(0), row(1)]),
        Err(TableError::DuplicateUuid {
            first_line: 1,
            line: 2,
            ..
        })
    ));
    assert_eq!(GpuTable::from_rows(vec![row(0)]).unwrap().len(), 1);
    let mut bad = row(0);
    bad.pci_bus_id = "17:00.0".into();
    assert!(matches!(
        GpuTable::from_rows(vec![bad]),
        Err(TableError::Malformed { line: 1, .. })
    ));
}

#[test]
fn serde_round_trips_and_validates() {
    let table = GpuTable::parse(TWO).unwrap();
    let json = serde_json::to_string(&table).unwrap();
    assert!(json.starts_with(r#"[{"index":0,"uuid":"GPU-8932f937-d72c-4106-c12f-20bd9faed9f6","name":"NVIDIA H100 80GB HBM3","pci_bus_id":"00000000:17:00.0"}"#));
    assert_eq!(serde_json::from_str::<GpuTable>(&json).unwrap(), table);
    let error = serde_json::from_str::<GpuTable>("[]").unwrap_err();
    assert!(error.to_string().contains("printed no GPU rows"), "{error}");
}

/// Every part of the PCI bus id is checked for both its length and its hex digits, each
/// on its own: one bad part refuses the row.
#[test]
fn each_bus_id_part_must_be_hex_of_its_length() {
    let row = |bus_id: &str| {
        GpuTable::parse(&format!(
            "0, GPU-8932f937-d72c-4106-c12f-20bd9faed9f6, H100, {bus_id}\n"
        ))
    };
    for good in ["00000000:17:00.0", "0000:17:00.0", "0000:aB:1f.7"] {
        assert!(row(good).is_ok(), "{good}");
    }
    for bad in [
        "0000000g:17:00.0", // domain: right length, not hex
        "000:17:00.0",      // domain: hex, wrong length
        "00000000:1:00.0",  // bus
        "00000000:1g:00.0",
        "00000000:17:0.0", // device
        "00000000:17:0g.0",
        "00000000:17:00.00", // function
        "00000000:17:00.g",
    ] {
        match row(bad) {
            Err(TableError::Malformed { problem, .. }) => {
                assert!(problem.contains("pci.bus_id"), "{bad}: {problem}");
            }
            other => panic!("{bad}: {other:?}"),
        }
    }
}

#[test]
fn a_row_displays_all_its_fields() {
    let table = GpuTable::parse(TWO).unwrap();
    assert_eq!(
        table.rows()[1].to_string(),
        "host GPU 1 (GPU-8932aaaa-1111-2222-3333-444455556666, NVIDIA H100 80GB HBM3, 00000000:65:00.0)"
    );
}

/// The borrowed view answers `len`, `is_empty` and `is_homogeneous` as the owned table does.
#[test]
fn a_view_answers_as_the_table() {
    use gpu_uuid::GpuTableView;
    let mixed = "0, GPU-16600000-0000-0000-0000-000000000000, NVIDIA GeForce GTX 1660 SUPER, 00000000:01:00.0\n\
                 1, GPU-30900000-0000-0000-0000-000000000000, NVIDIA GeForce RTX 3090, 00000000:02:00.0\n";
    let one =
        "0, GPU-8932f937-d72c-4106-c12f-20bd9faed9f6, NVIDIA H100 80GB HBM3, 00000000:17:00.0\n";
    for (stdout, homogeneous) in [(TWO, true), (one, true), (mixed, false)] {
        let view = GpuTableView::parse(stdout).unwrap();
        let table = GpuTable::parse(stdout).unwrap();
        assert_eq!(view.len(), table.len());
        assert!(!view.is_empty());
        assert_eq!(view.is_homogeneous(), homogeneous, "{stdout}");
        assert_eq!(table.is_homogeneous(), homogeneous, "{stdout}");
    }
}
