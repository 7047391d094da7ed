//! What the judged user's MPS server must reach (notes row 6), raw: `lstat` of
//! every path component from `/` down to the pipe directory and the proven daemon's log
//! directory (no link followed), `<pipe>/control` and `<pipe>/log`, whether each carries a
//! POSIX access ACL (`llistxattr`, no link followed), the judged user's groups and whether
//! `SELinux` enforces. Judged by [`sharing_policy::pipe_reach`]. Every read is bounded: the
//! paths are at most `PATH_MAX` long (the pipe directory far less: its `control` fits a
//! socket address), files are opened with `O_NOFOLLOW | O_NONBLOCK` and read up to a cap.

use std::ffi::OsStr;
use std::io::Read as _;
use std::os::unix::ffi::OsStrExt;
use std::path::Path;

use rustix::fs::{AtFlags, CWD, FileType, Mode, OFlags};
use rustix::io::Errno;
use sharing_policy::{
    EntryKind, HostFacts, LOG_FIFO_NAME, OsText, POSIX_ACL_XATTR, PathEntry, PipeAccessFacts,
    SELINUX_ENFORCE_PATH, UserGroups, path_prefixes,
};

use crate::log::sharing_policy_join as join;
use crate::procfs::read_capped;

/// The group database read for `--as-user`.
pub const GROUP_PATH: &str = "/etc/group";

/// The most bytes of [`GROUP_PATH`] (and of `/etc/passwd`) read; a larger file is refused.
const DATABASE_CAP: u64 = 4 << 20;

/// The most bytes of `/proc/self/status` read.
const STATUS_CAP: u64 = 64 * 1024;

/// The largest extended-attribute name list read; a longer one leaves the ACL unknown.
const XATTR_LIST_CAP: usize = 4096;

/// Records what [`sharing_policy::pipe_reach`] judges, for `as_user` (else the caller), once
/// `facts` says which daemon is proven (its log directory).
pub fn observe_pipe_access(
    facts: &HostFacts,
    pipe_directory: &OsText,
    as_user: Option<u32>,
) -> PipeAccessFacts {
    let (log_path, log_unknown) =
        match sharing_policy::daemon_log_directory(facts, pipe_directory.as_bytes()) {
            Ok(directory) => (Some(components(&directory)), None),
            Err(why) => (None, Some(why)),
        };
    let (user, user_error) = match as_user.map_or_else(caller_groups, |uid| {
        user_groups(uid, Path::new(crate::PASSWD_PATH), Path::new(GROUP_PATH))
    }) {
        Ok(user) => (Some(user), None),
        Err(error) => (None, Some(error)),
    };
    let (selinux_enforce, selinux_error) = selinux();
    PipeAccessFacts {
        pipe_path: components(pipe_directory),
        control: observe_path_entry(&join(pipe_directory, sharing_policy::CONTROL_PIPE_NAME)),
        log_fifo: observe_path_entry(&join(pipe_directory, LOG_FIFO_NAME)),
        log_path,
        log_unknown,
        user,
        user_error,
        selinux_enforce,
        selinux_error,
    }
}

/// Each of [`path_prefixes`] as [`observe_path_entry`] records it.
fn components(path: &OsText) -> Vec<PathEntry> {
    path_prefixes(path).iter().map(observe_path_entry).collect()
}

/// `lstat` of `path` and its access ACL's presence.
pub fn observe_path_entry(path: &OsText) -> PathEntry {
    let mut entry = PathEntry {
        path: path.clone(),
        kind: None,
        mode: None,
        uid: None,
        gid: None,
        acl: None,
        error: None,
    };
    let os_path = Path::new(OsStr::from_bytes(path.as_bytes()));
    let stat = match rustix::fs::statat(CWD, os_path, AtFlags::SYMLINK_NOFOLLOW) {
        Ok(stat) => stat,
        Err(Errno::NOENT) => {
            entry.kind = Some(EntryKind::Missing);
            return entry;
        }
        Err(errno) => {
            entry.error = Some(format!("lstat: {}", std::io::Error::from(errno)));
            return entry;
        }
    };
    entry.kind = Some(match FileType::from_raw_mode(stat.st_mode) {
        FileType::Directory => EntryKind::Directory,
        FileType::Symlink => EntryKind::Symlink,
        FileType::Socket => EntryKind::Socket,
        FileType::Fifo => EntryKind::Fifo,
        FileType::RegularFile => EntryKind::Regular,
        _ => EntryKind::Other,
    });
    entry.mode = Some(stat.st_mode & 0o7777);
    entry.uid = Some(stat.st_uid);
    entry.gid = Some(stat.st_gid);
    let mut names = [0_u8; XATTR_LIST_CAP];
    match rustix::fs::llistxattr(os_path, &mut names[..]) {
        Ok(len) => {
            let list = names.get(..len).unwrap_or_default();
            let acl = POSIX_ACL_XATTR.as_bytes();
            entry.acl = Some(list.split(|byte| *byte == 0).any(|name| name == acl));
        }
        // A filesystem without extended attributes has no ACL either.
        Err(Errno::NOTSUP) => entry.acl = Some(false),
        Err(errno) => {
            entry.error = Some(format!("llistxattr: {}", std::io::Error::from(errno)));
        }
    }
    entry
}

/// The probing process's own groups: the filesystem GID of `Gid:` and `Groups:` in
/// `/proc/self/status`, for its effective UID.
fn caller_groups() -> Result<UserGroups, String> {
    let status = read_capped(Path::new("/proc"), "self", "status", STATUS_CAP)
        .map_err(|error| format!("/proc/self/status: {error}"))?;
    let text = String::from_utf8_lossy(&status);
    let line = |key: &str| {
        text.lines()
            .find_map(|line| line.strip_prefix(key))
            .map(str::trim)
    };
    let numbers = |field: &str| -> Option<Vec<u32>> {
        field.split_whitespace().map(|n| n.parse().ok()).collect()
    };
    let gid = line("Gid:")
        .and_then(numbers)
        .and_then(|gids| gids.get(3).copied())
        .ok_or("/proc/self/status has no readable Gid: line")?;
    let groups = line("Groups:")
        .and_then(numbers)
        .ok_or("/proc/self/status has no readable Groups: line")?;
    Ok(UserGroups {
        uid: rustix::process::geteuid().as_raw(),
        gid,
        groups,
        source: "/proc/self/status".to_owned(),
    })
}

/// The groups of `uid` as `initgroups` would give them from the local files: the primary GID
/// of its first `passwd` line, and every `group` line that lists its name as a member (no
/// NSS: a user or group known only to LDAP or SSSD is not found, and then the groups are
/// unknown).
///
/// # Errors
/// What could not be read or found.
pub fn user_groups(uid: u32, passwd: &Path, group: &Path) -> Result<UserGroups, String> {
    let passwd_text = read_database(passwd)?;
    let (name, gid) = passwd_text
        .lines()
        .find_map(|line| {
            let fields: Vec<&str> = line.split(':').collect();
            let (name, line_uid, gid) = (fields.first()?, fields.get(2)?, fields.get(3)?);
            (line_uid.parse::<u32>().ok()? == uid).then_some((*name, gid.parse::<u32>().ok()?))
        })
        .ok_or_else(|| {
            format!(
                "UID {uid} has no line in {} (a user known only to LDAP or SSSD): its groups are unknown",
                passwd.display()
            )
        })?;
    let group_text = read_database(group)?;
    let groups = group_text
        .lines()
        .filter_map(|line| {
            let fields: Vec<&str> = line.split(':').collect();
            let (gid, members) = (fields.get(2)?, fields.get(3)?);
            members
                .split(',')
                .any(|member| member.trim() == name)
                .then(|| gid.parse::<u32>().ok())?
        })
        .collect();
    Ok(UserGroups {
        uid,
        gid,
        groups,
        source: format!("{},{}", passwd.display(), group.display()),
    })
}

/// At most [`DATABASE_CAP`] bytes of `path`, no link followed, as text.
fn read_database(path: &Path) -> Result<String, String> {
    read_nofollow(path, DATABASE_CAP)
        .map(|bytes| String::from_utf8_lossy(&bytes).into_owned())
        .map_err(|error| format!("{}: {error}", path.display()))
}

/// At most `cap` bytes of `path`, opened without following a link or waiting on a FIFO; a
/// longer file is an error.
fn read_nofollow(path: &Path, cap: u64) -> Result<Vec<u8>, String> {
    let flags =
        OFlags::RDONLY | OFlags::NOFOLLOW | OFlags::NONBLOCK | OFlags::CLOEXEC | OFlags::NOCTTY;
    let fd = rustix::fs::open(path, flags, Mode::empty())
        .map_err(|errno| std::io::Error::from(errno).to_string())?;
    let mut bytes = Vec::new();
    std::fs::File::from(fd)
        .take(cap + 1)
        .read_to_end(&mut bytes)
        .map_err(|error| error.to_string())?;
    if u64::try_from(bytes.len()).unwrap_or(u64::MAX) > cap {
        return Err(format!("longer than {cap} bytes"));
    }
    Ok(bytes)
}

/// [`SELINUX_ENFORCE_PATH`]'s first bytes, or why it could not be read; both `None` when it
/// does not exist (no `SELinux`).
fn selinux() -> (Option<String>, Option<String>) {
    let path = Path::new(SELINUX_ENFORCE_PATH);
    match rustix::fs::statat(CWD, path, AtFlags::SYMLINK_NOFOLLOW) {
        Err(Errno::NOENT) => return (None, None),
        Err(errno) => return (None, Some(std::io::Error::from(errno).to_string())),
        Ok(_) => {}
    }
    match read_nofollow(path, 16) {
        Ok(bytes) => (Some(String::from_utf8_lossy(&bytes).into_owned()), None),
        Err(error) => (None, Some(error)),
    }
}
