//! The words of PID namespaces ([`crate::namespace`]): a listed server PID that names another
//! process here, a client whose PID the daemon's namespace numbers otherwise, and a pid file
//! that shows the daemon runs in another namespace.

use crate::namespace::{NotAServer, PidUntranslatable, SERVER_PROGRAM};

/// Why the process under a listed server PID is not an MPS server.
pub(crate) fn not_a_server(why: &NotAServer) -> String {
    match why {
        NotAServer::Comm { pid, comm } => format!(
            "PID {pid} here is {comm:?}, not an MPS server (the daemon's PIDs are those of its PID namespace)"
        ),
        NotAServer::Program { pid, argv0 } => format!(
            "PID {pid} here runs {argv0:?}, not {SERVER_PROGRAM} (a reused PID, or another PID namespace's process)"
        ),
    }
}

/// Why a client's PID as the daemon sees it cannot be known.
pub(crate) fn pid_untranslatable(why: &PidUntranslatable) -> String {
    match why {
        PidUntranslatable::NspidUnread { pid, daemon } => format!(
            "PID {pid} is in the daemon's PID namespace {daemon}, but its NSpid line was not read"
        ),
        PidUntranslatable::OtherNamespace {
            pid,
            own,
            daemon,
            observer,
        } => format!(
            "PID {pid} is in PID namespace {own}, the control daemon in {daemon}, and this attester in {}: its PID as the daemon sees it cannot be told from here",
            observer.as_deref().unwrap_or("an unknown one")
        ),
    }
}

/// How the daemon's pid file, naming `pid`, shows the daemon runs in another PID namespace.
pub(crate) fn pid_file_split(pid: i64) -> String {
    format!(
        "the control daemon answers, but its pid file names PID {pid}, which is not running in this PID namespace: the daemon runs in another one"
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn another_process_under_a_server_pid_is_named() {
        let comm = NotAServer::Comm {
            pid: 4428,
            comm: "bash".to_owned(),
        };
        assert_eq!(
            not_a_server(&comm),
            "PID 4428 here is \"bash\", not an MPS server (the daemon's PIDs are those of its PID namespace)"
        );
        let unread = PidUntranslatable::NspidUnread {
            pid: 11801,
            daemon: "pid:[4026532999]".to_owned(),
        };
        assert_eq!(
            pid_untranslatable(&unread),
            "PID 11801 is in the daemon's PID namespace pid:[4026532999], but its NSpid line was not read"
        );
    }
}
