//! `--password-file`: who may connect, and the SCRAM verifier of each.
//!
//! ## The file
//!
//! ```text
//!  # comments and blank lines are skipped
//!  alice:correct horse battery staple          user:password (plaintext)
//!  bob:SCRAM-SHA-256$4096:<salt>$<StoredKey>:<ServerKey>
//!                                              user:verifier (pg_authid's)
//! ```
//!
//! One user per line; the user name runs to the first `:` (so it cannot
//! contain one) and everything after it is the password, spaces and colons
//! included. A password that starts with `SCRAM-SHA-256$` is a verifier in
//! PostgreSQL's `pg_authid.rolpassword` form (what `SELECT rolpassword
//! FROM pg_authid` prints, or `postgres_protocol::password::scram_sha_256`
//! writes), as PostgreSQL itself treats `ALTER ROLE .. PASSWORD
//! 'SCRAM-SHA-256$...'`. A plaintext password becomes a verifier with a
//! fresh salt when the file is read, so the server keeps no password.
//! A malformed line, an empty user or password, or a user named twice is
//! an error naming `file:line`.
//!
//! ## Permissions
//!
//! The file is refused when group or others may read or write it (mode
//! `& 077 != 0`), with the `chmod 600` to fix it: it holds passwords or
//! verifiers, and a verifier is not harmless (with StoredKey and one
//! recorded exchange an eavesdropper recovers ClientKey and logs in;
//! ServerKey lets anyone pose as the server). PostgreSQL refuses its
//! server key file and libpq ignores a `.pgpass` for the same reason.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use crate::scram::Verifier;

/// Errors reading a password file.
#[derive(Debug, thiserror::Error)]
pub enum PasswordFileError {
    #[error("cannot read the password file {path}: {source}")]
    Io { path: PathBuf, source: std::io::Error },
    #[error(
        "the password file {path} has mode {mode:o}: group or others may read it; \
         run `chmod 600 {path}` (it holds passwords or SCRAM verifiers)"
    )]
    Permissions { path: PathBuf, mode: u32 },
    #[error("{path}:{line}: {message}")]
    Line { path: PathBuf, line: usize, message: String },
    #[error("the password file {0} names no user: add lines `user:password`")]
    Empty(PathBuf),
}

/// The users of a password file, with their verifiers.
pub struct Passwords {
    users: HashMap<String, Verifier>,
    /// Derives the mock salt of unknown users (per process).
    mock_secret: [u8; 32],
}

impl std::fmt::Debug for Passwords {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Passwords({} users)", self.users.len())
    }
}

impl Passwords {
    /// Reads and checks `path` (permissions, then every line).
    pub fn load(path: &Path) -> Result<Passwords, PasswordFileError> {
        let io = |source| PasswordFileError::Io { path: path.to_path_buf(), source };
        let meta = std::fs::metadata(path).map_err(io)?;
        {
            use std::os::unix::fs::PermissionsExt;
            let mode = meta.permissions().mode() & 0o777;
            if mode & 0o077 != 0 {
                return Err(PasswordFileError::Permissions { path: path.to_path_buf(), mode });
            }
        }
        let text = std::fs::read_to_string(path).map_err(io)?;
        Passwords::parse(&text, path)
    }

    /// Parses the file's text; `path` names it in errors.
    pub fn parse(text: &str, path: &Path) -> Result<Passwords, PasswordFileError> {
        let mut users = HashMap::new();
        for (i, raw) in text.lines().enumerate() {
            let err = |message: String| PasswordFileError::Line { path: path.to_path_buf(), line: i + 1, message };
            let line = raw.strip_suffix('\r').unwrap_or(raw);
            if line.trim().is_empty() || line.trim_start().starts_with('#') {
                continue;
            }
            let Some((user, password)) = line.split_once(':') else {
                return Err(err("expected `user:password` or `user:SCRAM-SHA-256$...` (no ':' found)".into()));
            };
            if user.is_empty() || user.trim() != user {
                return Err(err(format!("bad user name {user:?}: it must be non-empty, without surrounding spaces")));
            }
            if password.is_empty() {
                return Err(err(format!("user \"{user}\" has an empty password")));
            }
            let verifier = if password.starts_with("SCRAM-SHA-256$") {
                Verifier::parse(password).map_err(|m| err(format!("bad SCRAM-SHA-256 verifier for \"{user}\": {m}")))?
            } else {
                Verifier::from_password(password)
            };
            if users.insert(user.to_string(), verifier).is_some() {
                return Err(err(format!("user \"{user}\" is named twice")));
            }
        }
        if users.is_empty() {
            return Err(PasswordFileError::Empty(path.to_path_buf()));
        }
        let mut mock_secret = [0u8; 32];
        rand::fill(&mut mock_secret);
        Ok(Passwords { users, mock_secret })
    }

    /// The verifier of `user`, or a mock one (false) that no password matches.
    pub fn verifier(&self, user: &str) -> (Verifier, bool) {
        match self.users.get(user) {
            Some(v) => (v.clone(), true),
            None => (Verifier::mock(user, &self.mock_secret), false),
        }
    }

    pub fn len(&self) -> usize {
        self.users.len()
    }

    pub fn is_empty(&self) -> bool {
        self.users.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str) -> Result<Passwords, String> {
        Passwords::parse(text, Path::new("pw")).map_err(|e| e.to_string())
    }

    #[test]
    fn lines_are_users_and_errors_name_the_line() {
        let p = parse("# users\n\nalice:a:b c\nbob:SCRAM-SHA-256$4096:c2FsdA==$AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=:AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=\r\n")
            .unwrap();
        assert_eq!(p.len(), 2);
        assert!(p.verifier("alice").1 && p.verifier("bob").1 && !p.verifier("carol").1);
        // The mock salt of an unknown user is stable; the keys are not a user's.
        assert_eq!(p.verifier("carol").0.salt, p.verifier("carol").0.salt);
        assert_ne!(p.verifier("carol").0.salt, p.verifier("dave").0.salt);
        assert_eq!(parse("alice\n").unwrap_err().split(':').take(2).collect::<Vec<_>>(), ["pw", "1"]);
        assert!(parse("a:x\n\n:y\n").unwrap_err().starts_with("pw:3: bad user name"));
        assert!(parse("a:\n").unwrap_err().contains("empty password"));
        assert!(parse("a:x\na:y\n").unwrap_err().starts_with("pw:2: user \"a\" is named twice"));
        assert!(parse("a:SCRAM-SHA-256$4096:zz\n").unwrap_err().starts_with("pw:1: bad SCRAM-SHA-256 verifier"));
        assert!(parse("# nobody\n").unwrap_err().contains("names no user"));
    }

    #[test]
    fn a_file_others_may_read_is_refused() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("pw");
        std::fs::write(&path, "a:b\n").unwrap();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o640)).unwrap();
        let e = Passwords::load(&path).unwrap_err().to_string();
        assert!(e.contains("chmod 600"), "{e}");
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o600)).unwrap();
        assert_eq!(Passwords::load(&path).unwrap().len(), 1);
    }
}
