//! The Python package of mps-preflight: `import mps_preflight`.
//!
//! The extension module `mps_preflight._native` is built by maturin with the `python` feature
//! (see `pyproject.toml`); the Python side (`python/mps_preflight/`) gives it its API, its
//! exception classes and the reference module's drop-in names (`mps_preflight.compat`).
//!
//! Without the `python` feature (as `cargo test --workspace` builds it) this crate is its pure
//! parts only, which the Rust tests exercise without a Python interpreter:
//!
//! - [`spec`]: Python's keyword arguments, filling the front end's low-level arguments
//!   (`mps_preflight::front::LowArgs`, the command line's too), converted once into the request
//!   and the probe options;
//! - [`policy`]: the one place the binding asks the policy for a verdict and its messages;
//! - [`reference`](mod@reference): the reference module's own queries, for a caller's `run_command`;
//! - [`reply`]: what an injected `run_command` returned, bounded as the process runner bounds it.
//!
//! # Examples
//!
//! ```
//! use mps_preflight::front::{Snapshot, snapshot_facts};
//! use mps_preflight_native::policy::{Verdict, judge};
//! use mps_preflight_native::spec::Spec;
//!
//! let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../../fixtures/hosts/healthy-socket-with-server.json");
//! let facts = snapshot_facts(Snapshot::Path(std::path::Path::new(path)), None)?;
//! let spec = Spec::new(Some("mps"), "cuda:0", Some("cuda:0"), "mjwarp");
//! let Verdict::Valid(evidence) = judge(&spec.low()?.to_high().request, &facts) else {
//!     panic!("the healthy fixture validates");
//! };
//! assert_eq!(evidence.server_pid, Some(4428));
//! # Ok::<(), String>(())
//! ```

pub mod policy;
pub mod reference;
pub mod reply;
pub mod spec;

#[cfg(feature = "python")]
mod convert;
#[cfg(feature = "python")]
mod module;
#[cfg(feature = "python")]
mod runner;
