//! Project chores. `cargo xtask ci` runs every check CI runs; `cargo xtask layers` checks the
//! crate layering of ARCHITECTURE.md against `cargo metadata`.

fn main() {}
