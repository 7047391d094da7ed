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
    /// It cannot be told; why.
    Unverified(String),
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
        let why = facts
            .user_error
            .clone()
            .unwrap_or_else(|| "the user's groups were not recorded".to_owned());
        return Reach::Unverified(why);
    };
    if user.uid != uid {
        return Reach::Unverified(format!(
            "the groups recorded are UID {}'s, not UID {uid}'s (capture with --as-user {uid})",
            user.uid
        ));
    }
    let mut needs: Vec<(&PathEntry, Need)> = Vec::new();
    let mut unknown: Option<String> = None;
    if facts.pipe_path.is_empty() {
        unknown = Some("the pipe directory is not an absolute path".to_owned());
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
            unknown.get_or_insert_with(|| "the log directory is not an absolute path".to_owned());
        }
        None => {
            let why = facts
                .log_unknown
                .clone()
                .unwrap_or_else(|| "not recorded".to_owned());
            unknown.get_or_insert_with(|| format!("the log directory is unknown ({why})"));
        }
    }
    let groups = |gid: u32| user.gid == gid || user.groups.contains(&gid);
    for (entry, need) in &needs {
        match judge(entry, *need, uid, &groups) {
            Judged::Granted => {}
            Judged::Denied(blocked) => return Reach::Blocked(blocked),
            Judged::Unknown(why) => {
                unknown.get_or_insert(why);
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
    Unknown(String),
}

fn judge(entry: &PathEntry, need: Need, uid: u32, groups: &dyn Fn(u32) -> bool) -> Judged {
    let path = entry.path.to_string_lossy();
    let unknown = |what: &str| Judged::Unknown(format!("{path}: {what}"));
    let Some(kind) = entry.kind else {
        let error = entry.error.as_deref().unwrap_or("not recorded");
        return unknown(&format!("lstat failed ({error})"));
    };
    match kind {
        EntryKind::Symlink => return unknown("a symbolic link (not followed)"),
        EntryKind::Missing => return unknown("does not exist"),
        kind if kind != need.kind() => {
            return unknown(&format!("is a {kind:?}, not a {:?}", need.kind()));
        }
        _ => {}
    }
    let (Some(mode), Some(owner), Some(group)) = (entry.mode, entry.uid, entry.gid) else {
        return unknown("its mode or owner was not recorded");
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
        Some(true) => unknown("carries a POSIX ACL, which the mode bits do not show"),
        None => unknown(&format!(
            "whether it carries a POSIX ACL could not be read ({})",
            entry.error.as_deref().unwrap_or("not recorded")
        )),
    }
}

/// Why `SELinux` makes the answer uncertain, if it does: when it enforces, its policy may deny
/// what the modes allow (the labels are not judged here).
fn selinux(facts: &PipeAccessFacts) -> Option<String> {
    if let Some(error) = &facts.selinux_error {
        return Some(format!(
            "whether SELinux enforces could not be read ({}: {error})",
            crate::SELINUX_ENFORCE_PATH
        ));
    }
    match facts.selinux_enforce.as_deref().map(str::trim) {
        None | Some("0") => None,
        Some("1") => Some(
            "SELinux enforces, and its policy may deny the server what the modes allow".to_owned(),
        ),
        Some(other) => Some(format!(
            "{} reads {other:?}, neither 0 nor 1",
            crate::SELINUX_ENFORCE_PATH
        )),
    }
}

#[cfg(test)]
mod tests;
