//! Filesystem observation: the control pipe and the daemon's pid file. Every call is recorded
//! as a fact (kind, mode, owner, error text); nothing here decides what the facts mean.

use std::ffi::OsStr;
use std::io::Read;
use std::os::unix::ffi::OsStrExt;
use std::path::{Component, Path, PathBuf};

use rustix::fs::{Access, AtFlags, CWD, FileType, Mode, OFlags, Stat};
use rustix::io::Errno;
use rustix::process::Pid;
use sharing_policy::{
    AccessFacts, CapturedText, EnvFacts, FileFacts, FileKind, OsText, PidFileFacts, PipeFacts,
};

/// The most bytes of the pid file that are read. A PID is at most 7 digits on Linux; anything
/// longer is recorded as truncated.
pub const PID_FILE_CAP: usize = 64;

/// The most bytes of `/proc/<pid>/comm` that are read (the kernel keeps 15 plus a newline).
const COMM_CAP: u64 = 64;

fn as_path(text: &OsText) -> &Path {
    Path::new(OsStr::from_bytes(text.as_bytes()))
}

/// Observes the control pipe `<effective pipe directory>/control` of `env`
/// ([`EnvFacts::control_pipe_path`]): `lstat` and `stat` (kind, mode, owner), the path's length,
/// and what the probing user may do with it (read and write the entry; search every directory
/// from the root, or from the working directory for a relative path, down to the pipe
/// directory).
pub fn observe_control_pipe(env: &EnvFacts) -> PipeFacts {
    let directory = env.effective_pipe_directory();
    let path = env.control_pipe_path();
    let entry = as_path(&path);
    let access = observe_access(as_path(&directory), entry);
    PipeFacts {
        directory,
        path_len: path.as_bytes().len(),
        lstat: file_facts(rustix::fs::lstat(entry)),
        stat: file_facts(rustix::fs::stat(entry)),
        access,
        path,
    }
}

fn file_facts(result: rustix::io::Result<Stat>) -> FileFacts {
    match result {
        Ok(stat) => FileFacts {
            kind: file_kind(FileType::from_raw_mode(stat.st_mode)),
            mode: Some(stat.st_mode & 0o7777),
            uid: Some(stat.st_uid),
            gid: Some(stat.st_gid),
            error: None,
        },
        Err(errno) => FileFacts {
            kind: if errno == Errno::NOENT {
                FileKind::Missing
            } else {
                FileKind::Unknown
            },
            mode: None,
            uid: None,
            gid: None,
            error: Some(error_text(errno)),
        },
    }
}

fn file_kind(file_type: FileType) -> FileKind {
    match file_type {
        FileType::Socket => FileKind::Socket,
        FileType::Fifo => FileKind::Fifo,
        FileType::RegularFile => FileKind::Regular,
        FileType::Directory => FileKind::Directory,
        FileType::Symlink => FileKind::Symlink,
        FileType::CharacterDevice => FileKind::CharDevice,
        FileType::BlockDevice => FileKind::BlockDevice,
        FileType::Unknown => FileKind::Unknown,
    }
}

/// `access` as the effective user: search (`X_OK`) on each directory down to `directory`, then
/// read and write (`R_OK|W_OK`) on `entry`. A denial is a `false`; any other failure (a missing
/// component, say) leaves the answer unknown and records its error text.
fn observe_access(directory: &Path, entry: &Path) -> AccessFacts {
    let mut errors = Vec::new();
    let mut traversable = Some(true);
    for ancestor in ancestors(directory) {
        match check_access(&ancestor, Access::EXEC_OK) {
            Ok(()) => {}
            Err(Errno::ACCESS) => {
                traversable = Some(false);
                errors.push(format!(
                    "search {}: {}",
                    ancestor.display(),
                    error_text(Errno::ACCESS)
                ));
                break;
            }
            Err(errno) => {
                traversable = None;
                errors.push(format!(
                    "search {}: {}",
                    ancestor.display(),
                    error_text(errno)
                ));
                break;
            }
        }
    }
    let read_write = match check_access(entry, Access::READ_OK | Access::WRITE_OK) {
        Ok(()) => Some(true),
        Err(Errno::ACCESS) => Some(false),
        Err(errno) => {
            errors.push(format!(
                "read/write {}: {}",
                entry.display(),
                error_text(errno)
            ));
            None
        }
    };
    AccessFacts {
        uid: Some(rustix::process::geteuid().as_raw()),
        directory_traversable: traversable,
        read_write,
        error: if errors.is_empty() {
            None
        } else {
            Some(errors.join("; "))
        },
    }
}

fn check_access(path: &Path, access: Access) -> rustix::io::Result<()> {
    rustix::fs::accessat(CWD, path, access, AtFlags::EACCESS)
}

/// Every directory a lookup of `directory` searches: `/` (or `.` for a relative path), each
/// prefix, and `directory` itself.
fn ancestors(directory: &Path) -> Vec<PathBuf> {
    let mut current = PathBuf::new();
    let mut out = Vec::new();
    if directory.is_relative() {
        out.push(PathBuf::from("."));
    }
    for component in directory.components() {
        match component {
            Component::CurDir => continue,
            other => current.push(other),
        }
        out.push(current.clone());
    }
    out
}

/// Reads the pid file `<effective pipe directory>/nvidia-cuda-mps-control.pid` of `env`
/// ([`EnvFacts::pid_file_path`]) without following a symlink, without
/// blocking on a FIFO and without reading more than [`PID_FILE_CAP`] bytes; then, when it holds
/// a PID, whether that process is alive (`kill(pid, 0)`; `EPERM` means alive; a zombie is not)
/// and its `/proc/<pid>/comm` name where readable. The kernel truncates that name to 15 bytes:
/// the daemon shows as `nvidia-cuda-mps`.
pub fn observe_pid_file(env: &EnvFacts) -> PidFileFacts {
    let path = env.pid_file_path();
    let mut facts = PidFileFacts {
        path: path.clone(),
        contents: None,
        error: None,
        pid_alive: None,
        process_name: None,
    };
    match read_capped_regular_file(as_path(&path)) {
        Ok(contents) => facts.contents = Some(contents),
        Err(error) => {
            facts.error = Some(error);
            return facts;
        }
    }
    let pid = facts
        .contents
        .as_ref()
        .and_then(|contents| sharing_policy::parse_pid(&contents.text))
        .and_then(|pid| i32::try_from(pid).ok())
        .and_then(Pid::from_raw);
    if let Some(pid) = pid {
        facts.pid_alive = process_alive(pid);
        facts.process_name = process_name(pid);
    }
    facts
}

fn read_capped_regular_file(path: &Path) -> Result<CapturedText, String> {
    let flags =
        OFlags::RDONLY | OFlags::NOFOLLOW | OFlags::NONBLOCK | OFlags::CLOEXEC | OFlags::NOCTTY;
    let fd = rustix::fs::open(path, flags, Mode::empty()).map_err(|errno| match errno {
        Errno::LOOP => format!("{}: a symbolic link (not followed)", error_text(errno)),
        other => error_text(other),
    })?;
    let stat = rustix::fs::fstat(&fd).map_err(error_text)?;
    let kind = FileType::from_raw_mode(stat.st_mode);
    if kind != FileType::RegularFile {
        return Err(format!(
            "not a regular file ({}); not read",
            kind_name(file_kind(kind))
        ));
    }
    let mut file = std::fs::File::from(fd);
    let mut bytes = Vec::with_capacity(PID_FILE_CAP);
    (&mut file)
        .take(PID_FILE_CAP as u64 + 1)
        .read_to_end(&mut bytes)
        .map_err(|err| err.to_string())?;
    let truncated = bytes.len() > PID_FILE_CAP;
    bytes.truncate(PID_FILE_CAP);
    Ok(CapturedText::from_bytes(&bytes, truncated))
}

fn kind_name(kind: FileKind) -> &'static str {
    match kind {
        FileKind::Socket => "socket",
        FileKind::Fifo => "fifo",
        FileKind::Regular => "regular file",
        FileKind::Directory => "directory",
        FileKind::Symlink => "symbolic link",
        FileKind::CharDevice => "character device",
        FileKind::BlockDevice => "block device",
        FileKind::Missing => "missing",
        FileKind::Unknown => "unknown kind",
    }
}

/// `kill(pid, 0)`: success or `EPERM` means the PID exists, `ESRCH` that it does not. A zombie
/// (state `Z` in `/proc/<pid>/stat`) has exited and counts as not alive.
fn process_alive(pid: Pid) -> Option<bool> {
    match rustix::process::test_kill_process(pid) {
        Ok(()) | Err(Errno::PERM) => Some(!is_zombie(pid)),
        Err(Errno::SRCH) => Some(false),
        Err(_) => None,
    }
}

fn is_zombie(pid: Pid) -> bool {
    let Ok(stat) = read_proc(pid, "stat", 4096) else {
        return false;
    };
    // `pid (comm) S ...`: the state follows the last `)`, since comm may contain `)`.
    let text = String::from_utf8_lossy(&stat);
    text.rfind(')')
        .and_then(|close| text.get(close + 1..))
        .and_then(|rest| rest.split_whitespace().next())
        .is_some_and(|state| state == "Z")
}

fn process_name(pid: Pid) -> Option<String> {
    let comm = read_proc(pid, "comm", COMM_CAP).ok()?;
    let text = String::from_utf8_lossy(&comm);
    Some(text.strip_suffix('\n').unwrap_or(&text).to_owned())
}

fn read_proc(pid: Pid, name: &str, cap: u64) -> std::io::Result<Vec<u8>> {
    let file = std::fs::File::open(format!("/proc/{}/{name}", pid.as_raw_nonzero()))?;
    let mut bytes = Vec::new();
    file.take(cap).read_to_end(&mut bytes)?;
    Ok(bytes)
}

/// An OS error as text, the way `std::io::Error` prints it.
fn error_text(errno: Errno) -> String {
    std::io::Error::from(errno).to_string()
}
