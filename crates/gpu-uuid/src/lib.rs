#![doc = include_str!("../README.md")]

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
