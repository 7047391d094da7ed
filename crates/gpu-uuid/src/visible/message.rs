//! The messages of a stopped, duplicated or suspicious `CUDA_VISIBLE_DEVICES` entry.

use std::fmt;

use super::{Duplicate, Mode, Same, Stop, StopReason, Warning, WarningKind};

/// "entry 3 (\"x\")", counting from 1.
struct EntryName<'a>(usize, &'a str);

impl fmt::Display for EntryName<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "CUDA_VISIBLE_DEVICES entry {} ({:?})",
            self.0 + 1,
            self.1
        )
    }
}

fn plural(n: usize, one: &str, many: &str) -> String {
    if n == 1 {
        format!("{n} {one}")
    } else {
        format!("{n} {many}")
    }
}

fn join_u32(values: &[u32]) -> String {
    values
        .iter()
        .map(u32::to_string)
        .collect::<Vec<_>>()
        .join(", ")
}

impl fmt::Display for Stop {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let (problem, fix): (String, String) = match &self.reason {
            StopReason::Empty => (
                "is empty".into(),
                "remove the stray comma".into(),
            ),
            StopReason::Negative => (
                "is a negative index (`-1` is the usual way to hide every GPU)".into(),
                "list only the devices you want, or set CUDA_VISIBLE_DEVICES to the empty string to hide every GPU on purpose".into(),
            ),
            StopReason::Invalid => (
                "is neither a device index nor a `GPU-`/`MIG-` id".into(),
                "write device indices (`0,1`) or UUIDs as `nvidia-smi -L` prints them".into(),
            ),
            StopReason::Keyword => (
                "is a keyword of NVIDIA_VISIBLE_DEVICES (container toolkit) or Slurm, not of CUDA, so CUDA reads it as an invalid entry".into(),
                "unset CUDA_VISIBLE_DEVICES to see every GPU, or list devices by index or `GPU-` UUID".into(),
            ),
            StopReason::BareUuid => (
                "looks like a UUID without the `GPU-` prefix, which CUDA does not read as a UUID".into(),
                format!("write it as `GPU-{}`", self.entry.trim()),
            ),
            StopReason::OtherKind { list } => other_kind_text(*list),
            StopReason::Whitespace => (
                "has whitespace around a `GPU-`/`MIG-` id; PyTorch's model of the driver rejects it and other tools strip it (unverified on a real driver)".into(),
                "remove the whitespace".into(),
            ),
            StopReason::PrefixCase => (
                "has a `GPU-`/`MIG-` prefix in the wrong letter case; CUDA matches the prefix case-sensitively (PyTorch's model, unverified on a real driver)".into(),
                "write the prefix in upper case as `nvidia-smi -L` prints it".into(),
            ),
            StopReason::IndexBeyondTable { index, gpus } => (
                format!(
                    "is device index {index}, but the host has {}",
                    plural(*gpus, "GPU (index 0)", &format!("GPUs (indices 0-{})", gpus.saturating_sub(1)))
                ),
                "use an index the host has, or better a `GPU-` UUID from `nvidia-smi -L`".into(),
            ),
            StopReason::NoMatch { ignoring_case } => (
                if *ignoring_case > 0 {
                    format!(
                        "matches no host GPU's UUID as written, but would match {} if letter case were ignored; CUDA compares UUID prefixes case-sensitively (PyTorch's model, unverified) and `nvidia-smi` prints lower-case hex",
                        plural(*ignoring_case, "GPU", "GPUs")
                    )
                } else {
                    "matches no host GPU's UUID".into()
                },
                "copy the UUID from `nvidia-smi -L`, in lower-case hex".into(),
            ),
            StopReason::Ambiguous { matches } => (
                format!("matches {} GPUs (host indices {})", matches.len(), join_u32(matches)),
                "add digits of the UUID until it matches exactly one GPU (`nvidia-smi -L`)".into(),
            ),
        };
        write!(
            f,
            "{} {problem}; CUDA stops reading the list there, ",
            EntryName(self.position, &self.entry)
        )?;
        match (self.position, self.ignored.len()) {
            (0, _) => f.write_str("so it sees no GPU")?,
            (kept, 0) => write!(
                f,
                "keeping the {} before it",
                plural(kept, "entry", "entries")
            )?,
            (kept, ignored) => write!(
                f,
                "keeping the {} before it and ignoring the {} after it",
                plural(kept, "entry", "entries"),
                plural(ignored, "entry", "entries")
            )?,
        }
        write!(f, "; {fix}")
    }
}

fn other_kind_text(list: Mode) -> (String, String) {
    match list {
        Mode::Uuid => (
            "is not a `GPU-` id, but the list started with one, so CUDA reads only `GPU-` ids"
                .into(),
            "write every entry as a `GPU-` UUID (`nvidia-smi -L`)".into(),
        ),
        Mode::Mig => (
            "is not a `MIG-` id, but the list started with one, so CUDA reads only `MIG-` ids"
                .into(),
            "write every entry as a `MIG-` UUID (`nvidia-smi -L`)".into(),
        ),
        Mode::Index | Mode::All | Mode::Blank => (
            "is a `GPU-`/`MIG-` id, but the list started with an index, so CUDA reads only indices"
                .into(),
            "write every entry as a `GPU-` UUID (preferred) or every entry as an index".into(),
        ),
    }
}

impl fmt::Display for Duplicate {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let what = match self.same {
            Same::Index(index) => format!("both name device index {index}"),
            Same::Text => "are the same".to_owned(),
            Same::HostGpu(index) => format!("both select host GPU {index}"),
        };
        write!(
            f,
            "CUDA_VISIBLE_DEVICES entries {} ({:?}) and {} ({:?}) {what}; a repeated device makes CUDA hide every GPU; list each device once",
            self.first + 1,
            self.first_entry,
            self.second + 1,
            self.second_entry
        )
    }
}

impl fmt::Display for Warning {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let name = EntryName(self.position, &self.entry);
        let index = self.index;
        match self.kind {
            WarningKind::BareUuid => write!(
                f,
                "{name} looks like a UUID without the `GPU-` prefix, so CUDA reads its leading digits as device index {index}; write it as `GPU-{}`",
                self.entry.trim()
            ),
            WarningKind::Range => write!(
                f,
                "{name} looks like a range, but CUDA has none: it reads device index {index} and ignores the rest; list each device, separated by commas"
            ),
            WarningKind::TrailingText => write!(
                f,
                "{name} has text after the number, which CUDA ignores: it reads device index {index}; write just the number"
            ),
        }
    }
}
