//! The null (unconfigured) request: best-effort evidence of ambient MPS state; never rejects.

use crate::daemon::DaemonStatus;
use crate::device::parse_cuda_index;
use crate::{Evidence, FileKind, HostFacts, OsText, Request, SCHEMAS_READ, gpu, served};

/// Whether the learner or the collector is a CUDA device (what makes a null request look at
/// the host; [`crate::observes_host`]).
pub(crate) fn names_a_cuda_device(request: &Request) -> bool {
    parse_cuda_index(&request.learner_device).is_ok()
        || request
            .collector_device
            .as_deref()
            .is_some_and(|device| parse_cuda_index(device).is_ok())
}

/// Records what the snapshot shows for an unconfigured rank (the seed's `_probe_ambient`).
///
/// Nothing is validated and nothing rejects: unresolvable facts are `None`. When neither device
/// is a CUDA device (learner `cpu`, no collector; [`crate::observes_host`] is false) nothing in
/// the snapshot is looked at beyond the raw `CUDA_MPS_PIPE_DIRECTORY`. A snapshot of another schema is not interpreted at all.
/// `ambient_server` is true exactly when the daemon answered live.
pub(crate) fn evidence(request: &Request, facts: &HostFacts) -> Evidence {
    let mut evidence = Evidence {
        learner_device: Some(request.learner_device.clone()),
        collector_device: request.collector_device.clone(),
        ..Evidence::unobserved(request.rank, request.world_size)
    };
    if !SCHEMAS_READ.contains(&facts.schema.as_str()) {
        return evidence;
    }
    evidence.host_name = facts.host_name.as_ref().map(OsText::to_string_lossy);
    let env = &facts.env;
    evidence.pipe_directory_env = env
        .cuda_mps_pipe_directory
        .as_ref()
        .map(OsText::to_string_lossy);
    if !crate::observes_host(request) {
        return evidence;
    }
    let learner_index = parse_cuda_index(&request.learner_device).ok();
    let collector_index = request
        .collector_device
        .as_deref()
        .and_then(|d| parse_cuda_index(d).ok());

    let directory = env.pipe_directory();
    let path = crate::facts::join(&directory, crate::CONTROL_PIPE_NAME);
    evidence.pipe_directory = Some(directory.to_string_lossy());
    evidence.control_pipe = Some(path.to_string_lossy());
    evidence.control_pipe_kind = facts
        .control_pipe
        .as_ref()
        .filter(|pipe| pipe.directory == *directory && pipe.path == path)
        .and_then(|pipe| match pipe.stat.kind {
            FileKind::Socket => Some("unix_socket".to_owned()),
            FileKind::Fifo => Some("fifo".to_owned()),
            _ => None,
        });
    // Ambient sharing needs the effective control pipe: without a socket or FIFO there, no
    // client reaches the daemon, whatever a query through another path answered.
    if evidence.control_pipe_kind.is_some()
        && let DaemonStatus::Live { server_pid } = crate::daemon::reference::status_with_pid_file(
            facts.daemon_query.as_ref(),
            directory.as_bytes(),
            served::corroborating_pid_file(facts),
        )
    {
        evidence.ambient_server = true;
        evidence.server_pid = server_pid;
        evidence.default_active_thread_percentage =
            mps_protocol::default_percentage(facts.daemon_query.as_ref());
    }
    evidence.daemon_pid = served::pid_file_claim(facts);

    let text = gpu::host_text(facts);
    let table = gpu::parse_table(&text);
    // The mask is parsed and resolved once for both devices, as `assess` does.
    let visible = gpu::visible(facts, &text, &table);
    let resolve = |index: u32| visible.as_ref().ok()?.uuid(index).ok();
    if let Some(index) = learner_index {
        evidence.learner_gpu_uuid = match &facts.learner_uuid {
            Some(supplied) => gpu_uuid::GpuUuid::parse(supplied).ok(),
            None => resolve(index),
        }
        .map(|uuid| uuid.canonical_token());
    }
    let collector = collector_index.and_then(resolve);
    evidence.collector_gpu_uuid = collector.map(|uuid| uuid.canonical_token());
    let gpu = collector.or_else(|| learner_index.and_then(resolve));
    let served = served::served_facts(facts, &text, gpu, directory.as_bytes());
    // A scan saw the daemon's process at some moment of the probe; only its answer proves it
    // is still the daemon there, so its PID is claimed only for a live daemon.
    if evidence.ambient_server {
        evidence.daemon_pid = evidence.daemon_pid.or(served.daemon_pid);
    }
    evidence.caller_uid = served.caller_uid;
    evidence.judged_for_uid = request.judged_for_uid(facts);
    evidence.server_uids = served.server_uids;
    evidence.daemon_visible_devices = served.daemon_visible_devices;
    evidence.daemon_multiuser = served.daemon_multiuser;
    evidence.compute_mode = served.compute_mode;
    evidence.driver_version = served.driver_version;
    evidence
}
