//! The `Resolution` accessors and its `Display`, and when a result relies on index order.

use gpu_uuid::{GpuTable, VisibleDevices, resolve};

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
