#![doc = include_str!("../README.md")]

mod answers;
mod commands;
pub mod daemon_args;
mod limits;
mod os_text;
mod record;
mod reference;
pub mod retry;
mod session;

pub use answers::{
    Answer, ListedClient, MAX_LISTED_CLIENTS, ServerState, client_list, client_pids,
    default_pinned_limit, server_percentage, server_pinned_limit, server_state,
};
pub use commands::{
    DAEMON_PROBE, DAEMON_QUERY_PROGRAM, GPU_QUERY_PROGRAM, Pid, ReadOnlyCommand, client_query,
    is_stdin_of, probe_stdin, separated,
};
pub use limits::{MemSize, Percentage, default_percentage};
pub use os_text::OsText;
pub use record::{Attempt, CapturedText, QueryOutcome, QueryRecord};
pub use reference::{MODELS_QUERY_ARGS, REFERENCE_DAEMON_STDIN, REFERENCE_GPU_QUERY_ARGS};
pub use session::{
    FIRST_SESSION_ORDINALS, asked_in, first_session, first_session_asked, split_answers,
};
