//! The breakers of the "served" and "settings" families (split out of props.rs by
//! responsibility): each starts from a served daemon ([`make_served`]).

use sharing_policy::{
    BASE_GPU_QUERY_ARGS, CallerFacts, Code, DaemonSearch, DaemonSearchMethod, GPU_QUERY_ARGS,
    HostFacts, OsText, ProcessFacts, QueryOutcome, ReadOnlyCommand, SCHEMA, listed_server_pids,
};

use crate::props_breakers::{Breaker, pick};
use crate::{hosts, locks};

/// Makes any healthy base a v2 host on which every "served" fact is proven: the caller
/// (uid 1000) owns every listed server, a `/proc` scan found the daemon of this pipe
/// directory (unscoped, not multi-user), and the GPU is in `Default` mode, healthy, with
/// persistence on (the GPU query with the health columns).
pub(crate) fn make_served(f: &mut HostFacts) {
    SCHEMA.clone_into(&mut f.schema);
    f.caller = Some(CallerFacts {
        uid: 1000,
        euid: 1000,
        cap_eff: None,
    });
    let pipe = f.env.effective_pipe_directory();
    let listed = listed_server_pids(f.daemon_query.as_ref().unwrap(), &pipe);
    f.server_processes = Some(
        listed
            .into_iter()
            .map(|pid| hosts::process(pid, 1000, "nvidia-cuda-mps"))
            .collect(),
    );
    let mut daemon = hosts::daemon_process(&["-d"], &[]);
    daemon
        .environ
        .as_mut()
        .unwrap()
        .insert("CUDA_MPS_PIPE_DIRECTORY".to_owned(), pipe);
    f.daemon_process = Some(DaemonSearch {
        proc_root: OsText::from("/proc"),
        method: DaemonSearchMethod::ProcScan,
        scanned: 100,
        limit: 65536,
        stopped: None,
        error: None,
        processes: vec![daemon],
        lock: None,
    });
    set_compute_mode(f, "Default");
    set_health(f, hosts::HEALTHY);
    // What a v4 probe records besides: the real 550 daemon's log, and a /dev/shm shared
    // with the daemon (a v4 snapshot without them is unverified).
    f.daemon_log = Some(healthy_log());
    f.shm = Some(shared_shm());
    f.pipe_access = Some(crate::props_reach::reachable(
        &f.env.effective_pipe_directory(),
        1000,
    ));
}

/// The real 550 daemon's `control.log`, no `server.log`.
pub(crate) fn healthy_log() -> sharing_policy::DaemonLogFacts {
    let control = include_str!("../../../../fixtures/daemon-logs/real-550.control.log");
    let file = |name: &str, text: Option<&str>, errno: Option<i32>| sharing_policy::LogFileFacts {
        path: OsText::from(format!("{}/{name}", sharing_policy::DEFAULT_LOG_DIRECTORY).as_str()),
        text: text.map(str::to_owned),
        cut_at_start: false,
        size: text.map(|t| t.len() as u64),
        error: errno.map(|_| "No such file or directory (os error 2)".to_owned()),
        errno,
    };
    sharing_policy::DaemonLogFacts {
        directory: Some(OsText::from(sharing_policy::DEFAULT_LOG_DIRECTORY)),
        unknown: None,
        files: vec![
            file("control.log", Some(control), None),
            file("server.log", None, Some(2)),
        ],
    }
}

/// The caller's `/dev/shm` is the daemon's (PID 2718 of the scan): 1 GiB free of 2 GiB.
pub(crate) fn shared_shm() -> sharing_policy::ShmFacts {
    let view = |path: &str| sharing_policy::ShmView {
        path: OsText::from(path),
        device: Some(26),
        inode: Some(1),
        free_bytes: Some(1 << 30),
        total_bytes: Some(2 << 30),
        mount_source: Some("0:26".to_owned()),
        mount_root: Some("/".to_owned()),
        errors: std::collections::BTreeMap::new(),
    };
    let mut daemon = view("/proc/2718/root/dev/shm");
    daemon.free_bytes = None;
    daemon.total_bytes = None;
    sharing_policy::ShmFacts {
        caller: view("/dev/shm"),
        daemon_pid: Some(2718),
        daemon: Some(daemon),
    }
}

/// Replaces the GPU query's outcome with `outcome`, a v1 (four-column) table.
pub(crate) fn set_v1_table(f: &mut HostFacts, outcome: QueryOutcome) {
    let query = f.gpu_query.as_mut().unwrap();
    query.outcome = outcome;
    query.args = gpu_uuid::TABLE_QUERY_ARGS
        .iter()
        .map(|a| (*a).to_owned())
        .collect();
}

/// The v2 GPU query of the base's table, every GPU in `mode` (the base query: no health
/// columns).
fn set_compute_mode(f: &mut HostFacts, mode: &str) {
    let query = f.gpu_query.as_mut().unwrap();
    let leading = if query.args == GPU_QUERY_ARGS {
        7
    } else if query.args == BASE_GPU_QUERY_ARGS {
        2
    } else {
        0
    };
    let health = health_of(query);
    if let QueryOutcome::Exited { stdout, .. } = &mut query.outcome {
        let mut rows = String::new();
        for row in stdout.text.lines() {
            let row = row.splitn(leading + 1, ',').last().unwrap().trim_start();
            rows.push_str(&[mode, ", 550.163.01, ", row, "\n"].concat());
        }
        stdout.text = rows;
    }
    query.args = BASE_GPU_QUERY_ARGS
        .iter()
        .map(|a| (*a).to_owned())
        .collect();
    if let Some(health) = health {
        set_health(f, &health);
    }
}

/// The health columns of the query's first row, when it asks them.
fn health_of(query: &sharing_policy::QueryRecord) -> Option<String> {
    let QueryOutcome::Exited { stdout, .. } = &query.outcome else {
        return None;
    };
    (query.args == GPU_QUERY_ARGS).then(|| {
        let first = stdout.text.lines().next().unwrap_or("");
        let columns: Vec<&str> = first.splitn(8, ',').skip(2).take(5).collect();
        columns.join(",").trim().to_owned()
    })
}

/// Makes the GPU query (after [`set_compute_mode`]) the one with the health columns, every GPU
/// reporting `health` (five columns).
pub(crate) fn set_health(f: &mut HostFacts, health: &str) {
    let query = f.gpu_query.as_mut().unwrap();
    let leading = if query.args == GPU_QUERY_ARGS { 7 } else { 2 };
    if let QueryOutcome::Exited { stdout, .. } = &mut query.outcome {
        let mut rows = String::new();
        for row in stdout.text.lines() {
            let mut columns = row.splitn(leading + 1, ',');
            let (mode, driver) = (columns.next().unwrap(), columns.next().unwrap());
            let rest = columns.last().unwrap().trim_start();
            rows.push_str(&[mode, ",", driver, ", ", health, ", ", rest, "\n"].concat());
        }
        stdout.text = rows;
    }
    query.args = GPU_QUERY_ARGS.iter().map(|a| (*a).to_owned()).collect();
}

/// The served daemon's environment, after [`make_served`].
pub(crate) fn daemon_environ(f: &mut HostFacts) -> &mut std::collections::BTreeMap<String, OsText> {
    let search = f.daemon_process.as_mut().unwrap();
    search.processes[0].environ.as_mut().unwrap()
}

/// Lists one more server (4429) in the daemon's answer, owned by `uid`.
pub(crate) fn add_server(f: &mut HostFacts, uid: Option<u32>) {
    if let QueryOutcome::Exited { stdout, .. } = &mut f.daemon_query.as_mut().unwrap().outcome {
        stdout.text.push_str("4429\n");
    }
    let server = uid.map_or_else(
        || ProcessFacts::new(4429),
        |uid| hosts::process(4429, uid, "nvidia-cuda-mps"),
    );
    f.server_processes.as_mut().unwrap().push(server);
}

/// The breakers of the "served" families: each starts from [`make_served`].
/// The breakers of the daemon identity family: the lock proves nothing, or a pid file
/// disagrees with it.
pub(crate) fn identity_breakers() -> Vec<Breaker> {
    vec![
        Breaker {
            name: "no process visible here holds the daemon's lock, verification required",
            code: Code::DaemonIdentityUnverified,
            apply: |r, f, s| {
                make_served(f);
                r.require_verified = true;
                let pipe = f.env.effective_pipe_directory();
                let search = f.daemon_process.as_mut().unwrap();
                // The look-alike the scan found stays a witness.
                search.lock = Some(locks::lock_held_by(&pipe, &[]));
                if s % 2 == 1 {
                    // The holder runs as another user than root or the directory's owner.
                    let mut holder = search.processes[0].clone();
                    holder.status_uid = Some("1001\t1001\t1001\t1001".to_owned());
                    *search = locks::by_lock(holder, locks::lock_held_by(&pipe, &[2718]));
                }
            },
        },
        Breaker {
            name: "the pid file names another process than the lock's holder, verification required",
            code: Code::DaemonPidFileDisagrees,
            apply: |r, f, s| {
                make_served(f);
                r.require_verified = true;
                let pipe = f.env.effective_pipe_directory();
                let daemon = f.daemon_process.as_ref().unwrap().processes[0].clone();
                f.daemon_process =
                    Some(locks::by_lock(daemon, locks::lock_held_by(&pipe, &[2718])));
                let named = pick(&["4242", "1", "2719"], s);
                f.pid_file = Some(hosts::pid_file(&f.env, named, true));
            },
        },
        Breaker {
            name: "the proven daemon runs as an ordinary user other than the judged one",
            code: Code::DaemonOfAnotherUser,
            apply: |r, f, s| {
                make_served(f);
                let pipe = f.env.effective_pipe_directory();
                let mut daemon = f.daemon_process.as_ref().unwrap().processes[0].clone();
                daemon.status_uid = Some("1001\t1001\t1001\t1001".to_owned());
                let mut lock = locks::lock_held_by(&pipe, &[2718]);
                lock.directory_uid = Some(1001);
                f.daemon_process = Some(locks::by_lock(daemon, lock));
                r.as_user = Some(pick(&[1000, 65534, 4242], s));
            },
        },
    ]
}

pub(crate) fn served_breakers() -> Vec<Breaker> {
    vec![
        Breaker {
            name: "daemon scoped to another GPU",
            code: Code::GpuOutsideDaemonScope,
            apply: |_, f, s| {
                make_served(f);
                let mask = pick(
                    &["GPU-00000000-1111-2222-3333-444444444444", "", "GPU-ffff"],
                    s,
                );
                daemon_environ(f).insert("CUDA_VISIBLE_DEVICES".to_owned(), OsText::from(mask));
            },
        },
        Breaker {
            name: "client index against a scoped daemon",
            code: Code::DaemonIndexRemap,
            apply: |_, f, s| {
                make_served(f);
                f.env.cuda_visible_devices = Some(OsText::from(pick(&["0,1", "0,2"], s)));
                let environ = daemon_environ(f);
                environ.insert("CUDA_VISIBLE_DEVICES".to_owned(), OsText::from("0"));
                environ.insert("CUDA_DEVICE_ORDER".to_owned(), OsText::from("PCI_BUS_ID"));
            },
        },
        Breaker {
            name: "daemon environment unreadable, verification required",
            code: Code::DaemonScopeUnverified,
            apply: |r, f, s| {
                make_served(f);
                r.require_verified = true;
                if s % 2 == 0 {
                    f.daemon_process = None;
                } else {
                    f.daemon_process.as_mut().unwrap().processes[0].environ = None;
                }
            },
        },
        Breaker {
            name: "a server of another user",
            code: Code::ServerOfAnotherUser,
            apply: |_, f, s| {
                make_served(f);
                add_server(f, Some(pick(&[0, 1001, 65534], s)));
            },
        },
        Breaker {
            name: "a server's owner unreadable, verification required",
            code: Code::ServerOwnerUnverified,
            apply: |r, f, s| {
                make_served(f);
                r.require_verified = true;
                if s % 2 == 0 {
                    add_server(f, None);
                } else {
                    add_server(f, Some(1000));
                    f.caller = None;
                }
            },
        },
        Breaker {
            name: "compute mode forbids sharing",
            code: Code::ComputeModeForbidsSharing,
            apply: |_, f, s| {
                make_served(f);
                set_compute_mode(f, pick(&["Prohibited", "Exclusive_Thread", "Shared"], s));
            },
        },
        Breaker {
            name: "compute mode not reported, verification required",
            code: Code::ComputeModeUnverified,
            apply: |r, f, s| {
                make_served(f);
                r.require_verified = true;
                set_compute_mode(f, pick(&["[N/A]", "[Not Supported]"], s));
            },
        },
    ]
}

/// The breakers of the GPU's health columns: each starts from [`make_served`].
pub(crate) fn health_breakers() -> Vec<Breaker> {
    vec![
        Breaker {
            name: "the GPU needs a recovery action",
            code: Code::GpuNeedsRecovery,
            apply: |_, f, s| {
                make_served(f);
                set_health(
                    f,
                    pick(
                        &[
                            "Enabled, Reset, No, No, No",
                            "Enabled, Reboot, No, No, No",
                            "Enabled, None, Yes, No, No",
                            "Enabled, None, No, Yes, No",
                            "Enabled, None, [N/A], No, Yes",
                            "Enabled, [GPU requires reset], No, No, No",
                        ],
                        s,
                    ),
                );
            },
        },
        Breaker {
            name: "the GPU's health not reported, verification required",
            code: Code::GpuHealthUnverified,
            apply: |r, f, s| {
                make_served(f);
                r.require_verified = true;
                set_health(
                    f,
                    pick(
                        &[
                            "Enabled, [N/A], No, No, No",
                            "Enabled, None, [Unknown Error], No, No",
                            "Enabled, None, No, Maybe, No",
                        ],
                        s,
                    ),
                );
            },
        },
        Breaker {
            name: "persistence mode off, verification required",
            code: Code::PersistenceModeDisabled,
            apply: |r, f, s| {
                make_served(f);
                r.require_verified = true;
                set_health(
                    f,
                    pick(
                        &["Disabled, None, No, No, No", "[N/A], None, No, No, No"],
                        s,
                    ),
                );
            },
        },
    ]
}

/// The breakers of what the processes will be served with: each starts from
/// [`make_served`] and records a settings session ([`hosts::settings`]).
pub(crate) fn settings_breakers() -> Vec<Breaker> {
    vec![
        Breaker {
            name: "the server the clients would join is in FAULT",
            code: Code::ServerFault,
            apply: |_, f, _| {
                make_served(f);
                add_server(f, Some(1000));
                f.settings_query = hosts::settings(f, |command| match command {
                    ReadOnlyCommand::GetServerStatus(pid) if pid.get() == 4429 => {
                        "FAULT\n".to_owned()
                    }
                    ReadOnlyCommand::GetServerStatus(_) => "ACTIVE\n".to_owned(),
                    _ => String::new(),
                });
            },
        },
        Breaker {
            name: "a server's state unreadable, verification required",
            code: Code::ServerStatusUnverified,
            apply: |r, f, s| {
                make_served(f);
                add_server(f, Some(1000));
                r.require_verified = true;
                let answer = pick(
                    &[
                        "Unknown command \"get_server_status\"\n",
                        "Server 4429 not found\n",
                        "ACTIVE\nACTIVE\n",
                        "",
                    ],
                    s,
                );
                f.settings_query = hosts::settings(f, |command| match command {
                    ReadOnlyCommand::GetServerStatus(_) => answer.to_owned(),
                    _ => String::new(),
                });
                if s % 5 == 4 {
                    f.settings_query = None;
                }
            },
        },
        Breaker {
            name: "the daemon's default active-thread percentage below the minimum",
            code: Code::ActiveThreadPercentageBelowRequirement,
            apply: |r, f, s| {
                make_served(f);
                r.min_active_thread_percentage = sharing_policy::Percentage::from_tenths(500);
                let line = pick(&["25.0", "49.9", "0.0"], s);
                if let QueryOutcome::Exited { stdout, .. } =
                    &mut f.daemon_query.as_mut().unwrap().outcome
                {
                    let rest = stdout.text.split_once('\n').unwrap().1.to_owned();
                    stdout.text = [line, "\n", &rest].concat();
                }
                // A listed server applies the same share as the default.
                f.settings_query = hosts::settings_with(f, |command| match command {
                    ReadOnlyCommand::GetServerStatus(_) => "ACTIVE\n".to_owned(),
                    ReadOnlyCommand::GetActiveThreadPercentage(_) => [line, "\n"].concat(),
                    _ => String::new(),
                });
            },
        },
        Breaker {
            name: "the daemon's default pinned-memory limit below the minimum",
            code: Code::PinnedMemBelowRequirement,
            apply: |r, f, s| {
                make_served(f);
                daemon_environ(f)
                    .insert("CUDA_DEVICE_ORDER".to_owned(), OsText::from("PCI_BUS_ID"));
                r.min_pinned_mem = sharing_policy::MemSize::parse_arg("10G");
                let limit = pick(&["9G\n", "1023M\n", "512M\n"], s);
                f.settings_query = hosts::settings(f, |command| match command {
                    ReadOnlyCommand::GetServerStatus(_) => "ACTIVE\n".to_owned(),
                    _ => limit.to_owned(),
                });
            },
        },
        Breaker {
            name: "the daemon's pinned-memory limit unreadable, verification required",
            code: Code::PinnedMemLimitUnverified,
            apply: |r, f, s| {
                make_served(f);
                daemon_environ(f)
                    .insert("CUDA_DEVICE_ORDER".to_owned(), OsText::from("PCI_BUS_ID"));
                r.require_verified = true;
                r.min_pinned_mem = sharing_policy::MemSize::parse_arg("1G");
                let limit = pick(
                    &[
                        "Unknown command \"get_default_device_pinned_mem_limit\"\n",
                        "10 G\n",
                        "1G\n2G\n",
                    ],
                    s,
                );
                f.settings_query = hosts::settings(f, |command| match command {
                    ReadOnlyCommand::GetServerStatus(_) => "ACTIVE\n".to_owned(),
                    _ => limit.to_owned(),
                });
            },
        },
    ]
}
