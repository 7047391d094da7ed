//! What each code says: what was found, in words a launcher can act on, and what to do.

use crate::message::daemon::describe_text;
use crate::text::repr;
use crate::{CapturedText, DAEMON_QUERY_PROGRAM, Pid, QueryRecord};

use super::{
    AttestCode, AttestFacts, Attestation, LikelyCause, ProcessAttestation, Role, server_problem,
    server_uid,
};
use crate::ClientFacts;

/// How attest's messages name the caller's options: the command line's flags
/// ([`AttestWords::CLI`]) or another front end's names for them (the Python API's keywords).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AttestWords {
    /// The option that keeps asking until both processes attach: `--wait-ms`.
    pub wait: &'static str,
    /// That option set to thirty seconds: `--wait-ms 30000`.
    pub wait_30s: &'static str,
}

impl AttestWords {
    /// The command line's flags.
    pub const CLI: Self = Self {
        wait: "--wait-ms",
        wait_30s: "--wait-ms 30000",
    };
}

/// The message when the learner and the collector are given the same PID:
/// one process proves nothing about two, so the front ends refuse it as a usage error.
pub fn same_process(pid: i64) -> String {
    format!(
        "the learner and the collector are the same process (PID {pid}): one process proves nothing about two sharing a GPU; give each process's own PID"
    )
}

/// A server in `FAULT` that the learner is a client of.
fn server_fault(pid: i64) -> String {
    format!(
        "MPS server {pid} that the learner is a client of is in FAULT: it rejects every new client with CUDA_ERROR_MPS_SERVER_NOT_READY, and its clients are not being served; restart the job once the daemon has started a new server"
    )
}

impl Attestation {
    /// One line per process that is not attached: `<code>: <message>` ([`Self::errors`]).
    pub fn error_lines(&self) -> Vec<String> {
        self.errors()
            .into_iter()
            .map(|(code, message)| format!("{code}: {message}"))
            .collect()
    }

    /// Why it is not attested, as structured data: one `(code, message)` per process that is
    /// not attached (then a server in `FAULT`); empty when attested. The first code is the
    /// one a front end raises.
    pub fn errors(&self) -> Vec<(&'static str, String)> {
        let mut errors: Vec<(&'static str, String)> = self
            .problems()
            .map(|(role, p)| {
                let message = p.message.clone().unwrap_or_else(|| fallback(role, p.pid));
                (p.code.as_str(), message)
            })
            .collect();
        if let Some(settings) = self.server_settings.as_ref().filter(|s| s.is_fault()) {
            errors.push(("server-fault", server_fault(settings.pid)));
        }
        if !self.attested && errors.is_empty() && self.learner.pid == self.collector.pid {
            let code = AttestCode::AnswerUnrecognized.as_str();
            errors.push((code, same_process(self.learner.pid)));
        } else if !self.attested && errors.is_empty() {
            let code = AttestCode::ClientOfAnotherServer.as_str();
            errors.push((code, inconsistent()));
        }
        errors
    }
}

// Why an answer proves nothing about a process, as attest's readings (`answers.rs`, `seen.rs`,
// `settings.rs` and the namespace split in `mod.rs`) find it.

/// `asked` (a command line) was judged twice: a reading that cannot happen.
pub(super) fn judged_twice(asked: &str) -> String {
    format!("`{asked}` was judged twice")
}

/// `asked` was never sent.
pub(super) fn not_asked(asked: &str) -> String {
    format!("`{asked}` was not asked")
}

/// The control front end could not be started to ask `asked`.
pub(super) fn spawn_failed_for(asked: &str, error: &str) -> String {
    format!("{DAEMON_QUERY_PROGRAM} could not be started for `{asked}`: {error}")
}

/// `asked` was not answered within its deadline.
pub(super) fn timed_out_for(asked: &str, timeout_ms: u64) -> String {
    format!("`{asked}` got no answer within its {timeout_ms} ms deadline (a frozen or busy daemon)")
}

/// What went wrong with `asked`, worded by the message floor.
pub(super) fn about(asked: &str, detail: &str) -> String {
    format!("`{asked}`: {detail}")
}

/// A server PID that is not a PID.
pub(super) fn not_a_pid(server: i64) -> String {
    format!("server PID {server} is not a PID")
}

/// `asked`'s front end did not exit.
pub(super) fn did_not_exit(asked: &str) -> String {
    format!("`{asked}` did not exit")
}

/// An answer to `asked` in an unknown shape (`why`), with what it printed.
pub(super) fn unknown_answer(
    asked: &str,
    why: &str,
    stdout: &CapturedText,
    stderr: &CapturedText,
) -> String {
    format!(
        "`{asked}`: {why}: {}, {}",
        describe_text("stdout", stdout),
        describe_text("stderr", stderr)
    )
}

/// A recorded client query that is not the one this crate builds.
pub(super) fn other_client_query(record: &QueryRecord, expected: &str) -> String {
    format!(
        "the client query ran {} with arguments {:?} and stdin {}, not {DAEMON_QUERY_PROGRAM} with stdin {}",
        repr(&record.program),
        record.args,
        repr(&record.stdin),
        repr(expected)
    )
}

/// A client query of `server` that did not name the validated pipe directory.
pub(super) fn other_pipe_directory(server: Pid, pipe_directory: &[u8]) -> String {
    format!(
        "the client query of server {server} did not name the pipe directory {}",
        repr(&String::from_utf8_lossy(pipe_directory))
    )
}

/// The output of a client query was cut short.
pub(super) const CUT_SHORT: &str = "the output was cut short";
/// The output of a client query is not UTF-8.
pub(super) const NOT_UTF8: &str = "the output is not UTF-8";
/// A client query exited 0 with a message on stderr.
pub(super) const STDERR: &str = "exit 0 with a message on stderr";
/// A client query's answer did not start with the liveness line.
pub(super) const NOT_PERCENTAGE_FIRST: &str =
    "expected the active-thread percentage line, then the client PIDs";

/// The clients of a listed server were not asked.
pub(super) fn clients_not_asked(server: i64) -> String {
    format!("the clients of server {server} were not asked")
}

/// `pid` is listed by no server while a listing holds `0`: a client the daemon cannot see.
pub(super) fn unseen_client(pid: i64) -> String {
    format!(
        "PID {pid} is not listed, and the daemon lists a client as PID 0: a client in a PID namespace the daemon cannot see"
    )
}

/// `pid` is listed as a client of several servers.
pub(super) fn listed_by_several(pid: i64, servers: &[i64]) -> String {
    format!(
        "PID {pid} is listed as a client of {} servers ({servers:?})",
        servers.len()
    )
}

/// `pid`, given from the daemon's namespace, does not run in this one, and `split` says why.
pub(super) fn not_running_here(pid: i64, split: &str) -> String {
    format!("PID {pid} is not running in this PID namespace, and {split}")
}

/// `pid` is listed by no server, and `split` says why that proves nothing.
pub(super) fn not_listed_split(pid: i64, split: &str) -> String {
    format!("PID {pid} is not listed, and {split}")
}

/// A setting's query `asked` answered `lines`, which are not its value.
pub(super) fn answered(asked: &str, lines: &impl std::fmt::Debug) -> String {
    format!("{asked} answered {lines:?}")
}

/// Everything a message may name.
pub(super) struct Subject<'a> {
    pub(super) role: Role,
    pub(super) client: &'a ClientFacts,
    pub(super) verdict: &'a ProcessAttestation,
    pub(super) facts: &'a AttestFacts,
    /// How the caller's options are named.
    pub(super) words: AttestWords,
    /// Why the daemon's answers prove nothing (daemon-did-not-answer, answer-unrecognized).
    pub(super) seen_detail: Option<&'a str>,
    /// The server listing the other process.
    pub(super) other_server: Option<i64>,
}

/// The message of a process that is not attached.
pub(super) fn render(subject: &Subject<'_>) -> String {
    let who = format!("the {} (PID {})", subject.role.as_str(), subject.client.pid);
    let dir = repr(&subject.facts.pipe_directory.to_string_lossy());
    let verdict = subject.verdict;
    let server = verdict.server_pid.unwrap_or_default();
    let detail = subject.seen_detail.unwrap_or("no detail");
    match verdict.code {
        AttestCode::Attached => format!("{who} is attached to MPS server {server}"),
        AttestCode::NotRunning => format!(
            "{who} is not running{}: it exited or was never started with this PID; read its log, start it again, then attest its new PID",
            not_running_detail(subject.client)
        ),
        AttestCode::ProcessUnobservable => format!(
            "whether {who} runs cannot be told: {}; run attest in the control daemon's PID namespace (the host, or a hostPID pod) and where /proc is not mounted with hidepid",
            errors(subject.client)
        ),
        AttestCode::ClientOfAnotherServer => format!(
            "{who} is a client of MPS server {server}, but the {} is a client of server {}: both must be clients of one server; start both as the same user with CUDA_MPS_PIPE_DIRECTORY={dir}",
            other(subject.role).as_str(),
            subject
                .other_server
                .map_or_else(|| "?".to_owned(), |s| s.to_string()),
        ),
        AttestCode::NotAClient => not_a_client(subject, &who, &dir),
        AttestCode::ServerOfAnotherUser => format!(
            "{who} is listed by MPS server {server}, which runs as UID {}, not as its UID {}: a server serves one user; run the learner and the collector as one user",
            server_uid(subject.facts, server).map_or_else(|| "?".to_owned(), |u| u.to_string()),
            verdict
                .uid
                .map_or_else(|| "?".to_owned(), |u| u.to_string()),
        ),
        AttestCode::UidUnproven
            if verdict.uid.is_some() && server_problem(subject.facts, server).is_some() =>
        {
            format!(
                "{who} is listed by MPS server {server}, but that server's owner is unproven: {}; run attest in the control daemon's PID namespace (the host, or a hostPID pod)",
                server_problem(subject.facts, server)
                    .map(|why| crate::message::namespace::not_a_server(&why))
                    .unwrap_or_default()
            )
        }
        AttestCode::PidNamespaceDiffers => format!(
            "{who} cannot be matched with the control daemon's clients: {detail}. The daemon lists PIDs as its own PID namespace sees them: run attest in the daemon's PID namespace (the host, or a hostPID pod) with the processes' PIDs there; the job itself need not be restarted"
        ),
        AttestCode::UidUnproven => uid_unproven(subject, &who, server),
        AttestCode::DaemonDidNotAnswer => format!(
            "could not ask the control daemon on {dir} whether {who} is its client: {detail}; check the daemon with `mps-preflight doctor`, then attest again"
        ),
        AttestCode::AnswerUnrecognized => format!(
            "{who} is unproven, not attested: the control daemon on {dir} answered in a format this version does not recognise ({detail}); keep the answer (`attest --save-snapshot FILE`) and report it with the driver version"
        ),
    }
}

/// Why a process counts as not running: a zombie, or its PID reused by another process.
fn not_running_detail(client: &ClientFacts) -> String {
    match (client.first_start_time, client.start_time) {
        (Some(first), Some(now)) if first != now => format!(
            " (it has exited, and PID {} now names another process: start time {now}, not the {first} first observed)",
            client.pid
        ),
        _ if client.state.as_deref().is_some_and(|s| s.starts_with('Z')) => {
            " (it has exited and waits to be reaped)".to_owned()
        }
        _ => String::new(),
    }
}

fn not_a_client(subject: &Subject<'_>, who: &str, dir: &str) -> String {
    let head = format!("{who} is not a client of any MPS server on {dir}");
    // Restarting it with the variable it already has changes nothing: say what was seen.
    let restart = if names_this_directory(subject) {
        format!(
            "its environment already names {dir} (CUDA_MPS_PIPE_DIRECTORY={}), so the variable is not the cause: if it started before the daemon, restart it now; in a container, mount {dir} and the daemon's /dev/shm",
            repr(
                subject
                    .verdict
                    .pipe_directory_env
                    .as_deref()
                    .unwrap_or_default()
            )
        )
    } else {
        format!("restart it with CUDA_MPS_PIPE_DIRECTORY={dir}")
    };
    match subject.verdict.likely_cause {
        Some(LikelyCause::OtherPipeDirectory) => format!(
            "{head}: its environment names another pipe directory, {}, so its CUDA reached another daemon or none; {restart}",
            match subject.verdict.pipe_directory_env.as_deref() {
                Some(dir) if !dir.is_empty() => format!("CUDA_MPS_PIPE_DIRECTORY={}", repr(dir)),
                _ => format!(
                    "the default {} (CUDA_MPS_PIPE_DIRECTORY unset or empty)",
                    repr(crate::DEFAULT_PIPE_DIRECTORY)
                ),
            }
        ),
        Some(LikelyCause::NoServerRunning) => format!(
            "{head}: no MPS server is running, so it has not initialised CUDA yet, or it connected without MPS (another pipe directory, started before the daemon, or no pipe mount in its container); attest again once it has initialised CUDA (`{}`), else {restart}",
            subject.words.wait_30s
        ),
        Some(LikelyCause::UidDiffersFromServer) => format!(
            "{head}: its UID {} differs from the UID of every running server ({}); without multi-user mode the daemon queues a client of another user until that server exits; run the learner and the collector as the server's user, or let that server's clients finish",
            subject.verdict.uid.unwrap_or_default(),
            owners(subject.facts)
        ),
        None => format!(
            "{head}: no server lists it (servers {:?}){}; it has not initialised CUDA yet or runs without MPS; attest again with `{}`, else {restart}",
            subject
                .facts
                .servers
                .iter()
                .map(|s| s.pid)
                .collect::<Vec<_>>(),
            if subject.verdict.environ_read {
                ""
            } else {
                ", and its environment could not be read (run attest as its user or root to see its pipe directory)"
            },
            subject.words.wait,
        ),
    }
}

/// Whether the process's environment was read and names the pipe directory attest asked
/// (a non-empty `CUDA_MPS_PIPE_DIRECTORY` equal to it).
fn names_this_directory(subject: &Subject<'_>) -> bool {
    let asked = subject.facts.pipe_directory.to_string_lossy();
    subject.verdict.environ_read
        && subject
            .verdict
            .pipe_directory_env
            .as_deref()
            .is_some_and(|env| !env.is_empty() && env == asked)
}

/// uid-unproven: whose UID could not be read, and the fix the error calls for. A process that
/// no longer exists is named as such (running as root would not help); "run as root" is
/// advised only to a caller that is not root.
fn uid_unproven(subject: &Subject<'_>, who: &str, server: i64) -> String {
    let (whose, error) = if subject.verdict.uid.is_none() {
        ("its UID".to_owned(), errors(subject.client))
    } else {
        let process = subject.facts.servers.iter().find(|s| s.pid == server);
        let error = process
            .and_then(|s| s.process.errors.get("status"))
            .map_or_else(
                || format!("/proc/{server}/status showed no Uid line"),
                |error| format!("/proc/{server}/status: {error}"),
            );
        (format!("server {server}'s UID"), error)
    };
    let fix = if crate::proc_text::says_process_gone(&error) {
        if subject.verdict.uid.is_none() {
            "it no longer exists (it exited during attest): read its log, start it again, then attest its new PID"
        } else {
            "the server no longer exists (a server exits when its last client ends): attest again"
        }
    } else if subject
        .facts
        .caller
        .as_ref()
        .is_some_and(|caller| caller.euid == 0)
    {
        "attest already runs as root, so /proc hides it otherwise: run attest in the control daemon's PID namespace (the host, or a hostPID pod) and where /proc is not mounted with hidepid"
    } else {
        "run attest as root or as the job's user"
    };
    format!(
        "{who} is listed by MPS server {server}, but {whose} could not be read ({error}): {fix}"
    )
}

/// Whether an OS error says the process does not exist (ENOENT, ESRCH).
fn other(role: Role) -> Role {
    match role {
        Role::Learner => Role::Collector,
        Role::Collector => Role::Learner,
    }
}

fn owners(facts: &AttestFacts) -> String {
    crate::text::listed(
        facts
            .servers
            .iter()
            .map(|s| match server_uid(facts, s.pid) {
                Some(uid) => format!("server {} as UID {uid}", s.pid),
                None => format!("server {} as an unknown UID", s.pid),
            }),
    )
}

fn errors(client: &ClientFacts) -> String {
    if client.errors.is_empty() {
        return format!("/proc/{} showed no status", client.pid);
    }
    client
        .errors
        .iter()
        .map(|(file, error)| format!("/proc/{}/{file}: {error}", client.pid))
        .collect::<Vec<_>>()
        .join("; ")
}

/// For a process without a message (never produced by [`super::attest`]).
pub(super) fn fallback(role: Role, pid: i64) -> String {
    format!("the {} (PID {pid}) is not attached", role.as_str())
}

/// For a not-attested verdict whose processes are both attached (never produced).
pub(super) fn inconsistent() -> String {
    "the learner and the collector are not clients of one server".to_owned()
}
