use super::*;
use crate::CapturedText;

const OURS: &str = "GPU-5a88edbe-90c4-2449-8c43-70c57591cca1";
const OTHER: &str = "GPU-0aa11ebd-3c2c-4e63-9b4e-5a52e7a8d1f3";

fn gpu() -> GpuUuid {
    GpuUuid::parse(OURS).unwrap()
}

fn record(outcome: QueryOutcome) -> QueryRecord {
    QueryRecord {
        program: "nvidia-smi".to_owned(),
        args: COMPUTE_APPS_QUERY_ARGS.map(str::to_owned).to_vec(),
        stdin: String::new(),
        env: std::collections::BTreeMap::new(),
        env_removed: vec![],
        timeout_ms: 5000,
        elapsed_ms: 4,
        outcome,
        earlier_attempts: vec![],
    }
}

fn exited(code: i32, stdout: &str) -> QueryRecord {
    record(QueryOutcome::Exited {
        code: Some(code),
        signal: None,
        stdout: CapturedText::from_bytes(stdout.as_bytes(), false),
        stderr: CapturedText::default(),
    })
}

#[test]
fn an_empty_answer_is_free_and_a_row_of_the_gpu_holds_it() {
    assert_eq!(read(&exited(0, ""), gpu()), AppsRead::Free);
    assert_eq!(read(&exited(0, "\n"), gpu()), AppsRead::Free);
    let other = format!("{OTHER}, 311, python\n");
    assert_eq!(read(&exited(0, &other), gpu()), AppsRead::Free);
    let ours = format!("{OTHER}, 311, python\n{OURS}, 4242, /usr/bin/python3, x\n");
    assert_eq!(
        read(&exited(0, &ours), gpu()),
        AppsRead::Held(vec![ComputeApp {
            pid: "4242".to_owned(),
            name: "/usr/bin/python3, x".to_owned()
        }])
    );
}

#[test]
fn failures_and_unreadable_lines_are_unknown_but_never_outweigh_a_row() {
    for (text, line) in [
        ("No running processes found\n", "No running processes found"),
        ("[Insufficient Permissions]\n", "[Insufficient Permissions]"),
        ("garbage", "garbage"),
    ] {
        assert_eq!(
            read(&exited(0, text), gpu()),
            AppsRead::Unknown(AppsUnknown::UnreadableLine(line.to_owned())),
            "{text}"
        );
    }
    assert_eq!(
        read(&exited(9, "garbage"), gpu()),
        AppsRead::Unknown(AppsUnknown::Failed {
            code: Some(9),
            signal: None,
            stderr: String::new(),
        }),
        "a failure is told before an unreadable line"
    );
    let error = "No such file or directory (os error 2)";
    let spawn = record(QueryOutcome::SpawnFailed {
        error: error.to_owned(),
    });
    assert_eq!(
        read(&spawn, gpu()),
        AppsRead::Unknown(AppsUnknown::SpawnFailed(error.to_owned()))
    );
    let timed_out = record(QueryOutcome::TimedOut {
        stdout: CapturedText::from_bytes(format!("{OURS}, 7, a\n").as_bytes(), false),
        stderr: CapturedText::default(),
    });
    assert!(matches!(read(&timed_out, gpu()), AppsRead::Held(_)));
    let silent = record(QueryOutcome::TimedOut {
        stdout: CapturedText::default(),
        stderr: CapturedText::default(),
    });
    assert_eq!(
        read(&silent, gpu()),
        AppsRead::Unknown(AppsUnknown::TimedOut(5000))
    );
    let mut other_query = exited(0, "");
    other_query.args = vec!["--query-gpu=index".to_owned()];
    assert_eq!(
        read(&other_query, gpu()),
        AppsRead::Unknown(AppsUnknown::OtherQuery)
    );
    let mut cut = exited(0, "");
    if let QueryOutcome::Exited { stdout, .. } = &mut cut.outcome {
        stdout.truncated = true;
    }
    assert_eq!(read(&cut, gpu()), AppsRead::Unknown(AppsUnknown::Truncated));
}

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig::with_cases(256))]

    /// Whatever else it holds, an answer with a row of the GPU is never free, and an answer
    /// is free only when it is exit 0 and every line is blank or another GPU's row.
    #[test]
    fn only_a_clean_answer_is_free(
        lines in proptest::collection::vec(
            proptest::prop_oneof![
                proptest::strategy::Just(String::new()),
                proptest::strategy::Just(format!("{OTHER}, 12, other")),
                proptest::strategy::Just(format!("{OURS}, 4242, python")),
                "[ -~]{0,24}",
            ],
            0..5,
        ),
        code in proptest::prop_oneof![proptest::strategy::Just(0), 1..20i32],
        truncated: bool,
    ) {
        let stdout = lines.join("\n");
        let mut query = exited(code, &stdout);
        if let QueryOutcome::Exited { stdout, .. } = &mut query.outcome {
            stdout.truncated = truncated;
        }
        let read = read(&query, gpu());
        let ours = lines.iter().any(|line| row(line).is_some_and(|(uuid, _)| uuid == gpu()));
        if ours {
            proptest::prop_assert!(matches!(read, AppsRead::Held(_)));
        }
        if read == AppsRead::Free {
            proptest::prop_assert!(code == 0 && !truncated && !ours);
            proptest::prop_assert!(lines.iter().all(|line| line.trim().is_empty()
                || row(line).is_some_and(|(uuid, _)| uuid != gpu())));
        }
    }
}
