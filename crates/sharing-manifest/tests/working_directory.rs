#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing
)]
//! `record_in_manifest` and the working directory: a bare file name is created in it, and an
//! absolute path never depends on it. One test, in its own binary (process), because it
//! changes the process's working directory.

use std::fs;
use std::path::Path;

use sharing_manifest::{MANIFEST_KEY, read_json_file, record_in_manifest};
use sharing_policy::Evidence;

fn evidence() -> Evidence {
    Evidence {
        configured: Some("mps".to_owned()),
        effective: Some("mps".to_owned()),
        validated: true,
        learner_device: Some("cuda:0".to_owned()),
        collector_device: Some("cuda:0".to_owned()),
        ..Evidence::unobserved(0, 1)
    }
}

fn names(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = fs::read_dir(dir)
        .unwrap()
        .map(|entry| entry.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    names
}

#[test]
fn bare_names_use_the_working_directory_and_absolute_paths_ignore_it() {
    // A bare file name: the temporary file, the rename and the directory flush all happen
    // in the working directory.
    let here = tempfile::tempdir().unwrap();
    std::env::set_current_dir(here.path()).unwrap();
    record_in_manifest(Path::new("manifest.json"), &evidence()).unwrap();
    assert_eq!(names(here.path()), ["manifest.json", "manifest.json.lock"]);
    assert_eq!(
        read_json_file(&here.path().join("manifest.json")).unwrap()[MANIFEST_KEY]["rank"],
        0
    );

    // An absolute path works even when the working directory no longer exists: nothing is
    // created or flushed there.
    let gone = tempfile::tempdir().unwrap();
    std::env::set_current_dir(gone.path()).unwrap();
    fs::remove_dir(gone.path()).unwrap();
    let target = tempfile::tempdir().unwrap();
    let path = target.path().join("manifest.json");
    record_in_manifest(&path, &evidence()).unwrap(); // created
    record_in_manifest(&path, &evidence()).unwrap(); // replaced
    assert_eq!(
        names(target.path()),
        ["manifest.json", "manifest.json.lock"]
    );
    std::env::set_current_dir(target.path()).unwrap();
}
