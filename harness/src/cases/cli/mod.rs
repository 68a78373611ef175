//! cli: the command line of spec/COMMAND.md, item by item, seen from
//! outside: what each command does with its flags, arguments, stdin and
//! signals, what it prints and how it exits. One file a part of the page:
//! [`commands`] (conventions, files, and the commands but `work`) and
//! [`work`] (`work`: its command's input and environment, concurrency,
//! leases, timeouts and signals).

mod commands;
mod work;

use crate::cases::Case;

pub fn cases() -> Vec<Case> {
    let mut cases = commands::cases();
    cases.extend(work::cases());
    cases
}
