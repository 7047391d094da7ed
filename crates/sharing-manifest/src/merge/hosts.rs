//! The checks of ranks that share one host and one control pipe: one pipe, one daemon, one
//! server. Ranks on different hosts legitimately see different daemons.

use std::collections::{BTreeSet, HashMap};

use sharing_policy::Evidence;

use super::{MergeCode, MergeFinding, RankRecord, group, json_text, mismatch, pipe, quote_source};

/// The per-host checks, for each host (`host_name`; unknown is one group) on its own, in
/// first-seen order. The ranks are split by host in one pass (filtering every rank
/// for each of 1,250 hosts made a 10,000-rank merge quadratic).
pub(super) fn check_hosts(ranks: &[RankRecord], findings: &mut Vec<MergeFinding>) {
    let mut hosts: Vec<(Option<&str>, Vec<RankRecord>)> = Vec::new();
    let mut index: HashMap<Option<&str>, usize> = HashMap::new();
    for record in ranks {
        let name = record.evidence.host_name.as_deref();
        if let Some((_, on_host)) = index.get(&name).and_then(|at| hosts.get_mut(*at)) {
            on_host.push(record.clone());
        } else {
            index.insert(name, hosts.len());
            hosts.push((name, vec![record.clone()]));
        }
    }
    for (host_name, on_host) in &hosts {
        check_host(*host_name, on_host, findings);
    }
}

/// The ranks of one host grouped by the control pipe their pipe directory names
/// ([`pipe::normalised`]: `/p`, `/p/` and `//p` are one), each group checked for one pipe, one
/// daemon and one server.
fn check_host(host_name: Option<&str>, ranks: &[RankRecord], findings: &mut Vec<MergeFinding>) {
    let directory_of =
        |evidence: &Evidence| evidence.pipe_directory.as_deref().map(pipe::normalised);
    for (normalised, _) in group(ranks, directory_of) {
        let Some(normalised) = normalised else {
            continue;
        };
        let host: Vec<RankRecord> = ranks
            .iter()
            .filter(|record| directory_of(&record.evidence).as_ref() == Some(&normalised))
            .cloned()
            .collect();
        // The spellings the ranks used, for the messages.
        let spellings: Vec<String> = group(&host, |evidence| evidence.pipe_directory.clone())
            .into_iter()
            .filter_map(|(spelling, _)| spelling)
            .collect();
        let directory = spellings
            .iter()
            .map(|spelling| quote_source(spelling))
            .collect::<Vec<_>>()
            .join(" = ");
        let scope = match host_name {
            Some(name) => format!(
                "ranks on host {} using pipe directory {directory}",
                quote_source(name)
            ),
            None => format!("ranks using pipe directory {directory}"),
        };
        let pipes = group(&host, |evidence| {
            (
                evidence
                    .control_pipe
                    .as_deref()
                    .map(pipe::normalised_control),
                evidence.control_pipe_kind.clone(),
            )
        });
        if pipes.len() > 1 {
            findings.push(mismatch(
                MergeCode::ControlPipeMismatch,
                &format!("{scope} name different control pipes"),
                &pipes,
                |(path, kind)| {
                    format!(
                        "{} ({})",
                        json_text(path.as_deref()),
                        kind.as_deref().unwrap_or("not a pipe")
                    )
                },
            ));
        }
        let seen = |key: fn(&Evidence) -> Option<i64>| -> Vec<(i64, Vec<String>)> {
            group(&host, key)
                .into_iter()
                .filter_map(|(pid, sources)| pid.map(|pid| (pid, sources)))
                .collect()
        };
        let daemons = seen(|evidence| evidence.daemon_pid);
        if daemons.len() > 1 {
            findings.push(mismatch(
                MergeCode::DaemonMismatch,
                &format!(
                    "{scope} saw different control daemons (the daemon restarted between probes, or these ranks ran on different hosts with the same pipe directory)"
                ),
                &daemons,
                |pid| format!("daemon_pid {pid}"),
            ));
        }
        check_daemon_identity(&host, &scope, findings);
        let servers = seen(|evidence| evidence.server_pid);
        if servers.len() > 1 {
            findings.push(mismatch(
                MergeCode::ServerMismatch,
                &format!(
                    "{scope} saw different MPS servers (one daemon runs one server per user: the server restarted, or the ranks ran as different users or on different hosts)"
                ),
                &servers,
                |pid| format!("server_pid {pid}"),
            ));
        }
    }
}

/// A daemon's identity as one rank saw it: its GPU scope and multi-user mode.
type DaemonIdentity = (Option<String>, Option<bool>);

/// Ranks that claim one daemon (one host, one control pipe) must agree on its identity where
/// they observed it: its GPU scope and whether it runs in multi-user mode. A null is
/// not a disagreement: that rank could not see it.
fn check_daemon_identity(host: &[RankRecord], scope: &str, findings: &mut Vec<MergeFinding>) {
    let identities: Vec<(DaemonIdentity, Vec<String>)> = group(host, |e| {
        (e.daemon_visible_devices.clone(), e.daemon_multiuser)
    })
    .into_iter()
    .filter(|((devices, multiuser), _)| devices.is_some() || multiuser.is_some())
    .collect();
    let scopes: BTreeSet<&String> = identities
        .iter()
        .filter_map(|((devices, _), _)| devices.as_ref())
        .collect();
    let modes: BTreeSet<bool> = identities.iter().filter_map(|((_, m), _)| *m).collect();
    if scopes.len() > 1 || modes.len() > 1 {
        findings.push(mismatch(
            MergeCode::DaemonIdentityMismatch,
            &format!(
                "{scope} disagree on the control daemon's identity (its GPU scope or multi-user mode): the daemon restarted with other settings between probes, or these ranks ran on different hosts"
            ),
            &identities,
            |(devices, multiuser)| {
                format!(
                    "daemon_visible_devices {}, daemon_multiuser {}",
                    json_text(devices.as_deref()),
                    multiuser.map_or_else(|| "null".to_owned(), |m| m.to_string())
                )
            },
        ));
    }
}
