//! The recorded settings session's answers, as the checks of what the processes will be
//! served with read them, and the GPU's device ordinal in the daemon's numbering. Reads only;
//! the reasons it gives are worded in `message/answers.rs`.

use super::{Context, message};
use crate::ReadOnlyCommand;
use crate::served::DaemonProcess;
use crate::session;

/// The daemon's recorded answers the checks read: those of the first session (the default
/// pinned-memory limits it asked with the server list; none in older snapshots), then those of
/// the settings session, or why that one has none.
pub(super) struct Answers<'a> {
    first: Vec<(ReadOnlyCommand, Vec<&'a str>)>,
    settings: Result<Vec<(ReadOnlyCommand, Vec<&'a str>)>, String>,
}

impl Answers<'_> {
    /// Whether the settings session was never recorded or cannot be read.
    pub(super) fn settings_unread(&self) -> bool {
        self.settings.is_err()
    }
}

pub(super) fn settings<'a>(context: &Context<'a>) -> Answers<'a> {
    // A `Context` exists only once the liveness check judged the daemon query live (this
    // probe's, to this pipe directory, retried only after transient outcomes), so its answers
    // are read without judging it again.
    let first = context
        .facts
        .daemon_query
        .as_ref()
        .and_then(crate::daemon::session_answers)
        .unwrap_or_default();
    let settings = match context.facts.settings_query.as_ref() {
        Some(record) => session::session_answers(record, context.directory.as_bytes())
            .map_err(|why| crate::message::session::session_unreadable(&why)),
        // A first session that asked the defaults leaves nothing to ask on an idle daemon.
        None if !first.is_empty() => Ok(Vec::new()),
        None => Err(message::answers::no_settings_query()),
    };
    Answers { first, settings }
}

/// The answer to `command`, or why there is none.
pub(super) fn answer<'a>(
    answers: &'a Answers<'_>,
    command: ReadOnlyCommand,
) -> Result<&'a [&'a str], String> {
    let asked = |list: &'a Vec<(ReadOnlyCommand, Vec<&'a str>)>| {
        list.iter()
            .find(|(asked, _)| *asked == command)
            .map(|(_, lines)| lines.as_slice())
    };
    if let Some(lines) = asked(&answers.first) {
        return Ok(lines);
    }
    let settings = answers.settings.as_ref().map_err(Clone::clone)?;
    asked(settings).ok_or_else(|| message::answers::not_asked(command))
}

/// The GPU's ordinal as the daemon numbers its devices: its position in the daemon's
/// `CUDA_VISIBLE_DEVICES` (every GPU when unset), mapped through the host table only when the
/// daemon's order is known to match it (the rule of the scope check).
pub(super) fn daemon_ordinal(context: &Context<'_>) -> Result<u32, String> {
    let daemon = match &context.daemon {
        DaemonProcess::Found(daemon) => daemon,
        DaemonProcess::Unknown(why) => {
            return Err(message::answers::daemon_unknown(why));
        }
    };
    let environ = daemon
        .environ
        .as_ref()
        .ok_or_else(|| message::answers::environ_unread(daemon.pid))?;
    let mask = environ
        .get("CUDA_VISIBLE_DEVICES")
        .map(crate::OsText::as_bytes);
    let placement = gpu_uuid::place(mask, context.table)
        .map_err(|err| message::answers::visible_devices(&err))?;
    let pci = environ
        .get("CUDA_DEVICE_ORDER")
        .is_some_and(|order| order.as_bytes() == b"PCI_BUS_ID");
    if placement.relies_on_index_order() && !pci && !context.table.is_homogeneous() {
        return Err(message::answers::order_may_differ());
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
        .ok_or_else(message::answers::gpu_not_served)
}
