//! The breakers of the pipe-directory reach (notes row 6), and the reach judged end to end:
//! a 0700 parent rejects a non-root job's user, an older snapshot is unverified, root passes.

use sharing_policy::{Code, EntryKind, HostFacts, OsText, PipeAccessFacts, validate};

use crate::hosts;
use crate::props_breakers::{Breaker, pick};
use crate::props_shm::make_shared;
use crate::support::mps;

/// `facts` with what a v4 probe adds when the caller (UID 1000) reaches the pipe directory.
pub(crate) fn with_reach(mut facts: HostFacts) -> HostFacts {
    facts.pipe_access = Some(reachable(&facts.env.effective_pipe_directory(), 1000));
    facts
}

/// What a v4 probe records when `uid` can reach `pipe`: every directory on the way to it and
/// to `/var/log/nvidia-mps` root's and 0755 (the log directory itself 0700, as the daemon
/// creates it), `control` a 0666 socket, `log` a 0777 FIFO, no ACL, no `SELinux`.
pub(crate) fn reachable(pipe: &OsText, uid: u32) -> sharing_policy::PipeAccessFacts {
    use sharing_policy::{EntryKind, PathEntry, UserGroups, path_prefixes};
    let entry = |path: OsText, kind: EntryKind, mode: u32| PathEntry {
        path,
        kind: Some(kind),
        mode: Some(mode),
        uid: Some(0),
        gid: Some(0),
        acl: Some(false),
        error: None,
    };
    let directories = |path: &OsText| -> Vec<PathEntry> {
        path_prefixes(path)
            .into_iter()
            .map(|prefix| entry(prefix, EntryKind::Directory, 0o755))
            .collect()
    };
    let mut log_path = directories(&OsText::from(sharing_policy::DEFAULT_LOG_DIRECTORY));
    if let Some(last) = log_path.last_mut() {
        last.mode = Some(0o700);
    }
    let inside = |name: &str| {
        let mut bytes = pipe.as_bytes().to_vec();
        if !bytes.ends_with(b"/") {
            bytes.push(b'/');
        }
        bytes.extend_from_slice(name.as_bytes());
        OsText::from_bytes(bytes)
    };
    sharing_policy::PipeAccessFacts {
        pipe_path: directories(pipe),
        control: entry(inside("control"), EntryKind::Socket, 0o666),
        log_fifo: entry(inside("log"), EntryKind::Fifo, 0o777),
        log_path: Some(log_path),
        log_unknown: None,
        user: Some(UserGroups {
            uid,
            gid: uid,
            groups: Vec::new(),
            source: "/proc/self/status".to_owned(),
        }),
        user_error: None,
        selinux_enforce: None,
        selinux_error: None,
    }
}

fn reach(f: &mut HostFacts) -> &mut PipeAccessFacts {
    f.pipe_access.as_mut().unwrap()
}

pub(crate) fn reach_breakers() -> Vec<Breaker> {
    vec![
        Breaker {
            name: "a directory on the way to the pipe directory denies the user search",
            code: Code::PipeDirectoryUnreachable,
            apply: |_, f, s| {
                make_shared(f);
                let facts = reach(f);
                let last = facts.pipe_path.len() - 1;
                match s % 3 {
                    0 => facts.pipe_path[last].mode = Some(pick(&[0o700, 0o750, 0o776], s)),
                    1 => facts.control.mode = Some(0o644),
                    _ => facts.log_fifo.mode = Some(0o775),
                }
            },
        },
        Breaker {
            name: "the reach cannot be told, verification required",
            code: Code::PipeAccessUnverified,
            apply: |r, f, s| {
                make_shared(f);
                r.require_verified = true;
                match s % 5 {
                    0 => f.pipe_access = None,
                    1 => reach(f).pipe_path[0].acl = Some(true),
                    2 => reach(f).selinux_enforce = Some("1".to_owned()),
                    3 => reach(f).user = None,
                    _ => reach(f).pipe_path[0].kind = Some(EntryKind::Symlink),
                }
            },
        },
    ]
}

/// A served v4 host whose pipe directory is `/run/nvidia-mps`, `/run` in `mode`, root's,
/// the user's groups nobody's (65534).
fn under_run(mode: u32) -> HostFacts {
    let mut facts = hosts::all()
        .into_iter()
        .find(|(n, _)| *n == "healthy-idle-daemon")
        .unwrap()
        .1;
    make_shared(&mut facts);
    let mut access = reachable(&OsText::from("/run/nvidia-mps"), 65534);
    access.pipe_path[1].mode = Some(mode);
    facts.pipe_access = Some(access);
    facts
}

#[test]
fn a_pipe_directory_under_a_0700_parent_rejects_nobody_naming_the_parent() {
    let mut request = mps("cuda:0", Some("cuda:0"));
    request.as_user = Some(65534);
    let rejection = validate(&request, &under_run(0o700)).unwrap_err();
    assert_eq!(rejection.code(), Code::PipeDirectoryUnreachable);
    let text = rejection.to_string();
    for phrase in [
        "/run (mode 0700, owner 0, group 0) denies UID 65534 search (x)",
        "chmod o+x /run",
        "crash-loops with EACCES",
    ] {
        assert!(text.contains(phrase), "{phrase}: {text}");
    }
    let evidence = validate(&request, &under_run(0o755)).unwrap();
    assert_eq!(evidence.pipe_access.as_deref(), Some("modes"));
    assert!(!evidence.unverified.contains(&Code::PipeAccessUnverified));
    // Root's server is not checked; the caller (1000) is not the user these groups are of.
    request.as_user = Some(0);
    let root = validate(&request, &under_run(0o700)).unwrap();
    assert_eq!(root.pipe_access.as_deref(), Some("root"));
    request.as_user = None;
    let caller = validate(&request, &under_run(0o755)).unwrap();
    assert!(caller.unverified.contains(&Code::PipeAccessUnverified));
}

/// A snapshot from before v4 never recorded the path and is judged as it was then; the same
/// host recorded as v4 without the field is unverified, never a pass.
#[test]
fn an_older_snapshot_is_judged_as_then_and_a_v4_one_without_the_fact_is_unverified() {
    for (name, facts) in hosts::all()
        .into_iter()
        .filter(|(n, _)| *n == "v3-served-validated")
    {
        assert!(facts.pipe_access.is_none());
        let mut request = mps("cuda:0", Some("cuda:0"));
        request.require_verified = true;
        let evidence = validate(&request, &facts).unwrap();
        assert_eq!(evidence.pipe_access, None, "{name}");
        assert!(evidence.unverified.is_empty(), "{name}");

        let mut v4 = facts.clone();
        sharing_policy::SCHEMA.clone_into(&mut v4.schema);
        request.require_verified = false;
        let evidence = validate(&request, &v4).unwrap();
        assert!(
            evidence.unverified.contains(&Code::PipeAccessUnverified),
            "{name}"
        );
        request.require_verified = true;
        let rejection = validate(&request, &v4).unwrap_err();
        assert!(
            [
                Code::PipeAccessUnverified,
                Code::DaemonLogUnverified,
                Code::ShmUnverified,
                Code::GpuHealthUnverified
            ]
            .contains(&rejection.code()),
            "{name}: {rejection}"
        );
    }
}
