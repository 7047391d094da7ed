//! The pure, fail-closed validator of CUDA MPS process sharing.
//!
//! Input: a [`Request`] (what the launcher asks for) and a [`HostFacts`] snapshot (raw
//! observations of one host, recorded by `mps-host` or loaded from a fixture). Output:
//! [`Evidence`] for the run's manifest, or the first unmet prerequisite.
//!
//! This crate performs no I/O, reads no clock and no environment: every fact arrives in
//! the snapshot, so a capture taken on a GPU host replays identically on a laptop.

mod commands;
mod evidence;
mod facts;
mod request;

pub use commands::{probe_stdin, ReadOnlyCommand, DAEMON_PROBE};
pub use evidence::Evidence;
pub use facts::{
    AccessFacts, CapturedText, EnvFacts, FileFacts, FileKind, HostFacts, OsText, PidFileFacts,
    PipeFacts, QueryOutcome, QueryRecord, DAEMON_QUERY_PROGRAM, DEFAULT_PIPE_DIRECTORY,
    GPU_QUERY_PROGRAM, SCHEMA, parse_pid,
};
pub use request::{Request, DEFAULT_SUPPORTED_BACKEND};
