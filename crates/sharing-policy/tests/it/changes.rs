//! One test per deliberate change from the seed, named after the change.

use sharing_policy::{
    CapturedText, Code, EnvFacts, OsText, QueryOutcome, explain, shell_quote, start_command,
    validate,
};

use crate::hosts::{self, H100_A, H100_B, ONE_H100, TWO_H100};
use crate::support::{ambient, code, message, mps};

/// `nvidia-cuda-mps-control` when no daemon is reachable (docs/mps-daemon.md §2 X1).
pub(crate) fn no_daemon() -> QueryOutcome {
    QueryOutcome::Exited {
        code: Some(1),
        signal: None,
        stdout: CapturedText::default(),
        stderr: CapturedText::from_bytes(b"Cannot find MPS control daemon process\n", false),
    }
}

fn smi(stdout: &str) -> QueryOutcome {
    QueryOutcome::Exited {
        code: Some(0),
        signal: None,
        stdout: CapturedText::from_bytes(stdout.as_bytes(), false),
        stderr: CapturedText::default(),
    }
}

fn env_with_mask(mask: Option<&str>) -> EnvFacts {
    EnvFacts {
        cuda_visible_devices: mask.map(OsText::from),
        ..EnvFacts::default()
    }
}

const MIXED: &str = "0, GPU-0aa11ebd-627f-af3f-1a0d-4e1fd92fd7b0, NVIDIA GeForce GTX 1660 SUPER, 00000000:01:00.0\n\
                     1, GPU-9e8d35e3-a134-0fdd-0e01-23811fdbd293, NVIDIA GeForce RTX 3090, 00000000:08:00.0\n";

#[test]
fn change_1_learner_uuid_comes_from_the_caller_or_the_mask_and_table_never_from_cuda() {
    let request = mps("cuda:0", Some("cuda:0"));

    // Not supplied: resolved like the collector's, from CUDA_VISIBLE_DEVICES and nvidia-smi.
    let facts = hosts::healthy(env_with_mask(Some(H100_B)), TWO_H100, "100.0\n");
    let evidence = validate(&request, &facts).unwrap();
    assert_eq!(
        evidence.learner_gpu_uuid.as_deref(),
        Some("5A88EDBE90C424498C4370C57591CCA1")
    );

    // Supplied: used as given, even where the table would say otherwise.
    let mut supplied = facts.clone();
    supplied.learner_uuid = Some(H100_A.to_uppercase());
    let text = message(&request, &supplied);
    assert!(text.contains("learner='8932F937D72C4106C12F20BD9FAED9F6', collector='5A88EDBE90C424498C4370C57591CCA1'"), "{text}");

    // Supplied and no table: the learner is known, the collector is not.
    let mut no_table = supplied.clone();
    no_table.learner_uuid = Some(H100_B.to_owned());
    no_table.gpu_query = None;
    assert_eq!(
        code(&request, &no_table),
        Some(Code::CollectorUuidUnresolved)
    );
    let evidence = validate(&ambient("cuda:0", Some("cuda:0")), &no_table).unwrap();
    assert_eq!(
        evidence.learner_gpu_uuid.as_deref(),
        Some("5A88EDBE90C424498C4370C57591CCA1")
    );
    assert_eq!(evidence.collector_gpu_uuid, None);

    // No table and no supplied UUID: "CUDA is unavailable", as the seed said when torch had no CUDA.
    let mut nothing = facts;
    nothing.gpu_query = None;
    assert_eq!(code(&request, &nothing), Some(Code::CudaUnavailable));
    assert!(
        message(&request, &nothing).contains("CUDA is unavailable for the learner device cuda:0")
    );

    // A supplied UUID that is not one is refused, never guessed.
    let mut bad = nothing;
    bad.learner_uuid = Some("8932".to_owned());
    assert_eq!(code(&request, &bad), Some(Code::LearnerUuidUnresolved));
    assert!(message(&request, &bad).contains("could not resolve the learner CUDA device UUID"));
}

#[test]
fn change_2_visibility_follows_cuda_rules_without_same_number_fallback() {
    let request = mps("cuda:0", Some("cuda:0"));
    let on = |mask: &str| hosts::healthy(env_with_mask(Some(mask)), TWO_H100, "100.0\n");

    // The seed read an empty mask as "all GPUs"; CUDA sees none.
    assert_eq!(code(&request, &on("")), Some(Code::CudaUnavailable));
    // The seed canonicalised "-1" to "1" and picked host GPU 1; CUDA sees none.
    assert_eq!(code(&request, &on("-1")), Some(Code::CudaUnavailable));
    // "all" is not a CUDA keyword.
    assert_eq!(code(&request, &on("all")), Some(Code::CudaUnavailable));
    // An unknown UUID: the seed fell back to host GPU 0 (same number); CUDA sees none.
    assert_eq!(
        code(&request, &on("GPU-ffffffff-0000-0000-0000-000000000000")),
        Some(Code::CudaUnavailable)
    );
    // A repeated device hides every GPU.
    assert_eq!(code(&request, &on("1,1")), Some(Code::CudaUnavailable));
    // Reading stops at the first invalid entry: "0,5,1" makes only GPU 0 visible, so cuda:1 is
    // out of range rather than host GPU 1.
    let text = message(&mps("cuda:1", Some("cuda:0")), &on("0,5,1"));
    assert!(
        text.contains("learner device cuda:1 is out of range; 1 GPU is visible"),
        "{text}"
    );
    // Reordering is honoured: "1,0" makes cuda:0 host GPU 1.
    let evidence = validate(&request, &on("1,0")).unwrap();
    assert_eq!(
        evidence.learner_gpu_uuid.as_deref(),
        Some("5A88EDBE90C424498C4370C57591CCA1")
    );
    // A unique UUID prefix is accepted as CUDA accepts it; an ambiguous one stops reading.
    assert!(validate(&request, &on("GPU-5a88")).is_ok());
    let twins = "0, GPU-8932f937-d72c-4106-c12f-20bd9faed9f6, NVIDIA H100 80GB HBM3, 00000000:18:00.0\n\
                 1, GPU-8932aaaa-1111-2222-3333-444455556666, NVIDIA H100 80GB HBM3, 00000000:2A:00.0\n";
    let ambiguous = hosts::healthy(env_with_mask(Some("GPU-8932")), twins, "100.0\n");
    assert_eq!(code(&request, &ambiguous), Some(Code::CudaUnavailable));
}

#[test]
fn change_3_index_mapping_is_trusted_only_under_pci_bus_id_or_one_model() {
    let request = mps("cuda:0", Some("cuda:0"));
    let with = |mask: Option<&str>, order: Option<&str>, table: &str| {
        let env = EnvFacts {
            cuda_visible_devices: mask.map(OsText::from),
            cuda_device_order: order.map(OsText::from),
            ..EnvFacts::default()
        };
        hosts::healthy(env, table, "100.0\n")
    };
    // Mixed models, index-based (unset mask or indices), CUDA's default order: refused.
    for (mask, order) in [
        (None, None),
        (Some("0"), None),
        (Some("1"), Some("FASTEST_FIRST")),
        (None, Some("pci_bus_id")),
    ] {
        let facts = with(mask, order, MIXED);
        assert_eq!(
            code(&request, &facts),
            Some(Code::AmbiguousDeviceOrder),
            "{mask:?} {order:?}"
        );
        let text = message(&request, &facts);
        assert!(
            text.contains("CUDA_DEVICE_ORDER=PCI_BUS_ID") && text.contains("UUID"),
            "{text}"
        );
    }
    // Trusted: PCI_BUS_ID, or UUIDs, or one model.
    assert!(validate(&request, &with(None, Some("PCI_BUS_ID"), MIXED)).is_ok());
    assert!(validate(&request, &with(Some("GPU-9e8d35e3"), None, MIXED)).is_ok());
    assert!(validate(&request, &with(Some("1"), None, TWO_H100)).is_ok());
    // Ambient evidence does not guess either.
    let evidence = validate(&ambient("cuda:0", Some("cuda:0")), &with(None, None, MIXED)).unwrap();
    assert_eq!(evidence.learner_gpu_uuid, None);
}

#[test]
fn change_4_an_answering_daemon_is_live_and_server_and_daemon_pids_are_separate() {
    let request = mps("cuda:0", Some("cuda:0"));
    // A healthy idle daemon (empty server list, no pid file on 470/535): the seed rejected it.
    let idle = hosts::all()
        .into_iter()
        .find(|(n, _)| *n == "healthy-idle-daemon")
        .unwrap()
        .1;
    let evidence = validate(&request, &idle).unwrap();
    assert_eq!((evidence.server_pid, evidence.daemon_pid), (None, None));

    // server_pid is the first PID get_server_list printed; daemon_pid comes from the pid file.
    let busy = hosts::healthy(EnvFacts::default(), ONE_H100, "100.0\n4428\n4511\n");
    let evidence = validate(&request, &busy).unwrap();
    assert_eq!(
        (evidence.server_pid, evidence.daemon_pid),
        (Some(4428), Some(2718))
    );

    // A dead pid-file PID is not the daemon's; it does not matter to liveness.
    let mut stale = busy.clone();
    stale.pid_file = Some(hosts::pid_file(&stale.env, "2718", false));
    let evidence = validate(&request, &stale).unwrap();
    assert_eq!(evidence.daemon_pid, None);

    // A live-looking pid file and a socket are not proof: only the answer is.
    let mut gone = busy;
    gone.daemon_query.as_mut().unwrap().outcome = no_daemon();
    assert_eq!(code(&request, &gone), Some(Code::DaemonUnreachable));
    let evidence = validate(&ambient("cuda:0", Some("cuda:0")), &gone).unwrap();
    assert!(!evidence.ambient_server);
    assert_eq!(evidence.server_pid, None);

    // Ambient: ambient_server is true exactly when the daemon answered, even when idle.
    let evidence = validate(&ambient("cuda:0", Some("cuda:0")), &idle).unwrap();
    assert!(evidence.ambient_server);
}

#[test]
fn change_5_a_control_socket_path_longer_than_107_bytes_is_rejected() {
    let request = mps("cuda:0", Some("cuda:0"));
    let at = |path_len: usize| {
        // "<dir>/control": the directory takes path_len - 8 bytes.
        let dir = format!("/{}", "d".repeat(path_len - 9));
        let env = EnvFacts {
            cuda_mps_pipe_directory: Some(OsText::from(dir.as_str())),
            ..EnvFacts::default()
        };
        let facts = hosts::healthy(env, ONE_H100, "100.0\n");
        assert_eq!(
            facts.control_pipe.as_ref().unwrap().path.as_bytes().len(),
            path_len
        );
        facts
    };
    assert!(validate(&request, &at(107)).is_ok());
    let text = message(&request, &at(108));
    assert_eq!(code(&request, &at(108)), Some(Code::ControlPathTooLong));
    assert!(
        text.contains("the path is 108 bytes, longer than a Unix socket path allows (107 bytes)"),
        "{text}"
    );
}

/// Reads a word back the way a POSIX shell reads single-quoted and plain text.
fn unquote(word: &str) -> String {
    let mut out = String::new();
    let mut chars = word.chars();
    while let Some(c) = chars.next() {
        match c {
            '\'' => out.extend(chars.by_ref().take_while(|c| *c != '\'')),
            '"' => {
                for c in chars.by_ref() {
                    if c == '"' {
                        break;
                    }
                    assert!(
                        !matches!(c, '$' | '`' | '\\'),
                        "expansion inside double quotes: {word}"
                    );
                    out.push(c);
                }
            }
            c => {
                assert!(
                    !" \t\n$`\\|&;<>()*?[]#~=%!{}".contains(c) || "=%".contains(c),
                    "unquoted {c:?} in {word}"
                );
                out.push(c);
            }
        }
    }
    out
}

#[test]
fn change_6_the_start_command_is_shell_quoted_and_pinned_to_the_gpu() {
    for dir in [
        "/tmp/nvidia-mps",
        "/scratch/my runs/mps",
        "/x/it's",
        "/x/$(touch pwned)",
        "/x/`id`",
        "/x/a\nb",
        "/x/\"q\"",
        "/x/*",
        "-rf",
    ] {
        let env = EnvFacts {
            cuda_mps_pipe_directory: Some(OsText::from(dir)),
            ..EnvFacts::default()
        };
        let command = start_command(&env, Some(H100_A));
        assert!(command.contains("nvidia-cuda-mps-control -d"), "{command}");
        assert!(
            command.contains(&format!(
                "CUDA_VISIBLE_DEVICES={H100_A} nvidia-cuda-mps-control -d"
            )),
            "{command}"
        );
        let quoted = shell_quote(dir);
        assert_eq!(unquote(&quoted), dir);
        assert!(
            command.contains(&format!("export CUDA_MPS_PIPE_DIRECTORY={quoted} &&")),
            "{command}"
        );
    }
    // Without a known GPU there is no pin; the log directory follows the seed.
    let command = start_command(&EnvFacts::default(), None);
    assert_eq!(
        command,
        "mkdir -p /tmp/nvidia-mps /tmp/log && export CUDA_MPS_PIPE_DIRECTORY=/tmp/nvidia-mps && export CUDA_MPS_LOG_DIRECTORY=/tmp/log && nvidia-cuda-mps-control -d"
    );
    let env = EnvFacts {
        cuda_mps_pipe_directory: Some(OsText::from("/run/mps")),
        cuda_mps_log_directory: Some(OsText::from("/var/log/my mps")),
        ..EnvFacts::default()
    };
    assert!(start_command(&env, None).contains("mkdir -p /run/mps '/var/log/my mps' &&"));

    // In a rejection: the pin is the GPU both processes resolved to.
    let facts = hosts::all()
        .into_iter()
        .find(|(n, _)| *n == "no-control-pipe-quoted-directory")
        .unwrap()
        .1;
    let text = message(&mps("cuda:0", Some("cuda:0")), &facts);
    assert!(
        text.contains("export CUDA_MPS_PIPE_DIRECTORY='/scratch/o'\"'\"'brien/run $1/mps'"),
        "{text}"
    );
    assert!(
        text.ends_with(&format!(
            "CUDA_VISIBLE_DEVICES={H100_A} nvidia-cuda-mps-control -d"
        )),
        "{text}"
    );
    // When no GPU could be resolved, the command is not pinned.
    let mut blind = facts;
    blind.gpu_query = None;
    let findings = explain(&mps("cuda:0", Some("cuda:0")), &blind);
    let missing = findings
        .iter()
        .find(|f| f.code == Code::ControlPipeMissing)
        .unwrap();
    assert!(
        !missing.fix.contains("CUDA_VISIBLE_DEVICES"),
        "{}",
        missing.fix
    );
    assert!(missing.fix.ends_with("nvidia-cuda-mps-control -d"));
}

#[test]
#[allow(
    clippy::disallowed_methods,
    reason = "a real shell is the judge of quoting"
)]
fn change_6_quoted_paths_survive_a_real_shell() {
    let Ok(output) = std::process::Command::new("sh")
        .arg("-c")
        .arg("printf '%s' x")
        .output()
    else {
        return; // no POSIX shell here; the pure unquote test above still covers the rule
    };
    assert_eq!(output.stdout, b"x");
    for word in [
        "/scratch/my runs",
        "it's",
        "$(touch /tmp/pwned)",
        "`id`",
        "a\nb",
        "\"q\"",
        "*",
        "-n",
        "",
        "é ü",
    ] {
        let script = format!("printf '%s' {}", shell_quote(word));
        let output = std::process::Command::new("sh")
            .arg("-c")
            .arg(&script)
            .output()
            .unwrap();
        assert_eq!(String::from_utf8(output.stdout).unwrap(), word, "{script}");
    }
}

#[test]
fn change_7_rocm_hip_checks_do_not_apply_and_the_docs_say_so() {
    let readme =
        std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/README.md")).unwrap();
    let lib = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/src/lib.rs")).unwrap();
    assert!(readme.contains("ROCm/HIP checks do not apply"));
    // The crate docs are the README, so they say it too.
    assert!(lib.contains(r#"#![doc = include_str!("../README.md")]"#));
    assert!(
        Code::ALL
            .iter()
            .all(|c| !c.as_str().contains("rocm") && !c.as_str().contains("hip"))
    );
}

#[test]
fn non_utf8_and_cut_short_facts_never_pass() {
    let request = mps("cuda:0", Some("cuda:0"));
    let healthy = hosts::healthy(EnvFacts::default(), ONE_H100, "100.0\n");
    let mut bytes = healthy.clone();
    bytes.gpu_query.as_mut().unwrap().outcome = QueryOutcome::Exited {
        code: Some(0),
        signal: None,
        stdout: CapturedText::from_bytes(
            b"0, GPU-8932f937-d72c-4106-c12f-20bd9faed9f6, NVIDIA H100 \xff, 00000000:18:00.0\n",
            false,
        ),
        stderr: CapturedText::default(),
    };
    assert_eq!(code(&request, &bytes), Some(Code::CudaUnavailable));
    let mut mask = healthy.clone();
    mask.env.cuda_visible_devices = Some(OsText::from_bytes(b"0,\xff".to_vec()));
    assert_eq!(code(&request, &mask), Some(Code::CudaUnavailable));
    assert!(message(&request, &mask).contains("is not valid UTF-8"));
    let mut dir = healthy;
    dir.env.cuda_mps_pipe_directory = Some(OsText::from_bytes(b"/tmp/\xffmps".to_vec()));
    assert_eq!(code(&request, &dir), Some(Code::NonUtf8PipeDirectory));
    let smi_ok = smi(ONE_H100);
    assert!(matches!(smi_ok, QueryOutcome::Exited { code: Some(0), .. }));
}
