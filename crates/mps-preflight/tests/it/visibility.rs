//! `visibility`: indices become `GPU-` UUIDs; refusals name the entry.

use std::fmt::Write as _;

use crate::support::{FakeHost, GPU0, GPU1, not_utf8};

#[test]
fn rewrites_indices_to_uuids() {
    let mut host = FakeHost::new();
    host.two_gpus();
    let cases = [
        ("0", format!("{GPU0}\n")),
        ("1", format!("{GPU1}\n")),
        ("1,0", format!("{GPU1},{GPU0}\n")),
        ("01", format!("{GPU1}\n")),
        // UUIDs and prefixes pass through untouched.
        (GPU1, format!("{GPU1}\n")),
        ("GPU-5a88", "GPU-5a88\n".to_owned()),
    ];
    for (mask, expected) in &cases {
        host.env("CUDA_VISIBLE_DEVICES", mask);
        let run = host.run(&["visibility"]);
        assert_eq!(
            (run.code, run.stdout.as_str(), run.stderr.as_str()),
            (0, expected.as_str(), ""),
            "mask {mask:?}"
        );
        host.unset("CUDA_VISIBLE_DEVICES");
        let run = host.run(&["visibility", "--devices", mask]);
        assert_eq!(
            (run.code, run.stdout.as_str()),
            (0, expected.as_str()),
            "--devices {mask:?}"
        );
    }
    // Unset: every GPU, in order (a homogeneous host).
    let run = host.run(&["visibility"]);
    assert_eq!(run.stdout, format!("{GPU0},{GPU1}\n"));
}

/// Entries CUDA would ignore, or read otherwise than written, are rewritten as
/// CUDA reads them, with one `warning:` line each naming the entry and the rule.
#[test]
fn entries_cuda_ignores_are_warned_about() {
    let mut host = FakeHost::new();
    host.two_gpus();
    let cases = [
        // CUDA stops reading at `-1`: the rest is kept exactly as written.
        ("0,-1,1", format!("{GPU0},-1,1\n"), "entry 2 (\"-1\")"),
        ("0-2", format!("{GPU0}\n"), "looks like a range"),
        (
            "1c20e77d-aaaa",
            format!("{GPU1}\n"),
            "without the `GPU-` prefix",
        ),
        ("1,0,", format!("{GPU1},{GPU0},\n"), "is empty"),
    ];
    for (mask, stdout, rule) in &cases {
        let run = host.run(&["visibility", "--devices", mask]);
        assert_eq!(
            (run.code, run.stdout.as_str()),
            (0, stdout.as_str()),
            "{mask:?}"
        );
        let warnings: Vec<&str> = run.stderr.lines().collect();
        assert_eq!(
            warnings.len(),
            1,
            "one warning for {mask:?}: {}",
            run.stderr
        );
        assert!(
            warnings[0].starts_with(&format!("warning: --devices {mask:?}"))
                && warnings[0].contains(rule),
            "{mask:?}: {}",
            run.stderr
        );
        host.env("CUDA_VISIBLE_DEVICES", mask);
        let run = host.run(&["visibility"]);
        assert!(
            run.code == 0
                && run
                    .stderr
                    .starts_with("warning: CUDA_VISIBLE_DEVICES entry"),
            "{mask:?} from the environment: {}",
            run.stderr
        );
        host.unset("CUDA_VISIBLE_DEVICES");
    }
}

/// A mask with which CUDA would see no GPU is refused (exit 1), saying why and
/// naming where it came from, with nothing on stdout for a launcher to export.
#[test]
fn a_mask_that_shows_no_gpu_is_refused() {
    let mut host = FakeHost::new();
    host.two_gpus();
    let mut transcript = String::new();
    for mask in [
        "",
        " ",
        "0,0",
        "0,1,01",
        "all",
        "none",
        "-1",
        "GPU-5a88,GPU-5a88",
    ] {
        let run = host.run(&["visibility", "--devices", mask]);
        run.assert_rejected(mask);
        assert!(run.stdout.is_empty(), "{mask:?}: {}", run.stdout);
        assert!(
            run.stderr.contains("CUDA would see no GPU at all")
                && run
                    .stderr
                    .starts_with(&format!("error: --devices {mask:?}")),
            "{mask:?}: {}",
            run.stderr
        );
        let _ = writeln!(transcript, "=== --devices {mask:?}\n{}", run.stderr);
        host.env("CUDA_VISIBLE_DEVICES", mask);
        let run = host.run(&["visibility"]);
        run.assert_rejected(mask);
        assert!(
            !run.stderr.contains("--devices"),
            "{mask:?}: {}",
            run.stderr
        );
        host.unset("CUDA_VISIBLE_DEVICES");
    }
    insta::assert_snapshot!(transcript);
}

#[test]
fn uuids_need_no_gpu_query() {
    let host = FakeHost::new(); // no nvidia-smi at all
    let run = host.run(&["visibility", "--devices", &format!("{GPU0},{GPU1}")]);
    assert_eq!((run.code, run.stdout), (0, format!("{GPU0},{GPU1}\n")));
}

#[test]
fn index_order_is_trusted_only_with_pci_bus_id_on_mixed_hosts() {
    let mut host = FakeHost::new();
    host.mixed_gpus();
    host.run(&["visibility", "--devices", "0"])
        .assert_rejected("mixed, FASTEST_FIRST");
    host.run(&["visibility"])
        .assert_rejected("mixed, unset mask");
    host.env("CUDA_DEVICE_ORDER", "FASTEST_FIRST");
    host.run(&["visibility", "--devices", "1"])
        .assert_rejected("mixed, explicit FASTEST_FIRST");
    host.env("CUDA_DEVICE_ORDER", "PCI_BUS_ID");
    let run = host.run(&["visibility", "--devices", "1"]);
    assert_eq!((run.code, run.stdout), (0, format!("{GPU1}\n")));
}

#[test]
fn refusals_name_the_entry() {
    let mut transcript = String::new();
    let mut record = |title: &str, host: &FakeHost, args: &[&str]| {
        let run = host.run(args);
        run.assert_rejected(title);
        let _ = writeln!(transcript, "=== {title}\n{}", run.stderr);
    };
    let mut two = FakeHost::new();
    two.two_gpus();
    record(
        "index beyond the table",
        &two,
        &["visibility", "--devices", "0,5"],
    );
    record(
        "UUID after an index",
        &two,
        &["visibility", "--devices", &format!("0,{GPU1}")],
    );
    let mut mixed = FakeHost::new();
    mixed.mixed_gpus();
    record(
        "mixed models without PCI_BUS_ID",
        &mixed,
        &["visibility", "--devices", "1"],
    );
    record("mixed models, mask unset", &mixed, &["visibility"]);
    let none = FakeHost::new();
    record("no nvidia-smi", &none, &["visibility", "--devices", "0"]);
    record("no nvidia-smi, mask unset", &none, &["visibility"]);
    let mut failing = FakeHost::new();
    failing.tool(
        "nvidia-smi",
        "",
        "NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver.\n",
        9,
    );
    record(
        "nvidia-smi fails",
        &failing,
        &["visibility", "--devices", "0"],
    );
    let mut bad = FakeHost::new();
    bad.two_gpus().env("CUDA_VISIBLE_DEVICES", not_utf8("0,"));
    record("non-UTF-8 mask", &bad, &["visibility"]);
    insta::assert_snapshot!(transcript);
}

/// A mask holding a newline or another control character is refused, whichever entry holds it:
/// a Slurm task prolog prints the mask as `export CUDA_VISIBLE_DEVICES=<mask>`, and a newline after
/// CUDA's stop point (which CUDA keeps as written) would print a second `export` line.
#[test]
fn a_mask_holding_a_control_character_is_refused() {
    let mut host = FakeHost::new();
    host.two_gpus();
    for mask in [
        "0,\nexport LD_PRELOAD=/tmp/x.so",
        "0,-1,\nexport LD_PRELOAD=/tmp/x.so",
        &format!("{GPU0}\n"),
        "0\t",
        "0,\r1",
        "0,\u{1b}[2J",
        "0,\u{7f}",
        "0,\u{85}",
    ] {
        host.env("CUDA_VISIBLE_DEVICES", mask);
        let run = host.run(&["visibility"]);
        run.assert_rejected(&format!("{mask:?}"));
        assert!(
            run.stderr
                .contains("CUDA_VISIBLE_DEVICES holds a control character"),
            "{mask:?}\n{}",
            run.render()
        );
        assert!(run.stderr.contains("with no newline"), "{}", run.render());
        host.unset("CUDA_VISIBLE_DEVICES");
        let run = host.run(&["visibility", "--devices", mask]);
        run.assert_rejected(&format!("--devices {mask:?}"));
        assert!(
            run.stderr.contains("--devices holds a control character"),
            "{}",
            run.render()
        );
    }
    // A space is no control character: CUDA reads it, and the mask is printed as before.
    let run = host.run(&["visibility", "--devices", "0,-1, 1"]);
    assert_eq!(
        (run.code, run.stdout.as_str()),
        (0, format!("{GPU0},-1, 1\n").as_str())
    );
}
