//! A case's `"request"` object, read through the same clap definitions as the command line:
//! each key is a request flag's long name with `_` for `-`, so a flag added to `RequestArgs`
//! is a key here with no change, and defaults, value checks and messages are the command
//! line's own.

use std::ffi::OsString;

use clap::{CommandFactory as _, FromArgMatches as _, Parser};
use serde_json::Value;

use crate::args::RequestArgs;

/// The request flags alone, parsed from words built out of the JSON object.
#[derive(Debug, Parser)]
#[command(name = "request", no_binary_name = true, disable_help_flag = true)]
pub(super) struct CaseRequest {
    #[command(flatten)]
    request: RequestArgs,
}

/// The request of a case: `{"request": "mps", "learner_device": "cuda:0", ...}`.
///
/// A string or number is the flag's value, a list repeats the flag, `null` leaves it out (its
/// default applies), and `true`/`false` sets or leaves out a switch (or is the value of a flag
/// that takes one).
pub(crate) fn from_json(value: Option<Value>) -> Result<RequestArgs, String> {
    let Some(Value::Object(map)) = value else {
        return Err(
            "needs a \"request\" object of request flags (e.g. \"learner_device\": \"cuda:0\")"
                .to_owned(),
        );
    };
    let command = CaseRequest::command();
    let mut words: Vec<OsString> = Vec::new();
    for (key, value) in map {
        let flag = key.replace('_', "-");
        // Keys are spelled with `_` only: `learner-device` is a typo, not an alias.
        let arg = command
            .get_arguments()
            .find(|arg| arg.get_long() == Some(flag.as_str()));
        let Some(arg) = arg.filter(|_| !key.contains('-')) else {
            return Err(format!(
                "\"request\" has an unknown key {key:?}; the keys are {}",
                keys(&command).join(", ")
            ));
        };
        let takes_value = arg.get_action().takes_values();
        let values = match value {
            Value::Array(values) => values,
            single => vec![single],
        };
        for value in values {
            let word = match value {
                Value::Null => continue,
                Value::Bool(false) if !takes_value => continue,
                Value::Bool(true) if !takes_value => format!("--{flag}"),
                Value::String(text) => format!("--{flag}={text}"),
                Value::Bool(_) | Value::Number(_) => format!("--{flag}={value}"),
                Value::Array(_) | Value::Object(_) => {
                    return Err(format!(
                        "\"request\".{key:?} must be a string, number, boolean or a list of them"
                    ));
                }
            };
            words.push(word.into());
        }
    }
    let matches = command
        .try_get_matches_from(words)
        .map_err(|err| format!("\"request\": {}", message(&err.to_string())))?;
    CaseRequest::from_arg_matches(&matches)
        .map(|parsed| parsed.request)
        .map_err(|err| format!("\"request\": {}", message(&err.to_string())))
}

/// The JSON keys of every request flag, in definition order.
fn keys(command: &clap::Command) -> Vec<String> {
    command
        .get_arguments()
        .filter_map(clap::Arg::get_long)
        .map(|long| long.replace('-', "_"))
        .collect()
}

/// clap's message without its `error: ` and usage (the caller adds the file and the case):
/// its first paragraph on one line, so a list of missing flags stays in it.
fn message(text: &str) -> String {
    let text = text.strip_prefix("error: ").unwrap_or(text);
    text.lines()
        .take_while(|line| !line.trim().is_empty())
        .map(str::trim)
        .collect::<Vec<_>>()
        .join(" ")
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn request(value: &Value) -> Result<sharing_policy::Request, String> {
        from_json(Some(value.clone())).map(|args| args.to_request())
    }

    #[test]
    fn every_request_flag_is_a_key() {
        let got = request(&json!({
            "request": "mps", "learner_device": "cuda:1", "collector_device": "cuda:0",
            "backend": "other", "supported_backend": ["mjwarp", "other"], "rank": 1,
            "world_size": 2, "learner_uuid": null, "timeout_ms": 100,
        }))
        .unwrap();
        assert_eq!(got.mode.as_deref(), Some("mps"));
        assert_eq!(got.learner_device, "cuda:1");
        assert_eq!(got.collector_device.as_deref(), Some("cuda:0"));
        assert_eq!(got.backend.as_deref(), Some("other"));
        assert_eq!(got.supported_backends, ["mjwarp", "other"]);
        assert_eq!((got.rank, got.world_size), (1, 2));
    }

    #[test]
    fn defaults_and_value_rules_are_the_command_line_s() {
        let got = request(&json!({"learner_device": "cpu", "backend": "mjwarp"})).unwrap();
        assert_eq!(got.mode, None, "`--request` defaults to null");
        let got = request(&json!({"learner_device": "cpu"})).unwrap();
        assert_eq!(got.backend, None, "`--backend` is optional");
        assert_eq!((got.rank, got.world_size), (0, 1));
        assert_eq!(
            got.supported_backends,
            [sharing_policy::DEFAULT_SUPPORTED_BACKEND]
        );
        // A negative rank reaches the policy, as on the command line.
        let got = request(&json!({"learner_device": "cpu", "backend": "b", "rank": -1})).unwrap();
        assert_eq!(got.rank, -1);
        let args = from_json(Some(
            json!({"learner_device": "cpu", "backend": "b", "learner_uuid": "GPU-1"}),
        ))
        .unwrap();
        assert_eq!(args.learner_uuid.as_deref(), Some("GPU-1"));
    }

    #[test]
    fn unknown_keys_bad_values_and_missing_flags_are_errors() {
        for (value, needle) in [
            (
                json!({"learner_device": "cpu", "backend": "b", "learner-device": "x"}),
                "unknown key \"learner-device\"",
            ),
            (
                json!({"learner_device": "cpu", "backend": "b", "gpu": 0}),
                "unknown key \"gpu\"",
            ),
            (json!({"backend": "b"}), "--learner-device"),
            (
                json!({"learner_device": "cpu", "backend": "b", "rank": "one"}),
                "expected an integer",
            ),
            (
                json!({"learner_device": "cpu", "backend": "b", "rank": 1.5}),
                "expected an integer",
            ),
            (
                json!({"learner_device": "cpu", "backend": {"name": "b"}}),
                "must be a string",
            ),
            (
                json!({"learner_device": "cpu", "backend": "b", "timeout_ms": 0}),
                "at least 1 ms",
            ),
            (json!(["cpu"]), "needs a \"request\" object"),
        ] {
            let err = request(&value).unwrap_err();
            assert!(err.contains(needle), "{value}: {err}");
        }
        assert!(from_json(None).is_err());
    }
}
