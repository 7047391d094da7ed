//! Loading a host-facts snapshot: capped, regular files only, a schema this version reads, and
//! only the fields that schema defines.

use std::fmt::Display;
use std::io::Read as _;
use std::path::Path;
use std::sync::mpsc;
use std::time::Duration;

use serde_json::Value;
use sharing_policy::{HostFacts, SCHEMA, SCHEMA_V1, SCHEMA_V2, SCHEMAS_READ};

/// The fields inside a query record that only v2 defines (a retried query's earlier attempts).
const V2_ONLY_QUERY_FIELDS: [&str; 1] = ["earlier_attempts"];

/// Reads the snapshot at `path`. Every failure is an input error (exit 2), with a message that
/// names the file and says what to do. A field that the snapshot's schema does not define is
/// refused, naming the field and the schema: a fact this reader would ignore may be one its
/// writer meant to fail the check.
///
/// # Errors
/// An unreadable or oversized file, not JSON, another schema, a field the schema does not
/// define, or not the schema's shape.
pub fn load(path: &Path) -> Result<HostFacts, String> {
    if is_stdin(path) {
        return from_value(read_stdin(STDIN_DEADLINE)?, &"standard input");
    }
    let value = sharing_manifest::read_json_file(path).map_err(|err| err.to_string())?;
    from_value(value, &sharing_manifest::quote_path(path))
}

/// How long a snapshot on standard input may take to arrive (`ssh host mps-preflight capture |
/// …` over a slow link): a writer that never closes the pipe must not hang a check.
const STDIN_DEADLINE: Duration = Duration::from_mins(1);

/// `-`, or `/dev/stdin` (often a FIFO, which the file reader refuses: it opens regular files
/// only), name standard input.
fn is_stdin(path: &Path) -> bool {
    path == Path::new("-") || path == Path::new("/dev/stdin")
}

/// Standard input as JSON, with the file reader's size cap, within `deadline`. On a timeout the
/// reading thread is left blocked; the command ends right after, and the process with it.
fn read_stdin(deadline: Duration) -> Result<Value, String> {
    let cap = sharing_manifest::MAX_FILE_BYTES;
    let (sender, receiver) = mpsc::channel();
    let spawned = std::thread::Builder::new()
        .name("stdin".to_owned())
        .spawn(move || {
            let mut bytes = Vec::new();
            let read = std::io::stdin()
                .lock()
                .take(cap + 1)
                .read_to_end(&mut bytes);
            let _ = sender.send(read.map(|_| bytes));
        });
    // Without a thread (RLIMIT_NPROC) the read could not be bounded in time.
    if let Err(err) = spawned {
        return Err(format!(
            "standard input: cannot start a thread to read the snapshot within its deadline: {err}; pass --snapshot FILE"
        ));
    }
    let bytes = match receiver.recv_timeout(deadline) {
        Ok(Ok(bytes)) => bytes,
        Ok(Err(err)) => return Err(format!("standard input: cannot read the snapshot: {err}")),
        Err(_) => {
            return Err(format!(
                "standard input: no complete snapshot within {} s (the writer did not close the pipe); pipe `mps-preflight capture` into it, or pass --snapshot FILE",
                deadline.as_secs()
            ));
        }
    };
    if u64::try_from(bytes.len()).unwrap_or(u64::MAX) > cap {
        return Err(format!(
            "standard input: more than {cap} bytes, the most a snapshot may have (16 MiB); this is not a snapshot from `mps-preflight capture`"
        ));
    }
    serde_json::from_slice(&bytes).map_err(|err| {
        format!(
            "standard input: not JSON ({err}); pipe the output of `mps-preflight capture` into it"
        )
    })
}

/// A snapshot already read as JSON (an inline snapshot of a `test` case, Python's `dict`),
/// `shown` as where it came from in messages: the same checks as [`load`].
///
/// # Errors
/// Another schema, no schema, a field the schema does not define, or not the schema's shape.
pub fn from_value(value: Value, shown: &dyn Display) -> Result<HostFacts, String> {
    let schema = match value.get("schema") {
        Some(Value::String(schema)) if SCHEMAS_READ.contains(&schema.as_str()) => schema.clone(),
        Some(Value::String(schema)) => {
            return Err(format!(
                "{shown}: snapshot schema {schema:?} is not supported; this mps-preflight reads {SCHEMA:?}, {SCHEMA_V2:?} and {SCHEMA_V1:?}: capture the host again with this version"
            ));
        }
        _ => {
            return Err(format!(
                "{shown}: not a host-facts snapshot (expected a JSON object with \"schema\": {SCHEMA:?}, as `mps-preflight capture` writes)"
            ));
        }
    };
    if let Some(why) = field_error(&schema, &value) {
        return Err(format!(
            "{shown}: not a valid {schema} snapshot: {why}; remove it, or capture the host again with this version"
        ));
    }
    // serde quotes the offending value whole; Python callers get this text too, uncapped
    // by `Output::emit`.
    serde_json::from_value(value).map_err(|err| {
        crate::output::capped(&format!("{shown}: not a valid {schema} snapshot: {err}"))
            .into_owned()
    })
}

/// A field of `value` that `schema` does not define although a later schema does, if any.
fn field_error(schema: &str, value: &Value) -> Option<String> {
    let fields = value
        .as_object()
        .map(|map| map.keys().map(String::as_str).collect::<Vec<_>>())
        .unwrap_or_default();
    if let Some(why) = sharing_policy::schema_field_error(schema, fields) {
        return Some(why);
    }
    if schema != SCHEMA_V1 {
        return None;
    }
    ["gpu_query", "daemon_query"].into_iter().find_map(|record| {
        let fields = value.get(record)?.as_object()?;
        V2_ONLY_QUERY_FIELDS
            .into_iter()
            .find(|field| fields.contains_key(*field))
            .map(|field| {
                format!("field `{record}.{field}` is not defined by schema {SCHEMA_V1} (it is a v2 field)")
            })
    })
}
