//! The `Resolution` accessors and its `Display`, and when a result relies on index order.

use gpu_uuid::{GpuTable, GpuTableView, VisibleDevices, place, resolve};

use crate::hosts;

fn on(value: Option<&str>, table: &GpuTable) -> gpu_uuid::Resolution {
    resolve(
        &VisibleDevices::parse_bytes(value.map(str::as_bytes)),
        table,
    )
    .unwrap()
}

#[test]
fn is_empty_and_display_follow_the_visible_gpus() {
    let two = on(Some("2,0"), &hosts::h3());
    assert!(!two.is_empty());
    assert_eq!(two.host_indices(), [2, 0]);
    assert_eq!(two.to_string(), "[2, 0]");

    let none = on(Some(""), &hosts::h3());
    assert!(none.is_empty());
    assert_eq!(none.to_string(), "[]");
}

#[test]
fn only_indices_or_an_unset_variable_on_several_gpus_rely_on_index_order() {
    // Several GPUs: indices and "unset" assume CUDA numbers them in table order.
    assert!(on(None, &hosts::h2()).relies_on_index_order());
    assert!(on(Some("1"), &hosts::h2()).relies_on_index_order());
    // `GPU-` UUIDs name a GPU whatever the order.
    let by_uuid = on(Some("GPU-5a88edbe"), &hosts::h3());
    assert_eq!(by_uuid.host_indices(), [2]);
    assert!(!by_uuid.relies_on_index_order());
    // One GPU: there is no order to get wrong.
    assert!(!on(None, &hosts::h1()).relies_on_index_order());
    assert!(!on(Some("0"), &hosts::h1()).relies_on_index_order());
}

/// `Placement` (the borrowed `resolve`): `is_empty`, and equality and `Debug` that look at
/// the visible GPUs.
#[test]
fn a_placement_is_empty_compares_and_prints_by_its_visible_gpus() {
    let stdout = "0, GPU-8932f937-d72c-4106-c12f-20bd9faed9f6, NVIDIA H100 80GB HBM3, 00000000:17:00.0\n\
                  1, GPU-5a88edbe-90c4-2449-8c43-70c57591cca1, NVIDIA H100 80GB HBM3, 00000000:65:00.0\n";
    let view = GpuTableView::parse(stdout).unwrap();
    let two = place(Some(b"1,0"), &view).unwrap();
    assert!(!two.is_empty());
    assert_eq!(two.host_indices(), [1, 0]);
    assert!(format!("{two:?}").contains("visible: [1, 0]"), "{two:?}");
    assert!(place(Some(b""), &view).unwrap().is_empty());
    assert!(!place(None, &view).unwrap().is_empty());

    // One mask on two tables: the same text, stop and order, other GPUs.
    let swapped = "0, GPU-5a88edbe-90c4-2449-8c43-70c57591cca1, NVIDIA H100 80GB HBM3, 00000000:17:00.0\n\
                   1, GPU-8932f937-d72c-4106-c12f-20bd9faed9f6, NVIDIA H100 80GB HBM3, 00000000:65:00.0\n";
    let swapped = GpuTableView::parse(swapped).unwrap();
    let mask = b"GPU-8932";
    assert_eq!(
        place(Some(mask), &view).unwrap(),
        place(Some(mask), &view).unwrap()
    );
    assert_ne!(
        place(Some(mask), &view).unwrap(),
        place(Some(mask), &swapped).unwrap()
    );
}
