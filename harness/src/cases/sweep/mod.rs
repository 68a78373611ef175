//! sweep: every input that carries a value, at its boundaries and across
//! its classes, from tables of values (data, not a case each).

use crate::cases::Case;

pub fn cases() -> Vec<Case> {
    Vec::new()
}
