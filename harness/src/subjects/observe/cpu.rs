//! The CPU time a subject spends, the measure of the scale cases: a
//! machine shared with a busy loop stretches wall-clock times, not the
//! time a process spends on a CPU. Two readings:
//!
//! - of a whole process, at its end: user plus system time as `wait4`
//!   returns it (the process and the children it waited for), in
//!   microseconds ([`crate::subjects::process::Spawned::wait_with_cpu`]);
//! - of a running process, between two moments ([`in_flight`]): the sum of
//!   its threads' time on a CPU, in nanoseconds from
//!   `/proc/PID/task/TID/schedstat`, or in clock ticks (10 ms) from
//!   `/proc/PID/stat` on a kernel without it. A thread that ends between
//!   the two readings takes its time with it; the commands a worker runs
//!   are processes of their own, and not counted.

use std::path::Path;
use std::time::Duration;

/// The CPU time of `pid`'s threads so far, with the clock's resolution;
/// None when the process is gone.
pub fn in_flight(pid: i32) -> Option<Reading> {
    let tasks = std::fs::read_dir(format!("/proc/{pid}/task")).ok()?;
    let mut total = 0u64;
    let mut threads = 0;
    for task in tasks.flatten() {
        // A thread may end between the listing and the read.
        let Some(ns) = schedstat_ns(&task.path().join("schedstat")) else { continue };
        total += ns;
        threads += 1;
    }
    if threads > 0 {
        return Some(Reading { time: Duration::from_nanos(total), resolution: Duration::from_micros(1) });
    }
    ticks(pid).map(|time| Reading { time, resolution: TICK })
}

/// A reading of [`in_flight`]: the time, and the clock's resolution.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Reading {
    pub time: Duration,
    pub resolution: Duration,
}

/// A clock tick of `/proc/PID/stat` (USER_HZ is 100 on Linux).
const TICK: Duration = Duration::from_millis(10);

/// The first field of a schedstat file: time on a CPU, in ns.
fn schedstat_ns(path: &Path) -> Option<u64> {
    std::fs::read_to_string(path).ok()?.split_whitespace().next()?.parse().ok()
}

/// utime + stime of `/proc/PID/stat`, every thread's, ended ones included.
fn ticks(pid: i32) -> Option<Duration> {
    let text = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // The command name may hold spaces and parentheses: count after its last `)`.
    let mut fields = text.get(text.rfind(')')? + 1..)?.split_whitespace();
    // utime and stime are the 14th and 15th fields; the state is the 3rd.
    let utime: u32 = fields.nth(11)?.parse().ok()?;
    let stime: u32 = fields.next()?.parse().ok()?;
    Some(TICK * (utime + stime))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn this_process_spends_time_and_a_gone_one_has_none() {
        let me = std::process::id() as i32;
        let before = in_flight(me).expect("this process");
        let deadline = std::time::Instant::now() + Duration::from_secs(10);
        let mut x = 0u64;
        let mut after = before;
        while after.time < before.time + Duration::from_millis(20) && std::time::Instant::now() < deadline {
            for _ in 0..100_000 {
                x = std::hint::black_box(x.wrapping_mul(31).wrapping_add(7));
            }
            after = in_flight(me).expect("this process");
        }
        assert!(after.time >= before.time + Duration::from_millis(20), "{before:?} {after:?}");
        assert!(in_flight(i32::MAX).is_none());
        assert!(ticks(me).is_some());
    }
}
