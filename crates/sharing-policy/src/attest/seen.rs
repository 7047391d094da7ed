//! Where each process was found in the daemon's answers: listed under one server, by none,
//! or unknown (an answer that proves nothing, a PID-namespace split).

use super::answers::{self, Unproven};
use super::{AttestCode, AttestFacts, message};

/// Where one process was found in the daemon's answers.
pub(super) enum Seen {
    /// Listed as a client of this server.
    Listed(i64),
    /// Listed by no server.
    NotListed,
    /// The answers prove nothing about it.
    Unknown(Unproven),
}

/// The client PIDs of one listed server, or why they are unproven.
pub(super) fn listing(facts: &AttestFacts, server: i64, dir: &[u8]) -> Result<Vec<i64>, Unproven> {
    match facts.servers.iter().find(|s| s.pid == server) {
        Some(s) => answers::clients(&s.client_query, server, dir),
        None => Err(Unproven {
            code: AttestCode::DaemonDidNotAnswer,
            detail: message::clients_not_asked(server),
        }),
    }
}

/// Where `pid` (in the daemon's PID namespace) was found among the listings. Not listed while
/// a listing holds `0` (a client the daemon cannot see) is a PID-namespace split.
pub(super) fn seen(
    pid: i64,
    servers: &Result<Vec<i64>, Unproven>,
    listings: &[(i64, Result<Vec<i64>, Unproven>)],
) -> Seen {
    if let Err(unproven) = servers {
        return Seen::Unknown(unproven.clone());
    }
    let listed: Vec<i64> = listings
        .iter()
        .filter(|(_, clients)| clients.as_ref().is_ok_and(|c| c.contains(&pid)))
        .map(|(server, _)| *server)
        .collect();
    match listed.as_slice() {
        [one] => Seen::Listed(*one),
        [] => match listings
            .iter()
            .find_map(|(_, clients)| clients.as_ref().err())
        {
            Some(unproven) => Seen::Unknown(unproven.clone()),
            // The daemon logs a client it cannot see (another PID namespace) as PID 0.
            None if listings
                .iter()
                .any(|(_, clients)| clients.as_ref().is_ok_and(|c| c.contains(&0))) =>
            {
                Seen::Unknown(Unproven {
                    code: AttestCode::PidNamespaceDiffers,
                    detail: message::unseen_client(pid),
                })
            }
            None => Seen::NotListed,
        },
        many => Seen::Unknown(Unproven {
            code: AttestCode::AnswerUnrecognized,
            detail: message::listed_by_several(pid, many),
        }),
    }
}
