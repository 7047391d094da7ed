//! The breakers of the `/dev/shm` family, and the capacity advisories (which never reject):
//! each starts from a served daemon whose `/dev/shm` is the caller's.

use sharing_policy::{
    CapacityFacts, Code, HostFacts, MemSize, OsText, ReadOnlyCommand, ShmFacts, ShmView, validate,
    warnings,
};

use crate::hosts;
use crate::props_breakers::{Breaker, pick};
use crate::props_served::{daemon_environ, make_served};
use crate::support::mps;

/// The daemon's PID in [`make_served`]'s scan.
const DAEMON: i64 = 2718;

fn view(path: &str, device: u64, inode: u64) -> ShmView {
    ShmView {
        path: OsText::from(path),
        device: Some(device),
        inode: Some(inode),
        free_bytes: Some(1 << 30),
        total_bytes: Some(2 << 30),
        mount_source: Some("0:26".to_owned()),
        mount_root: Some("/".to_owned()),
        errors: std::collections::BTreeMap::new(),
    }
}

/// A served host whose caller shares the daemon's `/dev/shm` (1 GiB free of 2 GiB), the
/// servers ACTIVE, the pinned-memory limit 10G.
pub(crate) fn make_shared(f: &mut HostFacts) {
    make_served(f);
    daemon_environ(f).insert("CUDA_DEVICE_ORDER".to_owned(), OsText::from("PCI_BUS_ID"));
    f.settings_query = hosts::settings(f, |command| match command {
        ReadOnlyCommand::GetServerStatus(_) => "ACTIVE\n".to_owned(),
        _ => "10G\n".to_owned(),
    });
    let mut daemon = view("/proc/2718/root/dev/shm", 26, 1);
    daemon.free_bytes = None;
    daemon.total_bytes = None;
    f.shm = Some(ShmFacts {
        caller: view("/dev/shm", 26, 1),
        daemon_pid: Some(DAEMON),
        daemon: Some(daemon),
    });
}

fn shm(f: &mut HostFacts) -> &mut ShmFacts {
    f.shm.as_mut().unwrap()
}

pub(crate) fn shm_breakers() -> Vec<Breaker> {
    vec![
        Breaker {
            name: "the caller's /dev/shm is not the daemon's",
            code: Code::ShmNotShared,
            apply: |_, f, s| {
                make_shared(f);
                let (device, inode) = pick(&[(27, 1), (26, 2), (99, 7)], s);
                let caller = &mut shm(f).caller;
                caller.device = Some(device);
                caller.inode = Some(inode);
            },
        },
        Breaker {
            name: "the daemon's /dev/shm unreadable, verification required",
            code: Code::ShmUnverified,
            apply: |r, f, s| {
                make_shared(f);
                r.require_verified = true;
                match s % 4 {
                    0 => shm(f).daemon = None,
                    1 => shm(f).daemon_pid = Some(4242),
                    2 => {
                        let daemon = shm(f).daemon.as_mut().unwrap();
                        daemon.device = None;
                        daemon.errors.insert(
                            "stat".to_owned(),
                            "Permission denied (os error 13)".to_owned(),
                        );
                    }
                    _ => {
                        r.min_shm = MemSize::parse_arg("1M");
                        shm(f).caller.free_bytes = None;
                    }
                }
            },
        },
        Breaker {
            name: "/dev/shm has less room than the minimum",
            code: Code::ShmBelowRequirement,
            apply: |r, f, s| {
                make_shared(f);
                r.min_shm = MemSize::parse_arg(pick(&["2G", "1025M", "64G"], s));
            },
        },
    ]
}

#[test]
fn a_shared_dev_shm_validates_and_records_its_room() {
    for (_, base) in hosts::all()
        .into_iter()
        .filter(|(n, _)| n.starts_with("healthy"))
    {
        let mut request = mps("cuda:0", Some("cuda:0"));
        let mut facts = base.clone();
        make_shared(&mut facts);
        request.require_verified = true;
        request.min_shm = MemSize::parse_arg("1G");
        let evidence = validate(&request, &facts).unwrap();
        assert_eq!(evidence.shm_free_bytes, Some(1 << 30));
        assert_eq!(evidence.shm_total_bytes, Some(2 << 30));
        assert!(evidence.advisories.is_empty());
    }
}

#[test]
fn advisories_are_warnings_never_rejections() {
    let base = hosts::all()
        .into_iter()
        .find(|(n, _)| *n == "healthy-socket-with-server")
        .unwrap()
        .1;
    let cases: [(Option<&str>, Option<&str>, &[Code]); 5] = [
        (Some("8"), None, &[Code::DeviceMaxConnectionsHigh]),
        (
            Some("2"),
            Some("1024 524288 files"),
            &[Code::DaemonOpenFilesLow],
        ),
        (
            Some(" 32 "),
            Some("4096 4096 files"),
            &[Code::DeviceMaxConnectionsHigh, Code::DaemonOpenFilesLow],
        ),
        (Some("x"), Some("unlimited unlimited files"), &[]),
        (None, Some("16384 16384 files"), &[]),
    ];
    for (connections, open_files, expected) in cases {
        for require_verified in [false, true] {
            let mut request = mps("cuda:0", Some("cuda:0"));
            request.require_verified = require_verified;
            let mut facts = base.clone();
            make_shared(&mut facts);
            facts.capacity = Some(CapacityFacts {
                device_max_connections: connections.map(OsText::from),
                daemon_pid: Some(DAEMON),
                daemon_max_open_files: open_files.map(str::to_owned),
                daemon_limits_error: None,
            });
            let evidence = validate(&request, &facts).unwrap();
            assert_eq!(
                evidence.advisories, expected,
                "{connections:?} {open_files:?}"
            );
            assert!(evidence.unverified.is_empty());
            let warned: Vec<Code> = warnings(&request, &facts).iter().map(|w| w.code).collect();
            assert_eq!(warned, expected);
        }
    }
    for code in Code::ADVISORY {
        assert!(!Code::UNVERIFIABLE.contains(&code));
    }
}
