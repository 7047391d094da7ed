//! The words of a reach that cannot be told ([`crate::access`]): why the modes on the way to
//! the pipe directory do not answer whether a user's MPS server reaches it.

use std::fmt;

use crate::{PathUnknown, ReachUnknown};

/// What an unrecorded error reads as.
const NOT_RECORDED: &str = "not recorded";

impl fmt::Display for ReachUnknown {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::GroupsUnread(Some(error)) => f.write_str(error),
            Self::GroupsUnread(None) => f.write_str("the user's groups were not recorded"),
            Self::GroupsOfAnotherUser { recorded, judged } => write!(
                f,
                "the groups recorded are UID {recorded}'s, not UID {judged}'s (capture with --as-user {judged})"
            ),
            Self::PipeNotAbsolute => f.write_str("the pipe directory is not an absolute path"),
            Self::LogNotAbsolute => f.write_str("the log directory is not an absolute path"),
            Self::LogUnknown(why) => write!(
                f,
                "the log directory is unknown ({})",
                why.as_deref().unwrap_or(NOT_RECORDED)
            ),
            Self::Path { path, why } => write!(f, "{}: {why}", path.to_string_lossy()),
            Self::SelinuxUnread(error) => write!(
                f,
                "whether SELinux enforces could not be read ({}: {error})",
                crate::SELINUX_ENFORCE_PATH
            ),
            Self::SelinuxEnforces => f.write_str(
                "SELinux enforces, and its policy may deny the server what the modes allow",
            ),
            Self::SelinuxUnclear(reads) => write!(
                f,
                "{} reads {reads:?}, neither 0 nor 1",
                crate::SELINUX_ENFORCE_PATH
            ),
        }
    }
}

impl fmt::Display for PathUnknown {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::LstatFailed(error) => write!(
                f,
                "lstat failed ({})",
                error.as_deref().unwrap_or(NOT_RECORDED)
            ),
            Self::Symlink => f.write_str("a symbolic link (not followed)"),
            Self::Missing => f.write_str("does not exist"),
            Self::WrongKind { found, needed } => write!(f, "is a {found:?}, not a {needed:?}"),
            Self::ModeUnrecorded => f.write_str("its mode or owner was not recorded"),
            Self::Acl => f.write_str("carries a POSIX ACL, which the mode bits do not show"),
            Self::AclUnread(error) => write!(
                f,
                "whether it carries a POSIX ACL could not be read ({})",
                error.as_deref().unwrap_or(NOT_RECORDED)
            ),
        }
    }
}

#[cfg(test)]
mod tests {
    use crate::{OsText, PathUnknown, ReachUnknown};

    #[test]
    fn a_path_is_named_before_why_it_is_unknown() {
        let why = ReachUnknown::Path {
            path: OsText::from("/tmp/mps"),
            why: PathUnknown::Symlink,
        };
        assert_eq!(why.to_string(), "/tmp/mps: a symbolic link (not followed)");
        let other = ReachUnknown::GroupsOfAnotherUser {
            recorded: 65534,
            judged: 1000,
        };
        assert_eq!(
            other.to_string(),
            "the groups recorded are UID 65534's, not UID 1000's (capture with --as-user 1000)"
        );
    }
}
