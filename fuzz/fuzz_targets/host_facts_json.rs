//! Snapshot JSON → `HostFacts` (`serde_json`) → `validate` and `explain` for a few fixed
//! requests: explicit `mps` on one and two devices, a null request, a `cpu` learner, an odd
//! mode spelling, an unsupported backend, and rank/world-size edge values.
//! Invariant: `explain` is empty exactly when `validate` is `Ok`, and its first finding is the
//! rejection; a passing explicit request is validated.
#![no_main]

use std::sync::OnceLock;

use libfuzzer_sys::fuzz_target;
use mps_preflight_fuzz::validate_and_explain_agree;
use sharing_policy::{HostFacts, Request};

fn requests() -> &'static [Request] {
    static REQUESTS: OnceLock<Vec<Request>> = OnceLock::new();
    REQUESTS.get_or_init(|| {
        let mut requests = vec![
            Request::new(Some("mps"), "cuda:0", Some("cuda:0"), "mjwarp"),
            Request::new(Some(" MPS "), "cuda:1", Some("cuda:0"), "mjwarp"),
            Request::new(Some("mps"), "cuda", None, "mjwarp"),
            Request::new(Some("mps"), "cpu", Some("cuda:0"), "genesis"),
            Request::new(Some("auto"), "cuda:0", Some("cuda:0"), "mjwarp"),
            Request::new(None, "cuda:0", Some("cuda:1"), "mjwarp"),
            Request::new(None, "cpu", None, "mjwarp"),
        ];
        let mut ranked = Request::new(Some("mps"), "cuda:0", Some("cuda:0"), "mjwarp");
        ranked.rank = 3;
        ranked.world_size = 2;
        requests.push(ranked);
        let mut extreme = Request::new(Some("mps"), "cuda:4294967296", Some("cuda:-1"), "");
        extreme.rank = i64::MIN;
        extreme.world_size = i64::MAX;
        extreme.supported_backends = Vec::new();
        requests.push(extreme);
        requests
    })
}

fuzz_target!(|data: &[u8]| {
    let Ok(facts) = serde_json::from_slice::<HostFacts>(data) else {
        return;
    };
    for request in requests() {
        validate_and_explain_agree(request, &facts);
    }
});
