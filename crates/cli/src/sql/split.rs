//! Where a statement ends: input is complete when its last non-blank
//! character is a `;` outside quotes, comments and dollar-quoted strings.

/// Whether `text` ends with a complete statement.
pub fn complete(text: &str) -> bool {
    let mut last_semicolon_at_top = false;
    let b = text.as_bytes();
    let mut i = 0;
    while i < b.len() {
        let c = b[i];
        match c {
            b'\'' | b'"' => {
                i = skip_quoted(b, i, c);
                last_semicolon_at_top = false;
                continue;
            }
            b'-' if b.get(i + 1) == Some(&b'-') => {
                while i < b.len() && b[i] != b'\n' {
                    i += 1;
                }
                continue;
            }
            b'/' if b.get(i + 1) == Some(&b'*') => {
                i = skip_block_comment(b, i);
                continue;
            }
            b'$' => {
                if let Some(end) = skip_dollar(b, i) {
                    i = end;
                    last_semicolon_at_top = false;
                    continue;
                }
                last_semicolon_at_top = false;
            }
            b';' => last_semicolon_at_top = true,
            c if c.is_ascii_whitespace() => {}
            _ => last_semicolon_at_top = false,
        }
        i += 1;
    }
    last_semicolon_at_top && !open_quote_or_comment(b)
}

/// Index after the closing quote (doubled quotes are part of the string),
/// or the end when unterminated.
fn skip_quoted(b: &[u8], start: usize, q: u8) -> usize {
    let mut i = start + 1;
    while i < b.len() {
        if b[i] == q {
            if b.get(i + 1) == Some(&q) {
                i += 2;
                continue;
            }
            return i + 1;
        }
        i += 1;
    }
    b.len() + 1
}

fn skip_block_comment(b: &[u8], start: usize) -> usize {
    let mut i = start + 2;
    while i + 1 < b.len() {
        if b[i] == b'*' && b[i + 1] == b'/' {
            return i + 2;
        }
        i += 1;
    }
    b.len() + 1
}

/// `$tag$ ... $tag$`: index after the closing tag, or None if `$` does not
/// open one (a parameter such as `$1`).
fn skip_dollar(b: &[u8], start: usize) -> Option<usize> {
    let mut j = start + 1;
    while j < b.len() && (b[j].is_ascii_alphanumeric() || b[j] == b'_') {
        if j == start + 1 && b[j].is_ascii_digit() {
            return None;
        }
        j += 1;
    }
    if b.get(j) != Some(&b'$') {
        return None;
    }
    let tag = &b[start..=j];
    let body = j + 1;
    let mut k = body;
    while k + tag.len() <= b.len() {
        if &b[k..k + tag.len()] == tag {
            return Some(k + tag.len());
        }
        k += 1;
    }
    Some(b.len() + 1)
}

/// Whether scanning ran past the end inside a quote or comment.
fn open_quote_or_comment(b: &[u8]) -> bool {
    let mut i = 0;
    while i < b.len() {
        match b[i] {
            b'\'' | b'"' => i = skip_quoted(b, i, b[i]),
            b'-' if b.get(i + 1) == Some(&b'-') => {
                while i < b.len() && b[i] != b'\n' {
                    i += 1;
                }
            }
            b'/' if b.get(i + 1) == Some(&b'*') => i = skip_block_comment(b, i),
            b'$' => i = skip_dollar(b, i).unwrap_or(i + 1),
            _ => i += 1,
        }
        if i > b.len() {
            return true;
        }
    }
    false
}

#[cfg(test)]
mod tests {
    use super::complete;

    #[test]
    fn statements_end_at_a_semicolon_outside_quotes_and_comments() {
        assert!(complete("select 1;"));
        assert!(complete("select 1;  \n"));
        assert!(!complete("select 1"));
        assert!(!complete("select ';"));
        assert!(complete("select ';';"));
        assert!(complete("select 'it''s';"));
        assert!(!complete("select 1 -- done;"));
        assert!(complete("select 1; -- done\n"));
        assert!(!complete("select /* ; */ 1"));
        assert!(complete("select $$a;b$$;"));
        assert!(!complete("select $$a;b;"));
        assert!(complete("select $1;"));
        assert!(!complete("select \"a;"));
    }
}
