//! The request's own prerequisites, and the snapshot's schema: mode, schema, backend, Linux,
//! rank, a collector, and the two CUDA device strings. Decides only; the words are in
//! `message/request.rs`.

use super::{Findings, message};
use crate::device::{Role, parse_cuda_index};
use crate::{HostFacts, Request, SCHEMA_V1};

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
    let mode = request.mode.as_deref().unwrap_or_default();
    if !is_mps(mode) {
        findings.push(|| message::request::unsupported_mode(words, mode));
    }
    let schema_ok = crate::SCHEMAS_READ.contains(&facts.schema.as_str());
    if !schema_ok {
        findings.push(|| message::request::unsupported_schema(words, &facts.schema));
    }
    check_backend(request, findings);
    if schema_ok && facts.os != "linux" {
        findings.push(|| message::request::unsupported_os(words, &facts.os));
    }
    if request.rank < 0 || request.world_size < 1 || request.rank >= request.world_size {
        findings.push(|| message::request::invalid_rank(words, request));
    }
    if request.collector_device.is_none() {
        findings.push(|| message::request::missing_collector(words, request.backend.as_deref()));
    }
    if facts.schema == SCHEMA_V1
        && let Some(field) = v2_field(facts)
    {
        findings.push(|| message::request::v2_field_in_v1(words, field));
    }
    let before_v3 = facts.schema == SCHEMA_V1 || facts.schema == crate::SCHEMA_V2;
    if before_v3 && facts.settings_query.is_some() {
        findings.push(|| message::request::settings_query_before_v3(words, &facts.schema));
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
    findings.push(|| {
        message::request::unsupported_backend(words, &request.supported_backends, backend)
    });
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
            findings.push(|| message::request::unusable_device(words, role, device, error));
            None
        }
    }
}
