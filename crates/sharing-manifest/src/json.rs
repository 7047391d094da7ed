//! The evidence as JSON.

use serde::Deserialize as _;
use serde_json::{Map, Value};
use sharing_policy::Evidence;

/// The manifest key the evidence is recorded under (the seed's `apply_cuda_process_sharing_manifest`).
pub const MANIFEST_KEY: &str = "cuda_process_sharing";

/// The version of the evidence's shape, recorded in a manifest beside the evidence under
/// [`MANIFEST_SCHEMA_KEY`] (the evidence object itself keeps its keys and nothing else). A
/// manifest without it was written before evidence was versioned (the seed's 15 keys, then
/// `daemon_pid`, `host_name`): [`evidence_from_json`] reads its missing keys as null.
pub const EVIDENCE_SCHEMA: &str = "mps-preflight/evidence/v1";

/// The manifest key that records [`EVIDENCE_SCHEMA`], beside [`MANIFEST_KEY`].
pub const MANIFEST_SCHEMA_KEY: &str = "cuda_process_sharing_schema";

/// The manifest key that names the release that wrote the record, right after
/// [`MANIFEST_SCHEMA_KEY`]: a fleet can tell which build wrote a record. Its value is
/// [`MANIFEST_WRITER`]. Informational: readers never require or check it.
pub const MANIFEST_WRITER_KEY: &str = "cuda_process_sharing_writer";

/// `mps-preflight <version>`: the workspace's crates share one version, so this is also the
/// CLI's `--version` and the Python package's `__version__`.
pub const MANIFEST_WRITER: &str = concat!("mps-preflight ", env!("CARGO_PKG_VERSION"));

/// The evidence keys, in the order they are written: the seed's `to_dict` order, then
/// `daemon_pid`, then the keys of "validated means served", then `host_name`, then
/// what the processes will be served with (the daemon's default active-thread
/// percentage and pinned-memory limit, the server's state), then the room of `/dev/shm` and
/// the advisories, then the compute processes and the client limit, then how the job's
/// user reaches the pipe directory.
pub const EVIDENCE_KEYS: [&str; 40] = [
    "configured",
    "effective",
    "validated",
    "rank",
    "world_size",
    "learner_device",
    "collector_device",
    "learner_gpu_uuid",
    "collector_gpu_uuid",
    "pipe_directory_env",
    "pipe_directory",
    "control_pipe",
    "control_pipe_kind",
    "server_pid",
    "ambient_server",
    "daemon_pid",
    "caller_uid",
    "judged_for_uid",
    "server_uids",
    "daemon_visible_devices",
    "daemon_multiuser",
    "compute_mode",
    "driver_version",
    "unverified",
    "host_name",
    "default_active_thread_percentage",
    "default_pinned_mem_limit",
    "server_status",
    "daemon_log",
    "last_server_ready",
    "server_clients",
    "server_client_pids",
    "server_active_thread_percentage",
    "server_pinned_mem_limit",
    "shm_free_bytes",
    "shm_total_bytes",
    "advisories",
    "gpu_compute_processes",
    "server_client_limit",
    "pipe_access",
];

/// The evidence as a JSON object: the 40 keys of [`EVIDENCE_KEYS`] in that order, unknown
/// facts as `null` (`server_uids` and `unverified` are lists, empty when there is nothing).
///
/// ```
/// use sharing_policy::Evidence;
///
/// let evidence = Evidence {
///     learner_device: Some("cpu".to_owned()),
///     ..Evidence::unobserved(0, 1)
/// };
/// let json = sharing_manifest::evidence_to_json(&evidence);
/// let keys: Vec<&str> = json.as_object().unwrap().keys().map(String::as_str).collect();
/// assert_eq!(keys, sharing_manifest::EVIDENCE_KEYS);
/// assert_eq!(json["configured"], serde_json::Value::Null);
/// ```
pub fn evidence_to_json(evidence: &Evidence) -> Value {
    // Destructured so that a new `Evidence` field fails to compile here instead of
    // silently missing from every manifest.
    let Evidence {
        configured,
        effective,
        validated,
        rank,
        world_size,
        learner_device,
        collector_device,
        learner_gpu_uuid,
        collector_gpu_uuid,
        pipe_directory_env,
        pipe_directory,
        control_pipe,
        control_pipe_kind,
        server_pid,
        ambient_server,
        daemon_pid,
        caller_uid,
        judged_for_uid,
        server_uids,
        daemon_visible_devices,
        daemon_multiuser,
        compute_mode,
        driver_version,
        unverified,
        host_name,
        default_active_thread_percentage,
        default_pinned_mem_limit,
        server_status,
        daemon_log,
        last_server_ready,
        server_clients,
        server_client_pids,
        server_active_thread_percentage,
        server_pinned_mem_limit,
        shm_free_bytes,
        shm_total_bytes,
        advisories,
        gpu_compute_processes,
        server_client_limit,
        pipe_access,
    } = evidence;
    let values = [
        text(configured.as_deref()),
        text(effective.as_deref()),
        Value::Bool(*validated),
        Value::from(*rank),
        Value::from(*world_size),
        text(learner_device.as_deref()),
        text(collector_device.as_deref()),
        text(learner_gpu_uuid.as_deref()),
        text(collector_gpu_uuid.as_deref()),
        text(pipe_directory_env.as_deref()),
        text(pipe_directory.as_deref()),
        text(control_pipe.as_deref()),
        text(control_pipe_kind.as_deref()),
        number(*server_pid),
        Value::Bool(*ambient_server),
        number(*daemon_pid),
        caller_uid.map_or(Value::Null, Value::from),
        judged_for_uid.map_or(Value::Null, Value::from),
        server_uids.iter().copied().map(Value::from).collect(),
        text(daemon_visible_devices.as_deref()),
        daemon_multiuser.map_or(Value::Null, Value::Bool),
        text(compute_mode.as_deref()),
        text(driver_version.as_deref()),
        unverified
            .iter()
            .map(|code| Value::from(code.as_str()))
            .collect(),
        text(host_name.as_deref()),
        default_active_thread_percentage.map_or(Value::Null, |p| Value::from(p.as_f64())),
        text(default_pinned_mem_limit.as_deref()),
        text(server_status.as_deref()),
        text(daemon_log.as_deref()),
        number(*last_server_ready),
        server_clients.map_or(Value::Null, Value::from),
        server_client_pids.as_ref().map_or(Value::Null, |pids| {
            pids.iter().copied().map(Value::from).collect()
        }),
        server_active_thread_percentage.map_or(Value::Null, |p| Value::from(p.as_f64())),
        text(server_pinned_mem_limit.as_deref()),
        shm_free_bytes.map_or(Value::Null, Value::from),
        shm_total_bytes.map_or(Value::Null, Value::from),
        advisories
            .iter()
            .map(|code| Value::from(code.as_str()))
            .collect(),
        gpu_compute_processes.map_or(Value::Null, Value::from),
        server_client_limit.map_or(Value::Null, Value::from),
        text(pipe_access.as_deref()),
    ];
    let map: Map<String, Value> = EVIDENCE_KEYS
        .iter()
        .map(|key| (*key).to_owned())
        .zip(values)
        .collect();
    Value::Object(map)
}

fn text(value: Option<&str>) -> Value {
    value.map_or(Value::Null, |text| Value::String(text.to_owned()))
}

fn number(value: Option<i64>) -> Value {
    value.map_or(Value::Null, Value::from)
}

/// Reads evidence back from JSON: either an evidence object, or a manifest that holds one
/// under [`MANIFEST_KEY`].
///
/// Unknown keys are ignored, and a missing `daemon_pid`, "validated means served" key or
/// `host_name` reads as `null` (or an empty list), so the seed's 15-key evidence and older
/// evidence are accepted too.
///
/// # Errors
/// A message saying why the value is not evidence (missing key, wrong type).
pub fn evidence_from_json(value: &Value) -> Result<Evidence, String> {
    let candidate = match value {
        Value::Object(map) => match map.get(MANIFEST_KEY) {
            Some(evidence) => {
                check_evidence_schema(map.get(MANIFEST_SCHEMA_KEY))?;
                evidence
            }
            None if EVIDENCE_KEYS.iter().any(|key| map.contains_key(*key)) => value,
            None => {
                return Err(format!(
                    "found an object with no `{MANIFEST_KEY}` key and no evidence keys"
                ));
            }
        },
        other => return Err(format!("found {}, not a JSON object", kind_of(other))),
    };
    if !candidate.is_object() {
        return Err(format!(
            "`{MANIFEST_KEY}` is {}, not an object",
            kind_of(candidate)
        ));
    }
    Evidence::deserialize(candidate).map_err(|err| err.to_string())
}

/// A manifest's [`MANIFEST_SCHEMA_KEY`]: absent (written before evidence was versioned) or
/// [`EVIDENCE_SCHEMA`]; any other version is refused rather than guessed at.
fn check_evidence_schema(recorded: Option<&Value>) -> Result<(), String> {
    match recorded {
        None => Ok(()),
        Some(Value::String(schema)) if schema == EVIDENCE_SCHEMA => Ok(()),
        Some(other) => Err(format!(
            "`{MANIFEST_SCHEMA_KEY}` is {other}, and this version reads {EVIDENCE_SCHEMA:?} (or no version): merge with the mps-preflight that wrote it"
        )),
    }
}

/// "an array", "a string", … for messages.
pub(crate) fn kind_of(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    pub(crate) fn full() -> Evidence {
        Evidence {
            configured: Some("mps".to_owned()),
            effective: Some("mps".to_owned()),
            validated: true,
            rank: 1,
            world_size: 2,
            learner_device: Some("cuda:0".to_owned()),
            collector_device: Some("cuda:0".to_owned()),
            learner_gpu_uuid: Some("C08D91CBE324655C71BA7570956445BC".to_owned()),
            collector_gpu_uuid: Some("C08D91CBE324655C71BA7570956445BC".to_owned()),
            pipe_directory_env: Some("/run/mps".to_owned()),
            pipe_directory: Some("/run/mps".to_owned()),
            control_pipe: Some("/run/mps/control".to_owned()),
            control_pipe_kind: Some("unix_socket".to_owned()),
            server_pid: Some(4242),
            ambient_server: false,
            daemon_pid: Some(17),
            caller_uid: Some(1000),
            judged_for_uid: Some(1001),
            server_uids: vec![1000],
            daemon_visible_devices: Some("GPU-c08d91cb".to_owned()),
            daemon_multiuser: Some(false),
            compute_mode: Some("Exclusive_Process".to_owned()),
            driver_version: Some("550.163.01".to_owned()),
            unverified: vec![],
            host_name: Some("gpu-node-07".to_owned()),
            default_active_thread_percentage: None,
            default_pinned_mem_limit: None,
            server_status: None,
            daemon_log: Some("/var/log/nvidia-mps/control.log".to_owned()),
            last_server_ready: Some(11803),
            server_clients: Some(1),
            server_client_pids: Some(vec![9000]),
            server_active_thread_percentage: sharing_policy::Percentage::from_tenths(250),
            server_pinned_mem_limit: Some("8G".to_owned()),
            shm_free_bytes: Some(1 << 30),
            shm_total_bytes: Some(2 << 30),
            advisories: vec![sharing_policy::Code::DaemonOpenFilesLow],
            gpu_compute_processes: Some(0),
            server_client_limit: Some(48),
            pipe_access: Some("modes".to_owned()),
        }
    }

    #[test]
    fn keys_are_in_seed_order_then_daemon_pid() {
        let json = evidence_to_json(&full());
        let keys: Vec<&str> = json
            .as_object()
            .unwrap()
            .keys()
            .map(String::as_str)
            .collect();
        assert_eq!(keys, EVIDENCE_KEYS);
        // The serialised text, not only the map, has that order.
        let text = serde_json::to_string(&json).unwrap();
        let positions: Vec<usize> = EVIDENCE_KEYS
            .iter()
            .map(|key| text.find(&format!("\"{key}\"")).unwrap())
            .collect();
        assert!(positions.windows(2).all(|pair| pair[0] < pair[1]), "{text}");
    }

    #[test]
    fn each_field_lands_under_its_own_key() {
        let json = evidence_to_json(&full());
        insta::assert_json_snapshot!(json);
    }

    #[test]
    fn agrees_with_evidence_serde() {
        let evidence = full();
        assert_eq!(
            evidence_to_json(&evidence),
            serde_json::to_value(&evidence).unwrap()
        );
        let empty = Evidence {
            unverified: vec![sharing_policy::Code::DaemonScopeUnverified],
            ..Evidence::unobserved(0, 1)
        };
        let json = evidence_to_json(&empty);
        assert_eq!(json, serde_json::to_value(&empty).unwrap());
        assert_eq!(json["daemon_pid"], Value::Null);
        assert_eq!(json["configured"], Value::Null);
    }

    #[test]
    fn reads_back_evidence_and_manifests_and_the_seed_shape() {
        let evidence = full();
        let json = evidence_to_json(&evidence);
        assert_eq!(evidence_from_json(&json).unwrap(), evidence);
        let manifest = serde_json::json!({"run": "x", MANIFEST_KEY: json.clone()});
        assert_eq!(evidence_from_json(&manifest).unwrap(), evidence);
        let mut seed = json;
        seed.as_object_mut().unwrap().shift_remove("daemon_pid");
        seed.as_object_mut().unwrap().shift_remove("host_name");
        let read = evidence_from_json(&seed).unwrap();
        assert_eq!((read.daemon_pid, read.host_name), (None, None));
    }

    #[test]
    fn a_manifest_of_this_evidence_version_or_none_is_read_and_another_is_refused() {
        let evidence = evidence_to_json(&full());
        for manifest in [
            serde_json::json!({MANIFEST_KEY: evidence}),
            serde_json::json!({MANIFEST_KEY: evidence, MANIFEST_SCHEMA_KEY: EVIDENCE_SCHEMA}),
        ] {
            assert_eq!(evidence_from_json(&manifest).unwrap(), full());
        }
        for other in [
            serde_json::json!("mps-preflight/evidence/v0"),
            serde_json::json!(1),
        ] {
            let manifest = serde_json::json!({MANIFEST_KEY: evidence, MANIFEST_SCHEMA_KEY: other});
            let err = evidence_from_json(&manifest).unwrap_err();
            assert!(
                err.contains(MANIFEST_SCHEMA_KEY) && err.contains(EVIDENCE_SCHEMA),
                "{err}"
            );
        }
    }

    #[test]
    fn rejects_what_is_not_evidence() {
        assert_eq!(
            evidence_from_json(&serde_json::json!([1])).unwrap_err(),
            "found an array, not a JSON object"
        );
        assert_eq!(
            evidence_from_json(&serde_json::json!({MANIFEST_KEY: 3})).unwrap_err(),
            "`cuda_process_sharing` is a number, not an object"
        );
        assert_eq!(
            evidence_from_json(&serde_json::json!({"run": "x"})).unwrap_err(),
            "found an object with no `cuda_process_sharing` key and no evidence keys"
        );
        let err = evidence_from_json(&serde_json::json!({"rank": 0})).unwrap_err();
        assert!(err.contains("missing field `validated`"), "{err}");
    }
}
