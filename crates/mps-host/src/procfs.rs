//! `/proc` observation (schema v2): the probing user, the listed servers' owners, and the
//! control daemon's own process. Files are read with a size cap and cut only at their own
//! separators (lines, NUL bytes); what the values mean is the validator's business.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::io::Read;
use std::os::fd::OwnedFd;
use std::path::Path;
use std::time::Instant;

use rustix::fs::{Mode, OFlags};

use sharing_policy::{
    CLIENT_ENVIRON_VARS, CallerFacts, ClientFacts, DAEMON_COMM, DAEMON_ENVIRON_VARS,
    DaemonLockFacts, DaemonSearch, DaemonSearchMethod, OsText, PidFileFacts, ProcessFacts,
};

/// The most bytes of `/proc/<pid>/status` read (the `Uid:` line is near the top).
const STATUS_CAP: u64 = 8 * 1024;
/// The most bytes of `/proc/<pid>/stat` read (one line, about 300 bytes).
const STAT_CAP: u64 = 4 * 1024;
/// The most bytes of `/proc/<pid>/comm` read (the kernel keeps 15 plus a newline).
const COMM_CAP: u64 = 64;
/// The most bytes of `/proc/<pid>/cmdline` read.
const CMDLINE_CAP: u64 = 8 * 1024;
/// The most bytes of `/proc/<pid>/environ` read.
const ENVIRON_CAP: u64 = 256 * 1024;
/// The most daemon candidates a scan records.
const CANDIDATE_CAP: usize = 32;
/// The most listed servers whose process is read.
pub(crate) const SERVER_CAP: usize = 64;

/// The probing process's real and effective UIDs, and its effective capabilities (the hex
/// `CapEff:` of `/proc/self/status`, when readable).
pub fn observe_caller() -> CallerFacts {
    let status = read_capped(Path::new("/proc"), "self", "status", STATUS_CAP).ok();
    CallerFacts {
        uid: rustix::process::getuid().as_raw(),
        euid: rustix::process::geteuid().as_raw(),
        cap_eff: status
            .as_deref()
            .and_then(|bytes| field_line(bytes, "CapEff:"))
            .and_then(|hex| u64::from_str_radix(&hex, 16).ok()),
    }
}

/// Reads at most `cap` bytes of `root/<pid>/<name>`: the bytes, or the OS error (a file longer
/// than the cap is an error, since a cut value would be read as another value).
pub(crate) fn read_capped(
    root: &Path,
    pid: impl std::fmt::Display,
    name: &str,
    cap: u64,
) -> Result<Vec<u8>, String> {
    let path = root.join(pid.to_string()).join(name);
    let file = std::fs::File::open(path).map_err(|err| err.to_string())?;
    let mut bytes = Vec::new();
    file.take(cap + 1)
        .read_to_end(&mut bytes)
        .map_err(|err| err.to_string())?;
    if bytes.len() as u64 > cap {
        return Err(format!("longer than {cap} bytes; not recorded"));
    }
    Ok(bytes)
}

/// `root/<pid>`: the `Uid:` line's text and `comm`; with `daemon_details`, also `cmdline` and
/// the [`DAEMON_ENVIRON_VARS`] of `environ`.
pub fn observe_process(root: &Path, pid: i64, daemon_details: bool) -> ProcessFacts {
    let mut process = ProcessFacts::new(pid);
    let mut record = |name: &str, result: Result<Vec<u8>, String>| match result {
        Ok(bytes) => Some(bytes),
        Err(error) => {
            process.errors.insert(name.to_owned(), error);
            None
        }
    };
    let status = record("status", read_capped(root, pid, "status", STATUS_CAP));
    let comm = record("comm", read_capped(root, pid, "comm", COMM_CAP));
    // The command line of servers too: argv[0] tells a server from a reused PID.
    let cmdline = record("cmdline", read_capped(root, pid, "cmdline", CMDLINE_CAP));
    let environ = if daemon_details {
        record("environ", read_capped(root, pid, "environ", ENVIRON_CAP))
    } else {
        None
    };
    let namespace = record(
        "ns/pid",
        read_pid_namespace(root, &pid.to_string()).map(String::into_bytes),
    );
    process.pid_namespace = namespace.map(|bytes| String::from_utf8_lossy(&bytes).into_owned());
    process.nspid = status
        .as_deref()
        .and_then(|bytes| field_line(bytes, "NSpid:"));
    process.status_uid = status.and_then(|bytes| uid_line(&bytes));
    process.comm = comm.map(|bytes| {
        let text = String::from_utf8_lossy(&bytes);
        text.strip_suffix('\n').unwrap_or(&text).to_owned()
    });
    process.cmdline = cmdline.map(|bytes| {
        nul_separated(&bytes)
            .map(|arg| OsText::from_bytes(arg.to_vec()))
            .collect()
    });
    process.environ = environ.map(|bytes| wanted_variables(&bytes, &DAEMON_ENVIRON_VARS));
    process
}

/// `root/<pid>` of a process that should be an MPS client (`attest`): its start time (field 22
/// of `stat`), whether its entry exists, the `State:` and `Uid:` lines of `status`, and the
/// [`CLIENT_ENVIRON_VARS`] of `environ`.
pub fn observe_client(root: &Path, pid: i64) -> ClientFacts {
    let mut client = ClientFacts::new(pid);
    // The start time first: with the PID it is the process's identity.
    match read_capped(root, pid, "stat", STAT_CAP) {
        Ok(stat) => {
            client.start_time = sharing_policy::stat_start_time(&String::from_utf8_lossy(&stat));
            if client.start_time.is_none() {
                client
                    .errors
                    .insert("stat".to_owned(), "no start time in field 22".to_owned());
            }
        }
        Err(error) => {
            client.errors.insert("stat".to_owned(), error);
        }
    }
    client.exists = match std::fs::symlink_metadata(root.join(pid.to_string())) {
        Ok(_) => Some(true),
        Err(err) if err.kind() == std::io::ErrorKind::NotFound => Some(false),
        Err(err) => {
            client.errors.insert("entry".to_owned(), err.to_string());
            None
        }
    };
    match read_capped(root, pid, "status", STATUS_CAP) {
        Ok(status) => {
            client.state = field_line(&status, "State:");
            client.status_uid = field_line(&status, "Uid:");
            client.nspid = field_line(&status, "NSpid:");
        }
        Err(error) => {
            client.errors.insert("status".to_owned(), error);
        }
    }
    match read_pid_namespace(root, &pid.to_string()) {
        Ok(link) => client.pid_namespace = Some(link),
        Err(error) => {
            client.errors.insert("ns/pid".to_owned(), error);
        }
    }
    match read_capped(root, pid, "environ", ENVIRON_CAP) {
        Ok(environ) => client.environ = Some(wanted_variables(&environ, &CLIENT_ENVIRON_VARS)),
        Err(error) => {
            client.errors.insert("environ".to_owned(), error);
        }
    }
    client
}

/// Whether `root` is a `/proc` of this process's own PID namespace: its `self` link names
/// this process's PID. A `/proc` mounted from another namespace (a new PID namespace that kept
/// its parent's `/proc`, a host's `/proc` bound into a container) names other processes by the
/// same numbers, so a PID from this process's namespace must not be read there.
pub(crate) fn is_own_proc(root: &Path) -> bool {
    std::fs::read_link(root.join("self"))
        .ok()
        .and_then(|target| target.to_str()?.parse::<u32>().ok())
        == Some(std::process::id())
}

/// `readlink root/<entry>/ns/pid` (`pid:[4026531836]`), lossy UTF-8; `entry` is a PID or
/// `self`. A link target longer than 256 bytes is not a namespace link: an error.
pub(crate) fn read_pid_namespace(root: &Path, entry: &str) -> Result<String, String> {
    let target = std::fs::read_link(root.join(entry).join("ns").join("pid"))
        .map_err(|err| err.to_string())?;
    let bytes = target.as_os_str().as_encoded_bytes();
    if bytes.len() > 256 {
        return Err("longer than 256 bytes; not recorded".to_owned());
    }
    Ok(String::from_utf8_lossy(bytes).into_owned())
}

/// The text after `Uid:` on its line, uncut.
fn uid_line(status: &[u8]) -> Option<String> {
    field_line(status, "Uid:")
}

/// The text after `field` on its line of `/proc/<pid>/status`, trimmed, uncut.
fn field_line(status: &[u8], field: &str) -> Option<String> {
    String::from_utf8_lossy(status)
        .lines()
        .find_map(|line| line.strip_prefix(field))
        .map(|rest| rest.trim().to_owned())
}

/// The NUL-terminated strings of a `/proc` file (a last one without its NUL included).
fn nul_separated(bytes: &[u8]) -> impl Iterator<Item = &[u8]> {
    let bytes = bytes.strip_suffix(b"\0").unwrap_or(bytes);
    bytes.split(|b| *b == 0).filter(move |_| !bytes.is_empty())
}

/// The variables of `wanted` that an `environ` sets, raw.
fn wanted_variables(environ: &[u8], wanted_vars: &[&str]) -> BTreeMap<String, OsText> {
    let mut wanted = BTreeMap::new();
    for entry in nul_separated(environ) {
        let Some(at) = entry.iter().position(|b| *b == b'=') else {
            continue;
        };
        let (name, value) = entry.split_at(at);
        let value = value.get(1..).unwrap_or_default();
        if let Some(var) = wanted_vars.iter().find(|var| var.as_bytes() == name) {
            wanted.insert((*var).to_owned(), OsText::from_bytes(value.to_vec()));
        }
    }
    wanted
}

/// Finds the control daemon's process: the holder of the daemon's `lock` when the validator's
/// rule says the lock proves one ([`sharing_policy::lock_holder_pid`]); else, recorded as
/// witnesses only, the pid file's PID when it names a live control daemon (550+), or a scan of
/// `root` for processes named [`DAEMON_COMM`], which stops after `limit` entries or at
/// `deadline`. The lock is recorded in the search either way.
pub fn find_daemon(
    root: &Path,
    pid_file: &PidFileFacts,
    lock: DaemonLockFacts,
    limit: u64,
    deadline: Instant,
) -> DaemonSearch {
    let mut search = DaemonSearch {
        proc_root: OsText::from_bytes(root.as_os_str().as_encoded_bytes().to_vec()),
        method: DaemonSearchMethod::Lock,
        scanned: 0,
        limit: 0,
        stopped: None,
        error: None,
        processes: Vec::new(),
        lock: None,
    };
    let holder = sharing_policy::lock_holder_pid(&lock);
    search.lock = Some(lock);
    if let Some(pid) = holder {
        search.processes.push(observe_process(root, pid, true));
        return search;
    }
    search.method = DaemonSearchMethod::PidFile;
    search.limit = limit;
    if let Some(pid) = sharing_policy::pid_file_daemon_pid(pid_file) {
        search.limit = 0;
        search.processes.push(observe_process(root, pid, true));
        return search;
    }
    search.method = DaemonSearchMethod::ProcScan;
    let entries = match std::fs::read_dir(root) {
        Ok(entries) => entries,
        Err(err) => {
            search.error = Some(err.to_string());
            return search;
        }
    };
    // Each `comm` is opened relative to `root`, already open: no path walk from `/` per entry.
    let directory = match rustix::fs::open(
        root,
        OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC,
        Mode::empty(),
    ) {
        Ok(directory) => directory,
        Err(err) => {
            search.error = Some(std::io::Error::from(err).to_string());
            return search;
        }
    };
    let mut path = String::new();
    for entry in entries {
        if search.scanned >= limit {
            search.stopped = Some("limit".to_owned());
            break;
        }
        if Instant::now() >= deadline {
            search.stopped = Some("deadline".to_owned());
            break;
        }
        search.scanned += 1;
        let Ok(entry) = entry else { continue };
        let Some(pid) = entry
            .file_name()
            .to_str()
            .filter(|name| name.bytes().all(|b| b.is_ascii_digit()))
            .and_then(|name| name.parse::<i64>().ok())
        else {
            continue;
        };
        let mut comm = [0_u8; COMM_READ];
        let Some(comm) = read_comm(&directory, pid, &mut path, &mut comm) else {
            continue;
        };
        if comm.strip_suffix(b"\n").unwrap_or(comm) == DAEMON_COMM.as_bytes()
            && search.processes.len() < CANDIDATE_CAP
        {
            search.processes.push(observe_process(root, pid, true));
        }
    }
    search
}

/// One more byte than [`COMM_CAP`], to tell a longer file.
const COMM_READ: usize = 65;

/// `<pid>/comm` under the open `/proc` `directory`, read into `buffer`: what the scan does for
/// every process, so with three system calls (`openat`, `read`, `close`) and no allocation
/// (`path` is reused). The kernel writes `comm` whole, newline included, in one read; a read
/// that ends without a newline reads on to end of file. `None` when the file cannot be read or
/// is longer than [`COMM_CAP`] bytes (neither is the daemon).
fn read_comm<'b>(
    directory: &OwnedFd,
    pid: i64,
    path: &mut String,
    buffer: &'b mut [u8; COMM_READ],
) -> Option<&'b [u8]> {
    path.clear();
    let _ = write!(path, "{pid}/comm");
    let file = rustix::fs::openat(
        directory,
        path.as_str(),
        OFlags::RDONLY | OFlags::CLOEXEC,
        Mode::empty(),
    )
    .ok()?;
    let mut filled = 0;
    loop {
        let read = match rustix::io::read(&file, buffer.get_mut(filled..)?) {
            Ok(read) => read,
            Err(rustix::io::Errno::INTR) => continue,
            Err(_) => return None,
        };
        filled += read;
        let text = buffer.get(..filled)?;
        if read == 0 || text.ends_with(b"\n") || filled == COMM_READ {
            break;
        }
    }
    let text = buffer.get(..filled)?;
    (text.len() as u64 <= COMM_CAP).then_some(text)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_a_proc_whose_self_is_this_process_is_its_own() {
        assert!(is_own_proc(Path::new("/proc")));
        let fake = tempfile::tempdir().unwrap();
        assert!(!is_own_proc(fake.path()));
        std::os::unix::fs::symlink("1", fake.path().join("self")).unwrap();
        assert!(!is_own_proc(fake.path()));
        std::fs::remove_file(fake.path().join("self")).unwrap();
        std::os::unix::fs::symlink(std::process::id().to_string(), fake.path().join("self"))
            .unwrap();
        assert!(is_own_proc(fake.path()));
    }

    #[test]
    fn nul_separated_strings_and_wanted_variables() {
        let args: Vec<&[u8]> = nul_separated(b"nvidia-cuda-mps-control\0-d\0").collect();
        assert_eq!(args, [&b"nvidia-cuda-mps-control"[..], b"-d"]);
        assert_eq!(nul_separated(b"").count(), 0);
        let environ = b"HOME=/root\0CUDA_VISIBLE_DEVICES=GPU-1\0CUDA_MPS_PIPE_DIRECTORY=\0X=CUDA_DEVICE_ORDER=1\0";
        let wanted = wanted_variables(environ, &DAEMON_ENVIRON_VARS);
        assert_eq!(
            wanted,
            BTreeMap::from([
                ("CUDA_VISIBLE_DEVICES".to_owned(), OsText::from("GPU-1")),
                ("CUDA_MPS_PIPE_DIRECTORY".to_owned(), OsText::from("")),
            ])
        );
    }

    /// `read_comm` (the scan's one-read path) agrees with `read_capped` (every other `/proc`
    /// read) on what a `comm` file holds, at and around the cap, with and without a newline.
    #[test]
    fn read_comm_agrees_with_read_capped() {
        let root = tempfile::tempdir().unwrap();
        let directory = rustix::fs::open(
            root.path(),
            OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC,
            Mode::empty(),
        )
        .unwrap();
        let name = "nvidia-cuda-mps";
        let contents: Vec<Vec<u8>> = vec![
            format!("{name}\n").into_bytes(),
            name.as_bytes().to_vec(),
            Vec::new(),
            b"\n".to_vec(),
            vec![b'x'; 63],
            [vec![b'x'; 63], b"\n".to_vec()].concat(),
            vec![b'x'; 64],
            vec![b'x'; 65],
            [vec![b'x'; 64], b"\n".to_vec()].concat(),
            vec![b'x'; 4096],
        ];
        let mut path = String::new();
        for (pid, content) in (1_i64..).zip(&contents) {
            let dir = root.path().join(pid.to_string());
            std::fs::create_dir(&dir).unwrap();
            std::fs::write(dir.join("comm"), content).unwrap();
            let mut buffer = [0_u8; COMM_READ];
            let fast = read_comm(&directory, pid, &mut path, &mut buffer).map(<[u8]>::to_vec);
            let capped = read_capped(root.path(), pid, "comm", COMM_CAP).ok();
            assert_eq!(fast, capped, "{} bytes", content.len());
        }
        let mut buffer = [0_u8; COMM_READ];
        assert_eq!(read_comm(&directory, 999, &mut path, &mut buffer), None);
    }

    #[test]
    fn the_uid_line_is_kept_raw() {
        let status =
            b"Name:\tnvidia-cuda-mps\nUmask:\t0022\nUid:\t1000\t1000\t1000\t1000\nGid:\t0\n";
        assert_eq!(uid_line(status).as_deref(), Some("1000\t1000\t1000\t1000"));
        assert_eq!(uid_line(b"Name:\tx\n"), None);
    }
}
