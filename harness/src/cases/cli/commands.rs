use crate::cases::Case;

pub fn cases() -> Vec<Case> {
    Vec::new()
}
