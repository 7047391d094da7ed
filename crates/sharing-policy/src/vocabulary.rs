//! Which words a message uses for the request's settings: the reference module's configuration
//! (`training.cuda_process_sharing='mps'`, `learner_device='gpu0'`) or this project's command
//! line (`--request mps`, `--learner-device gpu0`). One set of message builders renders either;
//! the key phrases users grep for are the same in both.

use serde::{Deserialize, Serialize};

use crate::text::repr;

/// The words of the messages, chosen by the caller ([`crate::Request::vocabulary`]).
///
/// Both render the same findings with the same codes and the same key phrases ("expected null
/// or 'mps'", "could not reach the control daemon", …); they differ in how a setting is named
/// and in the jargon of the reference's configuration.
///
/// ```
/// use sharing_policy::{validate, HostFacts, EnvFacts, Request, Vocabulary};
///
/// let facts = HostFacts::unobserved("linux", EnvFacts::default());
/// let mut request = Request::new(Some("mps"), "gpu0", Some("cuda:0"), "mjwarp");
/// let reference = validate(&request, &facts).unwrap_err().to_string();
/// assert!(reference.contains("requires CUDA learner and collector devices; got learner_device='gpu0'"));
///
/// request.vocabulary = Vocabulary::Cli;
/// let cli = validate(&request, &facts).unwrap_err().to_string();
/// assert!(cli.starts_with("--request mps requires CUDA learner and collector devices; got --learner-device gpu0"));
/// ```
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
#[non_exhaustive]
pub enum Vocabulary {
    /// The reference module's wording, exactly (`training.cuda_process_sharing='mps' requires a
    /// valid rank in [0, world_size); got rank=2, world_size=2`): for its drop-in replacements.
    #[default]
    Reference,
    /// The command line's own terms (`--request mps requires a valid rank in [0, --world-size);
    /// got --rank 2 --world-size 2`), with no reference jargon, and a failed query's output
    /// shown as its text rather than quoted.
    Cli,
}

/// A setting of the request, as messages name it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Setting {
    Mode,
    Backend,
    LearnerDevice,
    CollectorDevice,
    Rank,
    WorldSize,
}

impl Vocabulary {
    /// The subject of an explicit request's messages.
    pub(crate) fn mps(self) -> &'static str {
        match self {
            Self::Reference => "training.cuda_process_sharing='mps'",
            Self::Cli => "--request mps",
        }
    }

    /// The subject of the learner-identity messages (the reference drops `='mps'` there).
    pub(crate) fn sharing(self) -> &'static str {
        match self {
            Self::Reference => "training.cuda_process_sharing",
            Self::Cli => "--request mps",
        }
    }

    /// The setting's name: `learner_device`, `--learner-device`.
    pub(crate) fn name(self, setting: Setting) -> &'static str {
        match (self, setting) {
            (Self::Reference, Setting::Mode) => "training.cuda_process_sharing",
            (Self::Reference, Setting::Backend) => "training.sim_backend",
            (Self::Reference, Setting::LearnerDevice) => "learner_device",
            (Self::Reference, Setting::CollectorDevice) => "collector_device",
            (Self::Reference, Setting::Rank) => "rank",
            (Self::Reference, Setting::WorldSize) => "world_size",
            (Self::Cli, Setting::Mode) => "--request",
            (Self::Cli, Setting::Backend) => "--backend",
            (Self::Cli, Setting::LearnerDevice) => "--learner-device",
            (Self::Cli, Setting::CollectorDevice) => "--collector-device",
            (Self::Cli, Setting::Rank) => "--rank",
            (Self::Cli, Setting::WorldSize) => "--world-size",
        }
    }

    /// The setting with a text value: `learner_device='gpu0'`, `--learner-device gpu0` (a value
    /// a shell would split or expand is quoted, control characters escaped).
    pub(crate) fn assign(self, setting: Setting, value: &str) -> String {
        let name = self.name(setting);
        match self {
            Self::Reference => [name, "=", &repr(value)].concat(),
            Self::Cli => [name, " ", &cli_word(value)].concat(),
        }
    }

    /// The setting with a number: `rank=2`, `--rank 2`.
    pub(crate) fn assign_number(self, setting: Setting, value: i64) -> String {
        let separator = match self {
            Self::Reference => "=",
            Self::Cli => " ",
        };
        format!("{}{separator}{value}", self.name(setting))
    }

    /// How to ask for no sharing at all.
    pub(crate) fn null_request(self) -> &'static str {
        match self {
            Self::Reference => "set training.cuda_process_sharing to null",
            Self::Cli => "use --request null",
        }
    }
}

/// A value as a command-line word: as it is when a shell leaves it alone, else Python-quoted
/// (which also escapes control characters, so the message stays one line).
fn cli_word(value: &str) -> String {
    let plain = crate::shell_quote(value);
    if plain == value { plain } else { repr(value) }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn settings_read_as_each_vocabulary_writes_them() {
        let (r, c) = (Vocabulary::Reference, Vocabulary::Cli);
        assert_eq!(
            r.assign(Setting::Backend, "mujoco"),
            "training.sim_backend='mujoco'"
        );
        assert_eq!(c.assign(Setting::Backend, "mujoco"), "--backend mujoco");
        assert_eq!(
            c.assign(Setting::LearnerDevice, "my gpu"),
            "--learner-device 'my gpu'"
        );
        assert_eq!(
            c.assign(Setting::LearnerDevice, "a\nb"),
            r"--learner-device 'a\nb'"
        );
        assert_eq!(c.assign(Setting::Mode, ""), "--request ''");
        assert_eq!(r.assign_number(Setting::Rank, 2), "rank=2");
        assert_eq!(c.assign_number(Setting::WorldSize, 2), "--world-size 2");
    }
}
