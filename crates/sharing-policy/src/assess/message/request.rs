//! The request family's words: the request's own prerequisites (mode, backend, rank, a
//! collector, the two CUDA device strings) and the snapshot's schema and OS.

use super::inconsistent;
use crate::assess::request;
use crate::device::{DeviceError, Role};
use crate::text::repr;
use crate::vocabulary::Setting;
use crate::{Code, Finding, Request, SCHEMA, SCHEMA_V1, Vocabulary};

/// The finding for a snapshot of a schema this validator does not read.
pub(in crate::assess) fn unsupported_schema(words: Vocabulary, schema: &str) -> Finding {
    let mps = words.mps();
    Finding::new(
        Code::UnsupportedSnapshotSchema,
        words,
        format!(
            "{mps} cannot use this host snapshot: its schema is {}, and this validator reads only {}, {}, {} and {}. Capture the host again with this version of mps-preflight.",
            repr(schema),
            repr(SCHEMA),
            repr(crate::SCHEMA_V3),
            repr(crate::SCHEMA_V2),
            repr(SCHEMA_V1)
        ),
        format!("schema {}", repr(schema)),
        "capture the host again with this version of mps-preflight".to_owned(),
    )
}

/// The finding for a snapshot of an OS other than Linux.
pub(in crate::assess) fn unsupported_os(words: Vocabulary, os: &str) -> Finding {
    let (mps, null) = (words.mps(), words.null_request());
    Finding::new(
        Code::UnsupportedOs,
        words,
        format!(
            "{mps} requires Linux; got os={}. CUDA MPS exists only on Linux: {null} on this host.",
            repr(os)
        ),
        format!("os {}", repr(os)),
        format!("run on Linux, or {null}"),
    )
}

/// The finding for a v1 snapshot that holds `field`, a field only v2 and later have.
pub(in crate::assess) fn v2_field_in_v1(words: Vocabulary, field: &str) -> Finding {
    inconsistent(
        words,
        format!("it is a {SCHEMA_V1} snapshot, yet it holds the v2 field `{field}`"),
    )
}

/// The finding for a snapshot of `schema` (before v3) that holds the v3 `settings_query`.
pub(in crate::assess) fn settings_query_before_v3(words: Vocabulary, schema: &str) -> Finding {
    inconsistent(
        words,
        format!("it is a {schema} snapshot, yet it holds the v3 field `settings_query`"),
    )
}

/// The finding for a mode other than null or `mps`.
pub(in crate::assess) fn unsupported_mode(words: Vocabulary, mode: &str) -> Finding {
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
pub(in crate::assess) fn invalid_rank(words: Vocabulary, request: &Request) -> Finding {
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
pub(in crate::assess) fn missing_collector(words: Vocabulary, backend: Option<&str>) -> Finding {
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

/// The normalised backend name (the seed's `strip().lower()`).
fn normalise_backend(backend: &str) -> String {
    backend.trim().to_lowercase()
}

/// The finding for a backend that is not among `supported_backends`.
pub(in crate::assess) fn unsupported_backend(
    words: Vocabulary,
    supported_backends: &[String],
    backend: &str,
) -> Finding {
    let supported: Vec<String> = supported_backends
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
            format!("{}, or {null}", request::lowercase_first(use_default)),
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
            format!("{}, or {null}", request::lowercase_first(configure)),
        )
    } else {
        let list = crate::text::listed(supported.iter().map(|b| repr(b)));
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

/// The finding for a device string that is not a usable CUDA device.
pub(in crate::assess) fn unusable_device(
    words: Vocabulary,
    role: Role,
    device: &str,
    error: DeviceError,
) -> Finding {
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
