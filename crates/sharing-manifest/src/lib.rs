#![doc = include_str!("../README.md")]

mod file;
mod json;
mod merge;

pub use file::{MAX_FILE_BYTES, ManifestError, read_json_file, record_in_manifest};
pub use json::{EVIDENCE_KEYS, MANIFEST_KEY, evidence_from_json, evidence_to_json};
pub use merge::{MergeCode, MergeFinding, MergeReport, RankRecord, merge};
