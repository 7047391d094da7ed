//! Every recorded host in `fixtures/hosts/` × a few requests → one JSON snapshot per host.

use serde_json::json;
use sharing_policy::HostFacts;

use crate::support::{ambient, findings, mps, outcome};

#[test]
fn every_recorded_host() {
    insta::glob!("../../../../fixtures", "hosts/*.json", |path| {
        let facts: HostFacts =
            serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
        let same = mps("cuda:0", Some("cuda:0"));
        let split = mps("cuda:0", Some("cuda:1"));
        let strict = sharing_policy::Request {
            require_verified: true,
            ..same.clone()
        };
        let snapshot = json!({
            "mps learner=cuda:0 collector=cuda:0": outcome(&same, &facts),
            "explain learner=cuda:0 collector=cuda:0": findings(&same, &facts),
            "mps learner=cuda:0 collector=cuda:1": outcome(&split, &facts),
            "mps --require-verified learner=cuda:0 collector=cuda:0": outcome(&strict, &facts),
            "warnings learner=cuda:0 collector=cuda:0": sharing_policy::warnings(&same, &facts)
                .into_iter()
                .map(|f| json!({ "code": f.code, "message": f.message, "fix": f.fix }))
                .collect::<serde_json::Value>(),
            "null learner=cuda:0 collector=cuda:0": outcome(&ambient("cuda:0", Some("cuda:0")), &facts),
        });
        insta::assert_json_snapshot!(snapshot);
    });
}
