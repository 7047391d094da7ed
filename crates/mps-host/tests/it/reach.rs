//! The pipe-directory reach recorded from real directories (notes row 6) and
//! judged by the policy: a pipe directory under a 0700 parent for the job's user is blocked
//! at the parent, 0755 passes, a group-only path grants a member only, a symbolic link on the
//! way is unverified.

use std::os::unix::fs::{PermissionsExt, symlink};
use std::path::Path;

use mps_host::{observe_path_entry, observe_pipe_access, user_groups};
use sharing_policy::{
    EntryKind, EnvFacts, HostFacts, OsText, PipeAccessFacts, Reach, UserGroups, pipe_reach,
};

const NOBODY: u32 = 65534;

fn text(path: &Path) -> OsText {
    OsText::from(path.to_str().unwrap())
}

fn chmod(path: &Path, mode: u32) {
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode)).unwrap();
}

/// `<root>/parent/pipe` with a 0666 `control` (a regular file stands in for the socket: its
/// kind is recorded as such) and a `log` FIFO; the judged user `user`.
fn layout(root: &Path) -> std::path::PathBuf {
    let pipe = root.join("parent/pipe");
    std::fs::create_dir_all(&pipe).unwrap();
    chmod(root, 0o755);
    chmod(&pipe, 0o777);
    let socket = std::os::unix::net::UnixListener::bind(pipe.join("control")).unwrap();
    std::mem::forget(socket);
    chmod(&pipe.join("control"), 0o666);
    rustix::fs::mknodat(
        rustix::fs::CWD,
        pipe.join("log"),
        rustix::fs::FileType::Fifo,
        rustix::fs::Mode::from_raw_mode(0o777),
        0,
    )
    .unwrap();
    chmod(&pipe.join("log"), 0o777);
    pipe
}

/// The recorded facts with the given user's groups and every directory above the temporary
/// root made searchable in the record (the host's own `/tmp` path is not what is tested).
fn recorded(pipe: &Path, root: &Path, user: UserGroups) -> PipeAccessFacts {
    let facts = HostFacts::unobserved("linux", EnvFacts::default());
    let mut access = observe_pipe_access(&facts, &text(pipe), None);
    for entry in &mut access.pipe_path {
        let inside = Path::new(&entry.path.to_string_lossy()).starts_with(root);
        if !inside {
            entry.mode = Some(0o755);
            entry.acl = Some(false);
            entry.kind = Some(EntryKind::Directory);
        }
    }
    // The log directory is the proven daemon's; none is here: use the pipe's parent's.
    access.log_path = Some(access.pipe_path.clone());
    access.log_unknown = None;
    access.user = Some(user);
    access.selinux_enforce = None;
    access.selinux_error = None;
    access
}

fn nobody(groups: Vec<u32>) -> UserGroups {
    UserGroups {
        uid: NOBODY,
        gid: NOBODY,
        groups,
        source: "test".to_owned(),
    }
}

#[test]
fn a_pipe_directory_under_a_0700_parent_is_blocked_for_the_jobs_user() {
    let dir = tempfile::tempdir().unwrap();
    let pipe = layout(dir.path());
    let parent = dir.path().join("parent");
    chmod(&parent, 0o700);
    let access = recorded(&pipe, dir.path(), nobody(vec![]));
    assert_eq!(access.control.kind, Some(EntryKind::Socket));
    assert_eq!(access.log_fifo.kind, Some(EntryKind::Fifo));
    let Reach::Blocked(blocked) = pipe_reach(&access, NOBODY) else {
        panic!("not blocked: {access:?}");
    };
    assert_eq!(blocked.path, text(&parent));
    assert_eq!(blocked.mode, 0o700);
    // Root, or a parent searchable by others, passes.
    assert_eq!(pipe_reach(&access, 0), Reach::Root);
    chmod(&parent, 0o755);
    let access = recorded(&pipe, dir.path(), nobody(vec![]));
    assert_eq!(pipe_reach(&access, NOBODY), Reach::Granted, "{access:?}");
}

#[test]
fn a_group_only_parent_grants_a_member_of_its_group() {
    let dir = tempfile::tempdir().unwrap();
    let pipe = layout(dir.path());
    let parent = dir.path().join("parent");
    chmod(&parent, 0o710);
    rustix::fs::chown(&parent, None, Some(rustix::fs::Gid::from_raw(4242))).unwrap();
    let outside = recorded(&pipe, dir.path(), nobody(vec![]));
    assert!(matches!(pipe_reach(&outside, NOBODY), Reach::Blocked(b) if b.path == text(&parent)));
    let member = recorded(&pipe, dir.path(), nobody(vec![4242]));
    assert_eq!(pipe_reach(&member, NOBODY), Reach::Granted);
}

#[test]
fn a_symbolic_link_on_the_way_is_recorded_unfollowed_and_unverified() {
    let dir = tempfile::tempdir().unwrap();
    let pipe = layout(dir.path());
    let link = dir.path().join("link");
    symlink(dir.path().join("parent"), &link).unwrap();
    let through = link.join("pipe");
    assert_eq!(
        observe_path_entry(&text(&link)).kind,
        Some(EntryKind::Symlink)
    );
    let access = recorded(&through, dir.path(), nobody(vec![]));
    assert!(
        matches!(pipe_reach(&access, NOBODY), Reach::Unverified(ref why) if why.to_string().contains("symbolic link")),
        "{access:?}"
    );
    assert_eq!(
        observe_path_entry(&text(&pipe.join("missing"))).kind,
        Some(EntryKind::Missing)
    );
}

#[test]
fn groups_of_a_user_come_from_the_local_files() {
    let dir = tempfile::tempdir().unwrap();
    let passwd = dir.path().join("passwd");
    let group = dir.path().join("group");
    std::fs::write(
        &passwd,
        "root:x:0:0:root:/root:/bin/sh\nalice:x:1001:100::/home/alice:/bin/sh\n",
    )
    .unwrap();
    std::fs::write(
        &group,
        "users:x:100:\nvideo:x:44:bob,alice\nrender:x:109:bob\nmps:x:500:alice\n",
    )
    .unwrap();
    let user = user_groups(1001, &passwd, &group).unwrap();
    assert_eq!((user.uid, user.gid), (1001, 100));
    assert_eq!(user.groups, [44, 500]);
    let unknown = user_groups(2002, &passwd, &group).unwrap_err();
    assert!(unknown.contains("UID 2002 has no line"), "{unknown}");
    // A link to the database is not followed.
    let link = dir.path().join("link");
    symlink(&passwd, &link).unwrap();
    assert!(user_groups(1001, &link, &group).is_err());
}
