//! (to be written)

use crate::case::Case;

pub fn cases() -> Vec<Case> {
    Vec::new()
}
