//! The words of the served facts ([`crate::served`]): why a listed server's owner, the control
//! daemon's process or the daemon's GPU scope is not known, and what a scope excludes.

use gpu_uuid::GpuUuid;

use crate::proc_text::FileUnread;
use crate::served::{NotIdentified, OwnerUnknown, ScanFound, ScopeUnknown};
use crate::{DAEMON_QUERY_PROGRAM, OsText};

/// Why a listed server's owner is not known.
pub(crate) fn owner_unknown(why: &OwnerUnknown) -> String {
    match why {
        OwnerUnknown::NotObserved => "its process was not observed".to_owned(),
        OwnerUnknown::NotAServer(why) => super::namespace::not_a_server(why),
        OwnerUnknown::StatusUnread(why) => super::proc_text::file_unread(why),
        OwnerUnknown::UidUnparsed(line) => {
            format!("its /proc status Uid line {line:?} does not parse")
        }
    }
}

/// Why the control daemon's process is not identified.
pub(crate) fn not_identified(why: &NotIdentified<'_>) -> String {
    match why {
        NotIdentified::NotObserved => {
            "the snapshot holds no observation of the daemon's process".to_owned()
        }
        NotIdentified::NotByLock(why) => super::daemon_identity::not_by_lock(why),
        NotIdentified::ReusedPid(process) => format!(
            "the pid file names PID {}, whose command line {:?} is not the control program (a stale pid file whose PID was reused)",
            process.pid,
            process
                .cmdline
                .iter()
                .flatten()
                .map(OsText::to_string_lossy)
                .collect::<Vec<_>>()
        ),
        NotIdentified::PidFileProcessNotObserved => {
            "the pid file's daemon process was not observed".to_owned()
        }
        NotIdentified::Scan { search, found } => {
            let scan = match &search.stopped {
                Some(why) => format!(
                    "a scan of {} that stopped after {} entries ({why})",
                    search.proc_root.to_string_lossy(),
                    search.scanned
                ),
                None => format!("a scan of {}", search.proc_root.to_string_lossy()),
            };
            match found {
                ScanFound::None => format!(
                    "{scan} found no `{DAEMON_QUERY_PROGRAM} -d` process serving this pipe directory{}",
                    search
                        .error
                        .as_deref()
                        .map(|e| format!(" ({e})"))
                        .unwrap_or_default()
                ),
                ScanFound::Unreadable(daemons) => format!(
                    "{scan} found control daemon processes whose environment is unreadable, so which one serves this pipe directory is unknown: {}",
                    daemons
                        .iter()
                        .map(|p| super::proc_text::file_unread(&FileUnread::of(p, "environ")))
                        .collect::<Vec<_>>()
                        .join("; ")
                ),
                ScanFound::Several(daemons) => format!(
                    "{scan} found {} control daemons serving this pipe directory (PIDs {})",
                    daemons.len(),
                    crate::text::listed(daemons.iter().map(|p| p.pid))
                ),
            }
        }
    }
}

/// Why the daemon's GPU scope is not known.
pub(crate) fn scope_unknown(why: &ScopeUnknown) -> String {
    match why {
        ScopeUnknown::EnvironUnread(why) => super::proc_text::file_unread(why),
        ScopeUnknown::NotUtf8(shown) => {
            format!("the daemon's CUDA_VISIBLE_DEVICES {shown:?} is not UTF-8")
        }
        ScopeUnknown::Unplaceable(err) => format!("the daemon's mask: {err}"),
        ScopeUnknown::IndicesOnMixedHost(shown) => format!(
            "the daemon's mask {shown:?} is made of indices, and on this mixed-model host without CUDA_DEVICE_ORDER=PCI_BUS_ID in the daemon's environment they may name other GPUs than nvidia-smi's"
        ),
    }
}

/// What a daemon's mask that excludes the GPU selects: the GPUs it `served`.
pub(crate) fn excluded_detail(served: &[GpuUuid]) -> String {
    if served.is_empty() {
        "it makes no GPU visible".to_owned()
    } else {
        format!("it serves {}", crate::text::listed(served))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_unparsed_uid_line_is_quoted_and_an_empty_mask_serves_nothing() {
        let why = OwnerUnknown::UidUnparsed("1000".to_owned());
        assert_eq!(
            owner_unknown(&why),
            "its /proc status Uid line \"1000\" does not parse"
        );
        assert_eq!(excluded_detail(&[]), "it makes no GPU visible");
    }
}
