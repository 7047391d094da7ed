//! NVIDIA GPU UUID canonicalisation and `CUDA_VISIBLE_DEVICES` parsing, as the CUDA driver
//! reads them. Pure: no I/O (no environment, filesystem, processes or clock); callers pass the
//! raw values in.
//!
//! - [`GpuUuid`] / [`MigUuid`]: one normalised identity for every spelling of a UUID
//!   (`nvidia-smi`, PyTorch, the seed's comparison token), and [`canonicalize_gpu_uuid`], the
//!   seed's token function kept exactly.
//! - [`VisibleDevices`]: the raw variable as CUDA reads it (unset ≠ empty, first entry fixes
//!   the mode, `strtoul` indices, stop at the first invalid entry, repeats hide everything),
//!   keeping where and why reading stopped.
//! - [`GpuTable`]: the host's physical GPUs from `nvidia-smi` ([`TABLE_QUERY_ARGS`]), all or
//!   nothing.
//! - [`resolve`]: which host GPUs a CUDA process would see, in order, or why not.
//! - [`mps_visibility_entries`]: device indices rewritten to `GPU-` UUIDs for an MPS client.
//!
//! The rules and their sources are in the crate README and `notes/visibility.md`.
//!
//! ```
//! use gpu_uuid::{resolve, GpuTable, GpuUuid, VisibleDevices};
//!
//! // From mps-host: `nvidia-smi --query-gpu=index,uuid,name,pci.bus_id --format=csv,noheader`.
//! let table = GpuTable::parse(
//!     "0, GPU-8932f937-d72c-4106-c12f-20bd9faed9f6, NVIDIA H100 80GB HBM3, 00000000:17:00.0\n\
//!      1, GPU-8932aaaa-1111-2222-3333-444455556666, NVIDIA H100 80GB HBM3, 00000000:65:00.0\n\
//!      2, GPU-5a88edbe-90c4-2449-8c43-70c57591cca1, NVIDIA H100 80GB HBM3, 00000000:B3:00.0\n",
//! )?;
//!
//! // From mps-host: `std::env::var_os("CUDA_VISIBLE_DEVICES")`.
//! let devices = VisibleDevices::parse_bytes(Some(b"2,1,-1,0"));
//! let resolution = resolve(&devices, &table)?;
//! assert_eq!(resolution.host_indices(), [2, 1]);
//! assert_eq!(
//!     resolution.stop().unwrap().to_string(),
//!     "CUDA_VISIBLE_DEVICES entry 3 (\"-1\") is a negative index (`-1` is the usual way to hide \
//!      every GPU); CUDA stops reading the list there, keeping the 2 entries before it and \
//!      ignoring the 1 entry after it; list only the devices you want, or set \
//!      CUDA_VISIBLE_DEVICES to the empty string to hide every GPU on purpose",
//! );
//!
//! // A prefix must match exactly one GPU; `GPU-8932` matches two.
//! let devices = VisibleDevices::parse_bytes(Some(b"GPU-8932"));
//! assert!(resolve(&devices, &table)?.is_empty());
//!
//! // Every spelling of a UUID is the same GpuUuid.
//! let torch = GpuUuid::parse("5A88EDBE-90C4-2449-8C43-70C57591CCA1")?;
//! assert_eq!(table.by_uuid(&torch).map(|row| row.index), Some(2));
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

mod mps;
mod resolve;
mod small;
mod table;
mod uuid;
mod visible;

pub use crate::mps::{VisibilityError, mps_visibility_entries};
pub use crate::resolve::{Placement, Resolution, ResolveError, place, resolve};
pub use crate::table::{
    GpuRow, GpuRowView, GpuTable, GpuTableView, TABLE_COLUMNS, TABLE_QUERY_ARGS, TableError,
};
pub use crate::uuid::{GpuUuid, MigUuid, UuidError, canonicalize_gpu_uuid};
pub use crate::visible::{
    Duplicate, Mode, Same, Stop, StopReason, VisibleDevices, VisibleEntry, Warning, WarningKind,
};

/// The README's example runs as a doctest too.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
struct ReadmeDoctests;
