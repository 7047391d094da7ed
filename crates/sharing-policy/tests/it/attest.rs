//! `attest`: one snapshot per code, the strict client-list parser, and the rule
//! that attested implies both PIDs were listed under one server of their UID.

use std::collections::BTreeMap;

use proptest::prelude::*;
use sharing_policy::{
    ATTEST_SCHEMA, AttestCode, AttestFacts, CapturedText, ClientFacts, DAEMON_PROBE, LikelyCause,
    OsText, Pid, PipeDirectorySource, ProcessFacts, QueryOutcome, QueryRecord, ServerFacts, attest,
    client_query, parse_client_list, probe_stdin,
};

pub(crate) const DIR: &str = "/tmp/nvidia-mps";
pub(crate) const LEARNER: i64 = 4267;
pub(crate) const COLLECTOR: i64 = 4281;

fn record(stdin: String, outcome: QueryOutcome) -> QueryRecord {
    QueryRecord {
        program: "nvidia-cuda-mps-control".to_owned(),
        args: vec![],
        stdin,
        env: BTreeMap::from([("CUDA_MPS_PIPE_DIRECTORY".to_owned(), OsText::from(DIR))]),
        env_removed: vec!["CUDA_MPS_PROTOCOL_VERSION".to_owned()],
        timeout_ms: 5000,
        elapsed_ms: 2,
        outcome,
        earlier_attempts: vec![],
    }
}

fn uid_line(uid: u32) -> String {
    format!("{uid}\t{uid}\t{uid}\t{uid}")
}

pub(crate) fn client(pid: i64, uid: u32, dir: Option<&str>) -> ClientFacts {
    let mut environ = BTreeMap::new();
    if let Some(dir) = dir {
        environ.insert("CUDA_MPS_PIPE_DIRECTORY".to_owned(), OsText::from(dir));
    }
    ClientFacts {
        exists: Some(true),
        state: Some("S (sleeping)".to_owned()),
        status_uid: Some(uid_line(uid)),
        environ: Some(environ),
        ..ClientFacts::new(pid)
    }
}

pub(crate) fn server(pid: i64, uid: u32, clients: &str) -> ServerFacts {
    let stdin = probe_stdin(&client_query(Pid::new(pid).unwrap()));
    ServerFacts {
        pid,
        client_query: record(
            stdin,
            QueryOutcome::exited(0, &format!("100.0\n{clients}"), ""),
        ),
        process: ProcessFacts {
            status_uid: Some(uid_line(uid)),
            ..ProcessFacts::new(pid)
        },
        settings_query: None,
    }
}

/// A host where both processes (UID 1000) are clients of server 4428 (UID 1000).
pub(crate) fn healthy() -> AttestFacts {
    with_servers(vec![server(4428, 1000, "4267\n4281\n")])
}

pub(crate) fn with_servers(servers: Vec<ServerFacts>) -> AttestFacts {
    let list = servers
        .iter()
        .fold(String::new(), |all, s| all + &s.pid.to_string() + "\n");
    AttestFacts {
        schema: ATTEST_SCHEMA.to_owned(),
        os: "linux".to_owned(),
        pipe_directory: OsText::from(DIR),
        pipe_directory_source: PipeDirectorySource::Environment,
        caller: None,
        learner: client(LEARNER, 1000, Some(DIR)),
        collector: client(COLLECTOR, 1000, Some(DIR)),
        server_query: Some(record(
            probe_stdin(&DAEMON_PROBE),
            QueryOutcome::exited(0, &format!("100.0\n{list}"), ""),
        )),
        servers,
        wait_ms: 0,
        rounds: 1,
        elapsed_ms: 3,
        host_name: None,
        pid_file: None,
        daemon_process: None,
        observer_pid_namespace: None,
    }
}

/// One scenario per code (and per likely cause), each named: one list, read top to bottom.
#[allow(clippy::too_many_lines)]
fn scenarios() -> Vec<(&'static str, AttestFacts)> {
    let mut out = vec![("attested", healthy())];
    let mut gone = healthy();
    gone.collector.exists = Some(false);
    gone.collector.state = None;
    out.push(("not-running", gone));
    let mut zombie = healthy();
    zombie.learner.state = Some("Z (zombie)".to_owned());
    out.push(("not-running zombie", zombie));
    let mut hidden = healthy();
    hidden.learner = ClientFacts::new(LEARNER);
    hidden.learner.errors.insert(
        "entry".to_owned(),
        "Permission denied (os error 13)".to_owned(),
    );
    out.push(("process-unobservable", hidden));
    out.push((
        "client-of-another-server",
        with_servers(vec![
            server(4428, 1000, "4267\n"),
            server(4511, 1000, "4281\n"),
        ]),
    ));
    out.push(("not-a-client no server", with_servers(vec![])));
    let mut other_dir = with_servers(vec![server(4428, 1000, "4281\n")]);
    other_dir.learner = client(LEARNER, 1000, Some("/run/other-mps"));
    out.push(("not-a-client other pipe directory", other_dir));
    let mut other_uid = with_servers(vec![server(4428, 0, "")]);
    other_uid.collector = client(COLLECTOR, 0, Some(DIR));
    out.push(("not-a-client uid differs", other_uid));
    let mut no_cause = with_servers(vec![server(4428, 1000, "4281\n")]);
    no_cause.learner.environ = None;
    no_cause.learner.errors.insert(
        "environ".to_owned(),
        "Permission denied (os error 13)".to_owned(),
    );
    out.push(("not-a-client no cause", no_cause));
    out.push((
        "server-of-another-user",
        with_servers(vec![server(4428, 0, "4267 4281")]),
    ));
    let mut unknown_uid = healthy();
    unknown_uid.servers[0].process.status_uid = None;
    out.push(("uid-unproven", unknown_uid));
    // The fix follows the facts. A server that vanished is not a permission
    // problem, and a root caller is never told to run as root.
    let mut server_gone = healthy();
    server_gone.servers[0].process.status_uid = None;
    server_gone.servers[0].process.errors.insert(
        "status".to_owned(),
        "No such file or directory (os error 2)".to_owned(),
    );
    out.push(("uid-unproven server gone", server_gone));
    let mut as_root = healthy();
    as_root.caller = Some(sharing_policy::CallerFacts {
        uid: 0,
        euid: 0,
        cap_eff: None,
    });
    as_root.servers[0].process.status_uid = None;
    as_root.servers[0].process.errors.insert(
        "status".to_owned(),
        "Permission denied (os error 13)".to_owned(),
    );
    out.push(("uid-unproven as root", as_root));
    let mut unset = with_servers(vec![]);
    unset.pipe_directory = OsText::from(sharing_policy::DEFAULT_PIPE_DIRECTORY);
    unset.learner = client(LEARNER, 1000, None);
    unset.collector = client(COLLECTOR, 1000, None);
    out.push(("not-a-client no server, variable unset", unset));
    let mut no_daemon = healthy();
    no_daemon.server_query = Some(record(
        probe_stdin(&DAEMON_PROBE),
        QueryOutcome::exited(1, "", "Cannot find MPS control daemon process\n"),
    ));
    no_daemon.servers.clear();
    out.push(("daemon-did-not-answer", no_daemon));
    let mut hung = healthy();
    hung.servers[0].client_query.outcome = QueryOutcome::TimedOut {
        stdout: CapturedText::default(),
        stderr: CapturedText::default(),
    };
    out.push(("daemon-did-not-answer timeout", hung));
    out.push((
        "pid-namespace-differs client pid 0",
        with_servers(vec![server(4428, 1000, "0\n4281\n")]),
    ));
    // The attester in a pod, the daemon on the host (hostPID), the job in the pod.
    let mut pod = healthy();
    let (pid_file, mut search) = crate::attest_deployed::daemon(&["-d"]);
    search.processes[0].pid_namespace = Some("pid:[4026531836]".to_owned());
    (pod.pid_file, pod.daemon_process) = (Some(pid_file), Some(search));
    pod.observer_pid_namespace = Some("pid:[4026532999]".to_owned());
    for (client, own) in [(&mut pod.learner, "6"), (&mut pod.collector, "7")] {
        client.pid_namespace = Some("pid:[4026532999]".to_owned());
        client.nspid = Some(own.to_owned());
    }
    out.push(("pid-namespace-differs attester in a pod", pod));
    let mut not_a_server = healthy();
    not_a_server.servers[0].process.comm = Some("bash".to_owned());
    out.push((
        "uid-unproven listed server is not an MPS server",
        not_a_server,
    ));
    out.push((
        "answer-unrecognized",
        with_servers(vec![server(4428, 1000, "PID 4267 ctx 0\nPID 4281 ctx 1\n")]),
    ));
    out
}

#[test]
fn every_code_is_snapshotted() {
    let mut seen = Vec::new();
    for (name, facts) in scenarios() {
        let attestation = attest(&facts);
        seen.push(attestation.learner.code);
        seen.push(attestation.collector.code);
        let text = format!(
            "{}\n--- errors\n{}\n",
            serde_json::to_string_pretty(&attestation).unwrap(),
            attestation.error_lines().join("\n")
        );
        insta::assert_snapshot!(format!("attest {name}"), text);
    }
    for code in AttestCode::ALL {
        assert!(seen.contains(&code), "no scenario for {code:?}");
    }
}

/// Another front end's words for the wait option change the messages' words
/// and nothing else, and `errors` is `error_lines` as data (each line is `code: message`).
#[test]
fn another_front_end_s_words_change_only_the_words() {
    let python = sharing_policy::AttestWords {
        wait: "wait=",
        wait_30s: "wait=30",
    };
    for (name, facts) in scenarios() {
        let cli = attest(&facts);
        let worded = sharing_policy::attest_worded(&facts, python);
        let lines: Vec<String> = cli
            .errors()
            .iter()
            .map(|(c, m)| format!("{c}: {m}"))
            .collect();
        assert_eq!(lines, cli.error_lines(), "{name}");
        let back = serde_json::to_string(&worded)
            .unwrap()
            .replace("`wait=30`", "`--wait-ms 30000`")
            .replace("`wait=`", "`--wait-ms`");
        assert_eq!(back, serde_json::to_string(&cli).unwrap(), "{name}");
        let texts = worded.error_lines().join("\n");
        assert!(!texts.contains("--wait-ms"), "{name}: {texts}");
    }
}

#[test]
fn likely_causes_and_polling() {
    let causes: Vec<Option<LikelyCause>> = scenarios()
        .iter()
        .map(|(_, facts)| attest(facts).learner.likely_cause)
        .collect();
    for cause in [
        LikelyCause::NoServerRunning,
        LikelyCause::OtherPipeDirectory,
        LikelyCause::UidDiffersFromServer,
    ] {
        assert!(
            causes.contains(&Some(cause))
                || scenarios()
                    .iter()
                    .any(|(_, f)| attest(f).collector.likely_cause == Some(cause)),
            "{cause:?}"
        );
    }
    assert!(attest(&with_servers(vec![])).worth_waiting());
    assert!(!attest(&healthy()).worth_waiting());
    for (name, facts) in scenarios() {
        let attestation = attest(&facts);
        let only_not_a_client = attestation
            .problems()
            .all(|(_, p)| p.code == AttestCode::NotAClient);
        assert_eq!(
            attestation.worth_waiting(),
            !attestation.attested && only_not_a_client,
            "{name}"
        );
    }
}

#[test]
fn client_lists_are_parsed_strictly() {
    let server = Pid::new(4428).unwrap();
    for (text, expected) in [
        ("", Some(vec![])),
        ("\n", Some(vec![])),
        ("4267\n", Some(vec![4267])),
        ("4267\n4281\n", Some(vec![4267, 4281])),
        ("4267 4281", Some(vec![4267, 4281])),
        ("4267\t4281\n", Some(vec![4267, 4281])),
        ("Server 4428 not found\n", Some(vec![])),
        ("Server 4428 not found", Some(vec![])),
        ("Server 4429 not found\n", None),
        ("0\n", Some(vec![0])),
        ("-4267\n", None),
        ("+4267\n", None),
        ("4267,4281\n", None),
        ("PID 4267\n", None),
        ("Unknown command \"get_client_list\"\n", None),
        ("99999999999\n", None),
    ] {
        assert_eq!(parse_client_list(text, server).ok(), expected, "{text:?}");
    }
}

#[test]
fn a_client_query_for_another_server_or_directory_is_unproven() {
    let mut facts = healthy();
    facts.servers[0].client_query.stdin = "get_client_list 1\n".to_owned();
    assert_eq!(attest(&facts).learner.code, AttestCode::AnswerUnrecognized);
    let mut facts = healthy();
    facts.servers[0].client_query.env.clear();
    assert_eq!(attest(&facts).learner.code, AttestCode::AnswerUnrecognized);
    let mut facts = healthy();
    facts.servers[0].client_query.args = vec!["get_client_list".to_owned()];
    assert_eq!(attest(&facts).learner.code, AttestCode::AnswerUnrecognized);
    let mut facts = healthy();
    facts.servers.clear();
    assert_eq!(attest(&facts).learner.code, AttestCode::DaemonDidNotAnswer);
}

/// A client answer whose first line is a PID (the percentage command was lost)
/// is unrecognized, never "one client fewer"; a server answer of PID lines is never idle.
#[test]
fn a_pid_first_line_is_unrecognized() {
    let mut facts = healthy();
    facts.servers[0].client_query.outcome = QueryOutcome::exited(0, "4267\n4281\n", "");
    let attestation = attest(&facts);
    assert!(!attestation.attested);
    assert_eq!(attestation.learner.code, AttestCode::AnswerUnrecognized);
    let mut facts = healthy();
    facts.server_query = Some(record(
        probe_stdin(&DAEMON_PROBE),
        QueryOutcome::exited(0, "4428\n", ""),
    ));
    let attestation = attest(&facts);
    assert!(!attestation.attested);
    assert_eq!(attestation.learner.code, AttestCode::AnswerUnrecognized);
}

/// One process in both roles is never attested, even when listed.
#[test]
fn one_pid_in_both_roles_is_never_attested() {
    let mut facts = healthy();
    facts.collector = client(LEARNER, 1000, Some(DIR));
    let attestation = attest(&facts);
    assert!(!attestation.attested);
    assert_eq!(attestation.server_pid, None);
    let lines = attestation.error_lines();
    assert!(
        lines[0].contains("the same process (PID 4267)"),
        "{lines:?}"
    );
    assert!(sharing_policy::distinct_pids(LEARNER, LEARNER).is_err());
    assert!(sharing_policy::distinct_pids(LEARNER, COLLECTOR).is_ok());
}

/// The daemons a snapshot may hold: none, single-user, multi-user (two spellings), unreadable
/// options.
const DAEMONS: [Option<&[&str]>; 5] = [
    None,
    Some(&["-d"]),
    Some(&["-d", "-M"]),
    Some(&["-dM"]),
    Some(&["-d", "-x"]),
];

/// Whether the snapshot's daemon command line is a multi-user one (known independently of the
/// parser: the generator's two multi-user spellings).
fn proven_multiuser(facts: &AttestFacts) -> bool {
    facts.daemon_process.as_ref().is_some_and(|search| {
        search.processes.iter().any(|p| {
            let line: Option<Vec<String>> = p
                .cmdline
                .as_ref()
                .map(|c| c.iter().skip(1).map(OsText::to_string_lossy).collect());
            matches!(line.as_deref(), Some([a, b]) if a == "-d" && b == "-M")
                || matches!(line.as_deref(), Some([a]) if a == "-dM")
        })
    })
}

fn arb_facts() -> impl Strategy<Value = AttestFacts> {
    let pid = prop_oneof![Just(LEARNER), Just(COLLECTOR), 1_i64..6];
    let clients = prop::collection::vec(pid, 0..4);
    let answer = prop_oneof![
        4 => clients.prop_map(|pids| pids.iter().fold(String::new(), |all, p| all + &p.to_string() + "\n")),
        1 => Just("garbage\n".to_owned()),
    ];
    let comm = prop::sample::select(vec![None, Some("nvidia-cuda-mps"), Some("bash")]);
    let one_server = (1_i64..4, 0_u32..2, answer, comm);
    (
        prop::collection::vec(one_server, 0..4),
        0_u32..2,
        0_u32..2,
        any::<bool>(),
        any::<bool>(),
        prop::sample::select(DAEMONS.to_vec()),
        0_u8..5,
    )
        .prop_map(
            |(servers, learner_uid, collector_uid, learner_alive, dir_ok, daemon, layout)| {
                let mut unique: Vec<ServerFacts> = Vec::new();
                for (pid, uid, clients, comm) in servers {
                    if unique.iter().all(|s| s.pid != 4000 + pid) {
                        let mut one = server(4000 + pid, uid, &clients);
                        one.process.comm = comm.map(str::to_owned);
                        unique.push(one);
                    }
                }
                let mut facts = with_servers(unique);
                facts.learner = client(LEARNER, learner_uid, Some(if dir_ok { DIR } else { "/x" }));
                facts.collector = client(COLLECTOR, collector_uid, None);
                if !learner_alive {
                    facts.learner.state = Some("Z (zombie)".to_owned());
                }
                if let Some(args) = daemon {
                    let (pid_file, search) = crate::attest_deployed::daemon(args);
                    facts.pid_file = Some(pid_file);
                    facts.daemon_process = Some(search);
                }
                set_layout(&mut facts, layout);
                facts
            },
        )
}

const HOST_NS: &str = "pid:[4026531836]";
const POD_NS: &str = "pid:[4026532999]";

/// The PID namespaces of the attester, the daemon and both clients (see [`translated`]).
fn set_layout(facts: &mut AttestFacts, layout: u8) {
    let (observer, daemon, clients) = match layout {
        1 => (HOST_NS, HOST_NS, HOST_NS),
        2 => (HOST_NS, HOST_NS, POD_NS),
        3 => (HOST_NS, POD_NS, POD_NS),
        4 => (POD_NS, HOST_NS, POD_NS),
        _ => return,
    };
    facts.observer_pid_namespace = Some(observer.to_owned());
    if let Some(search) = &mut facts.daemon_process {
        search.processes[0].pid_namespace = Some(daemon.to_owned());
    }
    for (client, inner) in [(&mut facts.learner, 1), (&mut facts.collector, 2)] {
        client.pid_namespace = Some(clients.to_owned());
        client.nspid = Some(if clients == observer {
            client.pid.to_string()
        } else {
            format!("{}\t{inner}", client.pid)
        });
    }
}

/// The client's PID in the daemon's namespace, known independently of the policy: `None` where
/// it cannot be told (the attester in a pod, the daemon on the host).
fn translated(facts: &AttestFacts, client: &sharing_policy::ClientFacts) -> Option<i64> {
    let daemon_ns = facts
        .daemon_process
        .as_ref()
        .and_then(|search| search.processes[0].pid_namespace.as_deref());
    match (facts.observer_pid_namespace.as_deref(), daemon_ns) {
        (Some(HOST_NS), Some(POD_NS)) => client.nspid.as_deref()?.split('\t').nth(1)?.parse().ok(),
        (Some(POD_NS), Some(HOST_NS)) => None,
        _ => Some(client.pid),
    }
}

/// Whether `pid` appears among the whitespace-separated tokens of a server's client answer.
fn listed(server: &ServerFacts, pid: i64) -> bool {
    match &server.client_query.outcome {
        QueryOutcome::Exited { stdout, .. } => stdout
            .text
            .split_ascii_whitespace()
            .skip(1)
            .any(|token| token == pid.to_string()),
        _ => false,
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn attested_implies_both_listed_under_one_server_of_their_uid_or_root_multiuser(facts in arb_facts()) {
        let attestation = attest(&facts);
        if attestation.attested {
            let server = attestation.server_pid.unwrap();
            let facts_of = facts.servers.iter().find(|s| s.pid == server).unwrap();
            // Both PIDs, translated into the daemon's namespace, under one proven MPS server.
            let (learner, collector) = (translated(&facts, &facts.learner), translated(&facts, &facts.collector));
            prop_assert!(learner.is_some() && collector.is_some());
            prop_assert!(listed(facts_of, learner.unwrap_or_default()) && listed(facts_of, collector.unwrap_or_default()));
            prop_assert_ne!(facts_of.process.comm.as_deref(), Some("bash"));
            let uid = |line: &Option<String>| line.as_deref().and_then(|l| l.split('\t').nth(1)).map(str::to_owned);
            let theirs = uid(&facts_of.process.status_uid);
            prop_assert!(theirs.is_some());
            // Of their UID, or root in proven multi-user mode.
            let root_multiuser = theirs.as_deref() == Some("0") && proven_multiuser(&facts);
            for client in [&facts.learner, &facts.collector] {
                prop_assert!(theirs == uid(&client.status_uid) || root_multiuser);
            }
            prop_assert!(attestation.server_uid == attestation.learner.uid || root_multiuser);
            prop_assert!(attestation.error_lines().is_empty());
            prop_assert!(!attestation.server_settings.as_ref().is_some_and(sharing_policy::ServerSettings::is_fault));
        } else {
            prop_assert!(!attestation.error_lines().is_empty());
        }
    }
}

/// [`healthy`] with server 4428's settings session answered `status`, `percentage`
/// and `limit` (each with its newline, `""` for none).
fn with_settings(status: &str, percentage: &str, limit: &str) -> AttestFacts {
    let mut facts = healthy();
    let stdin = probe_stdin(&sharing_policy::attest_settings_commands(
        Pid::new(4428).unwrap(),
    ));
    let stdout = format!("100.0\n{status}100.0\n{percentage}100.0\n{limit}100.0\n");
    facts.servers[0].settings_query = Some(record(stdin, QueryOutcome::exited(0, &stdout, "")));
    facts
}

#[test]
fn the_attested_server_s_settings_and_the_clients_own_limits_are_reported() {
    let mut facts = with_settings("ACTIVE\n", "33.0\n", "4G\n");
    let limits = facts.learner.environ.as_mut().unwrap();
    limits.insert(
        "CUDA_MPS_ACTIVE_THREAD_PERCENTAGE".to_owned(),
        OsText::from("25"),
    );
    limits.insert(
        "CUDA_MPS_PINNED_DEVICE_MEM_LIMIT".to_owned(),
        OsText::from("0=2G"),
    );
    let attestation = attest(&facts);
    assert!(attestation.attested);
    let settings = attestation.server_settings.as_ref().unwrap();
    assert_eq!(settings.status.as_deref(), Some("ACTIVE"));
    assert_eq!(
        settings.active_thread_percentage,
        sharing_policy::Percentage::from_tenths(330)
    );
    assert_eq!(settings.device_pinned_mem_limit.as_deref(), Some("4G"));
    assert!(settings.unread.is_empty(), "{settings:?}");
    assert_eq!(
        attestation.learner.active_thread_percentage_env.as_deref(),
        Some("25")
    );
    assert_eq!(
        attestation.learner.pinned_device_mem_limit_env.as_deref(),
        Some("0=2G")
    );
    assert_eq!(attestation.collector.active_thread_percentage_env, None);
}

#[test]
fn a_faulted_server_is_reported_and_never_attested() {
    let attestation = attest(&with_settings("FAULT\n", "100.0\n", ""));
    assert!(!attestation.attested);
    assert!(
        !attestation.worth_waiting(),
        "a FAULT does not pass by waiting"
    );
    let lines = attestation.error_lines();
    assert_eq!(lines.len(), 1, "{lines:?}");
    assert_eq!(
        lines[0],
        "server-fault: MPS server 4428 that the learner is a client of is in FAULT: it rejects every new client with CUDA_ERROR_MPS_SERVER_NOT_READY, and its clients are not being served; restart the job once the daemon has started a new server"
    );
    // 535 cannot say: the state is unread, the verdict unchanged.
    let old = attest(&with_settings(
        "Unknown command \"get_server_status\"\n",
        "100.0\n",
        "",
    ));
    assert!(old.attested);
    let settings = old.server_settings.unwrap();
    assert_eq!(settings.status, None);
    assert!(settings.unread[0].contains("before 550"), "{settings:?}");
    // A session cut short reads nothing, and is never read as ACTIVE.
    let mut cut = with_settings("FAULT\n", "100.0\n", "");
    if let QueryOutcome::Exited { stdout, .. } =
        &mut cut.servers[0].settings_query.as_mut().unwrap().outcome
    {
        stdout.text.truncate("100.0\nFAULT\n".len());
    }
    let settings = attest(&cut).server_settings.unwrap();
    assert_eq!(settings.status, None);
    assert_eq!(settings.unread.len(), 1);
}
