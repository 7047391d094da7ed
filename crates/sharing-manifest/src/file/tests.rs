use std::fs;
use std::os::unix::fs::PermissionsExt as _;
use std::path::{Path, PathBuf};

use serde_json::json;
use sharing_policy::Evidence;

use super::*;
use crate::json::{EVIDENCE_SCHEMA, MANIFEST_SCHEMA_KEY, MANIFEST_WRITER, MANIFEST_WRITER_KEY};

fn evidence() -> Evidence {
    Evidence {
        configured: Some("mps".to_owned()),
        effective: Some("mps".to_owned()),
        validated: true,
        learner_device: Some("cuda:0".to_owned()),
        collector_device: Some("cuda:0".to_owned()),
        learner_gpu_uuid: Some("AA".to_owned()),
        collector_gpu_uuid: Some("AA".to_owned()),
        pipe_directory: Some("/tmp/nvidia-mps".to_owned()),
        control_pipe: Some("/tmp/nvidia-mps/control".to_owned()),
        control_pipe_kind: Some("unix_socket".to_owned()),
        daemon_pid: Some(7),
        ..Evidence::unobserved(0, 1)
    }
}

/// The directory's entries, sorted: proves no temporary file is left behind.
fn entries(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = fs::read_dir(dir)
        .unwrap()
        .map(|entry| entry.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    names
}

/// The error's message with the temp directory replaced, for snapshots.
fn message(err: &ManifestError, dir: &Path) -> String {
    err.to_string().replace(&dir.display().to_string(), "[DIR]")
}

/// The keys of a JSON object, in order.
fn keys(value: &Value) -> Vec<&str> {
    value
        .as_object()
        .unwrap()
        .keys()
        .map(String::as_str)
        .collect()
}

fn setup(name: &str, content: &[u8]) -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join(name);
    fs::write(&path, content).unwrap();
    (dir, path)
}

#[test]
fn keeps_every_other_key_and_the_key_order() {
    let original = br#"{"zeta": 1, "alpha": {"nested": [1, 2.5, null]}, "mid": "x"}"#;
    let (dir, path) = setup("run.json", original);
    record_in_manifest(&path, &evidence()).unwrap();
    let text = fs::read_to_string(&path).unwrap();
    let value: Value = serde_json::from_str(&text).unwrap();
    assert_eq!(
        keys(&value),
        [
            "zeta",
            "alpha",
            "mid",
            MANIFEST_KEY,
            MANIFEST_SCHEMA_KEY,
            MANIFEST_WRITER_KEY
        ]
    );
    assert_eq!(value[MANIFEST_SCHEMA_KEY], EVIDENCE_SCHEMA);
    assert_eq!(value["alpha"], json!({"nested": [1, 2.5, null]}));
    assert_eq!(value[MANIFEST_KEY], evidence_to_json(&evidence()));
    assert!(text.ends_with("}\n"));
    assert_eq!(entries(dir.path()), ["run.json", "run.json.lock"]);
}

#[test]
fn replaces_existing_evidence_in_place() {
    let (_dir, path) = setup(
        "run.json",
        br#"{"cuda_process_sharing_writer": "mps-preflight 0.1.0", "cuda_process_sharing_schema": "old", "a": 1, "cuda_process_sharing": {"old": true}, "z": 2}"#,
    );
    record_in_manifest(&path, &evidence()).unwrap();
    let value: Value = serde_json::from_slice(&fs::read(&path).unwrap()).unwrap();
    assert_eq!(
        keys(&value),
        [
            "a",
            MANIFEST_KEY,
            MANIFEST_SCHEMA_KEY,
            MANIFEST_WRITER_KEY,
            "z"
        ]
    );
    assert_eq!(value[MANIFEST_WRITER_KEY], MANIFEST_WRITER);
    assert_eq!(value[MANIFEST_SCHEMA_KEY], EVIDENCE_SCHEMA);
    assert_eq!(value[MANIFEST_KEY], evidence_to_json(&evidence()));
}

#[test]
fn creates_a_missing_manifest() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("new.json");
    record_in_manifest(&path, &evidence()).unwrap();
    let value: Value = serde_json::from_slice(&fs::read(&path).unwrap()).unwrap();
    assert_eq!(
        value,
        json!({
            MANIFEST_KEY: evidence_to_json(&evidence()),
            MANIFEST_SCHEMA_KEY: EVIDENCE_SCHEMA,
            MANIFEST_WRITER_KEY: MANIFEST_WRITER
        })
    );
    // The lock file stays (it is never removed); no temp file does.
    assert_eq!(entries(dir.path()), ["new.json", "new.json.lock"]);
}

#[test]
fn keeps_the_permission_bits() {
    let (_dir, path) = setup("run.json", b"{}");
    fs::set_permissions(&path, fs::Permissions::from_mode(0o640)).unwrap();
    record_in_manifest(&path, &evidence()).unwrap();
    assert_eq!(
        fs::metadata(&path).unwrap().permissions().mode() & 0o7777,
        0o640
    );
}

#[test]
fn a_missing_directory_is_an_error_and_creates_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("absent").join("run.json");
    let err = record_in_manifest(&path, &evidence()).unwrap_err();
    assert!(matches!(err, ManifestError::Io { .. }), "{err:?}");
    assert_eq!(entries(dir.path()), Vec::<String>::new());
}

/// Each refused manifest: the error, and the file exactly as it was.
#[test]
fn refused_manifests_are_left_byte_for_byte_untouched() {
    let cases: [(&str, &[u8]); 6] = [
        ("corrupt", b"{\"run\": 1,,}"),
        ("truncated", b"{\"run\": {\"a\": "),
        ("array", b"[1, 2, 3]\n"),
        ("string", b"\"just text\""),
        ("not_utf8", b"{\"run\": \"\xff\xfe\"}"),
        ("empty", b""),
    ];
    let mut messages = Vec::new();
    for (name, content) in cases {
        let (dir, path) = setup(&format!("{name}.json"), content);
        let before = fs::metadata(&path).unwrap().modified().unwrap();
        let err = record_in_manifest(&path, &evidence()).unwrap_err();
        assert_eq!(fs::read(&path).unwrap(), content, "{name} changed");
        assert_eq!(
            fs::metadata(&path).unwrap().modified().unwrap(),
            before,
            "{name} rewritten"
        );
        assert_eq!(
            entries(dir.path()),
            [format!("{name}.json"), format!("{name}.json.lock")],
            "{name} left a temp file"
        );
        messages.push(message(&err, dir.path()));
    }
    insta::assert_snapshot!(messages.join("\n"));
}

#[test]
fn a_read_only_manifest_is_refused() {
    let (dir, path) = setup("run.json", b"{\"a\": 1}");
    fs::set_permissions(&path, fs::Permissions::from_mode(0o444)).unwrap();
    let err = record_in_manifest(&path, &evidence()).unwrap_err();
    assert_eq!(fs::read(&path).unwrap(), b"{\"a\": 1}");
    insta::assert_snapshot!(message(&err, dir.path()), @"'[DIR]/run.json': not writable by this user (mode 0444 grants no write permission)");
}

#[test]
fn a_symlink_is_refused_and_its_target_untouched() {
    let (dir, target) = setup("real.json", b"{\"a\": 1}");
    let link = dir.path().join("link.json");
    std::os::unix::fs::symlink(&target, &link).unwrap();
    let err = record_in_manifest(&link, &evidence()).unwrap_err();
    assert_eq!(fs::read(&target).unwrap(), b"{\"a\": 1}");
    assert!(
        fs::symlink_metadata(&link)
            .unwrap()
            .file_type()
            .is_symlink()
    );
    insta::assert_snapshot!(message(&err, dir.path()), @"'[DIR]/link.json': is a symbolic link to '[DIR]/real.json'; pass the path of the file itself");
    // A dangling link is refused too, rather than created through.
    let dangling = dir.path().join("dangling.json");
    std::os::unix::fs::symlink(dir.path().join("nowhere.json"), &dangling).unwrap();
    assert!(matches!(
        record_in_manifest(&dangling, &evidence()),
        Err(ManifestError::Symlink { .. })
    ));
    assert!(!dir.path().join("nowhere.json").exists());
}

#[test]
fn a_directory_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let err = record_in_manifest(dir.path(), &evidence()).unwrap_err();
    assert!(
        matches!(
            err,
            ManifestError::NotRegularFile {
                kind: "a directory",
                ..
            }
        ),
        "{err:?}"
    );
    assert!(matches!(
        read_json_file(dir.path()),
        Err(ManifestError::NotRegularFile {
            kind: "a directory",
            ..
        })
    ));
}

#[test]
fn a_fifo_is_refused_without_blocking() {
    let dir = tempfile::tempdir().unwrap();
    let fifo = dir.path().join("pipe.json");
    rustix::fs::mknodat(
        rustix::fs::CWD,
        &fifo,
        rustix::fs::FileType::Fifo,
        rustix::fs::Mode::from_raw_mode(0o600),
        0,
    )
    .unwrap();
    assert!(matches!(
        read_json_file(&fifo),
        Err(ManifestError::NotRegularFile { kind: "a FIFO", .. })
    ));
    assert!(matches!(
        record_in_manifest(&fifo, &evidence()),
        Err(ManifestError::NotRegularFile { kind: "a FIFO", .. })
    ));
}

#[test]
fn an_oversized_file_is_refused_unread() {
    let (dir, path) = setup("big.json", b"");
    let file = fs::OpenOptions::new().write(true).open(&path).unwrap();
    file.set_len(MAX_FILE_BYTES + 1).unwrap(); // sparse: no 16 MiB written
    let err = record_in_manifest(&path, &evidence()).unwrap_err();
    assert_eq!(fs::metadata(&path).unwrap().len(), MAX_FILE_BYTES + 1);
    insta::assert_snapshot!(message(&err, dir.path()), @"'[DIR]/big.json': is 16777217 bytes, over the 16777216-byte limit for a JSON file here");
    assert!(matches!(
        read_json_file(&path),
        Err(ManifestError::TooLarge { .. })
    ));
    file.set_len(MAX_FILE_BYTES).unwrap(); // at the cap: read, then refused as JSON
    assert!(matches!(
        read_json_file(&path),
        Err(ManifestError::NotJson { .. })
    ));
}

#[test]
fn read_json_file_reads_any_json_and_names_missing_files() {
    let (dir, path) = setup("a.json", b"[1]");
    assert_eq!(read_json_file(&path).unwrap(), json!([1]));
    let err = read_json_file(&dir.path().join("missing.json")).unwrap_err();
    insta::assert_snapshot!(message(&err, dir.path()), @"'[DIR]/missing.json': cannot read: No such file or directory (os error 2)");
}

#[test]
fn a_file_of_exactly_the_cap_is_read_whole() {
    // Leading whitespace up to the cap, the value last: a read one byte short of the cap
    // would cut the closing bracket off.
    let mut content = vec![b' '; usize::try_from(MAX_FILE_BYTES).unwrap() - 3];
    content.extend_from_slice(b"[1]");
    let (_dir, path) = setup("full.json", &content);
    assert_eq!(fs::metadata(&path).unwrap().len(), MAX_FILE_BYTES);
    assert_eq!(read_json_file(&path).unwrap(), json!([1]));
}

#[test]
fn a_file_longer_than_its_stated_size_is_never_parsed_from_a_truncated_prefix() {
    // A procfs file states size 0 but reads on for gigabytes. Reading one byte past the cap
    // finds that out: the file is refused as too large, or (pagemap takes only reads of
    // whole 8-byte entries, and the byte past the cap is a 1-byte read) as unreadable, but
    // its first 16 MiB are never handed to the JSON parser as if they were the whole file.
    let path = Path::new("/proc/self/pagemap");
    assert_eq!(fs::metadata(path).unwrap().len(), 0);
    match read_json_file(path) {
        Err(ManifestError::TooLarge { size, limit, .. }) => {
            assert_eq!((size, limit), (MAX_FILE_BYTES + 1, MAX_FILE_BYTES));
        }
        Err(ManifestError::Io { action: "read", .. }) => {}
        other => panic!("expected TooLarge or a read error, got {other:?}"),
    }
}

#[test]
fn a_path_that_cannot_be_inspected_is_an_error_not_a_new_manifest() {
    // `file.json/manifest.json`: ENOTDIR, not ENOENT, so it is not "missing, create it".
    let (dir, file) = setup("file.json", b"{}");
    let err = record_in_manifest(&file.join("manifest.json"), &evidence()).unwrap_err();
    assert!(
        matches!(
            err,
            ManifestError::Io {
                action: "inspect",
                ..
            }
        ),
        "{err:?}"
    );
    insta::assert_snapshot!(message(&err, dir.path()), @"'[DIR]/file.json/manifest.json': cannot inspect: Not a directory (os error 20)");
    assert_eq!(fs::read(&file).unwrap(), b"{}");
}

#[test]
fn the_owner_and_group_are_kept_when_the_writer_may_set_them() {
    // Only root may give a file away; as any other user there is nothing to check here.
    if !rustix::process::geteuid().is_root() {
        return;
    }
    let (_dir, path) = setup("owned.json", b"{}");
    std::os::unix::fs::chown(&path, Some(4242), Some(4343)).unwrap();
    record_in_manifest(&path, &evidence()).unwrap();
    let meta = fs::metadata(&path).unwrap();
    assert_eq!(
        (
            std::os::unix::fs::MetadataExt::uid(&meta),
            std::os::unix::fs::MetadataExt::gid(&meta)
        ),
        (4242, 4343)
    );
    assert_eq!(read_json_file(&path).unwrap()[MANIFEST_KEY]["rank"], 0);
}

/// Root recording evidence in the manifest of `nobody` (in `nobody`'s own directory) keeps the
/// owner and never widens the mode: 0640 stays 0640, 0600 stays 0600.
#[test]
fn root_writing_another_users_private_manifest_keeps_it_private() {
    use std::os::unix::fs::MetadataExt as _;
    const NOBODY: u32 = 65534;
    if !rustix::process::geteuid().is_root() {
        eprintln!("skipping: giving a file to another user needs root");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let home = dir.path().join("nobody");
    fs::create_dir(&home).unwrap();
    std::os::unix::fs::chown(&home, Some(NOBODY), Some(NOBODY)).unwrap();
    for before in [0o640, 0o600] {
        let path = home.join(format!("run-{before:o}.json"));
        fs::write(&path, br#"{"seed": 1}"#).unwrap();
        std::os::unix::fs::chown(&path, Some(NOBODY), Some(NOBODY)).unwrap();
        fs::set_permissions(&path, fs::Permissions::from_mode(before)).unwrap();
        record_in_manifest(&path, &evidence()).unwrap();
        let meta = fs::metadata(&path).unwrap();
        assert_eq!(
            (meta.uid(), meta.gid(), meta.mode() & 0o7777),
            (NOBODY, NOBODY, before),
            "{before:04o}"
        );
        let written = read_json_file(&path).unwrap();
        assert_eq!(
            (
                written["seed"].clone(),
                written[MANIFEST_KEY]["rank"].clone()
            ),
            (json!(1), json!(0))
        );
    }
}
