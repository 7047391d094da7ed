//! The command line's own checks: well-formed, integers, deadlines, pasteable help.

use clap::CommandFactory as _;

use super::*;
use crate::args::{RequestArgs, parse_int, parse_timeout};

#[test]
fn the_command_line_is_well_formed() {
    Cli::command().debug_assert();
}

#[test]
fn integers_beyond_64_bits_and_non_integers_are_errors() {
    assert_eq!(parse_int("0"), Ok(0));
    assert_eq!(parse_int("+7"), Ok(7));
    assert_eq!(parse_int("-1"), Ok(-1));
    assert_eq!(parse_int("9223372036854775807"), Ok(i64::MAX));
    assert_eq!(parse_int("-9223372036854775808"), Ok(i64::MIN));
    // Beyond 64 bits: an error that repeats the value given, not a saturated one.
    for huge in [
        "9223372036854775808".to_owned(),
        "-9223372036854775809".to_owned(),
        "9".repeat(60),
    ] {
        let err = parse_int(&huge).unwrap_err();
        assert!(err.starts_with(&format!("{huge} is out of range")), "{err}");
    }
    for bad in [
        "", "-", "+", "1.5", "1e3", " 1", "0x10", "one", "1_000", "--1", "١",
    ] {
        assert!(parse_int(bad).is_err(), "{bad:?}");
    }
}

#[test]
fn a_negative_deadline_is_named_as_such() {
    assert!(
        parse_timeout("-5")
            .unwrap_err()
            .contains("cannot be negative, got -5")
    );
    assert!(parse_timeout("0").is_err());
    assert_eq!(parse_timeout("250"), Ok(250));
}

/// An example wrapped by clap would paste as a broken command, so every
/// line of every help's epilogue fits in 80 columns and comes out of clap unwrapped
/// there; long commands are broken with ` \` in the text itself.
#[test]
fn help_examples_fit_80_columns_unwrapped() {
    let mut command = Cli::command().term_width(80);
    // The subcommands' arguments and help are added when clap builds them (`Deferred`).
    command.build();
    let mut helps = vec![(
        String::new(),
        command.render_long_help().to_string(),
        command
            .get_after_long_help()
            .or(command.get_after_help())
            .map(ToString::to_string),
    )];
    for sub in command.get_subcommands_mut() {
        let name = sub.get_name().to_owned();
        let epilogue = sub
            .get_after_long_help()
            .or(sub.get_after_help())
            .map(ToString::to_string);
        let rendered = sub.clone().term_width(80).render_long_help().to_string();
        helps.push((name, rendered, epilogue));
    }
    for (name, rendered, epilogue) in helps.into_iter().filter(|(name, ..)| name != "help") {
        let epilogue = epilogue.unwrap_or_default();
        assert!(epilogue.contains("Examples:"), "{name}: no examples");
        let examples = epilogue
            .lines()
            .skip_while(|line| *line != "Examples:")
            .skip(1)
            .take_while(|line| line.is_empty() || line.starts_with(' '));
        for line in examples {
            assert!(
                line.chars().count() <= 80,
                "{name}: {} columns: {line}",
                line.chars().count()
            );
            assert!(
                rendered.lines().any(|r| r.trim_end() == line.trim_end()),
                "{name}: wrapped by clap: {line}"
            );
        }
    }
}

// That no help leaves a short orphan line, at 80 columns and at the width without a terminal,
// is checked on the real binary's output: tests/it/help.rs.

#[test]
fn paragraphs_join_lines_but_keep_blank_lines_and_list_items() {
    assert_eq!(
        paragraphs("a\nb\n\nc\n- d\n- e\n  f"),
        "a b\n\nc\n- d\n- e\n  f"
    );
}

#[test]
fn null_in_any_case_is_no_mode_and_anything_else_is_passed_on() {
    let args = |mode: &str| RequestArgs {
        mode: mode.to_owned(),
        learner_device: "cuda:0".to_owned(),
        collector_device: None,
        backend: Some("mjwarp".to_owned()),
        supported_backends: vec!["mjwarp".to_owned()],
        rank: 0,
        world_size: 1,
        learner_uuid: None,
        timeout_ms: 5000,
        require_verified: false,
        min_active_thread_percentage: None,
        min_pinned_mem: None,
        as_user: None,
        min_shm: None,
    };
    for null in ["null", "NULL", "Null", " null "] {
        assert_eq!(args(null).to_request().mode, None, "{null:?}");
    }
    for other in ["mps", "MPS", "", "none", "nul"] {
        assert_eq!(args(other).to_request().mode.as_deref(), Some(other));
    }
    assert_eq!(args("mps").to_request().as_user, None);
    let judged = RequestArgs {
        as_user: Some(1001),
        ..args("mps")
    };
    assert_eq!(judged.to_request().as_user, Some(1001));
}

/// Each subcommand's arguments and long help wait until clap builds that subcommand
/// (`Deferred`), and are all there once it is built: the parse of one subcommand builds no
/// other's, and the man page and completions (which build the whole tree) see everything.
#[test]
fn subcommands_are_built_only_when_clap_builds_them() {
    let mut command = Cli::command();
    let probe = command.find_subcommand("probe").unwrap();
    assert_eq!(
        probe.get_arguments().count(),
        0,
        "probe's arguments were built eagerly"
    );
    assert!(probe.get_after_help().is_none());
    command.build();
    for sub in command
        .get_subcommands()
        .filter(|sub| sub.get_name() != "help")
    {
        assert!(
            sub.get_after_help().is_some(),
            "{}: no epilogue once built",
            sub.get_name()
        );
        assert!(
            sub.get_about().is_some(),
            "{}: no about once built",
            sub.get_name()
        );
    }
    let probe = command.find_subcommand("probe").unwrap();
    assert!(
        probe
            .get_arguments()
            .any(|arg| arg.get_id() == "learner_device")
    );
    assert_eq!(
        probe.get_about().map(ToString::to_string).as_deref(),
        Some("Observe this host and validate the request; print the evidence as JSON"),
        "the variant's about, not the flattened RequestArgs' doc comment"
    );
}
