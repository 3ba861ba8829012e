//! A cheap lexer for the statements sluice must recognize on the hot path,
//! without a full parse: it skips whitespace and comments and reads words.

/// Skip whitespace and comments (`-- `, `#`, `/* */`). Executable comments
/// (`/*!...*/`, `/*M!...*/`) are content, so they are not skipped.
pub fn skip_space_and_comments(mut s: &[u8]) -> &[u8] {
    loop {
        let before = s.len();
        while let Some((c, rest)) = s.split_first() {
            if c.is_ascii_whitespace() {
                s = rest;
            } else {
                break;
            }
        }
        if s.starts_with(b"/*") && !s.starts_with(b"/*!") && !s.starts_with(b"/*M!") {
            match find(s, b"*/") {
                Some(end) => s = &s[end + 2..],
                None => return &[],
            }
        } else if s.starts_with(b"#")
            || s.starts_with(b"-- ")
            || s == b"--"
            || s.starts_with(b"--\t")
            || s.starts_with(b"--\n")
        {
            match s.iter().position(|&c| c == b'\n') {
                Some(nl) => s = &s[nl + 1..],
                None => return &[],
            }
        }
        if s.len() == before {
            return s;
        }
    }
}

fn find(hay: &[u8], needle: &[u8]) -> Option<usize> {
    hay.windows(needle.len()).position(|w| w == needle)
}

/// The first keyword, upper-cased, and the rest after it.
pub fn first_word(sql: &[u8]) -> (String, &[u8]) {
    let s = skip_space_and_comments(sql);
    let end = s
        .iter()
        .position(|c| !(c.is_ascii_alphanumeric() || *c == b'_'))
        .unwrap_or(s.len());
    (String::from_utf8_lossy(&s[..end]).to_ascii_uppercase(), &s[end..])
}

/// `USE db` / ``USE `db` ``: the database name, if the statement is one.
pub fn use_database(sql: &[u8]) -> Option<String> {
    let (word, rest) = first_word(sql);
    if word != "USE" {
        return None;
    }
    let rest = skip_space_and_comments(rest);
    let (name, after) = if let Some(r) = rest.strip_prefix(b"`") {
        // Backtick-quoted: `` doubles a backtick.
        let mut name = Vec::new();
        let mut i = 0;
        loop {
            match r.get(i) {
                Some(b'`') if r.get(i + 1) == Some(&b'`') => {
                    name.push(b'`');
                    i += 2;
                }
                Some(b'`') => break (name, &r[i + 1..]),
                Some(c) => {
                    name.push(*c);
                    i += 1;
                }
                None => return None,
            }
        }
    } else {
        let end = rest
            .iter()
            .position(|c| c.is_ascii_whitespace() || *c == b';')
            .unwrap_or(rest.len());
        (rest[..end].to_vec(), &rest[end..])
    };
    let after = skip_space_and_comments(after);
    let after = after.strip_prefix(b";").unwrap_or(after);
    if name.is_empty() || !skip_space_and_comments(after).is_empty() {
        return None;
    }
    String::from_utf8(name).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn words_and_comments() {
        assert_eq!(first_word(b"  /* x */ select 1").0, "SELECT");
        assert_eq!(first_word(b"-- c\nINSERT").0, "INSERT");
        assert_eq!(first_word(b"/*!40101 SET x=1*/").0, "");
        assert_eq!(first_word(b"").0, "");
    }

    #[test]
    fn use_db() {
        assert_eq!(use_database(b"USE test"), Some("test".into()));
        assert_eq!(use_database(b"use `we``ird db`;"), Some("we`ird db".into()));
        assert_eq!(use_database(b"USE a; SELECT 1"), None);
        assert_eq!(use_database(b"USER"), None);
        assert_eq!(use_database(b"USE"), None);
    }
}
