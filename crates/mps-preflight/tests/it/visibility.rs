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
        // CUDA stops reading at `-1`: the rest is kept exactly as written.
        ("0,-1,1", format!("{GPU0},-1,1\n")),
        // UUIDs and prefixes pass through untouched.
        (GPU1, format!("{GPU1}\n")),
        ("GPU-5a88", "GPU-5a88\n".to_owned()),
        // Empty: CUDA sees no GPU; it stays empty.
        ("", "\n".to_owned()),
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
