//! Every file the tool writes goes through one writer with one mode rule. Another user
//! (`nobody`) plants a `06777` file, or a link to one, at the path root will write; root must
//! never end up owning a set-ID or world-writable file, and a link is refused with the target
//! untouched. A private file of that user (0640, 0600) that root rewrites stays as private:
//! another user's bits are intersected with the new-file mode, never widened.

use std::fs;
use std::os::unix::fs::{MetadataExt as _, PermissionsExt as _};
use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::json;

use crate::support::{FakeHost, Run, bare_snapshot, finish, running_as_root, system_program};

const NOBODY: u32 = 65534;

/// Every output, as (name, the arguments writing to `path`, what the file must hold first,
/// the new-file mode before the umask).
fn outputs(host: &FakeHost, path: &str) -> Vec<(&'static str, Vec<String>, &'static str, u32)> {
    let cases = host.root().join("planted.cases.json");
    let case = json!({"name": "cpu learner", "snapshot": bare_snapshot(),
        "request": {"learner_device": "cpu", "backend": "mjwarp"},
        "expect": {"validated": false}});
    fs::write(&cases, json!({ "cases": [case] }).to_string()).unwrap();
    let null_probe = ["probe", "--learner-device", "cpu", "--backend", "mjwarp"];
    let with = |base: &[&str], extra: &[&str]| -> Vec<String> {
        base.iter()
            .chain(extra)
            .map(|arg| (*arg).to_owned())
            .collect()
    };
    let own_pid = std::process::id().to_string();
    vec![
        (
            "capture --output",
            with(&["capture", "--output", path], &[]),
            "",
            0o666,
        ),
        (
            "probe --manifest",
            with(&null_probe, &["--manifest", path]),
            "{}",
            0o666,
        ),
        (
            "probe --prom-textfile",
            with(&null_probe, &["--prom-textfile", path]),
            "",
            0o644,
        ),
        (
            "test --junit",
            with(&["test", cases.to_str().unwrap(), "--junit", path], &[]),
            "",
            0o666,
        ),
        (
            "attest --save-snapshot",
            with(
                &["attest", "--learner-pid", "1", "--collector-pid", &own_pid],
                &["--save-snapshot", path],
            ),
            "",
            0o666,
        ),
    ]
}

/// A directory anyone may write into, as `/tmp` is (sticky), inside `host`.
fn shared_dir(host: &FakeHost) -> PathBuf {
    fs::set_permissions(host.root(), fs::Permissions::from_mode(0o755)).unwrap();
    let shared = host.root().join("shared");
    fs::create_dir_all(&shared).unwrap();
    fs::set_permissions(&shared, fs::Permissions::from_mode(0o1777)).unwrap();
    shared
}

/// As `nobody`: `file` holding `content` with mode 06777, and `link` pointing to it.
fn plant(file: &Path, link: &Path, content: &str) {
    plant_with_mode(file, link, content, 0o6777);
}

/// As `nobody`: `file` holding `content` with mode `mode`, and `link` pointing to it.
fn plant_with_mode(file: &Path, link: &Path, content: &str, mode: u32) {
    for path in [file, link] {
        let _ = fs::remove_file(path);
    }
    let run = finish(
        Command::new(system_program("setpriv"))
            .args(["--reuid=65534", "--regid=65534", "--clear-groups", "--"])
            .arg(system_program("sh"))
            .arg("-c")
            .arg(r#"printf %s "$1" > "$2" && chmod "$4" "$2" && ln -s "$2" "$3""#)
            .args(["sh", content])
            .arg(file)
            .arg(link)
            .arg(format!("{mode:o}")),
    );
    assert_eq!(run.code, 0, "{}", run.render());
    let meta = fs::symlink_metadata(file).unwrap();
    assert_eq!((meta.uid(), meta.mode() & 0o7777), (NOBODY, mode));
}

/// The mode a new file gets from a process with this one's umask (the binary inherits it).
fn umask_rule(dir: &Path, mode: u32) -> u32 {
    let probe = dir.join(".umask-probe");
    fs::write(&probe, b"").unwrap();
    let rule = fs::metadata(&probe).unwrap().mode() & 0o777;
    fs::remove_file(&probe).unwrap();
    // The probe got 0666 less the umask; the same umask applied to `mode`.
    mode & (rule | !0o666) & 0o777
}

fn run(host: &FakeHost, args: &[String]) -> Run {
    host.run(&args.iter().map(String::as_str).collect::<Vec<_>>())
}

#[test]
fn another_users_set_id_file_never_becomes_roots() {
    if !running_as_root()
        || !Path::new("/usr/bin/setpriv").exists() && !Path::new("/bin/setpriv").exists()
    {
        eprintln!("skipping: needs root and setpriv");
        return;
    }
    let host = FakeHost::new();
    let shared = shared_dir(&host);
    let (file, link) = (shared.join("out"), shared.join("link"));
    for (name, args, content, new_mode) in outputs(&host, file.to_str().unwrap()) {
        plant(&file, &link, content);
        let run = run(&host, &args);
        run.assert_discipline(name);
        assert_ne!(run.code, 2, "{name}: the write failed\n{}", run.render());
        let meta = fs::symlink_metadata(&file).unwrap();
        assert!(meta.file_type().is_file(), "{name}");
        assert_eq!(
            meta.mode() & 0o7000,
            0,
            "{name}: a set-ID or sticky bit survived"
        );
        assert_eq!(
            meta.mode() & 0o7777,
            umask_rule(&shared, new_mode),
            "{name}: another user's bits were kept"
        );
        assert_ne!(
            fs::read_to_string(&file).unwrap(),
            content,
            "{name}: not written"
        );
    }
}

/// Root rewriting another user's private file (in that user's own directory, as a run
/// directory is) keeps the owner and never widens the mode, for every output.
#[test]
fn another_users_private_file_stays_private() {
    if !running_as_root()
        || !Path::new("/usr/bin/setpriv").exists() && !Path::new("/bin/setpriv").exists()
    {
        eprintln!("skipping: needs root and setpriv");
        return;
    }
    let host = FakeHost::new();
    let shared = shared_dir(&host);
    let home = shared.join("nobody");
    fs::create_dir(&home).unwrap();
    std::os::unix::fs::chown(&home, Some(NOBODY), Some(NOBODY)).unwrap();
    let (file, link) = (home.join("out"), home.join("link"));
    for before in [0o640, 0o600] {
        for (name, args, content, new_mode) in outputs(&host, file.to_str().unwrap()) {
            plant_with_mode(&file, &link, content, before);
            let run = run(&host, &args);
            run.assert_discipline(name);
            assert_ne!(run.code, 2, "{name}: the write failed\n{}", run.render());
            let meta = fs::symlink_metadata(&file).unwrap();
            assert_eq!(
                (meta.uid(), meta.gid(), meta.mode() & 0o7777),
                (NOBODY, NOBODY, before & umask_rule(&shared, new_mode)),
                "{name}: {before:04o} was not kept within the new-file mode"
            );
            assert_eq!(meta.mode() & 0o077 & !before, 0, "{name}: widened");
            assert_ne!(
                fs::read_to_string(&file).unwrap(),
                content,
                "{name}: not written"
            );
        }
    }
}

#[test]
fn a_link_to_another_users_file_is_refused_and_both_are_left_unchanged() {
    if !running_as_root()
        || !Path::new("/usr/bin/setpriv").exists() && !Path::new("/bin/setpriv").exists()
    {
        eprintln!("skipping: needs root and setpriv");
        return;
    }
    let host = FakeHost::new();
    let shared = shared_dir(&host);
    let (file, link) = (shared.join("out"), shared.join("link"));
    for (name, args, content, _) in outputs(&host, link.to_str().unwrap()) {
        plant(&file, &link, content);
        let run = run(&host, &args);
        run.assert_discipline(name);
        assert_eq!(run.code, 2, "{name}\n{}", run.render());
        assert!(
            run.stderr.contains("is a symbolic link")
                && run.stderr.contains("it was left unchanged"),
            "{name}\n{}",
            run.render()
        );
        assert!(
            fs::symlink_metadata(&link)
                .unwrap()
                .file_type()
                .is_symlink(),
            "{name}"
        );
        let meta = fs::symlink_metadata(&file).unwrap();
        assert_eq!(
            (meta.uid(), meta.mode() & 0o7777),
            (NOBODY, 0o6777),
            "{name}"
        );
        assert_eq!(fs::read_to_string(&file).unwrap(), content, "{name}");
        let left: Vec<_> = fs::read_dir(&shared)
            .unwrap()
            .map(|entry| entry.unwrap().file_name())
            .collect();
        assert_eq!(left.len(), 2, "{name}: a file was left: {left:?}");
    }
}
