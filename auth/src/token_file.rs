//! Static bearer tokens, in kube-apiserver's `--token-auth-file` format
//! (`tokenfile.go`): CSV records `token,user,uid[,"group1,group2"]`,
//! read as Go's `encoding/csv` reads them (RFC 4180 quotes, no trimming,
//! blank lines skipped, a stray `"` an error), columns past the fourth
//! ignored. A record with fewer than three columns fails the file, as it
//! fails the apiserver's start; an empty token is skipped; of two
//! records with the same token the last wins.

use std::collections::HashMap;
use std::path::Path;

use crate::user::User;

/// Why a token file was refused.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TokenFileError {
    /// It could not be read.
    Io(String),
    /// A record has fewer than three columns.
    TooFewColumns {
        /// The record's line (from 1).
        line: usize,
        /// Its columns.
        found: usize,
    },
    /// The CSV does not parse (a stray or unclosed quote).
    Csv {
        /// Where (line, from 1).
        line: usize,
        /// What.
        what: &'static str,
    },
}

impl std::fmt::Display for TokenFileError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            TokenFileError::Io(e) => write!(f, "{e}"),
            TokenFileError::TooFewColumns { line, found } => write!(
                f,
                "line {line}: must have at least 3 columns (token, user name, user uid), found {found}"
            ),
            TokenFileError::Csv { line, what } => write!(f, "line {line}: {what}"),
        }
    }
}

impl std::error::Error for TokenFileError {}

/// The tokens of a token file.
#[derive(Debug, Clone, Default)]
pub struct TokenFile {
    users: HashMap<String, User>,
}

impl TokenFile {
    /// Reads the file at `path`.
    pub fn from_file(path: &Path) -> Result<TokenFile, TokenFileError> {
        let text = std::fs::read_to_string(path)
            .map_err(|e| TokenFileError::Io(format!("{}: {e}", path.display())))?;
        TokenFile::parse(&text)
    }

    /// Parses a token file's text.
    pub fn parse(text: &str) -> Result<TokenFile, TokenFileError> {
        let mut users = HashMap::new();
        for (line, record) in records(text)? {
            if record.len() < 3 {
                return Err(TokenFileError::TooFewColumns {
                    line,
                    found: record.len(),
                });
            }
            if record[0].is_empty() {
                continue;
            }
            let groups = record
                .get(3)
                .map(|g| g.split(',').map(str::to_owned).collect())
                .unwrap_or_default();
            let user = User {
                name: record[1].clone(),
                uid: record[2].clone(),
                groups,
                ..User::default()
            };
            users.insert(record[0].clone(), user);
        }
        Ok(TokenFile { users })
    }

    /// The user of `token`, if it is one of the file's.
    pub fn user(&self, token: &str) -> Option<&User> {
        self.users.get(token)
    }

    /// How many tokens the file holds.
    pub fn len(&self) -> usize {
        self.users.len()
    }

    /// Whether it holds none.
    pub fn is_empty(&self) -> bool {
        self.users.is_empty()
    }
}

/// The records of a CSV text, each with the line it starts on.
fn records(text: &str) -> Result<Vec<(usize, Vec<String>)>, TokenFileError> {
    let mut out = Vec::new();
    let mut chars = text.chars().peekable();
    let mut line = 1;
    while chars.peek().is_some() {
        let start = line;
        let mut record = Vec::new();
        let mut field = String::new();
        let mut blank = true;
        loop {
            match chars.next() {
                None => {
                    record.push(std::mem::take(&mut field));
                    break;
                }
                Some('\n') => {
                    line += 1;
                    record.push(std::mem::take(&mut field));
                    break;
                }
                Some('\r') if chars.peek() == Some(&'\n') => {}
                Some(',') => {
                    blank = false;
                    record.push(std::mem::take(&mut field));
                }
                Some('"') if field.is_empty() => {
                    blank = false;
                    loop {
                        match chars.next() {
                            None => {
                                return Err(TokenFileError::Csv {
                                    line: start,
                                    what: "extraneous or missing \" in quoted-field",
                                });
                            }
                            Some('"') if chars.peek() == Some(&'"') => {
                                chars.next();
                                field.push('"');
                            }
                            Some('"') => break,
                            Some(c) => {
                                if c == '\n' {
                                    line += 1;
                                }
                                field.push(c);
                            }
                        }
                    }
                    if !matches!(chars.peek(), None | Some(',' | '\n' | '\r')) {
                        return Err(TokenFileError::Csv {
                            line,
                            what: "extraneous or missing \" in quoted-field",
                        });
                    }
                }
                Some('"') => {
                    return Err(TokenFileError::Csv {
                        line,
                        what: "bare \" in non-quoted-field",
                    });
                }
                Some(c) => {
                    blank = false;
                    field.push(c);
                }
            }
        }
        if !(blank && record.len() == 1 && record[0].is_empty()) {
            out.push((start, record));
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn records_as_the_apiserver_reads_them() {
        let f = TokenFile::parse(
            "t1,alice,uid-1,\"devs,ops\"\r\n\nt2,bob,uid-2\n,skipped,x\nt1,carol,uid-3,\"a\"\"b\",extra\n",
        )
        .unwrap();
        assert_eq!(f.len(), 2);
        let carol = f.user("t1").unwrap();
        assert_eq!(
            (carol.name.as_str(), carol.uid.as_str()),
            ("carol", "uid-3")
        );
        assert_eq!(carol.groups, ["a\"b"]);
        assert!(f.user("t2").unwrap().groups.is_empty());
        assert!(f.user("").is_none());
        let empty_groups = TokenFile::parse("t,u,i,\n").unwrap();
        assert_eq!(empty_groups.user("t").unwrap().groups, [""]);
        let spaced = TokenFile::parse(" t , u,i\n").unwrap();
        assert!(spaced.user(" t ").is_some());
    }

    #[test]
    fn a_bad_file_is_refused_with_its_line() {
        assert_eq!(
            TokenFile::parse("a,b,c\nt,u\n").unwrap_err(),
            TokenFileError::TooFewColumns { line: 2, found: 2 }
        );
        assert!(matches!(
            TokenFile::parse("t,u\"x,i\n"),
            Err(TokenFileError::Csv { line: 1, .. })
        ));
        assert!(matches!(
            TokenFile::parse("\"t,u,i\n"),
            Err(TokenFileError::Csv { .. })
        ));
        assert!(TokenFile::parse("").unwrap().is_empty());
    }
}
