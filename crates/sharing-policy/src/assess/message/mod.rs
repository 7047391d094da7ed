//! The wording of the checks of an explicit request: the walk (`assess/mod.rs`) and each
//! family's module decide; this layer words. Here, the sentence shapes every family shares (an
//! unverified prerequisite, a rejection about the daemon at the control path, an inconsistent
//! snapshot), the texts they name (the control path, the command that starts a daemon) and the
//! fix texts several families give; in `message/<family>.rs`, each family's own sentences,
//! reasons and fixes, from the case its check decided. Attest's sentences are in
//! `attest/message.rs`.

pub(super) mod answers;
pub(super) mod apps;
pub(super) mod capacity;
pub(super) mod clients;
pub(super) mod compute;
pub(super) mod daemon_identity;
pub(super) mod health;
pub(super) mod identity;
pub(super) mod limits;
pub(super) mod liveness;
pub(super) mod log;
pub(super) mod owner;
pub(super) mod pipe;
pub(super) mod reach;
pub(super) mod request;
pub(super) mod scope;
pub(super) mod server_limits;
pub(super) mod shm;

use gpu_uuid::GpuUuid;

use super::Context;
use crate::text::clause;
use crate::{Code, EnvFacts, Finding, Vocabulary, start};

/// How to let the probe prove the daemon's identity (the daemon's identity and scope families).
pub(super) const PROVE: &str = "run the probe in the control daemon's PID namespace (on Kubernetes, a pod with hostPID: true) where /proc/locks is readable, check that the daemon runs (`ps -C nvidia-cuda-mps-control`) as root or as the owner of the pipe directory, and probe again (with --require-verified this is a rejection)";

/// How to record what a v1/v2 snapshot never asked (the clients and limits families).
pub(super) const CAPTURE_AGAIN: &str = "capture the host again with this mps-preflight, which asks the daemon (with --require-verified this is a rejection)";

/// A prerequisite that could not be observed, in the one shape every such finding has:
/// "`<mps>` could not verify `<what>`: `<why>`. To verify it, `<fix>`."
pub(super) fn unverified_finding(
    context: &Context<'_>,
    code: Code,
    what: &str,
    why: String,
    fix: &str,
) -> Finding {
    let message = [
        context.words().mps(),
        " could not verify ",
        what,
        ": ",
        clause(&why),
        ". To verify it, ",
        fix,
        ".",
    ]
    .concat();
    Finding::new(code, context.words(), message, why, fix.to_owned())
}

/// A rejection about the daemon at this GPU's control path: "`MPS` cannot share GPU `gpu`
/// through the control daemon at `path`: `found``effect`. To fix it, `fix`.", each name
/// standing for its text.
pub(super) fn daemon_rejection(
    context: &Context<'_>,
    code: Code,
    found: String,
    effect: &str,
    fix: String,
) -> Finding {
    let (gpu, path) = (context.gpu.to_string(), context.control_path());
    let subject = [
        " cannot share GPU ",
        &gpu,
        " through the control daemon at ",
        &path,
        ": ",
    ];
    with_fix(context, code, &subject, found, effect, fix)
}

/// The shape of a finding that says what was found, what follows from it, and how to fix it:
/// "`<mps>``<subject>``<found>``<effect>`. To fix it, `<fix>`.", each name standing for its
/// text (`subject` in pieces, so a GPU or a path is not joined twice). The reason is `found`.
pub(super) fn with_fix(
    context: &Context<'_>,
    code: Code,
    subject: &[&str],
    found: String,
    effect: &str,
    fix: String,
) -> Finding {
    let tail = [found.as_str(), effect, ". To fix it, ", &fix, "."];
    let message = [&[context.words().mps()], subject, &tail].concat().concat();
    Finding::new(code, context.words(), message, found, fix)
}

pub(super) fn inconsistent(words: Vocabulary, what: String) -> Finding {
    Finding::new(
        Code::InconsistentSnapshot,
        words,
        format!(
            "{} cannot use this host snapshot: {what}. Capture the host again with mps-preflight.",
            words.mps()
        ),
        what,
        "capture the host again with mps-preflight".to_owned(),
    )
}

/// The command that starts a daemon on `directory` with `env`'s log directory, pinned to the
/// GPU when it is known (the control pipe's and the daemon's messages both suggest it).
pub(super) fn start_command(directory: &str, env: &EnvFacts, pin: Option<GpuUuid>) -> String {
    let pin = pin.map(|uuid| {
        let mut text = String::with_capacity(40);
        uuid.push_to(&mut text);
        text
    });
    start::render(
        directory,
        env.cuda_mps_log_directory.as_ref(),
        pin.as_deref(),
    )
}

/// `<directory>/control` as text: `facts::join`, which adds a `/` unless there is one.
pub(super) fn control_path(directory: &str) -> String {
    let name = crate::CONTROL_PIPE_NAME;
    let mut path = String::with_capacity(directory.len() + 1 + name.len());
    path.push_str(directory);
    if !path.ends_with('/') {
        path.push('/');
    }
    path.push_str(name);
    path
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::OsText;

    proptest::proptest! {
        #[test]
        fn control_path_joins_lossy_text_as_bytes_join(bytes in proptest::collection::vec(
            // `/`, ASCII, and bytes that start, continue or break a UTF-8 sequence.
            proptest::sample::select(vec![b'/', b'a', 0xc3, 0xa9, 0xe2, 0x82, 0xff]), 0..12)) {
            let directory = OsText::from_bytes(bytes);
            let joined = crate::facts::join(&directory, crate::CONTROL_PIPE_NAME);
            proptest::prop_assert_eq!(
                control_path(&directory.to_string_lossy()),
                joined.to_string_lossy()
            );
        }
    }
}
