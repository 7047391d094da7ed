//! The control daemon's own log: each sequence of the research notes (crash loop, fault and
//! recovery, pending client, `NEW CLIENT 0`, cut and rotated logs), the real 535 and 550
//! daemons' logs, and the property that the log can only reject, leave unverified or warn.

use proptest::prelude::*;
use sharing_policy::{
    Code, DEFAULT_LOG_DIRECTORY, DaemonLogFacts, HostFacts, LogFileFacts, OsText, Request, validate,
};

use crate::props_breakers::{Breaker, pick};
use crate::props_gen::{any_facts, any_request};
use crate::props_served::make_served;
use crate::support::mps;

const REAL_535: &str = include_str!("../../../../fixtures/daemon-logs/real-535.control.log");
const REAL_550: &str = include_str!("../../../../fixtures/daemon-logs/real-550.control.log");
const CRASH_LOOP: &str =
    include_str!("../../../../fixtures/daemon-logs/notes-crash-loop.control.log");
const FATAL: &str =
    include_str!("../../../../fixtures/daemon-logs/notes-fatal-gpu-error.server.log");
const PENDING: &str = include_str!("../../../../fixtures/daemon-logs/notes-pending.control.log");

const READY: &str = "[2026-05-31 23:48:21.748 Control 11107] NEW SERVER 11803: Ready\n";
const RECOVERED: &str =
    "[2022-04-28 15:56:10.310 Other 11570] Volta MPS: Creating server context on device 0\n";

fn file(name: &str, text: Option<&str>, cut: bool) -> LogFileFacts {
    LogFileFacts {
        path: OsText::from(format!("{DEFAULT_LOG_DIRECTORY}/{name}").as_str()),
        text: text.map(str::to_owned),
        cut_at_start: cut,
        size: text.map(|t| t.len() as u64),
        error: None,
        errno: None,
    }
}

fn missing(name: &str, errno: i32, error: &str) -> LogFileFacts {
    LogFileFacts {
        error: Some(error.to_owned()),
        errno: Some(errno),
        ..file(name, None, false)
    }
}

/// The log as the probe records it for the served daemon (no `CUDA_MPS_LOG_DIRECTORY`).
pub(crate) fn log(control: LogFileFacts, server: LogFileFacts) -> DaemonLogFacts {
    DaemonLogFacts {
        directory: Some(OsText::from(DEFAULT_LOG_DIRECTORY)),
        unknown: None,
        files: vec![control, server],
    }
}

fn texts(control: &str, server: Option<&str>) -> DaemonLogFacts {
    log(
        file("control.log", Some(control), false),
        server.map_or_else(
            || missing("server.log", 2, "No such file or directory (os error 2)"),
            |text| file("server.log", Some(text), false),
        ),
    )
}

/// A served host (every "served" fact proven, no warning): a healthy base with no server
/// listed.
fn base() -> HostFacts {
    let request = mps("cuda:0", Some("cuda:0"));
    crate::props::healthy_bases()
        .into_iter()
        .map(|mut facts| {
            make_served(&mut facts);
            facts
        })
        .find(|facts| {
            validate(&request, facts).is_ok()
                && sharing_policy::warnings(&request, facts).is_empty()
        })
        .map(|mut facts| {
            // A 535 driver, whose daemon cannot answer get_server_status.
            set_driver(&mut facts, "535.183.01");
            facts
        })
        .unwrap()
}

/// Replaces the served host's 550 driver version with `version`.
fn set_driver(facts: &mut HostFacts, version: &str) {
    if let Some(sharing_policy::QueryOutcome::Exited { stdout, .. }) =
        facts.gpu_query.as_mut().map(|q| &mut q.outcome)
    {
        stdout.text = stdout.text.replace("550.163.01", version);
    }
}

fn judged(daemon_log: DaemonLogFacts) -> (Result<(), Code>, Vec<Code>) {
    let mut facts = base();
    facts.daemon_log = Some(daemon_log);
    let request = mps("cuda:0", Some("cuda:0"));
    let verdict = validate(&request, &facts).map(|_| ()).map_err(|r| r.code());
    let warnings = sharing_policy::warnings(&request, &facts)
        .iter()
        .map(|w| w.code)
        .collect();
    (verdict, warnings)
}

#[test]
fn the_real_daemons_logs_pass_without_a_warning() {
    for real in [REAL_535, REAL_550] {
        // The real daemon's server.log exists and is empty.
        assert_eq!(judged(texts(real, Some(""))), (Ok(()), vec![]));
        assert_eq!(judged(texts(real, None)), (Ok(()), vec![]));
    }
}

#[test]
fn a_crash_loop_is_rejected_until_a_server_is_ready_again() {
    assert_eq!(
        judged(texts(CRASH_LOOP, None)).0,
        Err(Code::ServerCrashLoop)
    );
    let healed = [CRASH_LOOP, READY].concat();
    assert_eq!(judged(texts(&healed, None)).0, Ok(()));
    // One crash is not a loop; a clean exit is no crash.
    let once = CRASH_LOOP.lines().take(4).collect::<Vec<_>>().join("\n");
    assert_eq!(judged(texts(&once, None)).0, Ok(()));
    let clean = "[2013-08-05 13:02:26.226 Control 13894] Server 13929 exited with status 0\n";
    assert_eq!(
        judged(texts(&[clean, clean, clean].concat(), None)).0,
        Ok(())
    );
    // A daemon restarted since the loop starts afresh.
    let restarted = [CRASH_LOOP, REAL_535].concat();
    assert_eq!(judged(texts(&restarted, None)).0, Ok(()));
}

#[test]
fn a_fatal_gpu_error_is_rejected_until_a_server_context_is_created() {
    assert_eq!(
        judged(texts(REAL_535, Some(FATAL))).0,
        Err(Code::ServerFatalErrorLogged)
    );
    // In control.log too (some sources print the servers' lines there).
    assert_eq!(
        judged(texts(&[REAL_535, FATAL].concat(), None)).0,
        Err(Code::ServerFatalErrorLogged)
    );
    let recovered = [FATAL, RECOVERED].concat();
    assert_eq!(judged(texts(REAL_535, Some(&recovered))).0, Ok(()));
}

#[test]
fn a_550_driver_reports_fault_itself_so_the_log_is_not_asked() {
    let mut facts = base();
    facts.gpu_query = Some(crate::hosts::gpu_query_v2(
        crate::hosts::TWO_H100,
        "Default",
    ));
    facts.daemon_log = Some(texts(REAL_550, Some(FATAL)));
    assert!(validate(&mps("cuda:0", Some("cuda:0")), &facts).is_ok());
    let v535 = facts.gpu_query.as_ref().unwrap().clone();
    let mut older = facts.clone();
    let mut record = v535;
    if let sharing_policy::QueryOutcome::Exited { stdout, .. } = &mut record.outcome {
        stdout.text = stdout.text.replace("550.163.01", "535.183.01");
    }
    older.gpu_query = Some(record);
    assert_eq!(
        validate(&mps("cuda:0", Some("cuda:0")), &older)
            .map_err(|r| r.code())
            .err(),
        Some(Code::ServerFatalErrorLogged)
    );
}

#[test]
fn advisory_notes_warn_and_never_reject_even_when_verification_is_required() {
    let other_user = PENDING.replace("from user 0", "from user 4242");
    let (verdict, warnings) = judged(texts(&other_user, None));
    assert_eq!(verdict, Ok(()));
    assert!(
        warnings.contains(&Code::DaemonLogPendingClient),
        "{warnings:?}"
    );
    assert!(
        warnings.contains(&Code::DaemonLogClientPidZero),
        "{warnings:?}"
    );
    // The judged user's own pending client is no note; a ready server clears it.
    let (_, own) = judged(texts(
        &PENDING.replace("NEW CLIENT 0 from user 0", "NEW CLIENT 77 from user 1000"),
        None,
    ));
    assert!(!own.contains(&Code::DaemonLogPendingClient), "{own:?}");
    let (_, served) = judged(texts(&[&other_user, READY].concat(), None));
    assert!(
        !served.contains(&Code::DaemonLogPendingClient),
        "{served:?}"
    );
    let failed =
        "[2024-01-01 00:00:00.000 Legacy Server   425] Failed to start : invalid argument\n";
    let (verdict, warnings) = judged(texts(REAL_535, Some(failed)));
    assert_eq!(
        (verdict, warnings),
        (Ok(()), vec![Code::DaemonLogServerFailedToStart])
    );

    let mut facts = base();
    facts.daemon_log = Some(texts(&other_user, Some(failed)));
    let mut request = mps("cuda:0", Some("cuda:0"));
    request.require_verified = true;
    let evidence = validate(&request, &facts).unwrap();
    assert!(evidence.unverified.is_empty());
}

#[test]
fn an_unreadable_log_is_unverified() {
    let fifo = LogFileFacts {
        error: Some("not a regular file (Fifo); not read".to_owned()),
        ..file("control.log", None, false)
    };
    let cases = [
        log(
            missing("control.log", 2, "No such file or directory (os error 2)"),
            missing("server.log", 2, ""),
        ),
        log(
            missing("control.log", 13, "Permission denied (os error 13)"),
            missing("server.log", 2, ""),
        ),
        log(
            missing(
                "control.log",
                40,
                "Too many levels of symbolic links (os error 40): a symbolic link (not followed)",
            ),
            missing("server.log", 2, ""),
        ),
        log(fifo.clone(), missing("server.log", 2, "")),
        // Rotated: a fresh, empty control.log tells nothing.
        texts("", None),
        // server.log present but unreadable.
        log(
            file("control.log", Some(REAL_535), false),
            LogFileFacts {
                path: fifo.path.clone(),
                ..missing("server.log", 13, "Permission denied (os error 13)")
            },
        ),
        DaemonLogFacts {
            directory: None,
            unknown: Some("the control daemon's process is not proven".to_owned()),
            files: vec![],
        },
        // Not the proven daemon's directory.
        DaemonLogFacts {
            directory: Some(OsText::from("/tmp/elsewhere")),
            ..texts(REAL_535, None)
        },
    ];
    for case in cases {
        let (verdict, warnings) = judged(case.clone());
        assert_eq!(
            (verdict, warnings),
            (Ok(()), vec![Code::DaemonLogUnverified]),
            "{case:?}"
        );
        let mut facts = base();
        facts.daemon_log = Some(case);
        let mut request = mps("cuda:0", Some("cuda:0"));
        request.require_verified = true;
        assert_eq!(
            validate(&request, &facts).unwrap_err().code(),
            Code::DaemonLogUnverified
        );
    }
}

#[test]
fn a_cut_log_is_read_from_its_first_whole_line() {
    // The cut line would read as a crash if it were taken whole.
    let tail = [
        "Server 95 exited with status 1\n",
        CRASH_LOOP.lines().nth(5).unwrap(),
        "\n",
    ]
    .concat();
    let cut = log(
        file("control.log", Some(&tail), true),
        missing("server.log", 2, ""),
    );
    assert_eq!(judged(cut).0, Ok(()));
    let whole = log(
        file("control.log", Some(&tail), false),
        missing("server.log", 2, ""),
    );
    assert_eq!(judged(whole).0, Err(Code::ServerCrashLoop));
}

#[test]
fn the_evidence_names_the_log_and_the_last_ready_server() {
    let mut facts = base();
    facts.daemon_log = Some(texts(&[REAL_535, READY].concat(), None));
    let evidence = validate(&mps("cuda:0", Some("cuda:0")), &facts).unwrap();
    assert_eq!(
        evidence.daemon_log.as_deref(),
        Some("/var/log/nvidia-mps/control.log")
    );
    assert_eq!(evidence.last_server_ready, Some(11803));
}

/// The single-fact breakers of the log check.
pub(crate) fn log_breakers() -> Vec<Breaker> {
    vec![
        Breaker {
            name: "the daemon's log shows a crash loop",
            code: Code::ServerCrashLoop,
            apply: |_, f, s| {
                make_served(f);
                let start = pick(&[REAL_535, REAL_550, "", READY], s);
                f.daemon_log = Some(texts(&[start, CRASH_LOOP].concat(), None));
            },
        },
        Breaker {
            name: "the daemon's log shows a fatal GPU error",
            code: Code::ServerFatalErrorLogged,
            apply: |_, f, s| {
                make_served(f);
                set_driver(f, pick(&["535.183.01", "470.256.02"], s));
                f.daemon_log = Some(texts(pick(&[REAL_535, REAL_550], s), Some(FATAL)));
            },
        },
        Breaker {
            name: "the daemon's log unreadable, verification required",
            code: Code::DaemonLogUnverified,
            apply: |r, f, s| {
                make_served(f);
                r.require_verified = true;
                // Every listed server's state answered, so only the log is unverified.
                f.settings_query = crate::hosts::settings(f, |command| match command {
                    sharing_policy::ReadOnlyCommand::GetServerStatus(_) => "ACTIVE\n".to_owned(),
                    _ => String::new(),
                });
                let error = pick(
                    &[
                        "Permission denied (os error 13)",
                        "No such file or directory (os error 2)",
                    ],
                    s,
                );
                f.daemon_log = Some(log(
                    missing("control.log", 13, error),
                    missing("server.log", 2, ""),
                ));
            },
        },
    ]
}

/// Lines a log tail may hold: the known ones, and fragments of them.
fn any_line() -> impl Strategy<Value = String> {
    let known: Vec<String> = [REAL_535, CRASH_LOOP, FATAL, PENDING, READY, RECOVERED]
        .iter()
        .flat_map(|text| text.lines().map(str::to_owned))
        .collect();
    prop_oneof![
        proptest::sample::select(known.clone()),
        (proptest::sample::select(known), 0..40usize)
            .prop_map(|(line, cut)| { line.chars().skip(cut).collect() }),
        "[ -~]{0,60}",
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(96))]
    #[test]
    fn the_log_never_turns_a_rejection_into_a_pass(
        request in any_request(),
        facts in any_facts(),
        lines in proptest::collection::vec(any_line(), 0..24),
        cut in any::<bool>(),
        server in proptest::option::of(proptest::collection::vec(any_line(), 0..8)),
    ) {
        let control = lines.join("\n");
        let server = server.map(|lines| lines.join("\n"));
        let mut with_log = facts.clone();
        with_log.daemon_log = Some(log(
            file("control.log", Some(&control), cut),
            server.as_deref().map_or_else(|| missing("server.log", 2, ""), |t| file("server.log", Some(t), false)),
        ));
        check_monotone(&request, &facts, &with_log)?;
        // The same on a served host, where the log check runs.
        let mut served = base();
        let mut served_log = served.clone();
        served_log.daemon_log = with_log.daemon_log.clone();
        served.daemon_log = None;
        check_monotone(&request, &served, &served_log)?;
    }
}

fn check_monotone(
    request: &Request,
    without: &HostFacts,
    with: &HostFacts,
) -> Result<(), TestCaseError> {
    // A v4 snapshot without the log is unverified for the log alone: recording it may lift
    // only that.
    match (validate(request, without), validate(request, with)) {
        (Err(rejection), Ok(_)) if rejection.code() != Code::DaemonLogUnverified => {
            return Err(TestCaseError::fail(
                "the log turned a rejection into a pass",
            ));
        }
        (Err(_), _) => {}
        (Ok(before), Ok(after)) => {
            for code in &before.unverified {
                prop_assert!(after.unverified.contains(code) || *code == Code::DaemonLogUnverified);
            }
            let extra: Vec<Code> = after
                .unverified
                .iter()
                .copied()
                .filter(|c| !before.unverified.contains(c))
                .collect();
            prop_assert!(
                extra.iter().all(|c| *c == Code::DaemonLogUnverified),
                "{extra:?}"
            );
        }
        (Ok(_), Err(rejection)) => {
            prop_assert!(
                [
                    Code::ServerCrashLoop,
                    Code::ServerFatalErrorLogged,
                    Code::DaemonLogUnverified
                ]
                .contains(&rejection.code()),
                "{:?}",
                rejection.code()
            );
        }
    }
    Ok(())
}
