//! Team Kestrel's launcher policy, as a downstream tool writes it against `sharing-policy`: the
//! request its launcher makes, and reading a captured host snapshot.

use std::path::Path;

use sharing_policy::{HostFacts, Request};

/// What Kestrel's launcher asks for on every rank: learner and collector on `cuda:0`, sharing
/// one GPU through MPS, with the `mjwarp` backend.
pub fn launcher_request(rank: i64, world_size: i64) -> Request {
    let mut request = Request::new(Some("mps"), "cuda:0", Some("cuda:0"), "mjwarp");
    request.rank = rank;
    request.world_size = world_size;
    request
}

/// A snapshot written by `mps-preflight capture` (or shipped in `fixtures/hosts/`).
///
/// # Errors
/// The file cannot be read, or is not a host-facts snapshot.
pub fn load_host(path: &Path) -> Result<HostFacts, String> {
    let text = std::fs::read_to_string(path).map_err(|err| format!("{}: {err}", path.display()))?;
    serde_json::from_str(&text).map_err(|err| format!("{}: not a snapshot: {err}", path.display()))
}
