//! The CUDA process-sharing evidence as JSON, recorded into run manifests and merged across ranks.
//!
//! - [`evidence_to_json`]: the 16 evidence keys in the seed's order, unknown facts as `null`.
//! - [`record_in_manifest`]: put the evidence under `cuda_process_sharing` in a JSON manifest
//!   file, keeping every other key and the key order, atomically (temp file, fsync, rename).
//!   A file that is not a JSON object, not a regular file, too large or not writable is left
//!   byte-for-byte untouched and the call fails. Writers sharing a manifest serialise on
//!   `flock(LOCK_EX)` of `<manifest>.lock` ([`lock_path`]).
//! - [`merge`]: check the per-rank evidence of one run (ranks `0..world_size` each once,
//!   agreeing world size and modes, one daemon per pipe directory), each inconsistency with a
//!   stable code.
//!
//! This crate reads and writes only the files it is asked to; it never observes the host.
//!
//! # Examples
//!
//! ```
//! use sharing_manifest::{evidence_to_json, merge, record_in_manifest};
//! use sharing_policy::Evidence;
//!
//! let evidence = Evidence {
//!     configured: None, effective: None, validated: false, rank: 0, world_size: 1,
//!     learner_device: Some("cpu".to_owned()), collector_device: None,
//!     learner_gpu_uuid: None, collector_gpu_uuid: None, pipe_directory_env: None,
//!     pipe_directory: None, control_pipe: None, control_pipe_kind: None,
//!     server_pid: None, ambient_server: false, daemon_pid: None,
//! };
//!
//! let dir = tempfile::tempdir()?;
//! let manifest = dir.path().join("run.json");
//! std::fs::write(&manifest, r#"{"run_id": "abc", "steps": 10}"#)?;
//! record_in_manifest(&manifest, &evidence)?;
//!
//! let written: serde_json::Value = serde_json::from_slice(&std::fs::read(&manifest)?)?;
//! assert_eq!(written["run_id"], "abc");
//! assert_eq!(written["cuda_process_sharing"], evidence_to_json(&evidence));
//!
//! let report = merge(&[("run.json".to_owned(), written)]);
//! assert!(report.is_consistent());
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

mod file;
mod json;
mod lock;
mod merge;

pub use file::{
    MAX_FILE_BYTES, ManifestError, quote_path, read_json_file, record_in_manifest,
    record_in_manifest_within,
};
pub use json::{EVIDENCE_KEYS, MANIFEST_KEY, evidence_from_json, evidence_to_json};
pub use lock::{LOCK_FILE_MODE, LOCK_WAIT, lock_path};
pub use merge::{MergeCode, MergeFinding, MergeReport, RankRecord, merge};
