use std::fs;
use std::os::unix::fs::{MetadataExt as _, PermissionsExt as _};
use std::path::Path;

use super::*;

const NOBODY: u32 = 65534;

/// The mode bits of `path` (not following a link).
fn mode(path: &Path) -> u32 {
    fs::symlink_metadata(path).unwrap().mode() & 0o7777
}

/// The mode a new file gets here: this process's umask applied to 0666, as `open(2)` does.
fn new_file_rule(dir: &Path) -> u32 {
    let probe = dir.join("umask-probe");
    fs::write(&probe, b"").unwrap();
    let mode = mode(&probe);
    fs::remove_file(&probe).unwrap();
    mode
}

fn running_as_root() -> bool {
    rustix::process::geteuid().is_root()
}

/// The error's message with the temp directory replaced, for snapshots.
fn message(err: &WriteError, dir: &Path) -> String {
    err.to_string().replace(&dir.display().to_string(), "[DIR]")
}

#[test]
fn a_new_file_follows_the_new_file_rule_and_no_temporary_file_is_left() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("out.json");
    write_file(&path, b"new\n", "the test file", WriteOptions::new()).unwrap();
    assert_eq!(fs::read(&path).unwrap(), b"new\n");
    assert_eq!(mode(&path), new_file_rule(dir.path()));
    assert_eq!(fs::read_dir(dir.path()).unwrap().count(), 1);
}

#[test]
fn the_new_file_mode_never_carries_set_id_or_sticky_bits() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("out.prom");
    let options = WriteOptions::new().new_file_mode(0o7644);
    write_file(&path, b"x", "the test file", options).unwrap();
    assert_eq!(mode(&path) & 0o7000, 0);
}

#[test]
fn an_own_file_keeps_its_permission_bits_but_never_set_id_or_sticky_bits() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("own.json");
    for (before, after) in [
        (0o640, 0o640),
        (0o600, 0o600),
        (0o7777, 0o777),
        (0o4755, 0o755),
    ] {
        fs::write(&path, b"old").unwrap();
        fs::set_permissions(&path, fs::Permissions::from_mode(before)).unwrap();
        write_file(&path, b"new", "the test file", WriteOptions::new()).unwrap();
        assert_eq!(mode(&path), after, "{before:o}");
        assert_eq!(fs::read(&path).unwrap(), b"new");
    }
}

/// `before`, given to `nobody` at a fresh path in `dir`, rewritten by this (root) process with
/// `options`: the mode and owner the rewritten file has.
fn rewrite_nobodys_file(dir: &Path, before: u32, options: WriteOptions) -> (u32, u32) {
    let path = dir.join(format!("nobody-{before:o}.json"));
    fs::write(&path, b"theirs").unwrap();
    std::os::unix::fs::chown(&path, Some(NOBODY), Some(NOBODY)).unwrap();
    fs::set_permissions(&path, fs::Permissions::from_mode(before)).unwrap();
    assert_eq!(mode(&path), before);
    write_file(&path, b"ours", "the test file", options).unwrap();
    assert_eq!(fs::read(&path).unwrap(), b"ours");
    (mode(&path), fs::symlink_metadata(&path).unwrap().uid())
}

/// Another user's file is never widened: its bits intersected with the new-file rule. A
/// `06777` file planted at the path must not come back set-ID and world-writable, and a private
/// 0640 or 0600 file must not become readable by everyone.
#[test]
fn another_users_file_gets_its_bits_intersected_with_the_new_file_rule() {
    if !running_as_root() {
        eprintln!("skipping: giving a file to another user needs root");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let rule = new_file_rule(dir.path());
    for (before, after) in [
        (0o6777, rule),
        (0o7777, rule),
        (0o640, 0o640 & rule),
        (0o600, 0o600 & rule),
        (0o604, 0o604 & rule),
        (0o4755, 0o755 & rule),
        (0o666, rule),
    ] {
        let (mode, owner) = rewrite_nobodys_file(dir.path(), before, WriteOptions::new());
        assert_eq!(mode, after, "{before:04o} became {mode:04o}");
        assert_eq!(owner, NOBODY, "{before:04o}: the owner was not kept");
    }
    if rule == 0o644 {
        // The usual umask (022): the examples of the docs, literally.
        for (before, after) in [(0o6777, 0o644), (0o640, 0o640), (0o600, 0o600)] {
            let (mode, _) = rewrite_nobodys_file(dir.path(), before, WriteOptions::new());
            assert_eq!(mode, after, "{before:04o} became {mode:04o}");
        }
    }
}

/// The caller's new-file mode narrows another user's file too (the textfile's 0644 turns a
/// group-writable 0664 file into 0644), and never widens it (0600 stays 0600).
#[test]
fn another_users_file_is_narrowed_by_the_callers_new_file_mode() {
    if !running_as_root() {
        eprintln!("skipping: giving a file to another user needs root");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let rule = new_file_rule(dir.path());
    let options = WriteOptions::new().new_file_mode(0o644);
    for (before, after) in [(0o664, 0o644), (0o600, 0o600), (0o6777, 0o644)] {
        let (mode, _) = rewrite_nobodys_file(dir.path(), before, options);
        assert_eq!(mode, after & rule, "{before:04o} became {mode:04o}");
    }
}

#[test]
fn a_symlink_is_refused_and_neither_it_nor_its_target_changes() {
    let dir = tempfile::tempdir().unwrap();
    let target = dir.path().join("target.json");
    fs::write(&target, b"target").unwrap();
    fs::set_permissions(&target, fs::Permissions::from_mode(0o6777)).unwrap();
    let link = dir.path().join("link.json");
    std::os::unix::fs::symlink(&target, &link).unwrap();
    let err = write_file(&link, b"x", "the test file", WriteOptions::new()).unwrap_err();
    assert_eq!(err.state, FileState::Unchanged);
    insta::assert_snapshot!(message(&err, dir.path()), @"cannot write the test file: '[DIR]/link.json': is a symbolic link to '[DIR]/target.json'; pass the path of the file itself; it was left unchanged");
    assert!(
        fs::symlink_metadata(&link)
            .unwrap()
            .file_type()
            .is_symlink()
    );
    assert_eq!(fs::read(&target).unwrap(), b"target");
    assert_eq!(mode(&target), 0o6777);
}

#[test]
fn a_fifo_or_a_directory_is_refused_untouched() {
    let dir = tempfile::tempdir().unwrap();
    let fifo = dir.path().join("fifo");
    rustix::fs::mknodat(
        rustix::fs::CWD,
        &fifo,
        rustix::fs::FileType::Fifo,
        rustix::fs::Mode::from_raw_mode(0o600),
        0,
    )
    .unwrap();
    let err = write_file(&fifo, b"x", "the test file", WriteOptions::new()).unwrap_err();
    insta::assert_snapshot!(message(&err, dir.path()), @"cannot write the test file: '[DIR]/fifo': is a FIFO, not a regular file; it was left unchanged");
    let sub = dir.path().join("sub");
    fs::create_dir(&sub).unwrap();
    let err = write_file(&sub, b"x", "the test file", WriteOptions::new()).unwrap_err();
    assert!(matches!(err.failure, ManifestError::NotRegularFile { .. }));
    assert!(sub.is_dir() && fs::read_dir(&sub).unwrap().count() == 0);
}

#[test]
fn a_missing_directory_is_an_error_unless_parents_are_created() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("reports/nested/out.xml");
    let err = write_file(&path, b"x", "the test file", WriteOptions::new()).unwrap_err();
    assert_eq!(err.state, FileState::NotCreated);
    insta::assert_snapshot!(message(&err, dir.path()), @"cannot write the test file: '[DIR]/reports/nested': cannot create a temporary file there: No such file or directory (os error 2); no file was created");
    assert!(!dir.path().join("reports").exists());

    let options = WriteOptions::new().create_parents(true);
    write_file(&path, b"x", "the test file", options).unwrap();
    assert_eq!(fs::read(&path).unwrap(), b"x");
}

#[test]
fn a_parent_that_cannot_be_created_says_no_file_was_created() {
    let dir = tempfile::tempdir().unwrap();
    fs::write(dir.path().join("plain"), b"").unwrap();
    let path = dir.path().join("plain/out.xml");
    let options = WriteOptions::new().create_parents(true);
    let err = write_file(&path, b"x", "the test file", options).unwrap_err();
    assert_eq!(err.state, FileState::NotCreated);
    assert!(
        message(&err, dir.path()).starts_with(
            "cannot write the test file: '[DIR]/plain': cannot create the directory: "
        ),
        "{err}"
    );
}

#[test]
fn a_read_only_file_is_refused_and_left_unchanged() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("ro.json");
    fs::write(&path, b"old").unwrap();
    fs::set_permissions(&path, fs::Permissions::from_mode(0o444)).unwrap();
    let err = write_file(&path, b"new", "the test file", WriteOptions::new()).unwrap_err();
    insta::assert_snapshot!(message(&err, dir.path()), @"cannot write the test file: '[DIR]/ro.json': not writable by this user (mode 0444 grants no write permission); it was left unchanged");
    assert_eq!(fs::read(&path).unwrap(), b"old");
}
