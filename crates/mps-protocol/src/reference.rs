//! The reference module's own queries, which its drop-in sends through a caller's
//! `run_command` double exactly as the reference does (docs/mps-daemon.md, "The reference's own
//! queries"), and the one query the drop-in adds where their answer leaves index order in doubt.

/// The standard input of the reference module's daemon query: the server list alone, with no
/// liveness line. PID lines prove a live daemon; an empty answer does not on its own.
pub const REFERENCE_DAEMON_STDIN: &str = "get_server_list\n";

/// The reference module's GPU query (`nvidia-smi --query-gpu=index,uuid --format=csv,noheader`):
/// two columns, so the GPUs' models are unknown and the compute mode is unverified.
pub const REFERENCE_GPU_QUERY_ARGS: [&str; 2] = ["--query-gpu=index,uuid", "--format=csv,noheader"];

/// The drop-in's second GPU query, asked after [`REFERENCE_GPU_QUERY_ARGS`] only where its
/// table leaves index order in doubt: each GPU's model, beside its index and UUID so that the
/// two answers are checked to be of the same GPUs.
pub const MODELS_QUERY_ARGS: [&str; 2] = ["--query-gpu=index,uuid,name", "--format=csv,noheader"];
