//! Whether a user can reach the pipe directory as its MPS server must (notes row 6): POSIX
//! discretionary access control from the recorded modes, owners and groups. The first class
//! that matches decides, with no fallthrough: the owner's bits when the user owns the file,
//! else the group's when the file's group is the user's primary or a supplementary group,
//! else the others'. UID 0 bypasses the search and read/write checks. A POSIX ACL, a symbolic
//! link, an unread fact or an enforcing `SELinux` make the answer unverified; a certain denial
//! anywhere on the way is a denial, whatever else is uncertain.

use crate::{EntryKind, OsText, PathEntry, PipeAccessFacts};

/// What the user needs on a path.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Need {
    /// Search (`x`) on a directory on the way.
    Search,
    /// Write (`w`) on the `control` socket, to connect to it.
    Connect,
    /// Write (`w`) on the `log` FIFO, to open it for writing.
    WriteFifo,
}

impl Need {
    fn bit(self) -> u32 {
        match self {
            Self::Search => 0o1,
            Self::Connect | Self::WriteFifo => 0o2,
        }
    }

    fn kind(self) -> EntryKind {
        match self {
            Self::Search => EntryKind::Directory,
            Self::Connect => EntryKind::Socket,
            Self::WriteFifo => EntryKind::Fifo,
        }
    }

    /// The permission's letter in `chmod`'s syntax.
    pub fn letter(self) -> char {
        match self {
            Self::Search => 'x',
            Self::Connect | Self::WriteFifo => 'w',
        }
    }
}

/// Which permission class of a file applies to a user.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Class {
    /// The user owns the file.
    Owner,
    /// The file's group is one of the user's.
    Group,
    /// Neither.
    Other,
}

impl Class {
    /// The class's letter in `chmod`'s syntax.
    pub fn letter(self) -> char {
        match self {
            Self::Owner => 'u',
            Self::Group => 'g',
            Self::Other => 'o',
        }
    }
}

/// The first path that denies the user what it needs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Blocked {
    /// The path.
    pub path: OsText,
    /// What the user needs there.
    pub need: Need,
    /// The class that decides.
    pub class: Class,
    /// Its permission bits.
    pub mode: u32,
    /// Its owner.
    pub uid: u32,
    /// Its group.
    pub gid: u32,
}

/// The answer for one user.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Reach {
    /// The user is root (UID 0): no search or write permission is checked.
    Root,
    /// Every path grants what the user needs.
    Granted,
    /// A path denies it.
    Blocked(Blocked),
    /// It cannot be told; why (its `Display` words it).
    Unverified(ReachUnknown),
}

/// Why a user's reach cannot be told: the first uncertainty met on the way.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ReachUnknown {
    /// The user's groups were not recorded: the recorded error, if any.
    GroupsUnread(Option<String>),
    /// The groups recorded are another user's.
    GroupsOfAnotherUser {
        /// The UID whose groups were recorded.
        recorded: u32,
        /// The UID judged.
        judged: u32,
    },
    /// The pipe directory is not an absolute path.
    PipeNotAbsolute,
    /// The log directory is not an absolute path.
    LogNotAbsolute,
    /// The log directory is unknown: why, as recorded, if recorded.
    LogUnknown(Option<String>),
    /// A path on the way cannot be judged.
    Path {
        /// The path.
        path: OsText,
        /// Why.
        why: PathUnknown,
    },
    /// Whether `SELinux` enforces could not be read: the recorded error.
    SelinuxUnread(String),
    /// `SELinux` enforces: its policy may deny what the modes allow.
    SelinuxEnforces,
    /// The enforce file reads neither 0 nor 1: what it reads.
    SelinuxUnclear(String),
}

/// Why one path on the way cannot be judged.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PathUnknown {
    /// `lstat` failed: the recorded error, if any.
    LstatFailed(Option<String>),
    /// A symbolic link (not followed).
    Symlink,
    /// It does not exist.
    Missing,
    /// It is another kind of file than the one needed.
    WrongKind {
        /// What it is.
        found: EntryKind,
        /// What is needed.
        needed: EntryKind,
    },
    /// Its mode or owner was not recorded.
    ModeUnrecorded,
    /// It carries a POSIX ACL, which the mode bits do not show.
    Acl,
    /// Whether it carries a POSIX ACL could not be read: the recorded error, if any.
    AclUnread(Option<String>),
}

/// Whether `uid` reaches what [`PipeAccessFacts`] recorded: search on every directory from
/// `/` down to the pipe directory and on every directory above the log directory, write on
/// `<pipe>/control` and `<pipe>/log`. The log directory itself is not needed: the daemon
/// creates it 0700 and its servers send their lines through the `log` FIFO.
pub fn pipe_reach(facts: &PipeAccessFacts, uid: u32) -> Reach {
    if uid == 0 {
        return Reach::Root;
    }
    let Some(user) = &facts.user else {
        return Reach::Unverified(ReachUnknown::GroupsUnread(facts.user_error.clone()));
    };
    if user.uid != uid {
        return Reach::Unverified(ReachUnknown::GroupsOfAnotherUser {
            recorded: user.uid,
            judged: uid,
        });
    }
    let mut needs: Vec<(&PathEntry, Need)> = Vec::new();
    let mut unknown: Option<ReachUnknown> = None;
    if facts.pipe_path.is_empty() {
        unknown = Some(ReachUnknown::PipeNotAbsolute);
    }
    needs.extend(facts.pipe_path.iter().map(|entry| (entry, Need::Search)));
    needs.push((&facts.control, Need::Connect));
    needs.push((&facts.log_fifo, Need::WriteFifo));
    match &facts.log_path {
        Some(path) if !path.is_empty() => {
            let above = path.len().saturating_sub(1);
            needs.extend(path.iter().take(above).map(|entry| (entry, Need::Search)));
        }
        Some(_) => {
            unknown.get_or_insert(ReachUnknown::LogNotAbsolute);
        }
        None => {
            unknown.get_or_insert_with(|| ReachUnknown::LogUnknown(facts.log_unknown.clone()));
        }
    }
    let groups = |gid: u32| user.gid == gid || user.groups.contains(&gid);
    for (entry, need) in &needs {
        match judge(entry, *need, uid, &groups) {
            Judged::Granted => {}
            Judged::Denied(blocked) => return Reach::Blocked(blocked),
            Judged::Unknown(why) => {
                unknown.get_or_insert_with(|| ReachUnknown::Path {
                    path: entry.path.clone(),
                    why,
                });
            }
        }
    }
    if let Some(why) = selinux(facts) {
        unknown.get_or_insert(why);
    }
    match unknown {
        Some(why) => Reach::Unverified(why),
        None => Reach::Granted,
    }
}

enum Judged {
    Granted,
    Denied(Blocked),
    Unknown(PathUnknown),
}

fn judge(entry: &PathEntry, need: Need, uid: u32, groups: &dyn Fn(u32) -> bool) -> Judged {
    let Some(kind) = entry.kind else {
        return Judged::Unknown(PathUnknown::LstatFailed(entry.error.clone()));
    };
    match kind {
        EntryKind::Symlink => return Judged::Unknown(PathUnknown::Symlink),
        EntryKind::Missing => return Judged::Unknown(PathUnknown::Missing),
        found if found != need.kind() => {
            return Judged::Unknown(PathUnknown::WrongKind {
                found,
                needed: need.kind(),
            });
        }
        _ => {}
    }
    let (Some(mode), Some(owner), Some(group)) = (entry.mode, entry.uid, entry.gid) else {
        return Judged::Unknown(PathUnknown::ModeUnrecorded);
    };
    let class = if owner == uid {
        Class::Owner
    } else if groups(group) {
        Class::Group
    } else {
        Class::Other
    };
    let shift = match class {
        Class::Owner => 6,
        Class::Group => 3,
        Class::Other => 0,
    };
    let granted = (mode >> shift) & need.bit() != 0;
    match entry.acl {
        Some(false) if granted => Judged::Granted,
        Some(false) => Judged::Denied(Blocked {
            path: entry.path.clone(),
            need,
            class,
            mode,
            uid: owner,
            gid: group,
        }),
        Some(true) => Judged::Unknown(PathUnknown::Acl),
        None => Judged::Unknown(PathUnknown::AclUnread(entry.error.clone())),
    }
}

/// Why `SELinux` makes the answer uncertain, if it does: when it enforces, its policy may deny
/// what the modes allow (the labels are not judged here).
fn selinux(facts: &PipeAccessFacts) -> Option<ReachUnknown> {
    if let Some(error) = &facts.selinux_error {
        return Some(ReachUnknown::SelinuxUnread(error.clone()));
    }
    match facts.selinux_enforce.as_deref().map(str::trim) {
        None | Some("0") => None,
        Some("1") => Some(ReachUnknown::SelinuxEnforces),
        Some(other) => Some(ReachUnknown::SelinuxUnclear(other.to_owned())),
    }
}

#[cfg(test)]
mod tests;
