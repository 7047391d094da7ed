//! The breakers of what a killed run leaves behind and of the limits a running server
//! applies: each starts from a served daemon with one more server of the caller's, 4429
//! ([`make_served`], [`add_server`]), whose settings session lists clients.

use sharing_policy::{ClientFacts, Code, HostFacts, OsText, ReadOnlyCommand};

use crate::hosts;
use crate::props_breakers::{Breaker, pick};
use crate::props_served::{add_server, make_served};

/// A listed client as `/proc` shows it: `exists`, and its `State:` line.
pub(crate) fn client(pid: i64, exists: Option<bool>, state: Option<&str>) -> ClientFacts {
    let mut client = ClientFacts::new(pid);
    client.exists = exists;
    client.state = state.map(str::to_owned);
    client
}

/// Server 4429 lists `clients` (`get_client_list`); every server applies `percentage` and
/// no pinned-memory limit; `/proc` shows `observed`.
fn served_with_clients(f: &mut HostFacts, clients: &str, observed: Vec<ClientFacts>) {
    make_served(f);
    add_server(f, Some(1000));
    f.settings_query = hosts::settings_with(f, |command| match command {
        ReadOnlyCommand::GetServerStatus(_) => "ACTIVE\n".to_owned(),
        ReadOnlyCommand::GetClientList(pid) if pid.get() == 4429 => clients.to_owned(),
        ReadOnlyCommand::GetActiveThreadPercentage(_) => "100.0\n".to_owned(),
        _ => String::new(),
    });
    f.listed_clients = Some(observed);
}

pub(crate) fn client_breakers() -> Vec<Breaker> {
    vec![
        Breaker {
            name: "the server lists a dead or zombie client",
            code: Code::StaleServerClient,
            apply: |_, f, s| {
                let stale = match s % 3 {
                    0 => client(9001, Some(false), None),
                    1 => client(9001, Some(true), Some("Z (zombie)")),
                    _ => client(9001, None, Some("X (dead)")),
                };
                served_with_clients(
                    f,
                    "9000\n9001\n",
                    vec![client(9000, Some(true), Some("S (sleeping)")), stale],
                );
            },
        },
        Breaker {
            name: "a listed client unreadable, verification required",
            code: Code::ServerClientsUnverified,
            apply: |r, f, s| {
                r.require_verified = true;
                let (answer, observed) = match s % 4 {
                    0 => ("9000\n", vec![client(9000, None, None)]),
                    1 => ("9000\n", vec![]),
                    2 => ("Server 4429 not found\n", vec![]),
                    _ => ("9000 quit\n", vec![]),
                };
                served_with_clients(f, answer, observed);
            },
        },
        Breaker {
            name: "a running server's own limit unreadable, verification required",
            code: Code::ServerLimitsUnverified,
            apply: |r, f, s| {
                r.require_verified = true;
                r.min_pinned_mem = sharing_policy::MemSize::parse_arg("1G");
                let limit = pick(&["Server 4429 not found\n", "10 G\n", "1G\n2G\n"], s);
                make_served(f);
                add_server(f, Some(1000));
                hosts_daemon_pci(f);
                f.settings_query = hosts::settings(f, |command| match command {
                    ReadOnlyCommand::GetServerStatus(_) => "ACTIVE\n".to_owned(),
                    ReadOnlyCommand::GetDevicePinnedMemLimit(pid, _) if pid.get() == 4429 => {
                        limit.to_owned()
                    }
                    _ => String::new(),
                });
            },
        },
        Breaker {
            name: "a running server applies less than the minimum",
            code: Code::ActiveThreadPercentageBelowRequirement,
            apply: |r, f, s| {
                r.min_active_thread_percentage = sharing_policy::Percentage::from_tenths(500);
                let line = pick(&["25.0\n", "49.9\n", "0.0\n"], s);
                make_served(f);
                add_server(f, Some(1000));
                f.settings_query = hosts::settings_with(f, |command| match command {
                    ReadOnlyCommand::GetServerStatus(_) => "ACTIVE\n".to_owned(),
                    ReadOnlyCommand::GetActiveThreadPercentage(pid) if pid.get() == 4429 => {
                        line.to_owned()
                    }
                    ReadOnlyCommand::GetActiveThreadPercentage(_) => "100.0\n".to_owned(),
                    _ => String::new(),
                });
            },
        },
    ]
}

/// The daemon orders its devices by PCI bus ID, so its ordinal of the GPU is known.
fn hosts_daemon_pci(f: &mut HostFacts) {
    let daemon = f
        .daemon_process
        .as_mut()
        .and_then(|search| search.processes.first_mut())
        .and_then(|process| process.environ.as_mut());
    if let Some(environ) = daemon {
        environ.insert("CUDA_DEVICE_ORDER".to_owned(), OsText::from("PCI_BUS_ID"));
    }
}

/// One listed client's `/proc` facts: `(exists, State:)`.
fn any_client() -> impl proptest::strategy::Strategy<Value = (Option<bool>, Option<&'static str>)> {
    (
        proptest::sample::select(vec![Some(true), Some(false), None]),
        proptest::sample::select(vec![
            Some("S (sleeping)"),
            Some("R (running)"),
            Some("D (disk sleep)"),
            Some("Z (zombie)"),
            Some("X (dead)"),
            None,
        ]),
    )
}

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig::with_cases(64))]

    /// Whatever the listed clients' `/proc` facts, a dead or zombie client is never a pass, an
    /// unread one is never a pass under `--require-verified`, and only live clients validate,
    /// as evidence.
    #[test]
    fn listed_clients_never_turn_a_stale_server_into_a_pass(
        clients in proptest::collection::vec(any_client(), 1..5),
        strict in proptest::bool::ANY,
    ) {
        let base = hosts::all()
            .into_iter()
            .find(|(n, _)| *n == "healthy-socket-with-server")
            .unwrap()
            .1;
        let mut facts = base;
        let observed: Vec<ClientFacts> = clients
            .iter()
            .zip(9000_i64..)
            .map(|((exists, state), pid)| client(pid, *exists, *state))
            .collect();
        let list: String = (9000..9000 + clients.len())
            .map(|pid| pid.to_string() + "\n")
            .collect();
        served_with_clients(&mut facts, &list, observed);
        let mut request = crate::support::mps("cuda:0", Some("cuda:0"));
        request.require_verified = strict;
        let stale = clients.iter().any(|(exists, state)| {
            *exists == Some(false) || state.is_some_and(|s| s.starts_with(['Z', 'X']))
        });
        // Not stale, and not both present and with a state: unread.
        let unread = clients
            .iter()
            .any(|(exists, state)| !(*exists == Some(true) && state.is_some()));
        let verdict = sharing_policy::validate(&request, &facts);
        if stale {
            let code = verdict.as_ref().err().map(sharing_policy::Rejection::code);
            proptest::prop_assert!(
                code == Some(Code::StaleServerClient)
                    || (strict && code == Some(Code::ServerClientsUnverified)),
                "{verdict:?}"
            );
        } else if unread && strict {
            proptest::prop_assert_eq!(
                verdict.err().map(|r| r.code()),
                Some(Code::ServerClientsUnverified)
            );
        } else if !unread {
            let evidence = verdict.unwrap();
            proptest::prop_assert_eq!(evidence.server_clients, Some(clients.len()));
            proptest::prop_assert!(!evidence.unverified.contains(&Code::ServerHasClients));
        } else {
            let evidence = verdict.unwrap();
            proptest::prop_assert!(evidence.unverified.contains(&Code::ServerClientsUnverified));
            proptest::prop_assert_eq!(evidence.server_clients, None);
        }
    }
}
