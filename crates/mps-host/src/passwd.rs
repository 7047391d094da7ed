//! Whom `--as-user` names: a UID as digits, or a user name looked up in `/etc/passwd` with a
//! bounded read (no NSS library: a name that only LDAP or SSSD knows must be given as its UID).

use std::io::Read as _;
use std::path::Path;

/// The local user database read for a name.
pub const PASSWD_PATH: &str = "/etc/passwd";

/// The most bytes of [`PASSWD_PATH`] read; a larger file is refused rather than half read.
pub const PASSWD_CAP: u64 = 4 << 20;

/// The UID that `user` names: decimal digits are a UID (0 to 4294967294; 4294967295 is
/// `(uid_t)-1`, no user), anything else a user name in [`PASSWD_PATH`].
///
/// # Errors
/// A message saying what to give instead: an unknown name, a number out of range, or a user
/// database that cannot be read.
pub fn resolve_user(user: &str) -> Result<u32, String> {
    resolve_user_in(user, Path::new(PASSWD_PATH))
}

/// [`resolve_user`] against the passwd file at `passwd`.
///
/// # Errors
/// As [`resolve_user`].
pub fn resolve_user_in(user: &str, passwd: &Path) -> Result<u32, String> {
    if user.is_empty() {
        return Err("expected a UID or a user name, got an empty string".to_owned());
    }
    if user.bytes().all(|byte| byte.is_ascii_digit()) {
        return match user.parse::<u32>() {
            Ok(uid) if uid != u32::MAX => Ok(uid),
            _ => Err(format!(
                "UID {user} is out of range: expected 0 to {}",
                u32::MAX - 1
            )),
        };
    }
    if user
        .bytes()
        .any(|byte| byte == b':' || byte.is_ascii_control())
    {
        return Err(format!(
            "{user:?} is not a user name (it holds ':' or a control character)"
        ));
    }
    let text = read_capped(passwd).map_err(|error| {
        format!(
            "cannot look up user {user:?} in {}: {error}; give the UID instead",
            passwd.display()
        )
    })?;
    uid_of(&text, user).ok_or_else(|| {
        format!(
            "no user named {user:?} in {}; give a UID, or a name listed there",
            passwd.display()
        )
    })
}

/// At most [`PASSWD_CAP`] bytes of `path`, lossily as text.
fn read_capped(path: &Path) -> Result<String, String> {
    let file = std::fs::File::open(path).map_err(|error| error.to_string())?;
    let mut bytes = Vec::new();
    file.take(PASSWD_CAP + 1)
        .read_to_end(&mut bytes)
        .map_err(|error| error.to_string())?;
    if u64::try_from(bytes.len()).unwrap_or(u64::MAX) > PASSWD_CAP {
        return Err(format!("it is larger than {PASSWD_CAP} bytes"));
    }
    Ok(String::from_utf8_lossy(&bytes).into_owned())
}

/// The UID of the first `name:password:uid:...` line whose name is `name` (NSS's order).
fn uid_of(passwd: &str, name: &str) -> Option<u32> {
    passwd.lines().find_map(|line| {
        let mut fields = line.split(':');
        if fields.next()? != name {
            return None;
        }
        let uid = fields.nth(1)?;
        uid.parse::<u32>().ok().filter(|uid| *uid != u32::MAX)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const PASSWD: &str = "root:x:0:0:root:/root:/bin/bash\n\
        # a comment\n\
        nobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin\n\
        alice:x:1001:1001::/home/alice:/bin/sh\n\
        alice:x:2002:2002::/home/alice2:/bin/sh\n\
        broken:x:notanumber:0::/:/bin/sh\n";

    #[test]
    fn a_name_is_its_first_lines_uid() {
        assert_eq!(uid_of(PASSWD, "root"), Some(0));
        assert_eq!(uid_of(PASSWD, "nobody"), Some(65534));
        assert_eq!(uid_of(PASSWD, "alice"), Some(1001));
        assert_eq!(uid_of(PASSWD, "broken"), None);
        assert_eq!(uid_of(PASSWD, "bob"), None);
        assert_eq!(uid_of(PASSWD, "# a comment"), None);
    }

    #[test]
    fn digits_are_a_uid_and_names_are_looked_up() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("passwd");
        std::fs::write(&path, PASSWD).unwrap();
        assert_eq!(resolve_user_in("1234", &path), Ok(1234));
        assert_eq!(resolve_user_in("0", &path), Ok(0));
        assert_eq!(resolve_user_in("alice", &path), Ok(1001));
        let unknown = resolve_user_in("bob", &path).unwrap_err();
        assert!(unknown.contains("no user named \"bob\""), "{unknown}");
        assert!(resolve_user_in("4294967295", &path).is_err());
        assert!(resolve_user_in("99999999999", &path).is_err());
        assert!(resolve_user_in("", &path).is_err());
        assert!(resolve_user_in("a:b", &path).is_err());
        assert!(resolve_user_in("a\nb", &path).is_err());
        let missing = resolve_user_in("alice", &dir.path().join("none")).unwrap_err();
        assert!(missing.contains("give the UID instead"), "{missing}");
    }

    #[test]
    fn a_passwd_file_over_the_cap_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("passwd");
        let line = "x".repeat(1023) + "\n";
        let big = line.repeat(usize::try_from(PASSWD_CAP / 1024).unwrap() + 1);
        std::fs::write(&path, format!("alice:x:1:1::/:/bin/sh\n{big}")).unwrap();
        let error = resolve_user_in("alice", &path).unwrap_err();
        assert!(error.contains("larger than"), "{error}");
    }
}
