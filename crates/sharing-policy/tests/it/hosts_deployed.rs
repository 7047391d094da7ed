//! Synthetic fixtures for MPS as it is really deployed: the multi-user flag
//! spellings of the real option parsers, DRA-style daemons, a pid file naming a server, and a
//! session that lost its first command. Built like `hosts.rs` (the committed JSON must equal
//! these builders; regenerate with `UPDATE_FIXTURES=1 cargo test -p sharing-policy --test it hosts::`).

use sharing_policy::{HostFacts, OsText};

use crate::hosts::{
    H100_A, ONE_H100, by_pid_file, daemon_process, env, healthy, pid_file, process, served,
};

/// The DRA driver's per-claim pipe directory as the host sees it (bind-mounted on the chroot's
/// default `/tmp/nvidia-mps`; shared notes gpu-truth.md §8).
const CLAIM_PIPE: &str = "/var/lib/kubelet/plugins/gpu.nvidia.com/mps/6f1c2a/pipe";

/// A root multi-user server (UID 0) serving a job of UID 1000, the daemon started with `args`.
fn multiuser_daemon(args: &[&str]) -> HostFacts {
    let mut facts = served("100.0\n4428\n", 0, "Exclusive_Process");
    facts.daemon_process = Some(by_pid_file(vec![daemon_process(
        args,
        &[("CUDA_VISIBLE_DEVICES", H100_A)],
    )]));
    facts
}

/// The deployment fixtures, by file name (without `.json`).
pub(crate) fn fixtures() -> Vec<(&'static str, HostFacts)> {
    // A session that lost its first command: the server PID alone, no `%.1f` percentage line.
    // Read as the percentage it would hide the server (an idle-looking daemon): refused.
    let mut out = vec![(
        "daemon-answer-pid-first-line",
        healthy(crate::hosts::default_env(), ONE_H100, "4428\n"),
    )];

    // The DRA driver: `chroot /driver-root sh -c "nvidia-cuda-mps-control -d -M"`, no
    // CUDA_MPS_PIPE_DIRECTORY in the daemon's environ (its chroot default), the claim's GPU
    // UUID in CUDA_VISIBLE_DEVICES; the probe on the host names the per-claim directory, whose
    // pid file names the daemon.
    let mut dra = served("100.0\n4428\n", 0, "Exclusive_Process");
    dra.env = env(None, None, Some(CLAIM_PIPE), None);
    dra.control_pipe = Some(crate::hosts::live_socket(&dra.env));
    dra.daemon_query = Some(crate::hosts::daemon_query(
        &dra.env,
        dra.daemon_query.unwrap().outcome,
    ));
    dra.pid_file = Some(pid_file(&dra.env, "2718", true));
    dra.daemon_process = Some(by_pid_file(vec![daemon_process(
        &["-d", "-M"],
        &[("CUDA_VISIBLE_DEVICES", H100_A)],
    )]));
    out.push(("v2-dra-multiuser-daemon", dra));

    out.push((
        "v2-multiuser-server-long-single-dash",
        multiuser_daemon(&["-d", "-multiuser-server"]),
    ));
    out.push(("v2-multiuser-combined-short", multiuser_daemon(&["-dM"])));

    // A stale pid file whose PID was reused by an MPS server (same comm): not the daemon.
    let mut stale = served("100.0\n4428\n", 1001, "Exclusive_Process");
    let mut server = process(2718, 0, "nvidia-cuda-mps");
    server.cmdline = Some(vec![OsText::from("nvidia-cuda-mps-server")]);
    server.environ = Some(std::collections::BTreeMap::new());
    stale.daemon_process = Some(by_pid_file(vec![server]));
    out.push(("v2-pid-file-names-a-server", stale));
    out
}
