//! PID namespaces: the daemon prints PIDs as its own PID namespace sees them
//! (NVIDIA's docs, for `ps` and `terminate_client`; shared notes gpu-truth.md §2, §10 items 2
//! and 3), while `attest` is given PIDs of its own namespace and reads its own `/proc`.

use crate::{ClientFacts, PidFileFacts, ProcessFacts};

/// The comm of every MPS process (15 bytes of `nvidia-cuda-mps-server` and of the control).
const MPS_COMM: &str = "nvidia-cuda-mps";
/// `argv[0]`'s base name of a server: the daemon `execlp`s it by name (notes §8).
pub(crate) const SERVER_PROGRAM: &str = "nvidia-cuda-mps-server";

/// Why the process recorded under a listed server PID is not an MPS server.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum NotAServer {
    /// Its comm, as read, is not `nvidia-cuda-mps`.
    Comm { pid: i64, comm: String },
    /// Its `argv[0]` (shown lossily), as read, does not name [`SERVER_PROGRAM`].
    Program { pid: i64, argv0: String },
}

/// Why the process recorded under a listed server PID is not proven to be an MPS server, if
/// it is not: its comm, where read, must be `nvidia-cuda-mps`, and its `argv[0]`'s base name,
/// where read, `nvidia-cuda-mps-server`. Another process under that number means the PID
/// names something else here (another PID namespace, or a reused PID): its owner proves nothing.
pub(crate) fn not_a_server(process: &ProcessFacts) -> Option<NotAServer> {
    if let Some(comm) = &process.comm
        && comm != MPS_COMM
    {
        return Some(NotAServer::Comm {
            pid: process.pid,
            comm: comm.clone(),
        });
    }
    let argv0 = process.cmdline.as_ref()?.first()?.to_string_lossy();
    let base = argv0.rsplit('/').next().unwrap_or_default();
    (base != SERVER_PROGRAM).then_some(NotAServer::Program {
        pid: process.pid,
        argv0,
    })
}

/// The last PID of an `NSpid:` line: the process's PID in its own namespace.
fn own_pid(nspid: &str) -> Option<i64> {
    let last = nspid.split_ascii_whitespace().last()?;
    crate::Pid::parse(last).map(crate::Pid::get)
}

/// Why a client's PID as the daemon's PID namespace numbers it cannot be known.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum PidUntranslatable {
    /// The client is in the daemon's namespace (`daemon`, as its link reads), but its
    /// `NSpid:` line was not read.
    NspidUnread { pid: i64, daemon: String },
    /// The client (`own`), the daemon and the attester (`observer`, when read) are in
    /// namespaces that do not let the attester tell the client's PID as the daemon sees it.
    OtherNamespace {
        pid: i64,
        own: String,
        daemon: String,
        observer: Option<String>,
    },
}

/// The client's PID as the daemon's PID namespace numbers it, or why it cannot be known.
/// Unknown namespaces (older snapshots, unreadable links) leave the PID as given.
pub(super) fn in_daemon_namespace(
    client: &ClientFacts,
    daemon: Option<&str>,
    observer: Option<&str>,
) -> Result<i64, PidUntranslatable> {
    let (Some(daemon), Some(own)) = (daemon, client.pid_namespace.as_deref()) else {
        return Ok(client.pid);
    };
    if own == daemon {
        // Its PID in its own namespace, which is the daemon's.
        return client
            .nspid
            .as_deref()
            .and_then(own_pid)
            .or((observer == Some(daemon)).then_some(client.pid))
            .ok_or_else(|| PidUntranslatable::NspidUnread {
                pid: client.pid,
                daemon: daemon.to_owned(),
            });
    }
    if observer == Some(daemon) {
        // The attester shares the daemon's namespace: its PIDs are the daemon's.
        return Ok(client.pid);
    }
    Err(PidUntranslatable::OtherNamespace {
        pid: client.pid,
        own: own.to_owned(),
        daemon: daemon.to_owned(),
        observer: observer.map(str::to_owned),
    })
}

/// The PID the daemon's pid file names when it shows the daemon runs in another PID namespace
/// than the attester: the daemon answered (the caller checks), yet the PID its pid file names
/// (550+ write it at start) is not running here. A process that is not listed is then
/// `pid-namespace-differs`, not `not-a-client`.
pub(super) fn pid_file_split(pid_file: Option<&PidFileFacts>) -> Option<i64> {
    let facts = pid_file?;
    let contents = facts.contents.as_ref()?;
    if facts.pid_alive != Some(false) || contents.truncated || contents.non_utf8 {
        return None;
    }
    crate::parse_pid(&contents.text)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn client(pid: i64, ns: &str, nspid: &str) -> ClientFacts {
        ClientFacts {
            pid_namespace: Some(ns.to_owned()),
            nspid: Some(nspid.to_owned()),
            ..ClientFacts::new(pid)
        }
    }

    #[test]
    fn pids_are_translated_through_nspid_or_refused() {
        let (host, pod) = ("pid:[4026531836]", "pid:[4026532999]");
        // Attester on the host, client in a pod, daemon on the host: the host PID.
        assert_eq!(
            in_daemon_namespace(&client(11801, pod, "11801\t6"), Some(host), Some(host)),
            Ok(11801)
        );
        // Attester on the host, daemon and client in one container: the container's PID.
        assert_eq!(
            in_daemon_namespace(&client(11801, pod, "11801\t6"), Some(pod), Some(host)),
            Ok(6)
        );
        // Attester in a pod, daemon on the host: unknowable.
        assert_eq!(
            in_daemon_namespace(&client(6, pod, "6"), Some(host), Some(pod)),
            Err(PidUntranslatable::OtherNamespace {
                pid: 6,
                own: pod.to_owned(),
                daemon: host.to_owned(),
                observer: Some(pod.to_owned()),
            })
        );
        // Attester on the host, daemon and client in one container, no NSpid line read.
        let unread = ClientFacts {
            pid_namespace: Some(pod.to_owned()),
            ..ClientFacts::new(11801)
        };
        assert_eq!(
            in_daemon_namespace(&unread, Some(pod), Some(host)),
            Err(PidUntranslatable::NspidUnread {
                pid: 11801,
                daemon: pod.to_owned(),
            })
        );
        // Unknown namespaces: as given.
        assert_eq!(
            in_daemon_namespace(&client(6, pod, "6"), None, Some(pod)),
            Ok(6)
        );
        assert_eq!(
            in_daemon_namespace(&ClientFacts::new(6), Some(host), Some(pod)),
            Ok(6)
        );
    }

    #[test]
    fn a_pid_file_naming_no_process_here_shows_the_split() {
        let facts = |alive: Option<bool>, text: &str| PidFileFacts {
            path: crate::OsText::from("/tmp/nvidia-mps/nvidia-cuda-mps-control.pid"),
            contents: Some(crate::CapturedText::from_bytes(text.as_bytes(), false)),
            error: None,
            pid_alive: alive,
            process_name: None,
        };
        assert_eq!(
            pid_file_split(Some(&facts(Some(false), "2718"))),
            Some(2718)
        );
        assert_eq!(pid_file_split(Some(&facts(Some(true), "2718"))), None);
        assert_eq!(pid_file_split(Some(&facts(None, "2718"))), None);
        assert_eq!(pid_file_split(Some(&facts(Some(false), "x"))), None);
        assert_eq!(pid_file_split(None), None);
    }

    #[test]
    fn a_server_is_an_mps_server() {
        let mut server = ProcessFacts::new(4428);
        assert_eq!(not_a_server(&server), None, "nothing read: the UID decides");
        server.comm = Some("nvidia-cuda-mps".to_owned());
        server.cmdline = Some(vec![crate::OsText::from("nvidia-cuda-mps-server")]);
        assert_eq!(not_a_server(&server), None);
        server.cmdline = Some(vec![crate::OsText::from(
            "/usr/bin/nvidia-cuda-mps-control",
        )]);
        assert_eq!(
            not_a_server(&server),
            Some(NotAServer::Program {
                pid: 4428,
                argv0: "/usr/bin/nvidia-cuda-mps-control".to_owned()
            })
        );
        server.comm = Some("bash".to_owned());
        assert_eq!(
            not_a_server(&server),
            Some(NotAServer::Comm {
                pid: 4428,
                comm: "bash".to_owned()
            })
        );
    }
}
