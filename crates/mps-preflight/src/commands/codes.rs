//! `codes`: every finding code with its class (sharing-policy's `Code::class`), for scripts
//! that act on a finding by whom it is about: the fleet's Prolog drains a node only for a node
//! fault, and refuses the one job for a workload conflict or a setting.
//! Its arguments, help texts and run: one module per subcommand.

use std::fmt::Write as _;

use clap::{Args, ValueEnum};
use sharing_policy::{Code, CodeClass};

use crate::args::paragraphs;
use crate::output::Output;

/// `--help`'s description.
pub(crate) fn long_about() -> String {
    paragraphs(
        "\
Print every finding code of `probe`, `check` and `doctor` with its class, one per line:
`<code> <class>`. The class says whom a finding is about: `setting` (the request or the
settings that made it), `node-fault` (the node: its daemon, GPUs, control pipe, scope, compute
mode, or what could not be verified on it) or `workload-conflict` (the work already on the
node: another user's live MPS server, a server held in FAULT by its live clients). With
--class, only the codes of that class, one per line. Touches nothing on this host.",
    )
}

/// `--help`'s examples and exit status.
pub(crate) fn after_help() -> String {
    String::from(
        "Examples:
  mps-preflight codes
  mps-preflight codes --class workload-conflict

Exit status:
  0  the codes are on stdout
  2  usage error",
    )
}

/// A class, as `--class` spells it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub(crate) enum ClassArg {
    /// About the request or the settings that made it
    Setting,
    /// About the node
    NodeFault,
    /// About the work already on the node
    WorkloadConflict,
}

impl ClassArg {
    fn class(self) -> CodeClass {
        match self {
            Self::Setting => CodeClass::Setting,
            Self::NodeFault => CodeClass::NodeFault,
            Self::WorkloadConflict => CodeClass::WorkloadConflict,
        }
    }
}

#[derive(Debug, Args)]
pub(crate) struct CodesArgs {
    /// Only the codes of this class, one per line (without the class)
    #[arg(long, value_enum, value_name = "CLASS")]
    pub(crate) class: Option<ClassArg>,
}

/// `codes`: the table, or one class's codes.
pub(crate) fn run(args: &CodesArgs) -> Output {
    let mut text = String::new();
    for code in Code::ALL {
        match args.class {
            Some(wanted) if code.class() == wanted.class() => {
                let _ = writeln!(text, "{code}");
            }
            Some(_) => {}
            None => {
                let _ = writeln!(text, "{code} {}", code.class());
            }
        }
    }
    Output::data(text)
}
