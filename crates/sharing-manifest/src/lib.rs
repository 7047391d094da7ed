#![doc = include_str!("../README.md")]

mod attestation;
mod error;
mod file;
mod json;
mod lock;
mod merge;
mod summary;
mod write;

pub use attestation::{
    ATTESTATION_KEY, ATTESTATION_SCHEMA, ATTESTATION_SCHEMA_KEY, AttestationState, RankAttestation,
    attestation_of, record_attestation,
};
pub use error::{ManifestError, quote_path};
pub use file::{MAX_FILE_BYTES, read_json_file, record_in_manifest, record_in_manifest_within};
pub use json::{
    EVIDENCE_KEYS, EVIDENCE_SCHEMA, MANIFEST_KEY, MANIFEST_SCHEMA_KEY, MANIFEST_WRITER,
    MANIFEST_WRITER_KEY, evidence_from_json, evidence_to_json,
};
pub use lock::{LOCK_FILE_MODE, LOCK_WAIT, lock_path};
pub use merge::{MergeCode, MergeFinding, MergeReport, RankRecord, merge};
pub use summary::{MergeSummary, MergedFinding, MergedRank};
pub use write::{FileState, WriteError, WriteOptions, write_file};
