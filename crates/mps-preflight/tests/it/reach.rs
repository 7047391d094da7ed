//! The job's user can reach the pipe directory (notes row 6): probed for
//! `--as-user nobody`, a pipe directory under a 0700 parent is rejected naming the parent, and
//! once every directory on the way is searchable it is not.

use std::os::unix::fs::PermissionsExt;
use std::path::Path;

use crate::support::{FakeHost, MPS_REQUEST, args, running_as_root};

fn chmod(path: &Path, mode: u32) {
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode)).expect("chmod");
}

#[test]
fn a_pipe_directory_under_a_0700_parent_is_rejected_for_nobody() {
    if !running_as_root() {
        eprintln!("skipped: judging nobody against root's directories needs a root probe");
        return;
    }
    let host = FakeHost::healthy();
    // The daemon's own files: `control` 0666 (as the daemon leaves it), the `log` FIFO 0777.
    chmod(&host.pipe().join("control"), 0o666);
    rustix::fs::mknodat(
        rustix::fs::CWD,
        host.pipe().join("log"),
        rustix::fs::FileType::Fifo,
        rustix::fs::Mode::from_raw_mode(0o777),
        0,
    )
    .expect("mkfifo");
    chmod(&host.pipe().join("log"), 0o777);
    chmod(host.pipe(), 0o777);
    // tempfile made the parent 0700, root's.
    chmod(host.root(), 0o700);
    let request = args("probe", &MPS_REQUEST, &["--as-user", "nobody"]);
    let run = host.run(&request);
    run.assert_rejected("0700 parent");
    let parent = host.root().display().to_string();
    for phrase in [
        format!("{parent} (mode 0700, owner 0"),
        "search (x) on the directory as others".to_owned(),
        format!("chmod o+x {parent}"),
    ] {
        assert!(run.stderr.contains(&phrase), "{phrase}\n{}", run.render());
    }
    let doctor = host.run(&args("doctor", &MPS_REQUEST, &["--as-user", "nobody"]));
    assert!(
        doctor.stdout.contains("pipe-directory-unreachable"),
        "{}",
        doctor.render()
    );

    // Searchable: not rejected for the reach (what the probe cannot tell stays unverified).
    chmod(host.root(), 0o755);
    let run = host.run(&request);
    assert!(
        !run.stderr.contains("pipe-directory-unreachable") && !run.stderr.contains("cannot search"),
        "{}",
        run.render()
    );
    if run.code == 0 {
        let evidence = run.json("0755 parent");
        assert_eq!(evidence["judged_for_uid"], 65534, "{evidence}");
    }
    // The caller (root) reaches everything.
    chmod(host.root(), 0o700);
    let root = host.run(&args("probe", &MPS_REQUEST, &[]));
    if root.code == 0 {
        assert_eq!(root.json("root")["pipe_access"], "root");
    }
}
