//! `codes`: every finding code with its class, which the fleet's Prolog acts on.

use crate::support::FakeHost;

#[test]
fn every_code_has_one_class_and_the_classes_partition_them() {
    let host = FakeHost::new();
    let table = host.run(&["codes"]);
    assert_eq!((table.code, table.stderr.as_str()), (0, ""));
    let rows: Vec<(&str, &str)> = table
        .stdout
        .lines()
        .map(|line| line.split_once(' ').expect("`<code> <class>`"))
        .collect();
    assert_eq!(rows.len(), sharing_policy::Code::ALL.len());
    for (code, class) in &rows {
        let parsed: sharing_policy::Code =
            serde_json::from_value(serde_json::Value::from(*code)).expect("a known code");
        assert_eq!(parsed.class().as_str(), *class, "{code}");
    }
    let mut listed = Vec::new();
    for class in ["setting", "node-fault", "workload-conflict"] {
        let run = host.run(&["codes", "--class", class]);
        assert_eq!(run.code, 0, "{}", run.render());
        let codes: Vec<&str> = run.stdout.lines().collect();
        let expected: Vec<&str> = rows
            .iter()
            .filter(|(_, of)| *of == class)
            .map(|(code, _)| *code)
            .collect();
        assert_eq!(codes, expected, "{class}");
        listed.extend(run.stdout.lines().map(str::to_owned));
    }
    assert_eq!(listed.len(), rows.len());
    let workload = host.run(&["codes", "--class", "workload-conflict"]);
    assert_eq!(
        workload.stdout,
        "server-of-another-user\ngpu-held-by-compute-process\nserver-fault\nserver-client-limit-reached\nserver-client-limit-unverified\nserver-has-clients\nserver-fatal-error-logged\ndaemon-log-pending-client\n"
    );
    let bad = host.run(&["codes", "--class", "node"]);
    assert_eq!(bad.code, 2, "{}", bad.render());
}
