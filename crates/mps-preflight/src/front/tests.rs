use sharing_policy::{AttestWords, Pid};

use super::*;

#[test]
fn null_in_any_case_is_no_mode_and_anything_else_is_passed_on() {
    for null in [None, Some("null"), Some(" NULL ")] {
        let low = LowArgs::new(null, "cuda:0", None, Some("mjwarp"), Wording::Python);
        assert_eq!(low.to_high().request.mode, None, "{null:?}");
    }
    for other in ["mps", "", "none"] {
        let low = LowArgs::new(Some(other), "cuda:0", None, Some("mjwarp"), Wording::Cli);
        assert_eq!(low.to_high().request.mode.as_deref(), Some(other));
    }
}

#[test]
fn a_null_request_on_a_cpu_learner_observes_nothing() {
    let low = LowArgs::new(None, "cpu", None, Some("mjwarp"), Wording::Python);
    assert!(!low.to_high().probe.observe_cuda);
    let low = LowArgs::new(Some("mps"), "cpu", None, Some("mjwarp"), Wording::Python);
    assert!(low.to_high().probe.observe_cuda);
}

#[test]
fn the_wording_chooses_the_vocabulary_and_nothing_else() {
    let low = |wording| LowArgs::new(Some("mps"), "cuda:0", None, Some("mjwarp"), wording);
    let cli = low(Wording::Cli).to_high();
    let python = low(Wording::Python).to_high();
    let reference = low(Wording::Reference).to_high();
    assert_eq!(
        cli, python,
        "the native API words a request as the command line"
    );
    assert_eq!(reference.request.vocabulary, Vocabulary::Reference);
    assert_eq!(
        Request {
            vocabulary: Vocabulary::Cli,
            ..reference.request
        },
        cli.request
    );
}

#[test]
fn python_s_parameters_are_named_as_python_passes_them() {
    assert!(
        parse_percentage("0", Wording::Cli)
            .unwrap_err()
            .starts_with("expected a percentage")
    );
    let python = parse_percentage("0", Wording::Python).unwrap_err();
    assert!(
        python.starts_with("min_active_thread_percentage must be above 0"),
        "{python}"
    );
    let shm = parse_mem_size("2T", Param::MinShm, Wording::Python).unwrap_err();
    assert_eq!(
        shm,
        r#"min_shm must be digits then M or G (512M, 2G), got "2T""#
    );
    let user = parse_user("no-such-user-mps-preflight", Wording::Python).unwrap_err();
    assert!(user.starts_with("as_user: no user named"), "{user}");
    assert_eq!(parse_user("1001", Wording::Python), Ok(1001));
    let negative = parse_user("-1", Wording::Python).unwrap_err();
    assert_eq!(negative, "as_user must be a UID of 0 or more, got -1");
    assert_eq!(parse_user("root", Wording::Cli), Ok(0));
}

#[test]
fn deadlines_are_at_least_a_millisecond_and_finite() {
    assert_eq!(deadline(5.0), Ok(Duration::from_secs(5)));
    assert_eq!(deadline(0.001), Ok(Duration::from_millis(1)));
    for bad in [0.0, 0.0005, -1.0, f64::NAN, f64::INFINITY] {
        assert!(deadline(bad).is_err(), "{bad}");
    }
    assert_eq!(rounded_deadline(0.0), Ok(Duration::from_millis(1)));
    assert_eq!(rounded_deadline(-3.0), Ok(Duration::from_millis(1)));
    assert_eq!(rounded_deadline(2.5), Ok(Duration::from_millis(2500)));
    assert!(rounded_deadline(f64::NAN).is_err());
}

#[test]
fn attest_s_pids_and_wait_are_checked_in_rust() {
    let learner = pid(Some(0), "0", Param::LearnerPid, Wording::Python).unwrap_err();
    assert_eq!(learner, "learner_pid must be a positive integer PID, got 0");
    let none = pid(None, "True", Param::CollectorPid, Wording::Python).unwrap_err();
    assert_eq!(
        none,
        "collector_pid must be a positive integer PID, got True"
    );
    assert!(
        pid(
            Some(1i64 << 31),
            "2147483648",
            Param::LearnerPid,
            Wording::Python
        )
        .is_err()
    );
    assert_eq!(
        pid(Some(42), "42", Param::LearnerPid, Wording::Python).map(Pid::get),
        Ok(42)
    );
    assert_eq!(
        wait(0.2, "0.2", Wording::Python),
        Ok(Duration::from_millis(200))
    );
    assert_eq!(
        wait(-1.0, "-1", Wording::Python).unwrap_err(),
        "wait must be at least 0 seconds, got -1"
    );
    assert!(wait(f64::NAN, "nan", Wording::Python).is_err());
    assert_eq!(attest_words(Wording::Cli), AttestWords::CLI);
    assert_eq!(attest_words(Wording::Python).wait_30s, "wait=30");
    let spec = AttestSpec {
        learner: Pid::new(7).unwrap(),
        collector: Pid::new(7).unwrap(),
        wait: Duration::ZERO,
        timeout: Duration::from_millis(1),
        manifest: None,
    };
    let Err(same) = observe_attest(&spec, Wording::Python) else {
        panic!("one PID for both is a usage error");
    };
    assert!(
        same.starts_with("learner_pid and collector_pid must name two processes: "),
        "{same}"
    );
}

#[test]
fn a_mask_given_by_python_is_named_mask() {
    let Err(Refused::Rejected(errors)) =
        visibility(Some("0\n1"), Duration::from_millis(1), Wording::Python)
    else {
        panic!("a control character is refused");
    };
    assert_eq!(errors[0].0, VISIBILITY_CODE);
    assert!(
        errors[0].1.starts_with("mask= holds a control character"),
        "{errors:?}"
    );
    let Err(Refused::Rejected(errors)) =
        visibility(Some(""), Duration::from_millis(1), Wording::Python)
    else {
        panic!("an empty mask is refused");
    };
    assert!(
        errors[0].1.starts_with(r#"mask="": the mask is empty"#),
        "{errors:?}"
    );
    let Err(Refused::Rejected(errors)) =
        visibility(Some(""), Duration::from_millis(1), Wording::Cli)
    else {
        panic!("an empty mask is refused");
    };
    assert!(
        errors[0]
            .1
            .starts_with(r#"--devices "" (the value for CUDA_VISIBLE_DEVICES): the mask is empty"#),
        "{errors:?}"
    );
}

#[test]
fn a_snapshot_s_file_and_its_text_give_the_same_facts() {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../fixtures/hosts/healthy-socket-with-server.json");
    let from_file = snapshot_facts(Snapshot::Path(&path), None).unwrap();
    let text = std::fs::read_to_string(&path).unwrap();
    assert_eq!(
        snapshot_facts(Snapshot::Text(&text), None).unwrap(),
        from_file
    );
    let replaced = snapshot_facts(Snapshot::Text(&text), Some("GPU-x")).unwrap();
    assert_eq!(replaced.learner_uuid.as_deref(), Some("GPU-x"));
    let broken = snapshot_facts(Snapshot::Text("{"), None).unwrap_err();
    assert!(broken.starts_with("snapshot: not valid JSON"), "{broken}");
}

#[test]
fn another_schema_or_no_schema_is_refused_with_what_to_do() {
    let text = |text: &str| snapshot_facts(Snapshot::Text(text), None).unwrap_err();
    let other = text(r#"{"schema": "mps-preflight/host-facts/v0"}"#);
    assert!(other.contains("capture the host again"), "{other}");
    let none = text("[]");
    assert!(
        none.starts_with("snapshot: not a host-facts snapshot"),
        "{none}"
    );
    let shape = text(&format!(r#"{{"schema": "{}"}}"#, sharing_policy::SCHEMA));
    assert!(shape.contains("not a valid"), "{shape}");
    let missing = Path::new("/nonexistent/host.json");
    let missing = snapshot_facts(Snapshot::Path(missing), None).unwrap_err();
    assert!(
        missing.starts_with("'/nonexistent/host.json': "),
        "{missing}"
    );
}
