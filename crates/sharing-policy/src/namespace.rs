//! PID namespaces: the daemon prints PIDs as its own PID namespace sees them
//! (NVIDIA's docs, for `ps` and `terminate_client`; shared notes gpu-truth.md §2, §10 items 2
//! and 3), while `attest` is given PIDs of its own namespace and reads its own `/proc`.

use crate::{ClientFacts, PidFileFacts, ProcessFacts};

/// The comm of every MPS process (15 bytes of `nvidia-cuda-mps-server` and of the control).
const MPS_COMM: &str = "nvidia-cuda-mps";
/// `argv[0]`'s base name of a server: the daemon `execlp`s it by name (notes §8).
const SERVER_PROGRAM: &str = "nvidia-cuda-mps-server";

/// Why the process recorded under a listed server PID is not proven to be an MPS server, if
/// it is not: its comm, where read, must be `nvidia-cuda-mps`, and its `argv[0]`'s base name,
/// where read, `nvidia-cuda-mps-server`. Another process under that number means the PID
/// names something else here (another PID namespace, or a reused PID): its owner proves nothing.
pub(crate) fn not_a_server(process: &ProcessFacts) -> Option<String> {
    if let Some(comm) = &process.comm
        && comm != MPS_COMM
    {
        return Some(format!(
            "PID {} here is {comm:?}, not an MPS server (the daemon's PIDs are those of its PID namespace)",
            process.pid
        ));
    }
    let argv0 = process.cmdline.as_ref()?.first()?;
    let name = argv0.to_string_lossy();
    let base = name.rsplit('/').next().unwrap_or_default();
    (base != SERVER_PROGRAM).then(|| {
        format!(
            "PID {} here runs {name:?}, not {SERVER_PROGRAM} (a reused PID, or another PID namespace's process)",
            process.pid
        )
    })
}

/// The last PID of an `NSpid:` line: the process's PID in its own namespace.
fn own_pid(nspid: &str) -> Option<i64> {
    let last = nspid.split_ascii_whitespace().last()?;
    crate::Pid::parse(last).map(crate::Pid::get)
}

/// The client's PID as the daemon's PID namespace numbers it, or why it cannot be known.
/// Unknown namespaces (older snapshots, unreadable links) leave the PID as given.
pub(super) fn in_daemon_namespace(
    client: &ClientFacts,
    daemon: Option<&str>,
    observer: Option<&str>,
) -> Result<i64, String> {
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
            .ok_or_else(|| {
                format!(
                    "PID {} is in the daemon's PID namespace {daemon}, but its NSpid line was not read",
                    client.pid
                )
            });
    }
    if observer == Some(daemon) {
        // The attester shares the daemon's namespace: its PIDs are the daemon's.
        return Ok(client.pid);
    }
    Err(format!(
        "PID {} is in PID namespace {own}, the control daemon in {daemon}, and this attester in {}: its PID as the daemon sees it cannot be told from here",
        client.pid,
        observer.unwrap_or("an unknown one")
    ))
}

/// Why the daemon looks like it runs in another PID namespace than the attester, when its
/// pid file shows it: the daemon answered (the caller checks), yet the PID its pid file names
/// (550+ write it at start) is not running here. A process that is not listed is then
/// `pid-namespace-differs`, not `not-a-client`.
pub(super) fn pid_file_split(pid_file: Option<&PidFileFacts>) -> Option<String> {
    let facts = pid_file?;
    let contents = facts.contents.as_ref()?;
    if facts.pid_alive != Some(false) || contents.truncated || contents.non_utf8 {
        return None;
    }
    let pid = crate::parse_pid(&contents.text)?;
    Some(format!(
        "the control daemon answers, but its pid file names PID {pid}, which is not running in this PID namespace: the daemon runs in another one"
    ))
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
        assert!(in_daemon_namespace(&client(6, pod, "6"), Some(host), Some(pod)).is_err());
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
        assert!(pid_file_split(Some(&facts(Some(false), "2718"))).is_some());
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
        assert!(not_a_server(&server).is_some());
        server.comm = Some("bash".to_owned());
        assert!(not_a_server(&server).is_some());
    }
}
