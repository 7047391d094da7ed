//! The request's own prerequisites, and the snapshot's schema: mode, schema, backend, Linux,
//! rank, a collector, and the two CUDA device strings.

use super::{Findings, MPS};
use crate::device::{DeviceError, Role, parse_cuda_index};
use crate::text::repr;
use crate::{Code, Finding, HostFacts, Request, SCHEMA, SCHEMA_V1};

/// What the request checks established for the host checks.
pub(super) struct Checked {
    /// The snapshot is of a schema this validator reads, so its host facts are interpreted.
    pub(super) schema_ok: bool,
    pub(super) learner_index: Option<u32>,
    pub(super) collector_index: Option<u32>,
}

/// The first v2-only field an in-memory v1 snapshot holds (a reader refuses such a file).
fn v2_field(facts: &HostFacts) -> Option<&'static str> {
    let [caller, servers, daemon, host_name] = crate::V2_ONLY_FIELDS;
    let retried = |query: &Option<crate::QueryRecord>| {
        query
            .as_ref()
            .is_some_and(|query| !query.earlier_attempts.is_empty())
    };
    if facts.caller.is_some() {
        Some(caller)
    } else if facts.server_processes.is_some() {
        Some(servers)
    } else if facts.daemon_process.is_some() {
        Some(daemon)
    } else if facts.host_name.is_some() {
        Some(host_name)
    } else if retried(&facts.gpu_query) || retried(&facts.daemon_query) {
        Some("earlier_attempts")
    } else {
        None
    }
}

/// The checks of the request itself and of the snapshot's schema and OS, in the seed's order.
pub(super) fn check(request: &Request, facts: &HostFacts, findings: &mut Findings) -> Checked {
    let mode = request.mode.as_deref().unwrap_or_default();
    if !is_mps(mode) {
        findings.push(|| Finding::new(
            Code::UnsupportedMode,
            format!(
                "Unsupported training.cuda_process_sharing={}; expected null or 'mps'. An explicit 'mps' request never falls back to multi-context CUDA execution.",
                repr(mode)
            ),
            format!("mode {}", repr(mode)),
            "set training.cuda_process_sharing to null or 'mps'".to_owned(),
        ));
    }
    let schema_ok = facts.schema == SCHEMA || facts.schema == SCHEMA_V1;
    if !schema_ok {
        findings.push(|| Finding::new(
            Code::UnsupportedSnapshotSchema,
            format!(
                "{MPS} cannot use this host snapshot: its schema is {}, and this validator reads only {} and {}. Capture the host again with this version of mps-preflight.",
                repr(&facts.schema),
                repr(SCHEMA),
                repr(SCHEMA_V1)
            ),
            format!("schema {}", repr(&facts.schema)),
            "capture the host again with this version of mps-preflight".to_owned(),
        ));
    }
    check_backend(request, findings);
    if schema_ok && facts.os != "linux" {
        findings.push(|| Finding::new(
            Code::UnsupportedOs,
            format!(
                "{MPS} requires Linux; got os={}. CUDA MPS exists only on Linux: set training.cuda_process_sharing to null on this host.",
                repr(&facts.os)
            ),
            format!("os {}", repr(&facts.os)),
            "run on Linux, or set training.cuda_process_sharing to null".to_owned(),
        ));
    }
    if request.rank < 0 || request.world_size < 1 || request.rank >= request.world_size {
        findings.push(|| Finding::new(
            Code::InvalidRank,
            format!(
                "{MPS} requires a valid rank in [0, world_size); got rank={}, world_size={}. Pass this process's data-parallel rank and the number of ranks.",
                request.rank, request.world_size
            ),
            format!("rank={}, world_size={}", request.rank, request.world_size),
            "pass a rank in [0, world_size) and a world_size of at least 1".to_owned(),
        ));
    }
    if request.collector_device.is_none() {
        findings.push(|| {
            let backend = normalise_backend(&request.backend);
            Finding::new(
                Code::MissingCollector,
                format!(
                    "{MPS} requires a CUDA collector process device; the {backend} learner/collector rank-local binding did not produce one. Configure a CUDA collector device (for example cuda:0) or set training.cuda_process_sharing to null."
                ),
                "no collector device".to_owned(),
                "configure a CUDA collector device, for example cuda:0".to_owned(),
            )
        });
    }
    if facts.schema == SCHEMA_V1
        && let Some(field) = v2_field(facts)
    {
        findings.push(|| {
            super::inconsistent(format!(
                "it is a {SCHEMA_V1} snapshot, yet it holds the v2 field `{field}`"
            ))
        });
    }
    let learner_index = device_index(Role::Learner, &request.learner_device, findings);
    let collector_index = request
        .collector_device
        .as_deref()
        .and_then(|device| device_index(Role::Collector, device, findings));
    Checked {
        schema_ok,
        learner_index,
        collector_index,
    }
}

/// Whether `mode` is the explicit request (`mps`, any ASCII case, surrounding whitespace).
fn is_mps(mode: &str) -> bool {
    mode.trim().eq_ignore_ascii_case("mps")
}

/// The normalised backend name (the seed's `strip().lower()`).
fn normalise_backend(backend: &str) -> String {
    backend.trim().to_lowercase()
}

/// Whether two backend names are equal once normalised; allocates only for non-ASCII names.
fn same_backend(a: &str, b: &str) -> bool {
    let (a, b) = (a.trim(), b.trim());
    if a.is_ascii() && b.is_ascii() {
        a.eq_ignore_ascii_case(b)
    } else {
        a.to_lowercase() == b.to_lowercase()
    }
}

fn check_backend(request: &Request, findings: &mut Findings) {
    if request
        .supported_backends
        .iter()
        .any(|b| same_backend(b, &request.backend))
    {
        return;
    }
    findings.push(|| backend_finding(request));
}

/// The finding for a backend that is not supported.
fn backend_finding(request: &Request) -> Finding {
    let supported: Vec<String> = request
        .supported_backends
        .iter()
        .map(|b| normalise_backend(b))
        .collect();
    let is_default = supported.len() == 1
        && supported.first().map(String::as_str) == Some(crate::DEFAULT_SUPPORTED_BACKEND);
    let (message, fix) = if is_default {
        (
            format!(
                "{MPS} supports only the mjwarp backend in this release; got training.sim_backend={}. Use training.sim_backend='mjwarp', or set training.cuda_process_sharing to null.",
                repr(&request.backend)
            ),
            "use training.sim_backend='mjwarp', or set training.cuda_process_sharing to null"
                .to_owned(),
        )
    } else if supported.is_empty() {
        (
            format!(
                "{MPS} supports only the configured backends, and none is configured; got training.sim_backend={}. Configure the supported backends, or set training.cuda_process_sharing to null.",
                repr(&request.backend)
            ),
            "configure the supported backends, or set training.cuda_process_sharing to null"
                .to_owned(),
        )
    } else {
        let list = supported
            .iter()
            .map(|b| repr(b))
            .collect::<Vec<_>>()
            .join(", ");
        (
            format!(
                "{MPS} supports only the configured backends {list}; got training.sim_backend={}. Use one of them, or set training.cuda_process_sharing to null.",
                repr(&request.backend)
            ),
            format!("use one of the backends {list}, or set training.cuda_process_sharing to null"),
        )
    };
    Finding::new(
        Code::UnsupportedBackend,
        message,
        format!("backend {}", repr(&request.backend)),
        fix,
    )
}

fn device_index(role: Role, device: &str, findings: &mut Findings) -> Option<u32> {
    match parse_cuda_index(device) {
        Ok(index) => Some(index),
        Err(error) => {
            findings.push(|| device_finding(role, device, error));
            None
        }
    }
}

/// The finding for a device string that is not a usable CUDA device.
fn device_finding(role: Role, device: &str, error: DeviceError) -> Finding {
    let field = format!("{}_device", role.name());
    match error {
        DeviceError::NotCuda => Finding::new(
            Code::NotCudaDevice,
            format!(
                "{MPS} requires CUDA learner and collector devices; got {field}={}. Use cuda or cuda:<index> for both.",
                repr(device)
            ),
            format!("{field}={}", repr(device)),
            format!("set {field} to cuda or cuda:<index>"),
        ),
        DeviceError::InvalidIndex => Finding::new(
            Code::InvalidCudaDevice,
            format!(
                "{MPS} received invalid CUDA device {} for {field}; a CUDA device is cuda or cuda:<index> with a plain decimal index.",
                repr(device)
            ),
            format!("{field}={}", repr(device)),
            format!("set {field} to cuda:<decimal index>, for example cuda:0"),
        ),
    }
}
