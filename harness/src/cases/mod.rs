//! Every case, by family. A case is data (id, rule, summary) and one
//! function; the runner treats them all alike.

mod bad_input;
pub mod common;
mod compat;
mod concurrency;
mod crash;
mod durability;
mod fixture;
mod format;
mod interop;
mod ioerror;
mod leases;
pub mod manifest;
mod powerloss;
mod refusal;
mod steps;

use crate::case::Case;

pub use fixture::source;

/// Every case, in a stable order.
pub fn all() -> Vec<Case> {
    let mut cases = Vec::new();
    cases.extend(format::cases());
    cases.extend(refusal::cases());
    cases.extend(compat::cases());
    cases.extend(steps::cases());
    cases.extend(bad_input::cases());
    cases.extend(concurrency::cases());
    cases.extend(crash::cases());
    cases.extend(leases::cases());
    cases.extend(interop::cases());
    cases.extend(durability::cases());
    cases.extend(powerloss::cases());
    cases.extend(ioerror::cases());
    cases
}
