//! Lease tokens: 128 random bits as 32 hex digits (FORMAT.md §5.4).

use std::fmt::Write;

pub fn new() -> std::io::Result<String> {
    let mut bytes = [0u8; 16];
    getrandom::getrandom(&mut bytes).map_err(std::io::Error::other)?;
    let mut text = String::with_capacity(32);
    for b in bytes {
        let _ = write!(text, "{b:02x}");
    }
    Ok(text)
}
