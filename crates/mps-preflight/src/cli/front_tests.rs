//! The command line's clap arguments and the Python package's keywords fill
//! one `front::LowArgs`, converted once: the same inputs give the same request and probe
//! options whichever front end they came through.

use std::time::Duration;

use clap::Parser as _;
use proptest::prelude::*;

use super::{Cli, Command};
use crate::front::{LowArgs, Param, Wording, deadline, parse_mem_size, parse_percentage};

fn arb_percentage() -> impl Strategy<Value = Option<String>> {
    prop::option::of(prop_oneof![
        Just("50".to_owned()),
        Just("12.5".to_owned()),
        Just("100".to_owned())
    ])
}

fn arb_mem() -> impl Strategy<Value = Option<String>> {
    prop::option::of(prop_oneof![Just("512M".to_owned()), Just("10G".to_owned())])
}

proptest! {
    /// The command line's arguments and Python's keywords fill the same `LowArgs`, so they
    /// convert to the same request and probe options: the CLI's argv through clap, Python's
    /// values through the front end's parsers, on any request.
    #[test]
    fn the_cli_s_and_python_s_inputs_convert_alike(
        mode in prop_oneof![Just(None), Just(Some("mps".to_owned())), Just(Some("NULL".to_owned())), "[a-z]{0,5}".prop_map(Some)],
        learner in prop_oneof![Just("cuda:0".to_owned()), Just("cpu".to_owned()), "[a-z0-9:]{1,8}"],
        collector in prop::option::of(prop_oneof![Just("cuda:1".to_owned()), "[a-z0-9:]{1,8}"]),
        backend in "[a-z]{1,8}",
        rank in any::<i64>(),
        world_size in any::<i64>(),
        millis in 1u64..100_000,
        require_verified in any::<bool>(),
        percentage in arb_percentage(),
        pinned in arb_mem(),
        shm in arb_mem(),
        learner_uuid in prop::option::of("GPU-[0-9a-f]{8}"),
    ) {
        let mut argv = vec!["probe".to_owned(), "--learner-device".to_owned(), learner.clone(), "--backend".to_owned(), backend.clone()];
        let mut push = |flag: &str, value: String| { argv.push(flag.to_owned()); argv.push(value); };
        if let Some(mode) = &mode { push("--request", mode.clone()); }
        if let Some(collector) = &collector { push("--collector-device", collector.clone()); }
        push("--rank", rank.to_string());
        push("--world-size", world_size.to_string());
        push("--timeout-ms", millis.to_string());
        if let Some(p) = &percentage { push("--min-active-thread-percentage", p.clone()); }
        if let Some(p) = &pinned { push("--min-pinned-mem", p.clone()); }
        if let Some(p) = &shm { push("--min-shm", p.clone()); }
        if let Some(u) = &learner_uuid { push("--learner-uuid", u.clone()); }
        if require_verified { argv.push("--require-verified".to_owned()); }
        let parsed = Cli::try_parse_from(std::iter::once("mps-preflight".to_owned()).chain(argv));
        let Ok(Cli { command: Command::Probe(args) }) = parsed else {
            panic!("a valid command line: {parsed:?}");
        };
        let cli = args.request.low().to_high();

        // What Python's keywords fill (mps-preflight-py's spec.rs does this with its dict).
        let python = LowArgs {
            rank,
            world_size,
            learner_uuid,
            timeout: deadline(Duration::from_millis(millis).as_secs_f64()).unwrap(),
            require_verified,
            min_active_thread_percentage: percentage.map(|p| parse_percentage(&p, Wording::Python).unwrap()),
            min_pinned_mem: pinned.map(|p| parse_mem_size(&p, Param::MinPinnedMem, Wording::Python).unwrap()),
            min_shm: shm.map(|p| parse_mem_size(&p, Param::MinShm, Wording::Python).unwrap()),
            ..LowArgs::new(mode.as_deref(), &learner, collector.as_deref(), Some(&backend), Wording::Python)
        }.to_high();
        prop_assert_eq!(cli, python);
    }
}
