//! The words of a `/proc` file that was not read ([`crate::proc_text`]).

use crate::proc_text::FileUnread;

/// Why a file of a process is not known: its recorded OS error, or that it was not read.
pub(crate) fn file_unread(why: &FileUnread) -> String {
    let FileUnread { pid, file, error } = why;
    match error {
        Some(error) => format!("/proc/{pid}/{file} could not be read: {error}"),
        None => format!("/proc/{pid}/{file} was not read"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_unread_file_is_named_with_its_error() {
        let mut why = FileUnread {
            pid: 4428,
            file: "environ",
            error: None,
        };
        assert_eq!(file_unread(&why), "/proc/4428/environ was not read");
        why.error = Some("Permission denied (os error 13)".to_owned());
        assert_eq!(
            file_unread(&why),
            "/proc/4428/environ could not be read: Permission denied (os error 13)"
        );
    }
}
