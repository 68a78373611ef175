//! SQL as tokens, for the few facts of a schema that SQLite stores only as
//! the text it was given: a column's CHECK clause, its AUTOINCREMENT and a
//! partial index's WHERE clause. Everything else comes from SQLite's
//! pragmas (super::schema). Tokens compare two texts without their
//! spacing, case and comments, and let SQLite itself evaluate a CHECK
//! clause on probe values.

/// One token: keywords and identifiers lowercased (SQLite's are
/// case-insensitive), literals as written.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Token {
    /// `as_written` keeps the case for showing; tokens compare by `text`.
    Word {
        text: String,
        quoted: bool,
        as_written: Spelling,
    },
    Str(String),
    Num(String),
    Blob(String),
    Punct(String),
}

/// How a word was written: shown, never compared.
#[derive(Debug, Clone, Default)]
pub struct Spelling(pub String);

impl PartialEq for Spelling {
    fn eq(&self, _: &Spelling) -> bool {
        true
    }
}

impl Eq for Spelling {}

impl Token {
    /// An unquoted word, written as `text`.
    pub fn word(text: &str) -> Token {
        Token::Word { text: text.to_lowercase(), quoted: false, as_written: Spelling(text.to_string()) }
    }

    pub fn is_word(&self, word: &str) -> bool {
        matches!(self, Token::Word { text, quoted: false, .. } if text == word)
    }

    fn is_punct(&self, p: &str) -> bool {
        matches!(self, Token::Punct(text) if text == p)
    }

    /// The token as SQL again.
    pub fn sql(&self) -> String {
        match self {
            Token::Word { quoted: true, as_written, .. } => {
                format!("\"{}\"", as_written.0.replace('"', "\"\""))
            }
            Token::Word { as_written, .. } => as_written.0.clone(),
            Token::Num(text) | Token::Punct(text) => text.clone(),
            Token::Str(text) => format!("'{}'", text.replace('\'', "''")),
            Token::Blob(hex) => format!("x'{hex}'"),
        }
    }
}

/// The tokens of `sql`; comments and spacing dropped.
pub fn tokens(sql: &str) -> Vec<Token> {
    let chars: Vec<char> = sql.chars().collect();
    let mut out = Vec::new();
    let mut i = 0;
    let until = |from: usize, end: char| {
        // A quote doubled inside a quoted text is the quote itself.
        let mut j = from;
        let mut text = String::new();
        while j < chars.len() {
            if chars[j] == end {
                if chars.get(j + 1) == Some(&end) {
                    text.push(end);
                    j += 2;
                    continue;
                }
                return (text, j + 1);
            }
            text.push(chars[j]);
            j += 1;
        }
        (text, j)
    };
    while i < chars.len() {
        let c = chars[i];
        if c.is_whitespace() {
            i += 1;
        } else if c == '-' && chars.get(i + 1) == Some(&'-') {
            while i < chars.len() && chars[i] != '\n' {
                i += 1;
            }
        } else if c == '/' && chars.get(i + 1) == Some(&'*') {
            i += 2;
            while i < chars.len() && !(chars[i] == '*' && chars.get(i + 1) == Some(&'/')) {
                i += 1;
            }
            i += 2;
        } else if (c == 'x' || c == 'X') && chars.get(i + 1) == Some(&'\'') {
            let (hex, next) = until(i + 2, '\'');
            out.push(Token::Blob(hex.to_lowercase()));
            i = next;
        } else if c == '\'' {
            let (text, next) = until(i + 1, '\'');
            out.push(Token::Str(text));
            i = next;
        } else if c == '"' || c == '`' || c == '[' {
            let end = if c == '[' { ']' } else { c };
            let (text, next) = until(i + 1, end);
            out.push(Token::Word { text: text.to_lowercase(), quoted: true, as_written: Spelling(text) });
            i = next;
        } else if c.is_ascii_digit() || (c == '.' && chars.get(i + 1).is_some_and(char::is_ascii_digit)) {
            let start = i;
            while i < chars.len() && (chars[i].is_ascii_alphanumeric() || chars[i] == '.') {
                i += 1;
            }
            out.push(Token::Num(chars[start..i].iter().collect()));
        } else if c.is_alphanumeric() || c == '_' || c == '$' {
            let start = i;
            while i < chars.len() && (chars[i].is_alphanumeric() || chars[i] == '_' || chars[i] == '$') {
                i += 1;
            }
            let text: String = chars[start..i].iter().collect();
            out.push(Token::word(&text));
        } else {
            let two: String = chars[i..(i + 2).min(chars.len())].iter().collect();
            let len =
                if ["<=", ">=", "<>", "!=", "==", "||", "<<", ">>"].contains(&two.as_str()) { 2 } else { 1 };
            out.push(Token::Punct(chars[i..i + len].iter().collect()));
            i += len;
        }
    }
    out
}

/// Tokens as one line of SQL: a space between each two, but none inside
/// a negative number (`-100`, not `- 100`).
pub fn render(tokens: &[Token]) -> String {
    let mut out = String::new();
    for (i, token) in tokens.iter().enumerate() {
        let unary_before =
            i >= 1 && tokens[i - 1].is_punct("-") && (i == 1 || starts_operand(&tokens[i - 2]));
        if i > 0 && !unary_before {
            out.push(' ');
        }
        out.push_str(&token.sql());
    }
    out
}

/// Whether a minus after this token is a sign, not a subtraction.
fn starts_operand(token: &Token) -> bool {
    const KEYWORDS: [&str; 11] =
        ["between", "and", "or", "not", "when", "then", "else", "is", "in", "select", "default"];
    match token {
        Token::Punct(p) => p != ")",
        Token::Word { quoted: false, .. } => KEYWORDS.iter().any(|k| token.is_word(k)),
        _ => false,
    }
}

/// The parts of a CREATE TABLE between its outer parentheses, split at
/// their commas: each column's definition, then the table's constraints.
pub fn definitions(create_table: &[Token]) -> Vec<Vec<Token>> {
    let Some(open) = create_table.iter().position(|t| t.is_punct("(")) else { return Vec::new() };
    let mut parts = vec![Vec::new()];
    let mut depth = 0;
    for token in &create_table[open + 1..] {
        if token.is_punct("(") {
            depth += 1;
        } else if token.is_punct(")") {
            if depth == 0 {
                break;
            }
            depth -= 1;
        } else if depth == 0 && token.is_punct(",") {
            parts.push(Vec::new());
            continue;
        }
        parts.last_mut().expect("one part at least").push(token.clone());
    }
    parts.retain(|p| !p.is_empty());
    parts
}

/// Whether a definition is a table constraint, not a column.
pub fn is_table_constraint(definition: &[Token]) -> bool {
    definition
        .first()
        .is_some_and(|t| ["constraint", "check", "primary", "unique", "foreign"].iter().any(|w| t.is_word(w)))
}

/// The expressions of every CHECK in a definition, each without its
/// parentheses.
pub fn checks(definition: &[Token]) -> Vec<Vec<Token>> {
    let mut found = Vec::new();
    let mut i = 0;
    while i < definition.len() {
        if definition[i].is_word("check") && definition.get(i + 1).is_some_and(|t| t.is_punct("(")) {
            let (inside, end) = group(definition, i + 1);
            found.push(inside);
            i = end;
        } else {
            i += 1;
        }
    }
    found
}

/// Whether a definition says `word` (unquoted): a column's AUTOINCREMENT.
pub fn has_word(definition: &[Token], word: &str) -> bool {
    definition.iter().any(|t| t.is_word(word))
}

/// The tokens after a CREATE INDEX's top-level WHERE, or none.
pub fn where_clause(create_index: &[Token]) -> Vec<Token> {
    let mut depth = 0i32;
    for (i, token) in create_index.iter().enumerate() {
        if token.is_punct("(") {
            depth += 1;
        } else if token.is_punct(")") {
            depth -= 1;
        } else if depth == 0 && token.is_word("where") {
            return create_index[i + 1..].iter().filter(|t| !t.is_punct(";")).cloned().collect();
        }
    }
    Vec::new()
}

/// The tokens inside the parenthesis that opens at `open`, and the index
/// after its close.
fn group(tokens: &[Token], open: usize) -> (Vec<Token>, usize) {
    let mut depth = 0;
    for (i, token) in tokens.iter().enumerate().skip(open) {
        if token.is_punct("(") {
            depth += 1;
        } else if token.is_punct(")") {
            depth -= 1;
            if depth == 0 {
                return (tokens[open + 1..i].to_vec(), i + 1);
            }
        }
    }
    (tokens[open + 1..].to_vec(), tokens.len())
}

#[cfg(test)]
mod tests {
    use super::*;

    const JOBS: &str = "CREATE TABLE t (\n  id INTEGER PRIMARY KEY AUTOINCREMENT, -- the id\n  \
        state TEXT NOT NULL DEFAULT 'ready' CHECK (state IN ('ready', 'it''s')),\n  \
        n INTEGER CHECK (n >= 0) CHECK (n <= 9),\n  CHECK (length(state) > 0)\n)";

    #[test]
    fn a_table_splits_into_columns_and_constraints_with_their_checks() {
        let parts = definitions(&tokens(JOBS));
        assert_eq!(parts.len(), 4);
        assert!(has_word(&parts[0], "autoincrement"));
        let state: Vec<String> = checks(&parts[1]).iter().map(|c| render(c)).collect();
        assert_eq!(state, ["state IN ( 'ready' , 'it''s' )"]);
        assert_eq!(checks(&parts[2]).len(), 2);
        assert!(is_table_constraint(&parts[3]) && !is_table_constraint(&parts[1]));
        assert_eq!(render(&checks(&parts[3])[0]), "length ( state ) > 0");
    }

    #[test]
    fn spacing_case_and_comments_do_not_count() {
        let a = tokens("CHECK (priority BETWEEN -100 AND 100) /* x */");
        let b = tokens("check(\n PRIORITY between - 100 and 100)");
        assert_eq!(a, b);
        assert_ne!(a, tokens("CHECK (priority BETWEEN -1000 AND 1000)"));
        let index = tokens("CREATE INDEX i ON t (a, (b + 1)) WHERE state = 'ready';");
        assert_eq!(render(&where_clause(&index)), "state = 'ready'");
        assert_eq!(render(&tokens("x'0A' <= 1.5e3")), "x'0a' <= 1.5e3");
        assert_eq!(
            render(&b[2..b.len() - 1]),
            "PRIORITY between -100 and 100",
            "a sign stays with its number"
        );
        assert_eq!(render(&tokens("attempts - 1")), "attempts - 1");
    }
}
