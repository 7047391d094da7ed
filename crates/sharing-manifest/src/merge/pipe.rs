//! Which ranks name one control pipe. `CUDA_MPS_PIPE_DIRECTORY=/p`, `/p/`,
//! `/p/./` and `//p` all name the socket `/p/control`, so ranks are grouped by the pipe
//! directory read lexically: repeated slashes joined, `.` components and a trailing slash
//! dropped. Symbolic links are not resolved (merge reads evidence, not the host it came from),
//! and `..` is kept, since `a/../b` is `b` only when `a` is no symbolic link.

/// The pipe directory in the lexical form described in the module notes.
pub(super) fn normalised(directory: &str) -> String {
    let absolute = directory.starts_with('/');
    let parts: Vec<&str> = directory
        .split('/')
        .filter(|part| !part.is_empty() && *part != ".")
        .collect();
    let joined = parts.join("/");
    match (absolute, joined.is_empty()) {
        (true, _) => format!("/{joined}"),
        (false, true) => ".".to_owned(),
        (false, false) => joined,
    }
}

/// The control pipe in the same form: `<normalised directory>/control`.
pub(super) fn normalised_control(path: &str) -> String {
    match path.rsplit_once('/') {
        Some((directory, name)) if !name.is_empty() => {
            let directory = if directory.is_empty() && path.starts_with('/') {
                "/"
            } else if directory.is_empty() {
                "."
            } else {
                directory
            };
            let directory = normalised(directory);
            if directory.ends_with('/') {
                format!("{directory}{name}")
            } else {
                format!("{directory}/{name}")
            }
        }
        _ => normalised(path),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spellings_of_one_directory_are_one() {
        for spelling in ["/p", "/p/", "/p/./", "//p", "/./p//", "///p/."] {
            assert_eq!(normalised(spelling), "/p", "{spelling:?}");
        }
        for spelling in ["/", "//", "/./"] {
            assert_eq!(normalised(spelling), "/", "{spelling:?}");
        }
        assert_eq!(normalised("p/"), "p");
        assert_eq!(normalised("./p"), "p");
        assert_eq!(normalised("."), ".");
    }

    #[test]
    fn dot_dot_and_case_are_kept() {
        assert_eq!(normalised("/a/../p"), "/a/../p");
        assert_ne!(normalised("/P"), normalised("/p"));
        assert_ne!(normalised("/p q"), normalised("/p"));
    }

    #[test]
    fn control_paths_normalise_their_directory() {
        assert_eq!(normalised_control("/p/control"), "/p/control");
        assert_eq!(normalised_control("//p//control"), "/p/control");
        assert_eq!(normalised_control("/p/./control"), "/p/control");
        assert_eq!(normalised_control("/control"), "/control");
        assert_eq!(normalised_control("p/control"), "p/control");
    }
}
