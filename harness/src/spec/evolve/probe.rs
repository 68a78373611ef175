//! SQLite as the judge of two texts it keeps: which values a CHECK clause
//! takes, and whether a default or a statement counts a thousand times
//! more or less than before (milliseconds become seconds).

use rusqlite::Connection;

use super::lex::{self, Token};

/// How a column's CHECK changed, by the probe values each takes: the
/// literals of both clauses, each one off, and texts of each length.
pub fn compare_checks(db: &Connection, column: &str, old: &[Token], new: &[Token]) -> String {
    let values = probes(old, new);
    let takes = |check: &[Token], value: &rusqlite::types::Value| passes(db, column, check, value);
    let mut fewer = None;
    let mut more = None;
    for value in &values {
        match (takes(old, value), takes(new, value)) {
            (Some(true), Some(false)) if fewer.is_none() => fewer = Some(shown(value)),
            (Some(false), Some(true)) if more.is_none() => more = Some(shown(value)),
            _ => {}
        }
    }
    match (fewer, more) {
        (Some(f), None) => format!("tightened: it refuses {f}, which the old one takes"),
        (None, Some(m)) => format!("widened: it takes {m}, which the old one refuses"),
        (Some(f), Some(m)) => format!("changed: it refuses {f} and takes {m}"),
        (None, None) => {
            "rewritten: no probe value told the two apart, but files keep the text they were made with"
                .to_string()
        }
    }
}

fn shown(value: &rusqlite::types::Value) -> String {
    use rusqlite::types::Value;
    match value {
        Value::Integer(n) => n.to_string(),
        Value::Text(t) if t.chars().count() > 12 => format!("a text of {} characters", t.chars().count()),
        Value::Text(t) => format!("'{t}'"),
        other => format!("{other:?}"),
    }
}

/// Whether the clause takes `value` in `column` (a CHECK passes unless it
/// is false); None when SQLite cannot evaluate it alone (it names another
/// column).
pub(super) fn passes(
    db: &Connection,
    column: &str,
    check: &[Token],
    value: &rusqlite::types::Value,
) -> Option<bool> {
    let column = column.to_lowercase();
    let expr: Vec<Token> = check
        .iter()
        .map(|t| match t {
            Token::Word { text, .. } if *text == column => Token::Punct("?1".into()),
            other => other.clone(),
        })
        .collect();
    let sql = format!("SELECT coalesce(({}) <> 0, 1)", lex::render(&expr));
    db.query_row(&sql, [value], |r| r.get::<_, bool>(0)).ok()
}

/// The values to try: each number of either clause, one off each way and
/// negated, texts of that many characters, and each text of either.
fn probes(old: &[Token], new: &[Token]) -> Vec<rusqlite::types::Value> {
    use rusqlite::types::Value;
    let mut values = vec![Value::Integer(0), Value::Text(String::new())];
    for token in old.iter().chain(new) {
        match token {
            Token::Num(n) => {
                let Ok(n) = n.parse::<i64>() else { continue };
                for v in [n - 1, n, n + 1] {
                    values.push(Value::Integer(v));
                    values.push(Value::Integer(-v));
                    if (0..=100_000).contains(&v) {
                        values.push(Value::Text("x".repeat(v as usize)));
                    }
                }
            }
            Token::Str(text) => values.push(Value::Text(text.clone())),
            _ => {}
        }
    }
    values.dedup();
    values
}

/// Whether two defaults evaluate to numbers a thousand times apart.
pub fn thousandfold(db: &Connection, old: Option<&str>, new: Option<&str>) -> bool {
    let value = |sql: Option<&str>| -> Option<f64> {
        db.query_row(&format!("SELECT CAST(({}) AS REAL)", sql?), [], |r| r.get(0)).ok()
    };
    match (value(old), value(new)) {
        (Some(o), Some(n)) => apart_a_thousandfold(o, n),
        _ => false,
    }
}

/// Whether two statements differ only in numbers, each a thousand times
/// the other.
pub fn thousandfold_literals(old: &[Token], new: &[Token]) -> bool {
    if old.len() != new.len() {
        return false;
    }
    let mut any = false;
    for (o, n) in old.iter().zip(new) {
        match (o, n) {
            _ if o == n => {}
            (Token::Num(a), Token::Num(b)) => match (a.parse::<f64>(), b.parse::<f64>()) {
                (Ok(a), Ok(b)) if apart_a_thousandfold(a, b) => any = true,
                _ => return false,
            },
            _ => return false,
        }
    }
    any
}

fn apart_a_thousandfold(a: f64, b: f64) -> bool {
    if a == 0.0 || b == 0.0 {
        return false;
    }
    let ratio = (a / b).abs().max((b / a).abs());
    (ratio / 1000.0 - 1.0).abs() < 0.01
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_check_tightened_widened_or_rewritten() {
        let db = Connection::open_in_memory().unwrap();
        let check = |sql: &str| lex::tokens(sql);
        let old = check("priority BETWEEN -100 AND 100");
        let wide = compare_checks(&db, "priority", &old, &check("priority BETWEEN -1000 AND 1000"));
        assert!(wide.starts_with("widened: it takes 101"), "{wide}");
        let tight = compare_checks(&db, "priority", &old, &check("priority BETWEEN 0 AND 100"));
        assert!(tight.starts_with("tightened: it refuses -99"), "{tight}");
        let same = compare_checks(&db, "priority", &old, &check("priority >= -100 AND priority <= 100"));
        assert!(same.starts_with("rewritten"), "{same}");
        let queue = compare_checks(
            &db,
            "queue",
            &check("length(queue) BETWEEN 1 AND 200"),
            &check("length(queue) <= 100"),
        );
        assert!(queue.contains("refuses a text of 199 characters") && queue.contains("takes ''"), "{queue}");
    }

    #[test]
    fn milliseconds_to_seconds_is_a_thousandfold() {
        let db = Connection::open_in_memory().unwrap();
        let ms = "CAST((julianday('now') - 2440587.5) * 86400000 AS INTEGER)";
        let s = "CAST((julianday('now') - 2440587.5) * 86400 AS INTEGER)";
        assert!(thousandfold(&db, Some(ms), Some(s)));
        assert!(!thousandfold(&db, Some("10"), Some("5")));
        assert!(!thousandfold(&db, Some("10"), None));
        let fail = lex::tokens("min(10000 << n, 3600000)");
        assert!(thousandfold_literals(&fail, &lex::tokens("min(10 << n, 3600)")));
        assert!(!thousandfold_literals(&fail, &lex::tokens("min(20000 << n, 3600000)")));
    }
}
