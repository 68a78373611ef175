//! differential: seeded sequences of commands run against the subject and
//! the reference on twin files, compared step by step.

use crate::cases::Case;

pub fn cases() -> Vec<Case> {
    Vec::new()
}
