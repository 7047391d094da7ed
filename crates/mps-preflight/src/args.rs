//! The lower floor of the command line: what several subcommands share and that
//! imports nothing above it: the request's arguments (probe, check, doctor, the policy
//! suites), the output formats, the flags' value parsers, the exit-status block and the help
//! paragraphs. `cli.rs` and the subcommands' modules import it, never the other way round.

use std::time::Duration;

use clap::{Args, ValueEnum};
use sharing_policy::{Pid, Request};

use crate::front::{self, LowArgs, Param, Wording};

pub(crate) const EXIT_CODES: &str = "\
Exit status:
  0  success: the request is validated (or null), the data is on stdout
  1  rejected: an unmet prerequisite or an inconsistency; stdout is empty and
     stderr begins with `error: ` and says what to do
  2  usage error, or an input that cannot be read (missing file, not JSON, a
     snapshot of another schema version, a manifest that cannot be written)";

/// `text` with its paragraphs on one line each, for clap to wrap at the terminal's width: the
/// source keeps its lines short, and a line break inside a paragraph would otherwise stay, and
/// leave a short orphan line wherever clap wraps first. A blank line separates paragraphs, and
/// a line that starts with a space or `-` (a list item) keeps its own line.
pub(crate) fn paragraphs(text: &str) -> String {
    let mut joined = String::with_capacity(text.len());
    let mut previous_blank = true;
    for line in text.lines() {
        let blank = line.trim().is_empty();
        let own_line = line.starts_with(' ') || line.starts_with('-');
        if !joined.is_empty() {
            joined.push(if previous_blank || blank || own_line {
                '\n'
            } else {
                ' '
            });
        }
        joined.push_str(line);
        previous_blank = blank;
    }
    joined
}

/// How `doctor` prints its findings.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub(crate) enum Format {
    /// For people: each finding with what was found, why it matters and the fix.
    Human,
    /// For machines: one JSON object.
    Json,
    /// For health checks: one line of at most 80 bytes (see `--format brief` of `probe`).
    Brief,
}

/// How `probe` and `check` print their verdict.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub(crate) enum VerdictFormat {
    /// The evidence, one JSON object (a rejection prints nothing on stdout).
    Json,
    /// One line of at most 80 bytes, for node-problem-detector and Slurm health checks:
    /// `OK: …` (exit 0), `<code>: <what was found>` (exit 1), `UNKNOWN: …` (exit 2: could
    /// not tell).
    Brief,
}

/// What the launcher asks for (probe, check, doctor).
#[derive(Debug, Clone, Args)]
#[command(next_help_heading = "Request")]
pub(crate) struct RequestArgs {
    /// The sharing mode: `mps` or `null` (any case). Any other value is a rejection (exit 1), not a usage error
    #[arg(long = "request", value_name = "MODE", default_value = "null")]
    pub(crate) mode: String,

    /// The learner's device, e.g. `cuda:0` (or `cpu` for a null request); a malformed one is a rejection (exit 1), not a usage error
    #[arg(long, value_name = "DEV")]
    pub(crate) learner_device: String,

    /// The collector's device, e.g. `cuda:0`; an `mps` request needs one
    #[arg(long, value_name = "DEV")]
    pub(crate) collector_device: Option<String>,

    /// The simulation backend the run uses, checked against --supported-backend; without it
    /// nothing about backends is checked
    #[arg(long, value_name = "NAME")]
    pub(crate) backend: Option<String>,

    /// A backend that supports process sharing (repeatable)
    #[arg(long = "supported-backend", value_name = "NAME", default_value = sharing_policy::DEFAULT_SUPPORTED_BACKEND)]
    pub(crate) supported_backends: Vec<String>,

    /// This rank; must be in 0..world-size (other integers are rejected, exit 1)
    #[arg(long, value_name = "INT", default_value = "0", value_parser = parse_int, allow_negative_numbers = true)]
    pub(crate) rank: i64,

    /// The number of ranks; must be at least 1 (other integers are rejected, exit 1)
    #[arg(long, value_name = "INT", default_value = "1", value_parser = parse_int, allow_negative_numbers = true)]
    pub(crate) world_size: i64,

    #[arg(
        long,
        value_name = "UUID",
        help = "The learner's GPU UUID as its own CUDA runtime reports it",
        long_help = paragraphs("\
The learner's GPU UUID as its own CUDA runtime reports it (e.g. torch's
`get_device_properties(i).uuid`); without it, the learner's GPU is resolved from
CUDA_VISIBLE_DEVICES and `nvidia-smi`, like the collector's")
    )]
    pub(crate) learner_uuid: Option<String>,

    /// The deadline of each host query, in milliseconds (unused when a snapshot is read)
    #[arg(long, value_name = "N", default_value = "5000", value_parser = parse_timeout, allow_negative_numbers = true)]
    pub(crate) timeout_ms: u64,

    #[arg(
        long,
        help = "Reject what cannot be verified (the daemon's GPU scope, a server's owner, the compute mode)",
        long_help = paragraphs("\
Reject every prerequisite that could not be observed (the daemon's GPU scope when its
environment is unreadable, a server's owner when /proc hides it, the compute mode when it was
not recorded) instead of listing it in the evidence's `unverified` key. For operators who run
the probe as root, where everything can be observed")
    )]
    pub(crate) require_verified: bool,

    #[arg(
        long,
        value_name = "P",
        value_parser = parse_percentage,
        help = "Reject a daemon whose default active-thread percentage is below P (e.g. 50, 12.5)",
        long_help = paragraphs("\
Reject a daemon whose default active-thread percentage (get_default_active_thread_percentage,
which every new server and so every client gets at most) is below P, a number above 0 and at
most 100 with at most one decimal")
    )]
    pub(crate) min_active_thread_percentage: Option<sharing_policy::Percentage>,

    #[arg(
        long,
        value_name = "SIZE",
        value_parser = parse_mem_size,
        help = "Reject a daemon whose default pinned-memory limit for the GPU is below SIZE (e.g. 512M, 10G)",
        long_help = paragraphs("\
Reject a daemon whose default pinned-memory limit for the GPU
(get_default_device_pinned_mem_limit <device>) is below SIZE: digits then M (MiB) or G (GiB).
No limit set meets any SIZE; a limit that cannot be read is unverified")
    )]
    pub(crate) min_pinned_mem: Option<sharing_policy::MemSize>,

    #[arg(
        long,
        value_name = "UID|NAME",
        value_parser = parse_user,
        help = "Judge the request for this user instead of the probing one (a UID, or a name in /etc/passwd)",
        long_help = paragraphs("\
Judge the request for this user instead of the user running the probe: an MPS server of this
user is the job's own, a server of any other user is another user's (for a root Prolog
checking a job, pass the job's user: SLURM_JOB_UID). A UID as digits, or a name looked up in
/etc/passwd (an unknown name is a usage error). The evidence's judged_for_uid records it")
    )]
    pub(crate) as_user: Option<u32>,

    #[arg(
        long,
        value_name = "SIZE",
        value_parser = parse_mem_size,
        help = "Reject a /dev/shm with less than SIZE free (e.g. 512M, 2G)",
        long_help = paragraphs("\
Reject when this process's /dev/shm (which clients and their MPS server share) has less than
SIZE free (statvfs: blocks available to unprivileged users): digits then M (MiB) or G (GiB).
Free space that cannot be read is unverified")
    )]
    pub(crate) min_shm: Option<sharing_policy::MemSize>,
}

impl RequestArgs {
    /// The front end's low-level arguments ([`crate::front::LowArgs`]), field for field: their
    /// one conversion into the request and the probe's options is the front end's.
    pub(crate) fn low(&self) -> LowArgs {
        LowArgs {
            mode: Some(self.mode.clone()),
            learner_device: self.learner_device.clone(),
            collector_device: self.collector_device.clone(),
            backend: self.backend.clone(),
            rank: self.rank,
            world_size: self.world_size,
            supported_backends: self.supported_backends.clone(),
            learner_uuid: self.learner_uuid.clone(),
            timeout: Duration::from_millis(self.timeout_ms),
            require_verified: self.require_verified,
            min_active_thread_percentage: self.min_active_thread_percentage,
            min_pinned_mem: self.min_pinned_mem,
            as_user: self.as_user,
            min_shm: self.min_shm,
            wording: Wording::Cli,
        }
    }

    /// The request as the policy reads it ([`crate::front::LowArgs::to_high`]).
    pub(crate) fn to_request(&self) -> Request {
        self.low().to_high().request
    }
}

/// An integer of any size: decimal digits with an optional sign. Values beyond `i64` saturate,
/// so that they reach the policy (and are rejected there as out of range) instead of being a
/// usage error; anything that is not an integer is a usage error.
pub(crate) fn parse_int(text: &str) -> Result<i64, String> {
    let (negative, digits) = match text.as_bytes().first() {
        Some(b'-') => (true, text.get(1..).unwrap_or_default()),
        Some(b'+') => (false, text.get(1..).unwrap_or_default()),
        _ => (false, text),
    };
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return Err(format!("expected an integer, got {text:?}"));
    }
    // Saturating would report a value that was not given.
    let value = digits
        .parse::<i128>()
        .ok()
        .map(|value| if negative { -value } else { value })
        .and_then(|value| i64::try_from(value).ok());
    value.ok_or_else(|| {
        format!(
            "{text} is out of range: expected an integer from {} to {}",
            i64::MIN,
            i64::MAX
        )
    })
}

/// A positive number of milliseconds.
pub(crate) fn parse_timeout(text: &str) -> Result<u64, String> {
    match text.parse::<u64>() {
        Ok(0) => Err("the deadline must be at least 1 ms".to_owned()),
        Ok(value) => Ok(value),
        Err(_) if text.starts_with('-') => Err(format!(
            "the deadline cannot be negative, got {text}: give a whole number of milliseconds, at least 1"
        )),
        Err(_) => Err(format!(
            "expected a whole number of milliseconds, at least 1, got {text:?}"
        )),
    }
}

/// `--min-active-thread-percentage`: above 0, at most 100, at most one decimal.
pub(crate) fn parse_percentage(text: &str) -> Result<sharing_policy::Percentage, String> {
    front::parse_percentage(text, Wording::Cli)
}

/// `--min-pinned-mem` and `--min-shm`: digits then `M` or `G`.
pub(crate) fn parse_mem_size(text: &str) -> Result<sharing_policy::MemSize, String> {
    front::parse_mem_size(text, Param::MinPinnedMem, Wording::Cli)
}

/// `--as-user`: a UID, or a user name in /etc/passwd (mps-host's bounded read).
pub(crate) fn parse_user(text: &str) -> Result<u32, String> {
    front::parse_user(text, Wording::Cli)
}

/// A PID: ASCII digits, 1 to 2147483647.
pub(crate) fn parse_pid(text: &str) -> Result<Pid, String> {
    Pid::parse(text)
        .ok_or_else(|| format!("expected a process ID (a positive integer), got {text:?}"))
}
