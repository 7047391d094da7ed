//! `cargo bench -p sharing-policy`: [`sharing_policy::validate`] on every recorded host of
//! `fixtures/hosts/`, for an explicit `mps` request (`cuda:0`/`cuda:0`) and a null one.
//!
//! The fixtures are read and parsed once, before any timing; each sample times `validate` alone
//! (one item = one validation, so divan prints validations per second). BENCHMARKS.md at the
//! repository root has the figures and the target (well over a million validations per second
//! on one core).

// A benchmark is not shipped code: a missing or unparsable fixture should fail loudly, and
// loading fixtures from disk is its job (the crate's I/O bans are for the library).
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing,
    clippy::disallowed_methods
)]

use std::hint::black_box;
use std::path::Path;
use std::sync::LazyLock;

use divan::Bencher;
use divan::counter::ItemsCount;
use sharing_policy::{HostFacts, Request, explain, validate};

fn main() {
    divan::main();
}

/// Every `fixtures/hosts/*.json`, by file stem, sorted: loaded once for the whole run.
static FIXTURES: LazyLock<Vec<(String, HostFacts)>> = LazyLock::new(|| {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fixtures/hosts");
    let mut fixtures: Vec<(String, HostFacts)> = std::fs::read_dir(&dir)
        .unwrap_or_else(|err| panic!("cannot list {}: {err}", dir.display()))
        .map(|entry| entry.expect("a directory entry").path())
        .filter(|path| path.extension().is_some_and(|ext| ext == "json"))
        .map(|path| {
            let text = std::fs::read_to_string(&path)
                .unwrap_or_else(|err| panic!("cannot read {}: {err}", path.display()));
            let facts = serde_json::from_str(&text)
                .unwrap_or_else(|err| panic!("{} is not host facts: {err}", path.display()));
            let name = path.file_stem().expect("a file name").to_string_lossy();
            (name.into_owned(), facts)
        })
        .collect();
    assert!(!fixtures.is_empty(), "no fixtures in {}", dir.display());
    fixtures.sort_by(|a, b| a.0.cmp(&b.0));
    fixtures
});

/// The fixture names, as divan's benchmark arguments.
fn fixture_names() -> Vec<&'static str> {
    FIXTURES.iter().map(|(name, _)| name.as_str()).collect()
}

fn facts(name: &str) -> &'static HostFacts {
    FIXTURES
        .iter()
        .find(|(fixture, _)| fixture == name)
        .map(|(_, facts)| facts)
        .expect("a fixture of that name")
}

/// `--request mps --learner-device cuda:0 --collector-device cuda:0 --backend mjwarp`.
fn mps_request() -> Request {
    Request::new(Some("mps"), "cuda:0", Some("cuda:0"), "mjwarp")
}

/// The same devices with no sharing requested (ambient evidence only).
fn null_request() -> Request {
    Request::new(None, "cuda:0", Some("cuda:0"), "mjwarp")
}

fn bench_validate(bencher: Bencher, request: &Request, name: &str) {
    let facts = facts(name);
    bencher
        .counter(ItemsCount::new(1_usize))
        .bench(|| validate(black_box(request), black_box(facts)));
}

/// `validate` of an explicit `mps` request: evidence on healthy hosts, the first rejection on
/// the others.
#[divan::bench(args = fixture_names())]
fn validate_mps(bencher: Bencher, name: &str) {
    bench_validate(bencher, &mps_request(), name);
}

/// `validate` of a null request: best-effort ambient evidence, never a rejection.
#[divan::bench(args = fixture_names())]
fn validate_null(bencher: Bencher, name: &str) {
    bench_validate(bencher, &null_request(), name);
}

/// `explain` of an explicit `mps` request (every finding, as `doctor` shows them).
#[divan::bench(args = fixture_names())]
fn explain_mps(bencher: Bencher, name: &str) {
    let facts = facts(name);
    let request = mps_request();
    bencher
        .counter(ItemsCount::new(1_usize))
        .bench(|| explain(black_box(&request), black_box(facts)));
}

/// Every fixture in turn, both requests: the mixed workload, one item per validation.
#[divan::bench]
fn validate_all_fixtures(bencher: Bencher) {
    let requests = [mps_request(), null_request()];
    let fixtures = &*FIXTURES;
    bencher
        .counter(ItemsCount::new(requests.len() * fixtures.len()))
        .bench(|| {
            for (_, facts) in fixtures {
                for request in &requests {
                    _ = black_box(validate(black_box(request), black_box(facts)));
                }
            }
        });
}
