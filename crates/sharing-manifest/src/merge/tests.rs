use proptest::prelude::*;
use serde_json::json;

use super::*;
use crate::json::evidence_to_json;

fn rank(rank: i64, world_size: i64) -> Evidence {
    Evidence {
        configured: Some("mps".to_owned()),
        effective: Some("mps".to_owned()),
        validated: true,
        learner_device: Some("cuda:0".to_owned()),
        collector_device: Some("cuda:0".to_owned()),
        learner_gpu_uuid: Some(format!("UUID{rank}")),
        collector_gpu_uuid: Some(format!("UUID{rank}")),
        pipe_directory_env: Some("/run/mps".to_owned()),
        pipe_directory: Some("/run/mps".to_owned()),
        control_pipe: Some("/run/mps/control".to_owned()),
        control_pipe_kind: Some("unix_socket".to_owned()),
        server_pid: Some(500),
        daemon_pid: Some(100),
        ..Evidence::unobserved(rank, world_size)
    }
}

/// `rank(rank, world_size)` recorded on host `name`.
fn on_host(name: &str, rank_: i64, world_size: i64) -> Evidence {
    Evidence {
        host_name: Some(name.to_owned()),
        ..rank(rank_, world_size)
    }
}

fn inputs(evidence: &[Evidence]) -> Vec<(String, Value)> {
    evidence
        .iter()
        .enumerate()
        .map(|(index, evidence)| (format!("rank{index}.json"), evidence_to_json(evidence)))
        .collect()
}

fn codes(report: &MergeReport) -> Vec<&'static str> {
    report
        .findings
        .iter()
        .map(|finding| finding.code.as_str())
        .collect()
}

/// The findings as the CLI prints them, one per line.
fn render(report: &MergeReport) -> String {
    report
        .findings
        .iter()
        .map(ToString::to_string)
        .collect::<Vec<_>>()
        .join("\n")
}

#[test]
fn a_consistent_run_has_no_finding() {
    let report = merge(&inputs(&[rank(0, 3), rank(2, 3), rank(1, 3)]));
    assert!(report.is_consistent(), "{}", render(&report));
    let json = report.to_json();
    assert_eq!(json["world_size"], 3);
    assert_eq!(json["validated"], true);
    let order: Vec<i64> = json["ranks"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["rank"].as_i64().unwrap())
        .collect();
    assert_eq!(order, [0, 1, 2]);
}

#[test]
fn manifests_and_bare_evidence_mix() {
    let manifest = json!({"run_id": "x", "cuda_process_sharing": evidence_to_json(&rank(1, 2))});
    let report = merge(&[
        ("a.json".to_owned(), evidence_to_json(&rank(0, 2))),
        ("b.json".to_owned(), manifest),
    ]);
    assert!(report.is_consistent(), "{}", render(&report));
}

#[test]
fn codes_are_kebab_case_and_unique() {
    let all: Vec<&str> = MergeCode::ALL.iter().map(|code| code.as_str()).collect();
    for code in &all {
        assert!(
            code.bytes().all(|b| b.is_ascii_lowercase() || b == b'-'),
            "{code}"
        );
    }
    let unique: BTreeSet<&&str> = all.iter().collect();
    assert_eq!(unique.len(), all.len());
}

#[test]
fn nothing_to_merge() {
    let report = merge(&[]);
    insta::assert_snapshot!(render(&report), @"no-evidence: no evidence to merge: give one evidence or manifest file per rank");
}

#[test]
fn not_evidence() {
    let report = merge(&[
        ("list.json".to_owned(), json!([1, 2])),
        ("manifest.json".to_owned(), json!({"run_id": "x"})),
        (
            "wrong.json".to_owned(),
            json!({"cuda_process_sharing": "mps"}),
        ),
    ]);
    insta::assert_snapshot!(render(&report));
}

#[test]
fn rank_problems() {
    let report = merge(&inputs(&[rank(0, 4), rank(0, 4), rank(7, 4), rank(-1, 4)]));
    assert_eq!(
        codes(&report),
        [
            "rank-out-of-range",
            "rank-out-of-range",
            "duplicate-rank",
            "missing-rank"
        ]
    );
    insta::assert_snapshot!(render(&report));
}

#[test]
fn world_size_problems() {
    let report = merge(&inputs(&[rank(0, 2), rank(1, 3), rank(0, 0)]));
    insta::assert_snapshot!(render(&report));
}

#[test]
fn missing_ranks_are_ranges_even_in_a_huge_world() {
    let report = merge(&inputs(&[rank(0, i64::MAX), rank(5, i64::MAX)]));
    insta::assert_snapshot!(render(&report), @"missing-rank: world_size is 9223372036854775807 but no evidence was given for ranks 1-4, 6-9223372036854775806 (9223372036854775805 of 9223372036854775807 missing; 2 given)");
    let single = merge(&inputs(&[rank(0, 2)]));
    insta::assert_snapshot!(render(&single), @"missing-rank: world_size is 2 but no evidence was given for rank 1 (1 of 2 missing; 1 given)");
}

#[test]
fn mode_problems() {
    let mut ambient = rank(1, 3);
    ambient.configured = None;
    ambient.effective = None;
    ambient.validated = false;
    let mut other = rank(2, 3);
    other.effective = None; // and still validated: that contradicts itself
    let report = merge(&inputs(&[rank(0, 3), ambient, other]));
    assert_eq!(
        codes(&report),
        [
            "contradictory-evidence",
            "configured-mismatch",
            "effective-mismatch",
            "validated-mismatch"
        ]
    );
    insta::assert_snapshot!(render(&report));
}

#[test]
fn host_problems() {
    let mut restarted = rank(1, 4);
    restarted.daemon_pid = Some(101);
    restarted.server_pid = Some(501);
    let mut fifo = rank(2, 4);
    fifo.control_pipe_kind = Some("fifo".to_owned());
    let mut idle = rank(3, 4);
    idle.server_pid = None; // an idle daemon has no server yet: not a disagreement
    idle.daemon_pid = None; // an old driver writes no pid file: not a disagreement
    let report = merge(&inputs(&[rank(0, 4), restarted, fifo, idle]));
    assert_eq!(
        codes(&report),
        [
            "control-pipe-mismatch",
            "daemon-mismatch",
            "server-mismatch"
        ]
    );
    insta::assert_snapshot!(render(&report));
}

#[test]
fn ranks_of_one_daemon_agree_on_its_identity() {
    let mut scoped = rank(0, 3);
    scoped.daemon_visible_devices = Some("GPU-8932f937".to_owned());
    let mut unknown = rank(1, 3); // could not read the daemon's environment: no disagreement
    unknown.daemon_visible_devices = None;
    let mut same = rank(2, 3);
    same.daemon_visible_devices = Some("GPU-8932f937".to_owned());
    let report = merge(&inputs(&[scoped.clone(), unknown.clone(), same.clone()]));
    assert!(report.is_consistent(), "{}", render(&report));

    let mut other = same.clone();
    other.daemon_visible_devices = Some("GPU-5a88edbe".to_owned());
    let report = merge(&inputs(&[scoped.clone(), unknown.clone(), other]));
    assert_eq!(codes(&report), ["daemon-identity-mismatch"]);
    assert!(
        render(&report).contains("GPU-5a88edbe"),
        "{}",
        render(&report)
    );

    let mut multiuser = same;
    multiuser.daemon_multiuser = Some(true);
    scoped.daemon_multiuser = Some(false);
    let report = merge(&inputs(&[scoped, unknown, multiuser]));
    assert_eq!(codes(&report), ["daemon-identity-mismatch"]);
}

#[test]
fn separate_pipe_directories_are_separate_daemons() {
    let mut other = rank(1, 2);
    other.pipe_directory = Some("/run/mps-gpu1".to_owned());
    other.control_pipe = Some("/run/mps-gpu1/control".to_owned());
    other.daemon_pid = Some(200);
    other.server_pid = Some(600);
    let report = merge(&inputs(&[rank(0, 2), other]));
    assert!(report.is_consistent(), "{}", render(&report));
}

#[test]
fn ranks_on_different_hosts_may_see_different_daemons() {
    let mut b0 = on_host("node-b", 2, 4);
    b0.daemon_pid = Some(200);
    b0.server_pid = Some(600);
    let b1 = Evidence {
        rank: 3,
        ..b0.clone()
    };
    let report = merge(&inputs(&[
        on_host("node-a", 0, 4),
        on_host("node-a", 1, 4),
        b0,
        b1,
    ]));
    assert!(report.is_consistent(), "{}", render(&report));
}

#[test]
fn one_host_is_still_checked_among_others() {
    let mut restarted = on_host("node-b", 2, 3);
    restarted.daemon_pid = Some(101);
    let report = merge(&inputs(&[
        on_host("node-a", 0, 3),
        on_host("node-b", 1, 3),
        restarted,
    ]));
    insta::assert_snapshot!(render(&report), @"daemon-mismatch: ranks on host 'node-b' using pipe directory '/run/mps' saw different control daemons (the daemon restarted between probes, or these ranks ran on different hosts with the same pipe directory): daemon_pid 100 in 'rank1.json'; daemon_pid 101 in 'rank2.json'");
    assert_eq!(report.findings[0].sources, ["rank1.json", "rank2.json"]);
}

#[test]
fn evidence_without_a_host_name_is_a_host_of_its_own() {
    let mut unnamed = rank(1, 2);
    unnamed.daemon_pid = Some(200);
    let report = merge(&inputs(&[on_host("node-a", 0, 2), unnamed.clone()]));
    assert!(report.is_consistent(), "{}", render(&report));
    let both_unnamed = merge(&inputs(&[rank(0, 2), unnamed]));
    assert_eq!(codes(&both_unnamed), ["daemon-mismatch"]);
}

#[test]
fn long_lists_are_shortened() {
    let many: Vec<Evidence> = (0..12).map(|_| rank(0, 1)).collect();
    let report = merge(&inputs(&many));
    insta::assert_snapshot!(render(&report), @"duplicate-rank: rank 0 appears 12 times, in 'rank0.json', 'rank1.json', 'rank2.json', 'rank3.json', 'rank4.json', 'rank5.json', 'rank6.json', 'rank7.json' and 4 more; each rank records its evidence exactly once");
    assert_eq!(report.findings[0].sources.len(), 12);
}

proptest! {
    /// A complete run in any order is consistent; dropping one rank yields exactly
    /// `missing-rank`, repeating one yields exactly `duplicate-rank`.
    #[test]
    fn complete_runs_and_single_faults(
        (world_size, order) in (1_i64..12).prop_flat_map(|w| (Just(w), Just((0..w).collect::<Vec<i64>>()).prop_shuffle())),
        pick in any::<prop::sample::Index>(),
    ) {
        let run: Vec<Evidence> = order.iter().map(|r| rank(*r, world_size)).collect();
        let len = run.len();
        prop_assert!(merge(&inputs(&run)).is_consistent());

        let index = pick.index(len);
        let mut repeated = run.clone();
        repeated.push(run[index].clone());
        prop_assert_eq!(codes(&merge(&inputs(&repeated))), vec!["duplicate-rank"]);

        if len > 1 {
            let mut dropped = run.clone();
            dropped.remove(index);
            prop_assert_eq!(codes(&merge(&inputs(&dropped))), vec!["missing-rank"]);
        }
    }

    /// Merging never panics and reports findings in code order, whatever the JSON.
    #[test]
    fn arbitrary_ranks_never_panic(ranks in prop::collection::vec((any::<i64>(), any::<i64>()), 0..6)) {
        let evidence: Vec<Evidence> = ranks.iter().map(|(r, w)| rank(*r, *w)).collect();
        let report = merge(&inputs(&evidence));
        let order: Vec<MergeCode> = report.findings.iter().map(|finding| finding.code).collect();
        let mut sorted = order.clone();
        sorted.sort();
        prop_assert_eq!(order, sorted);
        prop_assert_eq!(report.is_consistent(), report.findings.is_empty());
    }
}

/// The run-level values of `to_json` are the ranks' common value, and `null` as soon as one
/// rank disagrees (not the first rank's value).
#[test]
fn disagreeing_ranks_leave_the_run_values_null() {
    let mut other = rank(1, 3);
    other.configured = Some("time_slicing".to_owned());
    other.effective = None;
    other.validated = false;
    let json = merge(&inputs(&[rank(0, 2), other])).to_json();
    assert_eq!(json["consistent"], false);
    for key in ["world_size", "configured", "effective", "validated"] {
        assert_eq!(json[key], Value::Null, "{key}");
    }
    let json = merge(&inputs(&[rank(0, 2), rank(1, 2)])).to_json();
    assert_eq!(json["consistent"], true);
    assert_eq!(json["world_size"], 2);
    assert_eq!(json["configured"], "mps");
    assert_eq!(json["effective"], "mps");
    assert_eq!(json["validated"], true);
}

#[test]
fn evidence_that_contradicts_itself_is_named_by_file() {
    let mut two_gpus = rank(0, 4);
    two_gpus.collector_gpu_uuid = Some("OTHER".to_owned());
    let mut null_mode = rank(1, 4);
    null_mode.configured = None;
    null_mode.effective = None;
    let mut no_uuid = rank(2, 4);
    no_uuid.learner_gpu_uuid = None;
    let mut honest_ambient = rank(3, 4);
    honest_ambient.configured = None;
    honest_ambient.effective = None;
    honest_ambient.validated = false;
    honest_ambient.collector_gpu_uuid = Some("OTHER".to_owned());
    let report = merge(&inputs(&[two_gpus, null_mode, no_uuid, honest_ambient]));
    let contradictions: Vec<String> = report
        .findings
        .iter()
        .filter(|finding| finding.code == MergeCode::ContradictoryEvidence)
        .map(ToString::to_string)
        .collect();
    insta::assert_snapshot!(contradictions.join("\n"), @r#"
    contradictory-evidence: 'rank0.json' contradicts itself: validated is true but the learner's GPU "UUID0" and the collector's GPU "OTHER" differ; the validator never writes that, so this evidence cannot be trusted
    contradictory-evidence: 'rank1.json' contradicts itself: validated is true but configured is null, not "mps"; the validator never writes that, so this evidence cannot be trusted
    contradictory-evidence: 'rank2.json' contradicts itself: validated is true but a GPU UUID is missing; the validator never writes that, so this evidence cannot be trusted
    "#);
}

#[test]
fn spellings_of_one_pipe_directory_are_one_daemon() {
    let mut ranks = Vec::new();
    for (index, spelling) in ["/run/mps", "/run/mps/", "//run/mps", "/run/./mps/."]
        .iter()
        .enumerate()
    {
        let mut evidence = rank(i64::try_from(index).unwrap(), 4);
        evidence.pipe_directory = Some((*spelling).to_owned());
        evidence.pipe_directory_env = Some((*spelling).to_owned());
        let sep = if spelling.ends_with('/') { "" } else { "/" };
        evidence.control_pipe = Some(format!("{spelling}{sep}control"));
        ranks.push(evidence);
    }
    assert!(
        merge(&inputs(&ranks)).is_consistent(),
        "{}",
        render(&merge(&inputs(&ranks)))
    );
    ranks[3].server_pid = Some(501);
    let report = merge(&inputs(&ranks));
    assert_eq!(codes(&report), ["server-mismatch"]);
    insta::assert_snapshot!(render(&report), @"server-mismatch: ranks using pipe directory '/run/mps' = '/run/mps/' = '//run/mps' = '/run/./mps/.' saw different MPS servers (one daemon runs one server per user: the server restarted, or the ranks ran as different users or on different hosts): server_pid 500 in 'rank0.json', 'rank1.json', 'rank2.json'; server_pid 501 in 'rank3.json'");
    // A symbolic link is not resolved: another spelling that is not lexically the same stays apart.
    ranks[3].pipe_directory = Some("/run/mps-link".to_owned());
    ranks[3].control_pipe = Some("/run/mps-link/control".to_owned());
    assert!(merge(&inputs(&ranks)).is_consistent());
}

#[test]
fn hostile_file_names_stay_on_one_line() {
    let evidence = evidence_to_json(&rank(5, 1));
    let report = merge(&[("a\nerror: forged\u{1b}[2J'.json".to_owned(), evidence)]);
    let text = render(&report);
    assert_eq!(text.lines().count(), report.findings.len(), "{text}");
    insta::assert_snapshot!(text, @r#"
    rank-out-of-range: "a\nerror: forged\x1b[2J'.json" records rank 5, outside 0..1 (its world_size is 1)
    missing-rank: world_size is 1 but no evidence was given for rank 0 (1 of 1 missing; 1 given)
    "#);
}

/// `mps-preflight merge` prints the summary serialised straight to text: the same
/// text as the `to_json` value pretty-printed, for consistent and inconsistent runs.
#[test]
fn the_summary_as_text_is_the_json_value_as_text() {
    for report in [
        merge(&inputs(&[rank(0, 3), rank(2, 3), rank(1, 3)])),
        merge(&inputs(&[rank(0, 2), rank(0, 2)])),
        merge(&inputs(&[rank(1, 3)])),
    ] {
        let direct = serde_json::to_string_pretty(&report.summary()).unwrap();
        assert_eq!(direct, format!("{:#}", report.to_json()));
    }
}
