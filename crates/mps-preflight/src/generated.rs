//! `completions` and `man`: texts generated from the clap definitions, so they cannot drift from
//! `--help` (issue 16 part 7).

use clap::CommandFactory as _;
use clap_complete::Shell;

use crate::cli::{Cli, CompletionShell, CompletionsArgs};
use crate::output::Output;

pub(crate) fn completions(args: &CompletionsArgs) -> Output {
    let shell = match args.shell {
        CompletionShell::Bash => Shell::Bash,
        CompletionShell::Zsh => Shell::Zsh,
        CompletionShell::Fish => Shell::Fish,
    };
    let mut script = Vec::new();
    clap_complete::generate(shell, &mut Cli::command(), "mps-preflight", &mut script);
    text(script, "the completion script")
}

/// mps-preflight(1): the top-level page, then one section per command with its own help.
pub(crate) fn man() -> Output {
    let command = Cli::command();
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
    text(page, "the man page")
}

fn text(bytes: Vec<u8>, what: &str) -> Output {
    match String::from_utf8(bytes) {
        Ok(text) => Output::data(text),
        Err(err) => Output::input(format!("{what} is not UTF-8: {err}")),
    }
}
