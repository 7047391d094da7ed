//! `completions` and `man`: texts generated from the clap definitions, so they cannot drift from
//! `--help`.

use clap_complete::Shell;

use clap::{Args, ValueEnum};

use crate::args::paragraphs;
use crate::output::Output;

/// The completion script of `command` (the whole command line, `Cli::command()`: passed in, so
/// this module need not import the one that imports it).
pub(crate) fn completions(args: &CompletionsArgs, mut command: clap::Command) -> Output {
    let shell = match args.shell {
        CompletionShell::Bash => Shell::Bash,
        CompletionShell::Zsh => Shell::Zsh,
        CompletionShell::Fish => Shell::Fish,
    };
    let mut script = Vec::new();
    clap_complete::generate(shell, &mut command, "mps-preflight", &mut script);
    match shell {
        Shell::Bash => script = bash_states_fixed(&script),
        Shell::Fish => fish_positional_values(&command, &mut script),
        _ => {}
    }
    text(script, "the completion script")
}

/// `clap_complete`'s bash script names each subcommand's state `mps__preflight__subcmd__check`
/// where it sets it, but `mps__subcmd__preflight__subcmd__check` in the `case` arms that
/// complete its flags (its hyphenated-binary-name bug, clap-rs/clap#6421 and #6529), so
/// nothing after the subcommand ever completed. The arms are renamed to the state's name.
fn bash_states_fixed(script: &[u8]) -> Vec<u8> {
    String::from_utf8_lossy(script)
        .replace("mps__subcmd__preflight__", "mps__preflight__")
        .into_bytes()
}

/// `clap_complete`'s fish script completes no positional value (`schema <KIND>`,
/// `completions <SHELL>`): one line per possible value of each subcommand's positional
/// arguments is added, in the script's own form.
fn fish_positional_values(command: &clap::Command, script: &mut Vec<u8>) {
    for sub in command.get_subcommands() {
        for arg in sub.get_positionals() {
            for value in arg.get_possible_values() {
                if value.is_hide_set() {
                    continue;
                }
                let help = value
                    .get_help()
                    .map(|help| format!(" -d '{}'", help.to_string().replace('\'', "\\'")))
                    .unwrap_or_default();
                let line = format!(
                    "complete -c mps-preflight -n \"__fish_mps_preflight_using_subcommand {}\" -f -a \"{}\"{help}\n",
                    sub.get_name(),
                    value.get_name()
                );
                script.extend_from_slice(line.as_bytes());
            }
        }
    }
}

/// mps-preflight(1): the top-level page, then one section per command with its own help.
pub(crate) fn man(command: &clap::Command) -> Output {
    let mut page = Vec::new();
    if let Err(err) = clap_mangen::Man::new(command.clone()).render(&mut page) {
        return Output::input(format!("cannot render the man page: {err}"));
    }
    for sub in command
        .get_subcommands()
        .filter(|sub| sub.get_name() != "help")
    {
        let name = format!("mps-preflight {}", sub.get_name());
        let man = clap_mangen::Man::new(sub.clone());
        page.extend_from_slice(format!(".SH \"{}\"\n", name.to_uppercase()).as_bytes());
        let rendered = man
            .render_description_section(&mut page)
            .and_then(|()| man.render_options_section(&mut page))
            .and_then(|()| man.render_extra_section(&mut page));
        if let Err(err) = rendered {
            return Output::input(format!("cannot render the man page of {name}: {err}"));
        }
    }
    match String::from_utf8(page) {
        Ok(page) => Output::data(man_fixed(&page, command)),
        Err(err) => Output::input(format!("the man page is not UTF-8: {err}")),
    }
}

/// `clap_mangen`'s page, with what it gets wrong for this one-page manual put right: its
/// SUBCOMMANDS list points to `mps-preflight-probe(1)` and the like, pages that do not exist
/// (each command is a section of this page, `MPS-PREFLIGHT PROBE`), and it files the examples
/// and exit status under a heading called EXTRA.
fn man_fixed(page: &str, command: &clap::Command) -> String {
    // clap's own `help` command has no section of its own.
    let mut page = page
        .replace(".SH EXTRA\n", ".SH EXAMPLES\n")
        .replace("mps\\-preflight\\-help(1)", "\\fBmps\\-preflight help\\fR");
    for sub in command.get_subcommands() {
        let name = sub.get_name();
        let reference = format!("mps\\-preflight\\-{}(1)", name.replace('-', "\\-"));
        let section = format!(
            "\\fBmps\\-preflight {name}\\fR (section MPS\\-PREFLIGHT {} below)",
            name.to_uppercase()
        );
        page = page.replace(&reference, &section);
    }
    page
}

fn text(bytes: Vec<u8>, what: &str) -> Output {
    match String::from_utf8(bytes) {
        Ok(text) => Output::data(text),
        Err(err) => Output::input(format!("{what} is not UTF-8: {err}")),
    }
}

/// `--help`'s description.
pub(crate) fn long_about() -> String {
    paragraphs(
        "\
Print a completion script for this command line, generated from its definitions, for bash, zsh
or fish. Install it where the shell looks for completions (or `source` it).",
    )
}

/// `--help`'s examples and exit status.
pub(crate) fn after_help() -> String {
    "Examples:
  mps-preflight completions bash \\
      > ~/.local/share/bash-completion/completions/mps-preflight
  mps-preflight completions zsh > \"${fpath[1]}/_mps-preflight\"
  mps-preflight completions fish \\
      > ~/.config/fish/completions/mps-preflight.fish

Exit status:
  0  the script is on stdout
  2  usage error (a shell other than bash, zsh or fish)"
        .to_owned()
}

/// The shells `completions` writes for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub(crate) enum CompletionShell {
    Bash,
    Zsh,
    Fish,
}

#[derive(Debug, Args)]
pub(crate) struct CompletionsArgs {
    /// The shell
    #[arg(value_enum, value_name = "SHELL")]
    pub(crate) shell: CompletionShell,
}

/// `man --help`'s description.
pub(crate) fn man_long_about() -> String {
    paragraphs(
        "\
Print the man page, mps-preflight(1), in roff, generated from the same definitions as --help:
every command, its flags and its examples.",
    )
}

/// `man --help`'s examples and exit status.
pub(crate) fn man_after_help() -> String {
    "Examples:
  mps-preflight man > /usr/local/share/man/man1/mps-preflight.1
  mps-preflight man | man -l -

Exit status:
  0  the page is on stdout
  2  usage error"
        .to_owned()
}
