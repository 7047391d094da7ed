//! The per-device client limit (48 on Volta and newer) against the listed clients and the two
//! the job starts: full where the daemon serves the judged GPU alone, unverified where it
//! serves several (a client list does not say which GPU each client uses). Each breaker
//! starts from a served daemon ([`make_served`]).

use sharing_policy::{Code, HostFacts, OsText, ReadOnlyCommand, Request, validate, warnings};

use crate::hosts;
use crate::props_apps::{base, codes, request, rows_for_every_gpu, stdout_of};
use crate::props_breakers::{Breaker, pick};
use crate::props_clients::client;
use crate::props_served::{add_server, daemon_environ, make_served};

pub(crate) fn client_limit_breakers() -> Vec<Breaker> {
    vec![
        Breaker {
            name: "the listed clients exceed 48 on a daemon serving two GPUs, verification required",
            code: Code::ServerClientLimitUnverified,
            apply: |r, f, s| {
                r.require_verified = true;
                full_server(f, pick(&[47_i64, 48, 60], s));
                add_gpu(f);
            },
        },
        Breaker {
            name: "the listed clients and the two to come exceed 48",
            code: Code::ServerClientLimitReached,
            apply: |r, f, s| {
                let count = pick(&[47_i64, 48, 60], s);
                let judged = judged_gpu(r, f);
                full_server(f, count);
                serve_alone(f, &judged);
            },
        },
    ]
}

/// The GPU `request` is judged on once `f` is served, as a mask: `GPU-<uuid>`.
fn judged_gpu(request: &Request, f: &HostFacts) -> String {
    let mut served = f.clone();
    make_served(&mut served);
    let hex = validate(request, &served)
        .unwrap()
        .learner_gpu_uuid
        .unwrap()
        .to_lowercase();
    let dashed = [
        &hex[..8],
        &hex[8..12],
        &hex[12..16],
        &hex[16..20],
        &hex[20..],
    ]
    .join("-");
    format!("GPU-{dashed}")
}

/// The daemon serves `gpu` alone, and the caller names it by UUID (an index would be
/// renumbered by the daemon's mask): every listed client is on the judged GPU.
fn serve_alone(f: &mut HostFacts, gpu: &str) {
    daemon_environ(f).insert("CUDA_VISIBLE_DEVICES".to_owned(), OsText::from(gpu));
    f.env.cuda_visible_devices = Some(OsText::from(gpu));
}

/// One more GPU at the end of the table, of the last one's model: the unscoped daemon of
/// [`make_served`] then serves at least two.
fn add_gpu(f: &mut HostFacts) {
    let stdout = stdout_of(f.gpu_query.as_mut().unwrap());
    let rows = stdout.text.lines().count();
    let last = stdout.text.lines().last().unwrap().to_owned();
    let uuid = last
        .split(", ")
        .find(|column| column.starts_with("GPU-"))
        .unwrap();
    let index = last.split(", ").nth(7).unwrap();
    let added = last
        .replace(uuid, "GPU-0000aaaa-bbbb-cccc-dddd-eeeeffff0000")
        .replacen(&format!(", {index}, "), &format!(", {rows}, "), 1);
    stdout.text.push_str(&added);
    stdout.text.push('\n');
}

/// Server 4429 lists `count` live clients.
pub(crate) fn full_server(f: &mut HostFacts, count: i64) {
    make_served(f);
    add_server(f, Some(1000));
    let pids: Vec<i64> = (9000..9000 + count).collect();
    let list: String = pids.iter().map(|pid| pid.to_string() + "\n").collect();
    f.settings_query = hosts::settings_with(f, |command| match command {
        ReadOnlyCommand::GetServerStatus(_) => "ACTIVE\n".to_owned(),
        ReadOnlyCommand::GetClientList(pid) if pid.get() == 4429 => list.clone(),
        ReadOnlyCommand::GetActiveThreadPercentage(_) => "100.0\n".to_owned(),
        _ => String::new(),
    });
    f.listed_clients = Some(
        pids.iter()
            .map(|&pid| client(pid, Some(true), Some("S (sleeping)")))
            .collect(),
    );
}

#[test]
fn the_client_limit_is_48_per_device_with_the_two_to_come() {
    let mut f = base();
    full_server(&mut f, 46);
    let evidence = validate(&request(), &f).unwrap();
    assert_eq!(evidence.server_client_limit, Some(48));
    assert_eq!(evidence.server_clients, Some(46));
    let mut f = base();
    full_server(&mut f, 47);
    let rejection = validate(&request(), &f).unwrap_err();
    assert_eq!(rejection.code(), Code::ServerClientLimitReached);
    assert!(
        rejection.message().contains("47 client(s)"),
        "{}",
        rejection.message()
    );
    assert!(
        rejection.message().contains("limit of 48"),
        "{}",
        rejection.message()
    );
}

/// A served base whose table has at least two GPUs, and its GPUs' UUIDs as masks.
fn multi_gpu_base() -> (HostFacts, Vec<String>) {
    crate::props::healthy_bases()
        .into_iter()
        .map(|mut f| {
            make_served(&mut f);
            let uuids: Vec<String> = rows_for_every_gpu(&f, 1, "x")
                .lines()
                .filter_map(|row| row.split(',').next().map(str::to_owned))
                .collect();
            (f, uuids)
        })
        .find(|(f, uuids)| {
            uuids.len() >= 2
                && validate(&request(), f).is_ok()
                && warnings(&request(), f).is_empty()
        })
        .unwrap()
}

/// `get_client_list` does not say which GPU a client uses: on a daemon serving several GPUs,
/// listed clients over one device's limit may be on the others. That is unverified (a
/// rejection only under --require-verified), never a "full" rejection; a daemon serving the
/// judged GPU alone is full.
#[test]
fn clients_over_the_limit_across_several_gpus_are_unverified_not_full() {
    let (base, gpus) = multi_gpu_base();
    let judged = judged_gpu(&request(), &base);
    let mut unscoped = base.clone();
    full_server(&mut unscoped, 47);
    assert_eq!(
        codes(&request(), &unscoped),
        (
            Ok(()),
            vec![Code::ServerClientLimitUnverified, Code::ServerHasClients]
        )
    );
    let evidence = validate(&request(), &unscoped).unwrap();
    assert_eq!(evidence.server_client_limit, None);
    let warning = &warnings(&request(), &unscoped)[0];
    let across = format!(
        "47 client(s) across the {} GPUs the control daemon serves",
        gpus.len()
    );
    assert!(warning.message.contains(&across), "{}", warning.message);
    insta::assert_snapshot!(
        "client limit across several GPUs",
        format!(
            "{}\nwhy: {}\nfix: {}",
            warning.message, warning.why, warning.fix
        )
    );
    let strict = Request {
        require_verified: true,
        ..request()
    };
    assert_eq!(
        validate(&strict, &unscoped).unwrap_err().code(),
        Code::ServerClientLimitUnverified
    );

    let mut two = unscoped.clone();
    let other = gpus
        .iter()
        .find(|gpu| !gpu.eq_ignore_ascii_case(&judged))
        .unwrap();
    let mask = format!("{judged},{other}");
    daemon_environ(&mut two).insert(
        "CUDA_VISIBLE_DEVICES".to_owned(),
        OsText::from(mask.as_str()),
    );
    two.env.cuda_visible_devices = Some(OsText::from(judged.as_str()));
    let warning = &warnings(&request(), &two)
        .first()
        .cloned()
        .unwrap_or_else(|| panic!("{:?}", validate(&request(), &two)));
    assert!(
        warning.message.contains("across the 2 GPUs"),
        "{}",
        warning.message
    );

    let mut alone = unscoped.clone();
    serve_alone(&mut alone, &judged);
    assert_eq!(
        validate(&request(), &alone).unwrap_err().code(),
        Code::ServerClientLimitReached
    );

    let mut room = base;
    full_server(&mut room, 46);
    assert_eq!(
        validate(&request(), &room).unwrap().server_client_limit,
        Some(48)
    );
}
