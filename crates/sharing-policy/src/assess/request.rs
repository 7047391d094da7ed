//! The request's own prerequisites, and the snapshot's schema: mode, schema, backend, Linux,
//! rank, a collector, and the two CUDA device strings.

use super::Findings;
use crate::device::{DeviceError, Role, parse_cuda_index};
use crate::text::repr;
use crate::vocabulary::Setting;
use crate::{Code, Finding, HostFacts, Request, SCHEMA, SCHEMA_V1, Vocabulary};

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
    let words = findings.words;
    let mps = words.mps();
    let mode = request.mode.as_deref().unwrap_or_default();
    if !is_mps(mode) {
        findings.push(|| unsupported_mode(words, mode));
    }
    let schema_ok = crate::SCHEMAS_READ.contains(&facts.schema.as_str());
    if !schema_ok {
        findings.push(|| Finding::new(
            Code::UnsupportedSnapshotSchema,
            words,
            format!(
                "{mps} cannot use this host snapshot: its schema is {}, and this validator reads only {}, {}, {} and {}. Capture the host again with this version of mps-preflight.",
                repr(&facts.schema),
                repr(SCHEMA),
                repr(crate::SCHEMA_V3),
                repr(crate::SCHEMA_V2),
                repr(SCHEMA_V1)
            ),
            format!("schema {}", repr(&facts.schema)),
            "capture the host again with this version of mps-preflight".to_owned(),
        ));
    }
    check_backend(request, findings);
    if schema_ok && facts.os != "linux" {
        let null = words.null_request();
        findings.push(|| Finding::new(
            Code::UnsupportedOs,
            words,
            format!(
                "{mps} requires Linux; got os={}. CUDA MPS exists only on Linux: {null} on this host.",
                repr(&facts.os)
            ),
            format!("os {}", repr(&facts.os)),
            format!("run on Linux, or {null}"),
        ));
    }
    if request.rank < 0 || request.world_size < 1 || request.rank >= request.world_size {
        findings.push(|| invalid_rank(words, request));
    }
    if request.collector_device.is_none() {
        findings.push(|| missing_collector(words, request.backend.as_deref()));
    }
    if facts.schema == SCHEMA_V1
        && let Some(field) = v2_field(facts)
    {
        findings.push(|| {
            super::inconsistent(
                words,
                format!("it is a {SCHEMA_V1} snapshot, yet it holds the v2 field `{field}`"),
            )
        });
    }
    let before_v3 = facts.schema == SCHEMA_V1 || facts.schema == crate::SCHEMA_V2;
    if before_v3 && facts.settings_query.is_some() {
        findings.push(|| {
            super::inconsistent(
                words,
                format!(
                    "it is a {} snapshot, yet it holds the v3 field `settings_query`",
                    facts.schema
                ),
            )
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

/// The finding for a mode other than null or `mps`.
fn unsupported_mode(words: Vocabulary, mode: &str) -> Finding {
    let (message, fix) = match words {
        Vocabulary::Reference => (
            format!(
                "Unsupported training.cuda_process_sharing={}; expected null or 'mps'. An explicit 'mps' request never falls back to multi-context CUDA execution.",
                repr(mode)
            ),
            "set training.cuda_process_sharing to null or 'mps'",
        ),
        Vocabulary::Cli => (
            format!(
                "Unsupported {}; expected null or 'mps'. Pass --request mps to prove that the learner and collector share one GPU through MPS, or --request null to record the host's state only.",
                words.assign(Setting::Mode, mode)
            ),
            "pass --request mps or --request null",
        ),
    };
    Finding::new(
        Code::UnsupportedMode,
        words,
        message,
        format!("mode {}", repr(mode)),
        fix.to_owned(),
    )
}

/// The finding for a rank outside `[0, world_size)`.
fn invalid_rank(words: Vocabulary, request: &Request) -> Finding {
    let found = match words {
        Vocabulary::Reference => {
            format!("rank={}, world_size={}", request.rank, request.world_size)
        }
        Vocabulary::Cli => format!(
            "{} {}",
            words.assign_number(Setting::Rank, request.rank),
            words.assign_number(Setting::WorldSize, request.world_size)
        ),
    };
    let (message, fix) = match words {
        Vocabulary::Reference => (
            format!(
                "{} requires a valid rank in [0, world_size); got {found}. Pass this process's data-parallel rank and the number of ranks.",
                words.mps()
            ),
            "pass a rank in [0, world_size) and a world_size of at least 1",
        ),
        Vocabulary::Cli => (
            format!(
                "{} requires a valid rank in [0, --world-size); got {found}. Pass this process's rank as --rank and the number of ranks as --world-size.",
                words.mps()
            ),
            "pass a --rank in [0, --world-size) and a --world-size of at least 1",
        ),
    };
    Finding::new(Code::InvalidRank, words, message, found, fix.to_owned())
}

/// The finding for a request with no collector device.
fn missing_collector(words: Vocabulary, backend: Option<&str>) -> Finding {
    let (message, fix) = match words {
        Vocabulary::Reference => {
            let binding = backend.map_or_else(
                || "the learner/collector".to_owned(),
                |backend| format!("the {} learner/collector", normalise_backend(backend)),
            );
            (
                format!(
                    "{} requires a CUDA collector process device; {binding} rank-local binding did not produce one. Configure a CUDA collector device (for example cuda:0) or set training.cuda_process_sharing to null.",
                    words.mps()
                ),
                "configure a CUDA collector device, for example cuda:0",
            )
        }
        Vocabulary::Cli => (
            format!(
                "{} requires a CUDA collector process device; none was given. Pass --collector-device (for example cuda:0), or use --request null.",
                words.mps()
            ),
            "pass --collector-device, for example cuda:0",
        ),
    };
    Finding::new(
        Code::MissingCollector,
        words,
        message,
        "no collector device".to_owned(),
        fix.to_owned(),
    )
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

/// A named backend must be a supported one; no backend is not checked.
fn check_backend(request: &Request, findings: &mut Findings) {
    let Some(backend) = request.backend.as_deref() else {
        return;
    };
    if request
        .supported_backends
        .iter()
        .any(|b| same_backend(b, backend))
    {
        return;
    }
    let words = findings.words;
    findings.push(|| backend_finding(words, request, backend));
}

/// The finding for a backend that is not supported.
fn backend_finding(words: Vocabulary, request: &Request, backend: &str) -> Finding {
    let supported: Vec<String> = request
        .supported_backends
        .iter()
        .map(|b| normalise_backend(b))
        .collect();
    let is_default = supported.len() == 1
        && supported.first().map(String::as_str) == Some(crate::DEFAULT_SUPPORTED_BACKEND);
    let (mps, got) = (words.mps(), words.assign(Setting::Backend, backend));
    let null = words.null_request();
    let (message, fix) = if is_default {
        let use_default = match words {
            Vocabulary::Reference => "Use training.sim_backend='mjwarp'",
            Vocabulary::Cli => {
                "Pass --backend mjwarp (or name the supported backends with --supported-backend)"
            }
        };
        (
            format!(
                "{mps} supports only the mjwarp backend in this release; got {got}. {use_default}, or {null}."
            ),
            format!("{}, or {null}", lowercase_first(use_default)),
        )
    } else if supported.is_empty() {
        let configure = match words {
            Vocabulary::Reference => "Configure the supported backends",
            Vocabulary::Cli => "Name the supported backends with --supported-backend",
        };
        (
            format!(
                "{mps} supports only the configured backends, and none is configured; got {got}. {configure}, or {null}."
            ),
            format!("{}, or {null}", lowercase_first(configure)),
        )
    } else {
        let list = supported
            .iter()
            .map(|b| repr(b))
            .collect::<Vec<_>>()
            .join(", ");
        (
            format!(
                "{mps} supports only the configured backends {list}; got {got}. Use one of them, or {null}."
            ),
            format!("use one of the backends {list}, or {null}"),
        )
    };
    Finding::new(
        Code::UnsupportedBackend,
        words,
        message,
        format!("backend {}", repr(backend)),
        fix,
    )
}

/// `text` with its first letter in lower case, for a fix that repeats a message's sentence.
pub(super) fn lowercase_first(text: &str) -> String {
    let mut chars = text.chars();
    chars.next().map_or_else(String::new, |first| {
        first.to_lowercase().chain(chars).collect()
    })
}

fn device_index(role: Role, device: &str, findings: &mut Findings) -> Option<u32> {
    match parse_cuda_index(device) {
        Ok(index) => Some(index),
        Err(error) => {
            let words = findings.words;
            findings.push(|| device_finding(words, role, device, error));
            None
        }
    }
}

/// The finding for a device string that is not a usable CUDA device.
fn device_finding(words: Vocabulary, role: Role, device: &str, error: DeviceError) -> Finding {
    let setting = match role {
        Role::Learner => Setting::LearnerDevice,
        Role::Collector => Setting::CollectorDevice,
    };
    let (mps, field, found) = (
        words.mps(),
        words.name(setting),
        words.assign(setting, device),
    );
    let set = match words {
        Vocabulary::Reference => ["set ", field, " to"].concat(),
        Vocabulary::Cli => ["pass ", field].concat(),
    };
    match error {
        DeviceError::NotCuda => Finding::new(
            Code::NotCudaDevice,
            words,
            format!(
                "{mps} requires CUDA learner and collector devices; got {found}. Use cuda or cuda:<index> for both."
            ),
            found,
            format!("{set} cuda or cuda:<index>"),
        ),
        DeviceError::InvalidIndex => Finding::new(
            Code::InvalidCudaDevice,
            words,
            format!(
                "{mps} received invalid CUDA device {} for {field}; a CUDA device is cuda or cuda:<index> with a plain decimal index.",
                repr(device)
            ),
            found,
            format!("{set} cuda:<decimal index>, for example cuda:0"),
        ),
    }
}
