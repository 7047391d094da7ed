//! Manifest merge: the input as a stream of JSON values (whitespace-separated, as
//! `serde_json::Deserializer::into_iter` reads them; at most 16), each one rank's input
//! (a manifest holding `cuda_process_sharing`, bare evidence, or anything else), then
//! `merge` and the report's JSON. Each value also goes through `evidence_from_json`, and
//! evidence read back must survive `evidence_to_json` → `evidence_from_json` unchanged.
//! Invariant: the report is consistent exactly when it has no finding, and names each rank
//! that held evidence once.
#![no_main]

use libfuzzer_sys::fuzz_target;
use serde_json::Value;
use sharing_manifest::{evidence_from_json, evidence_to_json, merge};

const MAX_RANKS: usize = 16;

fuzz_target!(|data: &[u8]| {
    let inputs: Vec<(String, Value)> = serde_json::Deserializer::from_slice(data)
        .into_iter::<Value>()
        .map_while(Result::ok)
        .take(MAX_RANKS)
        .enumerate()
        .map(|(rank, value)| (format!("rank{rank}/manifest.json"), value))
        .collect();
    if inputs.is_empty() {
        return;
    }
    let mut holding_evidence = 0;
    for (_, value) in &inputs {
        if let Ok(evidence) = evidence_from_json(value) {
            holding_evidence += 1;
            let again = evidence_from_json(&evidence_to_json(&evidence));
            assert_eq!(
                again.as_ref(),
                Ok(&evidence),
                "evidence JSON does not round-trip"
            );
        }
    }
    let report = merge(&inputs);
    assert_eq!(report.ranks.len(), holding_evidence);
    assert_eq!(report.is_consistent(), report.findings.is_empty());
    let json = report.to_json();
    assert!(json.is_object());
});
