//! `attest`: after the learner and the collector have started, are both clients of one MPS
//! server, of their own user, on the validated pipe directory? Pure: every fact arrives in an
//! [`AttestFacts`] snapshot; each process gets a stable [`AttestCode`].

mod answers;
mod facts;
mod message;
mod seen;
mod settings;
mod verdict;

use crate::ClientFacts;
use answers::Unproven;
pub use answers::parse_client_list;
pub use facts::{
    ATTEST_SCHEMA, AttestFacts, CLIENT_ENVIRON_VARS, PipeDirectorySource, ServerFacts,
    stat_start_time,
};
pub use message::{AttestWords, same_process};
use seen::{Seen, listing, seen};
pub use settings::{ATTEST_DEVICE, ServerSettings, attest_settings_commands};
pub use verdict::{AttestCode, Attestation, LikelyCause, ProcessAttestation, Role};

use crate::namespace;
use crate::served::{self, effective_uid};
use crate::{DEFAULT_PIPE_DIRECTORY, OsText};

/// `Err` with [`same_process`]'s message when the two PIDs are one: a usage error in every
/// front end (the CLI's `attest` and `doctor`, the Python `attest()`, a replayed snapshot).
///
/// # Errors
/// The two PIDs are equal.
pub fn distinct_pids(learner: i64, collector: i64) -> Result<(), String> {
    if learner == collector {
        Err(same_process(learner))
    } else {
        Ok(())
    }
}

/// Judges an attestation snapshot: attested when both PIDs are listed as clients of the same
/// server PID, whose UID is theirs, by the daemon on the snapshot's pipe directory. Its
/// messages name the command line's options ([`AttestWords::CLI`]).
pub fn attest(facts: &AttestFacts) -> Attestation {
    attest_worded(facts, AttestWords::CLI)
}

/// [`attest`], with messages that name the caller's options (`words`): the Python API's
/// keywords instead of the command line's flags, for example. Only the words differ.
pub fn attest_worded(facts: &AttestFacts, words: AttestWords) -> Attestation {
    let dir = facts.pipe_directory.as_bytes();
    let servers = answers::servers(facts.server_query.as_ref(), dir);
    let listings: Vec<(i64, Result<Vec<i64>, Unproven>)> = match &servers {
        Ok(pids) => pids
            .iter()
            .map(|&pid| (pid, listing(facts, pid, dir)))
            .collect(),
        Err(_) => Vec::new(),
    };
    let daemon = served::identify_in(facts.daemon_process.as_ref(), facts.pid_file.as_ref(), dir);
    let daemon_namespace = match &daemon {
        served::DaemonProcess::Found(process) => process.pid_namespace.as_deref(),
        served::DaemonProcess::Unknown(_) => None,
    };
    // The daemon answered, but its pid file's PID is not running here.
    let split = servers
        .is_ok()
        .then(|| {
            crate::daemon_identity::lock_split(facts.daemon_process.as_ref())
                .map(crate::message::daemon_identity::lock_split)
                .or_else(|| {
                    namespace::pid_file_split(facts.pid_file.as_ref())
                        .map(crate::message::namespace::pid_file_split)
                })
        })
        .flatten();
    let seen = |client: &ClientFacts| match namespace::in_daemon_namespace(
        client,
        daemon_namespace,
        facts.observer_pid_namespace.as_deref(),
    ) {
        // A PID given from the daemon's namespace need not exist in this one.
        Ok(pid) if client.exists == Some(false) && split.is_some() => Seen::Unknown(Unproven {
            code: AttestCode::PidNamespaceDiffers,
            detail: message::not_running_here(pid, split.as_deref().unwrap_or_default()),
        }),
        Ok(pid) => match (seen(pid, &servers, &listings), &split) {
            (Seen::NotListed, Some(detail)) => Seen::Unknown(Unproven {
                code: AttestCode::PidNamespaceDiffers,
                detail: message::not_listed_split(pid, detail),
            }),
            (seen, _) => seen,
        },
        Err(why) => Seen::Unknown(Unproven {
            code: AttestCode::PidNamespaceDiffers,
            detail: crate::message::namespace::pid_untranslatable(&why),
        }),
    };
    let (learner_seen, collector_seen) = (seen(&facts.learner), seen(&facts.collector));
    let context = Context {
        facts,
        words,
        servers: servers.as_deref().unwrap_or_default(),
        multiuser: served::daemon_multiuser(&daemon) == Some(true),
    };
    let learner = context.judge(
        Role::Learner,
        &facts.learner,
        &learner_seen,
        &collector_seen,
    );
    let collector = context.judge(
        Role::Collector,
        &facts.collector,
        &collector_seen,
        &learner_seen,
    );
    let server_settings = learner
        .server_pid
        .and_then(|server| settings::read(facts, server));
    // Two roles on one PID prove nothing about two processes: never attested (the front ends
    // refuse it before observing; this keeps the rule in the policy too).
    let attested = facts.learner.pid != facts.collector.pid
        && learner.code == AttestCode::Attached
        && collector.code == AttestCode::Attached
        && learner.server_pid.is_some()
        && learner.server_pid == collector.server_pid
        && !server_settings
            .as_ref()
            .is_some_and(ServerSettings::is_fault);
    let server_pid = learner.server_pid.filter(|_| attested);
    Attestation {
        attested,
        pipe_directory: facts.pipe_directory.to_string_lossy(),
        pipe_directory_source: facts.pipe_directory_source,
        server_pid,
        server_uid: server_pid.and_then(|pid| server_uid(facts, pid)),
        servers: servers.unwrap_or_default(),
        learner,
        collector,
        rounds: facts.rounds,
        elapsed_ms: facts.elapsed_ms,
        host_name: facts.host_name.as_ref().map(OsText::to_string_lossy),
        daemon_multiuser: served::daemon_multiuser(&daemon),
        server_settings,
    }
}

/// The effective UID of a listed server, from its recorded process, when that process is
/// proven to be an MPS server (comm and `argv[0]`, where read).
fn server_uid(facts: &AttestFacts, server: i64) -> Option<u32> {
    let process = &facts.servers.iter().find(|s| s.pid == server)?.process;
    if namespace::not_a_server(process).is_some() {
        return None;
    }
    effective_uid(process.status_uid.as_deref()?)
}

/// Why a listed server's recorded process is not an MPS server, if it is not.
fn server_problem(facts: &AttestFacts, server: i64) -> Option<namespace::NotAServer> {
    let process = &facts.servers.iter().find(|s| s.pid == server)?.process;
    namespace::not_a_server(process)
}

/// A client's effective UID.
fn client_uid(client: &ClientFacts) -> Option<u32> {
    effective_uid(client.status_uid.as_deref()?)
}

/// The pipe directory a client's CUDA uses, when its environment was read.
fn client_pipe_directory(client: &ClientFacts) -> Option<&[u8]> {
    let environ = client.environ.as_ref()?;
    Some(match environ.get("CUDA_MPS_PIPE_DIRECTORY") {
        Some(dir) if !dir.as_bytes().is_empty() => dir.as_bytes(),
        _ => DEFAULT_PIPE_DIRECTORY.as_bytes(),
    })
}

struct Context<'a> {
    facts: &'a AttestFacts,
    words: AttestWords,
    servers: &'a [i64],
    /// The daemon's multi-user mode is proven: its root server serves every user.
    multiuser: bool,
}

impl Context<'_> {
    /// Whether a server of UID `server` serves a client of UID `client`: the same user, or the
    /// root server of a daemon whose multi-user mode is proven (shared notes gpu-truth.md §8).
    fn serves(&self, server: u32, client: u32) -> bool {
        server == client || (self.multiuser && server == 0)
    }

    fn judge(
        &self,
        role: Role,
        client: &ClientFacts,
        seen: &Seen,
        other: &Seen,
    ) -> ProcessAttestation {
        let env = |name: &str| {
            client
                .environ
                .as_ref()
                .and_then(|e| e.get(name))
                .map(OsText::to_string_lossy)
        };
        let mut verdict = ProcessAttestation {
            pid: client.pid,
            code: AttestCode::Attached,
            likely_cause: None,
            server_pid: None,
            uid: client_uid(client),
            pipe_directory_env: env("CUDA_MPS_PIPE_DIRECTORY"),
            cuda_visible_devices: env("CUDA_VISIBLE_DEVICES"),
            environ_read: client.environ.is_some(),
            message: None,
            start_time: client.first_start_time.or(client.start_time),
            active_thread_percentage_env: env("CUDA_MPS_ACTIVE_THREAD_PERCENTAGE"),
            pinned_device_mem_limit_env: env("CUDA_MPS_PINNED_DEVICE_MEM_LIMIT"),
        };
        let (code, cause) = self.decide(client, seen, other, &mut verdict);
        verdict.code = code;
        verdict.likely_cause = cause;
        if code != AttestCode::Attached {
            verdict.message = Some(message::render(&message::Subject {
                role,
                client,
                verdict: &verdict,
                facts: self.facts,
                words: self.words,
                seen_detail: match seen {
                    Seen::Unknown(unproven) => Some(unproven.detail.as_str()),
                    _ => None,
                },
                other_server: match other {
                    Seen::Listed(server) => Some(*server),
                    _ => None,
                },
            }));
        }
        verdict
    }

    fn decide(
        &self,
        client: &ClientFacts,
        seen: &Seen,
        other: &Seen,
        verdict: &mut ProcessAttestation,
    ) -> (AttestCode, Option<LikelyCause>) {
        if let Some(code) = liveness(client) {
            // Absent here while the daemon runs in another PID namespace: not known to have
            // ended, only not visible from this one.
            if let (true, Seen::Unknown(unproven)) = (client.exists == Some(false), seen)
                && unproven.code == AttestCode::PidNamespaceDiffers
            {
                return (unproven.code, None);
            }
            return (code, None);
        }
        match seen {
            Seen::Unknown(unproven) => (unproven.code, None),
            Seen::Listed(server) => {
                verdict.server_pid = Some(*server);
                let code = match (verdict.uid, server_uid(self.facts, *server)) {
                    (Some(own), Some(theirs)) if !self.serves(theirs, own) => {
                        AttestCode::ServerOfAnotherUser
                    }
                    (Some(_), Some(_)) => match other {
                        Seen::Listed(elsewhere) if elsewhere != server => {
                            AttestCode::ClientOfAnotherServer
                        }
                        _ => AttestCode::Attached,
                    },
                    _ => AttestCode::UidUnproven,
                };
                (code, None)
            }
            Seen::NotListed => (AttestCode::NotAClient, self.cause(client, verdict.uid)),
        }
    }

    fn cause(&self, client: &ClientFacts, uid: Option<u32>) -> Option<LikelyCause> {
        if client_pipe_directory(client)
            .is_some_and(|dir| dir != self.facts.pipe_directory.as_bytes())
        {
            return Some(LikelyCause::OtherPipeDirectory);
        }
        if self.servers.is_empty() {
            return Some(LikelyCause::NoServerRunning);
        }
        let owners: Option<Vec<u32>> = self
            .servers
            .iter()
            .map(|&s| server_uid(self.facts, s))
            .collect();
        match (uid, owners) {
            (Some(uid), Some(owners)) if !owners.iter().any(|&owner| self.serves(owner, uid)) => {
                Some(LikelyCause::UidDiffersFromServer)
            }
            _ => None,
        }
    }
}

/// `not-running` or `process-unobservable`, or `None` when the process runs. A PID whose start
/// time changed since it was pinned names another process: the one first observed has exited.
/// One whose start time can no longer be read is unproven.
fn liveness(client: &ClientFacts) -> Option<AttestCode> {
    if let Some(pinned) = client.first_start_time
        && client.exists != Some(false)
    {
        match client.start_time {
            Some(now) if now != pinned => return Some(AttestCode::NotRunning),
            Some(_) => {}
            None => return Some(AttestCode::ProcessUnobservable),
        }
    }
    match (client.exists, client.state.as_deref()) {
        (Some(false), _) => Some(AttestCode::NotRunning),
        (_, Some(state)) if state.starts_with(['Z', 'X']) => Some(AttestCode::NotRunning),
        (Some(true), Some(_)) => None,
        _ => Some(AttestCode::ProcessUnobservable),
    }
}
