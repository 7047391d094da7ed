//! The recorded settings session's answers, as the checks of what the processes will be
//! served with read them, and the GPU's device ordinal in the daemon's numbering.

use super::Context;
use crate::ReadOnlyCommand;
use crate::served::DaemonProcess;
use crate::session;

/// How to record what a v1/v2 snapshot never asked.
pub(super) const CAPTURE_AGAIN: &str = "capture the host again with this mps-preflight, which asks the daemon (with --require-verified this is a rejection)";

/// The recorded settings session's answers, or why there are none.
pub(super) type Answers<'a> = Result<Vec<(ReadOnlyCommand, Vec<&'a str>)>, String>;

pub(super) fn settings<'a>(context: &Context<'a>) -> Answers<'a> {
    let record = context.facts.settings_query.as_ref().ok_or_else(|| {
        "the snapshot holds no settings query (captured before schema v3)".to_owned()
    })?;
    session::session_answers(record, context.directory.as_bytes())
}

/// The answer to `command`, or why there is none.
pub(super) fn answer<'a>(
    answers: &'a Answers<'_>,
    command: ReadOnlyCommand,
) -> Result<&'a [&'a str], String> {
    let answers = answers.as_ref().map_err(Clone::clone)?;
    answers
        .iter()
        .find(|(asked, _)| *asked == command)
        .map(|(_, lines)| lines.as_slice())
        .ok_or_else(|| format!("the settings query did not ask `{}`", command.line()))
}

/// The GPU's ordinal as the daemon numbers its devices: its position in the daemon's
/// `CUDA_VISIBLE_DEVICES` (every GPU when unset), mapped through the host table only when the
/// daemon's order is known to match it (the rule of the scope check).
pub(super) fn daemon_ordinal(context: &Context<'_>) -> Result<u32, String> {
    let daemon = match &context.daemon {
        DaemonProcess::Found(daemon) => daemon,
        DaemonProcess::Unknown(why) => {
            return Err(format!(
                "which device number the daemon gives this GPU is unknown: {why}"
            ));
        }
    };
    let environ = daemon.environ.as_ref().ok_or_else(|| {
        format!(
            "which device number the daemon gives this GPU is unknown: /proc/{}/environ was not read",
            daemon.pid
        )
    })?;
    let mask = environ
        .get("CUDA_VISIBLE_DEVICES")
        .map(crate::OsText::as_bytes);
    let placement = gpu_uuid::place(mask, context.table)
        .map_err(|err| format!("the daemon's CUDA_VISIBLE_DEVICES: {err}"))?;
    let pci = environ
        .get("CUDA_DEVICE_ORDER")
        .is_some_and(|order| order.as_bytes() == b"PCI_BUS_ID");
    if placement.relies_on_index_order() && !pci && !context.table.is_homogeneous() {
        return Err(
            "on this mixed-model host the daemon's CUDA device order may differ from nvidia-smi's"
                .to_owned(),
        );
    }
    let rows = context.table.rows();
    placement
        .host_indices()
        .iter()
        .position(|&index| {
            usize::try_from(index)
                .ok()
                .and_then(|i| rows.get(i))
                .is_some_and(|row| row.uuid == context.gpu)
        })
        .and_then(|position| u32::try_from(position).ok())
        .ok_or_else(|| "the daemon does not serve this GPU".to_owned())
}
