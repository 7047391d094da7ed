//! `attest`'s identity rules: one PID given for both processes is a usage
//! error everywhere, and a PID whose process changed between rounds is not that process.

use std::fs;

use serde_json::Value;

use crate::attest::{Attest, lines};
use crate::support::MPS_REQUEST;

#[test]
fn the_same_pid_twice_is_a_usage_error_in_attest_doctor_and_replay() {
    let mut fake = Attest::new();
    let (learner, collector, server) =
        (fake.process(false), fake.process(false), fake.server(false));
    fake.servers(&[server]);
    fake.clients(server, &lines(&[learner, collector]));
    // Listed as a client: today's false "attested" for `$!` captured twice.
    let run = fake.run(learner, learner, &[]);
    assert_eq!(run.code, 2, "{}", run.render());
    assert!(run.stdout.is_empty(), "{}", run.render());
    assert!(
        run.stderr.contains("the same process (PID"),
        "{}",
        run.stderr
    );
    assert!(!fake.state.join("log").exists(), "nothing was asked");

    let pid = learner.to_string();
    for format in ["human", "json", "brief"] {
        let mut args = vec!["doctor"];
        args.extend_from_slice(&MPS_REQUEST);
        args.extend_from_slice(&[
            "--learner-pid",
            &pid,
            "--collector-pid",
            &pid,
            "--format",
            format,
        ]);
        let run = fake.host.run(&args);
        assert_eq!(run.code, 2, "{format}: {}", run.render());
        assert!(run.stderr.contains("the same process"), "{}", run.render());
    }
    assert!(!fake.state.join("log").exists(), "doctor asked nothing");

    // A snapshot whose two roles name one PID (hand-edited: attest never writes one).
    let saved = fake.host.root().join("attest.json");
    let live = fake.run(
        learner,
        collector,
        &["--save-snapshot", saved.to_str().unwrap()],
    );
    assert_eq!(live.code, 0, "{}", live.render());
    let mut snapshot: Value = serde_json::from_slice(&fs::read(&saved).unwrap()).unwrap();
    snapshot["collector"] = snapshot["learner"].clone();
    fs::write(&saved, serde_json::to_vec(&snapshot).unwrap()).unwrap();
    let replay = fake
        .host
        .run(&["attest", "--snapshot", saved.to_str().unwrap()]);
    assert_eq!(replay.code, 2, "{}", replay.render());
    assert!(
        replay.stderr.contains("must be two processes"),
        "{}",
        replay.stderr
    );
}

/// The swap, inside a PID namespace of this test's own: the learner is observed (not yet a
/// client), exits, and a new process is given its PID through `ns_last_pid`; the daemon then
/// lists that PID. `attest --wait-ms` must not attest the newcomer.
const SWAP: &str = r#"
S="$STATE"
"$SLEEP" 60 & L=$!
"$SLEEP" 60 & C=$!
"$SERVER" 60 & SV=$!
echo "$SV" > "$S/servers"
"$BIN" attest --learner-pid "$L" --collector-pid "$C" --wait-ms 15000 > "$S/out" 2> "$S/err" &
A=$!
"$SLEEP" 0.3
kill "$L"; wait "$L"
N=0
for try in 1 2 3 4 5 6 7 8 9 10; do
  echo $((L - 1)) > /proc/sys/kernel/ns_last_pid
  "$SLEEP" 60 & N=$!
  [ "$N" = "$L" ] && break
  kill "$N"; wait "$N"
done
echo "$N" > "$S/newcomer"
printf '%s\n%s\n' "$L" "$C" > "$S/clients.$SV"
wait "$A"; echo $? > "$S/rc"
kill "$C" "$SV" "$N" 2>/dev/null
exit 0
"#;

#[test]
fn a_pid_reused_during_the_wait_is_not_attested() {
    let unshare = std::process::Command::new(crate::support::system_program("unshare"))
        .args(["--pid", "--fork", "--mount-proc", "true"])
        .status();
    if !unshare.is_ok_and(|status| status.success()) {
        eprintln!("skipping: `unshare --pid --fork --mount-proc` needs root");
        return;
    }
    let fake = Attest::new();
    let template = fake.host.command(&[] as &[&str]);
    let mut command = std::process::Command::new(crate::support::system_program("unshare"));
    command
        .args(["--pid", "--fork", "--mount-proc"])
        .arg(crate::support::system_program("sh"))
        .args(["-c", SWAP])
        .env_clear()
        .envs(
            template
                .get_envs()
                .filter_map(|(key, value)| Some((key, value?))),
        )
        .env("STATE", &fake.state)
        .env("BIN", crate::support::BIN)
        .env("SLEEP", crate::support::system_program("sleep"))
        .env("SERVER", fake.server_program())
        .stdin(std::process::Stdio::null());
    let output = command.output().unwrap();
    assert!(output.status.success(), "{output:?}");
    let read = |name: &str| fs::read_to_string(fake.state.join(name)).unwrap_or_default();
    let learner = read(&format!("clients.{}", read("servers").trim()))
        .lines()
        .next()
        .map(str::to_owned);
    assert_eq!(
        read("newcomer").trim(),
        learner.as_deref().unwrap_or("?"),
        "the namespace gave the newcomer the learner's PID"
    );
    let (out, err) = (read("out"), read("err"));
    assert_eq!(read("rc").trim(), "1", "stdout {out}\nstderr {err}");
    assert!(out.is_empty(), "{out}");
    assert!(err.starts_with("error: not-running: "), "{err}");
    assert!(
        err.contains("now names another process: start time"),
        "{err}"
    );
}
