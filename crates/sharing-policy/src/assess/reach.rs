//! Whether the judged user's MPS server can reach the pipe directory (docs/mps-daemon.md,
//! "The job's user can reach the pipe directory"; notes row 6): the server runs as the
//! client's UID, so a pipe directory under a 0700 parent passes a root probe while every
//! non-root client's server crash-loops with EACCES. Judged for `--as-user`, else the caller,
//! with POSIX rules ([`crate::pipe_reach`]). What cannot be told is unverified, never a pass; a
//! v4 snapshot that did not record it is unverified too. A snapshot from before v4 never
//! recorded it and is judged as it was then, as for the other v4 checks.

use super::{Context, Findings, Served};
use crate::{Blocked, Code, Finding, Need, Reach};

/// How to make the answer verifiable.
const VERIFY: &str = "probe with this version on the host (it records the mode, owner and group of every directory from / down to the pipe and log directories), give --as-user with the job's user, and where an ACL or SELinux is in play check as that user that it can write <pipe>/log and connect to <pipe>/control (with --require-verified this is a rejection)";

/// Judges the recorded facts for the request's user; returns how the reach was proven (the
/// evidence's `pipe_access`), or `None` when it was not.
pub(super) fn check(
    context: &Context<'_>,
    served: &mut Served,
    findings: &mut Findings,
) -> Option<&'static str> {
    if context.facts.pipe_access.is_none() && context.facts.schema != crate::SCHEMA {
        return None;
    }
    let Some(uid) = context.request.judged_for_uid(context.facts) else {
        let why = "the user the request is judged for is unknown (no --as-user, and the snapshot recorded no caller)".to_owned();
        unverified(
            context,
            served,
            findings,
            "that the job's user can reach the pipe directory",
            why,
        );
        return None;
    };
    let what = format!("that the MPS server of UID {uid} can reach the pipe directory");
    let reach = match &context.facts.pipe_access {
        Some(facts) if uid != 0 && !of_this_directory(context, facts) => Reach::Unverified(
            "the modes recorded are of another pipe directory than the effective one".to_owned(),
        ),
        Some(facts) => crate::pipe_reach(facts, uid),
        None if uid == 0 => Reach::Root,
        None => Reach::Unverified(format!(
            "the snapshot ({}) did not record the modes on the way to the pipe directory",
            context.facts.schema
        )),
    };
    match reach {
        Reach::Root => Some("root"),
        Reach::Granted => Some("modes"),
        Reach::Blocked(blocked) => {
            findings.push(|| unreachable(context, uid, &blocked));
            None
        }
        Reach::Unverified(why) => {
            unverified(context, served, findings, &what, why);
            None
        }
    }
}

/// Whether `facts` were recorded for the effective pipe directory: its components, and
/// `control` and `log` in it.
fn of_this_directory(context: &Context<'_>, facts: &crate::PipeAccessFacts) -> bool {
    let prefixes = crate::path_prefixes(context.directory);
    facts.pipe_path.len() == prefixes.len()
        && facts
            .pipe_path
            .iter()
            .zip(&prefixes)
            .all(|(entry, prefix)| entry.path == *prefix)
        && facts.control.path == crate::facts::join(context.directory, crate::CONTROL_PIPE_NAME)
        && facts.log_fifo.path == crate::facts::join(context.directory, crate::LOG_FIFO_NAME)
}

fn unverified(
    context: &Context<'_>,
    served: &mut Served,
    findings: &mut Findings,
    what: &str,
    why: String,
) {
    let finding = super::unverified_finding(context, Code::PipeAccessUnverified, what, why, VERIFY);
    served.unverified(context.request, findings, finding);
}

fn unreachable(context: &Context<'_>, uid: u32, blocked: &Blocked) -> Finding {
    let path = blocked.path.to_string_lossy();
    let (class, letter) = (blocked.class.letter(), blocked.need.letter());
    let (needed, whom) = (
        match blocked.need {
            Need::Search => "search (x) on the directory",
            Need::Connect => "write (w) on the control socket, to connect to it",
            Need::WriteFifo => "write (w) on the log FIFO",
        },
        match blocked.class {
            crate::Class::Owner => "as its owner",
            crate::Class::Group => "through its group",
            crate::Class::Other => "as others",
        },
    );
    let what = format!(
        "{path} (mode {:04o}, owner {}, group {}) denies UID {uid} {needed} {whom}",
        blocked.mode, blocked.uid, blocked.gid
    );
    let fix = format!(
        "chmod {class}+{letter} {path}, or start the daemon with a CUDA_MPS_PIPE_DIRECTORY that every job user can reach (each directory above it searchable by others)"
    );
    Finding::new(
        Code::PipeDirectoryUnreachable,
        context.words(),
        [
            context.words().mps(),
            " cannot share GPU ",
            &context.gpu.to_string(),
            " through ",
            &context.control_path(),
            ": the MPS server runs as the client's user, and ",
            &what,
            ", so the server crash-loops with EACCES while the daemon still answers queries. To fix it, ",
            &fix,
            ".",
        ]
        .concat(),
        what,
        fix,
    )
}
