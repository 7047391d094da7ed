//! The "served" fixtures (a daemon whose environment, owner and compute mode are observed),
//! split out of hosts.rs by responsibility.

use std::collections::BTreeMap;

use sharing_policy::{DaemonSearch, DaemonSearchMethod, HostFacts, OsText, ProcessFacts};

#[allow(clippy::wildcard_imports)]
use crate::hosts::*;

/// The v2 fixtures: one per "served" rule and per unverified kind.
#[allow(clippy::too_many_lines)]
pub(crate) fn fixtures() -> Vec<(&'static str, HostFacts)> {
    const EPERM_ENVIRON: &str = "Permission denied (os error 13)";
    let mut out = Vec::new();
    out.push((
        "v2-served-validated",
        served("100.0\n4428\n", 1000, "Exclusive_Process"),
    ));
    out.push((
        "v2-server-of-another-user",
        served("100.0\n4428\n", 1001, "Exclusive_Process"),
    ));
    let mut multiuser = served("100.0\n4428\n", 1001, "Exclusive_Process");
    multiuser.daemon_process = Some(by_pid_file(vec![daemon_process(
        &["-d", "-m"],
        &[("CUDA_VISIBLE_DEVICES", H100_A)],
    )]));
    out.push(("v2-multiuser-daemon-other-user-server", multiuser));

    let mut outside = served("100.0\n", 1000, "Default");
    outside.daemon_process = Some(by_pid_file(vec![daemon_process(
        &["-d"],
        &[("CUDA_VISIBLE_DEVICES", H100_B)],
    )]));
    out.push(("v2-gpu-outside-daemon-scope", outside));

    let mut remap = served("100.0\n", 1000, "Default");
    remap.env.cuda_visible_devices = Some(OsText::from("1"));
    remap.daemon_process = Some(by_pid_file(vec![daemon_process(
        &["-d"],
        &[("CUDA_VISIBLE_DEVICES", "0,1")],
    )]));
    out.push(("v2-daemon-index-mask-client-index", remap));

    let mut mixed = served("100.0\n", 1000, "Default");
    mixed.env.cuda_device_order = Some(OsText::from("PCI_BUS_ID"));
    mixed.gpu_query = Some(gpu_query_v2(MIXED, "Default"));
    mixed.daemon_process = Some(by_pid_file(vec![daemon_process(
        &["-d"],
        &[("CUDA_VISIBLE_DEVICES", "0")],
    )]));
    out.push(("v2-daemon-index-mask-mixed-models", mixed));

    let mut unreadable = served("100.0\n", 1000, "Default");
    let mut daemon = daemon_process(&["-d"], &[]);
    daemon.environ = None;
    daemon
        .errors
        .insert("environ".to_owned(), EPERM_ENVIRON.to_owned());
    unreadable.daemon_process = Some(by_pid_file(vec![daemon]));
    out.push(("v2-daemon-environ-unreadable", unreadable));

    // A 535 driver: no pid file, so /proc was scanned; the daemon and its server both show as
    // `nvidia-cuda-mps`.
    let mut scan = served("100.0\n4428\n", 1000, "Default");
    scan.pid_file = Some(no_pid_file(&scan.env, ENOENT));
    let mut server = process(4428, 1000, "nvidia-cuda-mps");
    server.cmdline = Some(vec![OsText::from("nvidia-cuda-mps-server")]);
    server.environ = Some(BTreeMap::new());
    scan.daemon_process = Some(DaemonSearch {
        proc_root: OsText::from("/proc"),
        method: DaemonSearchMethod::ProcScan,
        scanned: 312,
        limit: 65536,
        stopped: None,
        error: None,
        processes: vec![
            daemon_process(&["-d"], &[("CUDA_VISIBLE_DEVICES", H100_A)]),
            server,
        ],
        lock: None,
    });
    out.push(("v2-proc-scan-535", scan));

    // /proc mounted with hidepid=2: other users' processes are invisible.
    let mut hidden = served("100.0\n4428\n", 1000, "Default");
    hidden.pid_file = Some(no_pid_file(&hidden.env, ENOENT));
    let mut server = ProcessFacts::new(4428);
    for file in ["status", "comm"] {
        server.errors.insert(file.to_owned(), ENOENT.to_owned());
    }
    hidden.server_processes = Some(vec![server]);
    hidden.daemon_process = Some(DaemonSearch {
        proc_root: OsText::from("/proc"),
        method: DaemonSearchMethod::ProcScan,
        scanned: 9,
        limit: 65536,
        stopped: None,
        error: None,
        processes: vec![],
        lock: None,
    });
    out.push(("v2-hidepid", hidden));

    out.push((
        "v2-compute-mode-prohibited",
        served("100.0\n", 1000, "Prohibited"),
    ));
    out.push((
        "v2-compute-mode-exclusive-thread",
        served("100.0\n", 1000, "Exclusive_Thread"),
    ));
    out.push((
        "v2-compute-mode-not-reported",
        served("100.0\n", 1000, "[N/A]"),
    ));

    // No control pipe, yet a daemon query through it answered (a null request must not
    // report ambient sharing).
    let mut no_pipe = served("100.0\n", 1000, "Default");
    no_pipe.control_pipe = Some(missing_pipe(&no_pipe.env, Some(true)));
    out.push(("v2-no-control-pipe-daemon-answers", no_pipe));
    out
}
