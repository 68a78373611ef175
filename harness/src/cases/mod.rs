//! Generate: every case, by family. A case ([`Case`]) is data (id, rule,
//! level, summary) and one function that drives subjects through a
//! [`Ctx`] and says what it expected and saw;
//! the runner treats them all alike. The refusal and compat cases are
//! data: their manifests under fixtures/ ([`manifest`], [`fixture`]).
//!
//! [`Case`]: crate::cases::Case
//! [`Ctx`]: crate::subjects::ctx::Ctx
//! [`manifest`]: crate::cases::manifest
//! [`fixture`]: crate::cases::fixture

mod case;
pub mod common;
pub mod fixture;
pub mod manifest;

mod bad_input;
mod cli;
mod compat;
mod concurrency;
mod crash;
mod differential;
mod durability;
pub mod evolve;
mod format;
mod http;
mod interop;
mod ioerror;
mod leases;
mod powerloss;
mod refusal;
mod scale;
mod steps;
mod sweep;

pub use case::{Case, CaseResult, Level, Needs};
pub use fixture::source;

/// Every case, in a stable order.
pub fn all() -> Vec<Case> {
    let families: [fn() -> Vec<Case>; 17] = [
        format::cases,
        refusal::cases,
        compat::cases,
        steps::cases,
        bad_input::cases,
        cli::cases,
        sweep::cases,
        differential::cases,
        concurrency::cases,
        crash::cases,
        leases::cases,
        interop::cases,
        durability::cases,
        powerloss::cases,
        ioerror::cases,
        http::cases,
        scale::cases,
    ];
    families.into_iter().flat_map(|family| family()).collect()
}
