//! Reading a control daemon's command line the way its own option parser does, version by
//! version (docs/mps-daemon.md §1d; shared notes gpu-truth.md §9 and §10 items
//! 1 and 5). The version of a running daemon is not recorded, but a daemon that runs was
//! started with a command line its parser accepted: so each parser is asked, and the answer
//! counts only where every parser that reads the line as a daemon agrees.
//!
//! - 470/535/550: an option is parsed only when it is the one argument: exactly `-d` or `-f`
//!   starts the daemon. With more arguments (`-d -m`, `-d -M`) the binary is a front-end
//!   client (observed on 535.261.03 and 550.163.01 as `nobody`: "Cannot find MPS control daemon
//!   process"). These builds have no multi-user option (none in their strings).
//! - 555: `-d`, `-f`, and `-multiuser-server` (the only multi-user spelling it accepts; `-M`
//!   and `-m` print the usage banner and exit 1).
//! - 580: `getopt_long_only` with the short options `dfhvSMEqL` and long options that
//!   include `daemon`, `foreground` and `multiuser-server`, each with one or two dashes; a
//!   unique prefix of a long option is accepted (`-m`, `--multiuser` enable multi-user mode,
//!   so no other long option starts with `m`); short options combine (`-dM`). A single dash
//!   and one letter that is a short option is that short option (`-M`, `-d`).

use crate::{DAEMON_QUERY_PROGRAM, OsText};

/// What one parser makes of a command line's arguments.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
struct Parsed {
    /// It runs the control daemon (`-d`, or `-f` in the foreground).
    daemon: bool,
    /// In multi-user mode.
    multiuser: bool,
}

/// What a command line shows about the control daemon.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DaemonLine {
    /// Whether it runs in multi-user mode (`None`: the parsers that read it as a daemon
    /// disagree).
    pub multiuser: Option<bool>,
}

/// The control daemon's mode, when `cmdline` is the control program run as a daemon by at
/// least one known version's parser; `None` otherwise (a front-end client, a server, another
/// program, or options no known parser reads).
pub fn read(cmdline: &[OsText]) -> Option<DaemonLine> {
    let (program, args) = cmdline.split_first()?;
    if program.as_bytes().rsplit(|b| *b == b'/').next() != Some(DAEMON_QUERY_PROGRAM.as_bytes()) {
        return None;
    }
    let args: Vec<&[u8]> = args.iter().map(OsText::as_bytes).collect();
    let daemons: Vec<Parsed> = [legacy(&args), v555(&args), v580(&args)]
        .into_iter()
        .flatten()
        .filter(|parsed| parsed.daemon)
        .collect();
    let first = daemons.first()?;
    let agreed = daemons.iter().all(|p| p.multiuser == first.multiuser);
    Some(DaemonLine {
        multiuser: agreed.then_some(first.multiuser),
    })
}

/// 470/535/550: exactly one argument, `-d` or `-f`.
fn legacy(args: &[&[u8]]) -> Option<Parsed> {
    match args {
        [b"-d" | b"-f"] => Some(Parsed {
            daemon: true,
            multiuser: false,
        }),
        _ => None,
    }
}

/// 555: `-d`, `-f`, `-multiuser-server`; anything else is not read here.
fn v555(args: &[&[u8]]) -> Option<Parsed> {
    let mut parsed = Parsed::default();
    for arg in args {
        match *arg {
            b"-d" | b"-f" => parsed.daemon = true,
            b"-multiuser-server" => parsed.multiuser = true,
            _ => return None,
        }
    }
    Some(parsed)
}

/// The short options of 580 (`--help`'s `:dfhvSMEqL`).
const SHORT_580: &[u8] = b"dfhvSMEqL";

/// The short options of 580 that neither start the daemon nor set multi-user mode, and do
/// not exit at once (`-h`, `-v` do; a line with them is not read here).
const NEUTRAL_580: &[u8] = b"SEqL";

/// 580: `getopt_long_only` (see the module notes).
fn v580(args: &[&[u8]]) -> Option<Parsed> {
    let mut parsed = Parsed::default();
    for arg in args {
        let Some(rest) = arg.strip_prefix(b"-") else {
            return None; // a non-option argument: not read here
        };
        if let Some(long) = rest.strip_prefix(b"-") {
            long_580(long, &mut parsed)?;
        } else if let [letter] = rest
            && SHORT_580.contains(letter)
        {
            short_580(*letter, &mut parsed)?;
        } else if long_580(rest, &mut parsed).is_none() {
            // No long option matched: a cluster of short options (`-dM`).
            for letter in rest {
                short_580(*letter, &mut parsed)?;
            }
        }
    }
    Some(parsed)
}

/// One long option of 580, without its dashes. Only `multiuser-server` is read by any
/// prefix (proven unique); `daemon` and `foreground` only whole, since other long options may
/// share their first letters.
fn long_580(name: &[u8], parsed: &mut Parsed) -> Option<()> {
    if name.is_empty() {
        return None; // `--`: what follows is not read here
    }
    if b"multiuser-server".starts_with(name) {
        parsed.multiuser = true;
    } else if name == b"daemon" || name == b"foreground" {
        parsed.daemon = true;
    } else {
        return None;
    }
    Some(())
}

fn short_580(letter: u8, parsed: &mut Parsed) -> Option<()> {
    match letter {
        b'd' | b'f' => parsed.daemon = true,
        b'M' => parsed.multiuser = true,
        other if NEUTRAL_580.contains(&other) => {}
        _ => return None,
    }
    Some(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn line(args: &[&str]) -> Vec<OsText> {
        std::iter::once("/usr/bin/nvidia-cuda-mps-control")
            .chain(args.iter().copied())
            .map(OsText::from)
            .collect()
    }

    fn multiuser(args: &[&str]) -> Option<DaemonLine> {
        read(&line(args))
    }

    const MULTI: Option<DaemonLine> = Some(DaemonLine {
        multiuser: Some(true),
    });
    const SINGLE: Option<DaemonLine> = Some(DaemonLine {
        multiuser: Some(false),
    });

    #[test]
    fn every_real_multi_user_spelling() {
        for args in [
            &["-d", "-M"][..],             // the DRA driver, 580
            &["-dM"],                      // combined short options, 580
            &["-Md"],                      // 580
            &["-d", "--multiuser-server"], // 580
            &["-d", "-multiuser-server"],  // NVIDIA's prose; 555 and 580
            &["-d", "-m"],                 // a unique prefix, 580
            &["-d", "--multiuser"],        // a unique prefix, 580
            &["-d", "-multi"],             // a unique prefix, 580
            &["--daemon", "-M"],           // 580's long daemon option
            &["-daemon", "-M"],
            &["-f", "-M"],
            &["--foreground", "--multiuser-server"],
            &["-d", "-L", "-M"], // lazy init (580 without a driver)
            &["-dLM"],
        ] {
            assert_eq!(multiuser(args), MULTI, "{args:?}");
        }
    }

    #[test]
    fn daemons_without_multi_user_mode() {
        for args in [
            &["-d"][..],
            &["-f"],
            &["--daemon"],
            &["-daemon"],
            &["--foreground"],
            &["-d", "-L"],
            &["-dq"],
        ] {
            assert_eq!(multiuser(args), SINGLE, "{args:?}");
        }
    }

    #[test]
    fn lines_no_parser_reads_as_a_daemon() {
        for args in [
            &[][..],
            &["-M"], // multi-user, but no daemon option
            &["-multiuser-server"],
            &["get_server_list"], // a front-end with an argv command
            &["-d", "extra"],
            &["-d", "-x"],
            &["-d", "--forground"], // the help text's spelling is not in the option table
            &["-d", "--mu=1"],
            &["-d", "--"],
            &["-d", "-h"],
            &["-d", "-v"],
            &["-d", "-p", "3"],
            &["--d"], // a prefix of `daemon` may be ambiguous: not read
            &["-dX"],
        ] {
            assert_eq!(multiuser(args), None, "{args:?}");
        }
        let server = vec![OsText::from("nvidia-cuda-mps-server")];
        assert_eq!(read(&server), None);
        let other = vec![OsText::from("/bin/sh"), OsText::from("-d")];
        assert_eq!(read(&other), None);
        assert_eq!(read(&[]), None);
    }
}
