//! The suggested command that starts a control daemon (the seed's `_start_command`, quoted and
//! pinned to the GPU).

use crate::text::push_shell_quoted;
use crate::{EnvFacts, OsText};

/// The log directory the start command uses: a non-empty `CUDA_MPS_LOG_DIRECTORY`, else
/// `<parent of the pipe directory>/log` as in the seed (`/tmp/log` for the default pipe
/// directory). The seed also used an empty value, which made `mkdir -p ''` fail.
pub(crate) fn log_directory(pipe_directory: &str, log_env: Option<&OsText>) -> String {
    match log_env {
        Some(dir) if !dir.as_bytes().is_empty() => dir.to_string_lossy(),
        _ => {
            let parent = parent_directory(pipe_directory);
            if parent == "/" {
                "/log".to_owned()
            } else {
                format!("{parent}/log")
            }
        }
    }
}

/// The parent of `path` as Python's `pathlib` computes it: trailing slashes ignored, `.` for a
/// bare name, `/` for a child of the root.
fn parent_directory(path: &str) -> &str {
    let trimmed = path.trim_end_matches('/');
    if trimmed.is_empty() {
        return if path.starts_with('/') { "/" } else { "." };
    }
    match trimmed.rfind('/') {
        None => ".",
        Some(at) => {
            let parent = trimmed.get(..at).unwrap_or_default().trim_end_matches('/');
            if parent.is_empty() { "/" } else { parent }
        }
    }
}

/// The command that starts a control daemon on `pipe_directory`, pinned to `pin` (a GPU UUID
/// in display form, `GPU-…`) when it is known. Every path is shell-quoted.
pub(crate) fn render(pipe_directory: &str, log_env: Option<&OsText>, pin: Option<&str>) -> String {
    let log = log_directory(pipe_directory, log_env);
    let mut out = String::with_capacity(200 + 2 * (pipe_directory.len() + log.len()));
    out.push_str("mkdir -p ");
    push_shell_quoted(&mut out, pipe_directory);
    out.push(' ');
    push_shell_quoted(&mut out, &log);
    out.push_str(" && export CUDA_MPS_PIPE_DIRECTORY=");
    push_shell_quoted(&mut out, pipe_directory);
    out.push_str(" && export CUDA_MPS_LOG_DIRECTORY=");
    push_shell_quoted(&mut out, &log);
    out.push_str(" && ");
    if let Some(uuid) = pin {
        out.push_str("CUDA_VISIBLE_DEVICES=");
        push_shell_quoted(&mut out, uuid);
        out.push(' ');
    }
    out.push_str("nvidia-cuda-mps-control -d");
    out
}

/// The command that starts a control daemon where `env` says CUDA clients will look for it:
/// `mkdir -p <pipe> <log> && export CUDA_MPS_PIPE_DIRECTORY=<pipe> && export
/// CUDA_MPS_LOG_DIRECTORY=<log> && [CUDA_VISIBLE_DEVICES=GPU-… ]nvidia-cuda-mps-control -d`.
///
/// The pipe directory is [`EnvFacts::effective_pipe_directory`]; the log directory is a
/// non-empty `CUDA_MPS_LOG_DIRECTORY`, else `<parent of the pipe directory>/log`. Paths are
/// quoted with [`shell_quote`](crate::shell_quote), so any path survives. `pin` (when the GPU
/// is known) is set for the daemon only, so it serves exactly that GPU; the caller's own mask is
/// left alone.
/// A path that is not UTF-8 is rendered lossily (U+FFFD), since a command is text.
///
/// ```
/// use sharing_policy::{start_command, EnvFacts, OsText};
/// let env = EnvFacts { cuda_mps_pipe_directory: Some(OsText::from("/run/my mps")), ..EnvFacts::default() };
/// assert_eq!(
///     start_command(&env, Some("GPU-8932f937-d72c-4106-c12f-20bd9faed9f6")),
///     "mkdir -p '/run/my mps' /run/log && export CUDA_MPS_PIPE_DIRECTORY='/run/my mps' && \
///      export CUDA_MPS_LOG_DIRECTORY=/run/log && \
///      CUDA_VISIBLE_DEVICES=GPU-8932f937-d72c-4106-c12f-20bd9faed9f6 nvidia-cuda-mps-control -d",
/// );
/// ```
pub fn start_command(env: &EnvFacts, pin: Option<&str>) -> String {
    let pipe = env.effective_pipe_directory().to_string_lossy();
    render(&pipe, env.cuda_mps_log_directory.as_ref(), pin)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parent_directory_follows_pathlib() {
        assert_eq!(parent_directory("/tmp/nvidia-mps"), "/tmp");
        assert_eq!(parent_directory("/tmp/nvidia-mps/"), "/tmp");
        assert_eq!(parent_directory("/x"), "/");
        assert_eq!(parent_directory("/"), "/");
        assert_eq!(parent_directory("pipe"), ".");
        assert_eq!(parent_directory("a/b"), "a");
        assert_eq!(parent_directory("//a//b//"), "//a");
    }

    #[test]
    fn log_directory_defaults_like_the_seed() {
        assert_eq!(log_directory("/tmp/nvidia-mps", None), "/tmp/log");
        assert_eq!(
            log_directory("/tmp/nvidia-mps", Some(&OsText::from(""))),
            "/tmp/log"
        );
        assert_eq!(log_directory("/x", None), "/log");
        assert_eq!(log_directory("pipe", None), "./log");
        assert_eq!(
            log_directory("/p", Some(&OsText::from("/var/log/mps"))),
            "/var/log/mps"
        );
    }
}
