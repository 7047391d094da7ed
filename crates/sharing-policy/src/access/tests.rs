use proptest::prelude::*;

use super::*;
use crate::UserGroups;

const NOBODY: u32 = 65534;

fn entry(path: &str, kind: EntryKind, mode: u32, uid: u32, gid: u32) -> PathEntry {
    PathEntry {
        path: OsText::from(path),
        kind: Some(kind),
        mode: Some(mode),
        uid: Some(uid),
        gid: Some(gid),
        acl: Some(false),
        error: None,
    }
}

/// `/run/nvidia/mps` with `parent` as `/run/nvidia`'s mode, a live daemon's files, the log
/// in `/var/log/nvidia-mps` (0700, as the daemon creates it), judged for nobody.
fn host(parent: u32) -> PipeAccessFacts {
    PipeAccessFacts {
        pipe_path: vec![
            entry("/", EntryKind::Directory, 0o755, 0, 0),
            entry("/run", EntryKind::Directory, 0o755, 0, 0),
            entry("/run/nvidia", EntryKind::Directory, parent, 0, 0),
            entry("/run/nvidia/mps", EntryKind::Directory, 0o777, 0, 0),
        ],
        control: entry("/run/nvidia/mps/control", EntryKind::Socket, 0o666, 0, 0),
        log_fifo: entry("/run/nvidia/mps/log", EntryKind::Fifo, 0o777, 0, 0),
        log_path: Some(vec![
            entry("/", EntryKind::Directory, 0o755, 0, 0),
            entry("/var", EntryKind::Directory, 0o755, 0, 0),
            entry("/var/log", EntryKind::Directory, 0o755, 0, 0),
            entry("/var/log/nvidia-mps", EntryKind::Directory, 0o700, 0, 0),
        ]),
        log_unknown: None,
        user: Some(UserGroups {
            uid: NOBODY,
            gid: NOBODY,
            groups: vec![],
            source: "/etc/passwd,/etc/group".to_owned(),
        }),
        user_error: None,
        selinux_enforce: None,
        selinux_error: None,
    }
}

#[test]
fn a_0700_parent_blocks_nobody_and_names_the_parent() {
    let Reach::Blocked(blocked) = pipe_reach(&host(0o700), NOBODY) else {
        panic!("not blocked");
    };
    assert_eq!(blocked.path, OsText::from("/run/nvidia"));
    assert_eq!(
        (blocked.need, blocked.class, blocked.mode),
        (Need::Search, Class::Other, 0o700)
    );
}

#[test]
fn a_0755_parent_grants_and_the_0700_log_directory_itself_is_not_needed() {
    assert_eq!(pipe_reach(&host(0o755), NOBODY), Reach::Granted);
}

#[test]
fn root_passes_and_the_owner_class_decides_without_fallthrough() {
    assert_eq!(pipe_reach(&host(0o700), 0), Reach::Root);
    let mut facts = host(0o007);
    facts.pipe_path[2].uid = Some(NOBODY);
    // The owner's bits (none) decide, though the others' grant.
    assert!(matches!(pipe_reach(&facts, NOBODY), Reach::Blocked(b) if b.class == Class::Owner));
}

#[test]
fn a_group_only_path_grants_a_member_only() {
    let mut facts = host(0o710);
    facts.pipe_path[2].gid = Some(44);
    assert!(matches!(pipe_reach(&facts, NOBODY), Reach::Blocked(b) if b.class == Class::Other));
    if let Some(user) = facts.user.as_mut() {
        user.groups = vec![44];
    }
    assert_eq!(pipe_reach(&facts, NOBODY), Reach::Granted);
    if let Some(user) = facts.user.as_mut() {
        user.groups = vec![];
        user.gid = 44;
    }
    assert_eq!(pipe_reach(&facts, NOBODY), Reach::Granted);
}

#[test]
fn a_symlink_an_acl_selinux_or_other_groups_are_unverified() {
    let mut link = host(0o755);
    link.pipe_path[1].kind = Some(EntryKind::Symlink);
    assert!(matches!(
        pipe_reach(&link, NOBODY),
        Reach::Unverified(ReachUnknown::Path {
            why: PathUnknown::Symlink,
            ..
        })
    ));
    let mut acl = host(0o755);
    acl.pipe_path[2].acl = Some(true);
    assert!(matches!(
        pipe_reach(&acl, NOBODY),
        Reach::Unverified(ReachUnknown::Path {
            why: PathUnknown::Acl,
            ..
        })
    ));
    // An ACL on a 0700 parent may grant nobody: not a certain denial either.
    let mut acl = host(0o700);
    acl.pipe_path[2].acl = Some(true);
    assert!(matches!(pipe_reach(&acl, NOBODY), Reach::Unverified(_)));
    let mut enforcing = host(0o755);
    enforcing.selinux_enforce = Some("1".to_owned());
    assert!(matches!(
        pipe_reach(&enforcing, NOBODY),
        Reach::Unverified(ReachUnknown::SelinuxEnforces)
    ));
    enforcing.selinux_enforce = Some("0".to_owned());
    assert_eq!(pipe_reach(&enforcing, NOBODY), Reach::Granted);
    assert!(matches!(
        pipe_reach(&host(0o755), 1000),
        Reach::Unverified(ReachUnknown::GroupsOfAnotherUser {
            recorded: 65534,
            judged: 1000
        })
    ));
    let mut no_log = host(0o755);
    no_log.log_path = None;
    assert!(matches!(
        pipe_reach(&no_log, NOBODY),
        Reach::Unverified(ReachUnknown::LogUnknown(_))
    ));
}

#[test]
fn a_certain_denial_wins_over_an_earlier_uncertainty() {
    let mut facts = host(0o700);
    facts.pipe_path[1].acl = None;
    assert!(matches!(pipe_reach(&facts, NOBODY), Reach::Blocked(_)));
}

#[test]
fn control_and_log_need_write() {
    let mut facts = host(0o755);
    facts.control.mode = Some(0o644);
    assert!(matches!(pipe_reach(&facts, NOBODY), Reach::Blocked(b) if b.need == Need::Connect));
    let mut facts = host(0o755);
    facts.log_fifo.mode = Some(0o755);
    assert!(matches!(pipe_reach(&facts, NOBODY), Reach::Blocked(b) if b.need == Need::WriteFifo));
    let mut facts = host(0o755);
    facts.log_fifo.kind = Some(EntryKind::Missing);
    assert!(matches!(
        pipe_reach(&facts, NOBODY),
        Reach::Unverified(ReachUnknown::Path {
            why: PathUnknown::Missing,
            ..
        })
    ));
}

/// The model: the permission bits of the class that applies.
fn model_grants(entry: &PathEntry, bit: u32, uid: u32, gids: &[u32]) -> bool {
    let (Some(mode), Some(owner), Some(group)) = (entry.mode, entry.uid, entry.gid) else {
        return false;
    };
    let bits = if owner == uid {
        mode >> 6
    } else if gids.contains(&group) {
        mode >> 3
    } else {
        mode
    };
    bits & bit != 0
}

fn arb_entry(kind: EntryKind) -> impl Strategy<Value = PathEntry> {
    (
        0u32..0o1000,
        prop::sample::select(vec![0u32, 7, NOBODY]),
        prop::sample::select(vec![0u32, 7, 44]),
        prop::option::weighted(0.9, Just(false)),
        prop::option::weighted(0.95, Just(kind)),
    )
        .prop_map(move |(mode, uid, gid, acl, kind)| PathEntry {
            path: OsText::from("/p"),
            kind,
            mode: Some(mode),
            uid: Some(uid),
            gid: Some(gid),
            acl,
            error: None,
        })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn passes_only_when_every_component_grants_the_users_class(
        pipe in prop::collection::vec(arb_entry(EntryKind::Directory), 1..5),
        log in prop::collection::vec(arb_entry(EntryKind::Directory), 1..4),
        control in arb_entry(EntryKind::Socket),
        fifo in arb_entry(EntryKind::Fifo),
        groups in prop::sample::subsequence(vec![7u32, 44], 0..=2),
        enforce in prop::option::of(prop::sample::select(vec!["0", "1"])),
    ) {
        let facts = PipeAccessFacts {
            pipe_path: pipe.clone(),
            control: control.clone(),
            log_fifo: fifo.clone(),
            log_path: Some(log.clone()),
            log_unknown: None,
            user: Some(UserGroups { uid: NOBODY, gid: NOBODY, groups: groups.clone(), source: String::new() }),
            user_error: None,
            selinux_enforce: enforce.map(str::to_owned),
            selinux_error: None,
        };
        let mut gids = groups;
        gids.push(NOBODY);
        let above_log = &log[..log.len() - 1];
        let searched = pipe.iter().chain(above_log);
        let written = [&control, &fifo];
        let all_known = searched.clone().chain(written).all(|entry| entry.acl == Some(false) && entry.kind.is_some());
        let model = searched.clone().all(|entry| model_grants(entry, 1, NOBODY, &gids))
            && written.iter().all(|entry| model_grants(entry, 2, NOBODY, &gids));
        let verdict = pipe_reach(&facts, NOBODY);
        if verdict == Reach::Granted {
            prop_assert!(model && all_known && enforce != Some("1"));
        }
        if model && all_known && enforce != Some("1") {
            prop_assert_eq!(verdict, Reach::Granted);
        }
        // A missing fact is never a pass.
        let mut unread = facts.clone();
        unread.user = None;
        prop_assert!(matches!(pipe_reach(&unread, NOBODY), Reach::Unverified(_)));
        let mut unread = facts;
        unread.log_path = None;
        prop_assert_ne!(pipe_reach(&unread, NOBODY), Reach::Granted);
    }
}
