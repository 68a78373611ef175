//! The durability check: from an strace log
//! ([`crate::subjects::observe::strace`]), the writes and syncs that reach
//! any file, the programs started and the acknowledgements a program
//! makes, each a [`Sighting`] in the order the calls completed; each
//! acknowledgement must follow a sync of the file that holds the commit
//! it acknowledges (FORMAT.md §6.1).

use crate::subjects::observe::strace::{self, Stdout};

/// What one completed call meant here.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Seen {
    /// Data written to a file (not stdout).
    Write { path: String },
    /// An fsync or fdatasync of a file that returned.
    Sync { path: String },
    /// A program started (an execve that returned).
    Exec { program: String },
    /// A line on stdout that acknowledges an add, complete at this call.
    Acknowledged { id: i64 },
}

/// One call that mattered, and where it completed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Sighting {
    /// The line of the trace where the call completed (from 1).
    pub line: usize,
    pub pid: u32,
    pub seen: Seen,
}

/// The sightings of an strace log, in completion order; acknowledgements
/// are the lines on `stdout` (the stream the harness reads, as `-y` names
/// it; None when it reads none).
pub fn sightings(trace: &str, stdout: Option<&str>) -> Vec<Sighting> {
    let mut stdout = stdout.map(Stdout::new);
    let mut sightings = Vec::new();
    for call in strace::calls(trace) {
        let (line, pid) = (call.line, call.pid);
        let mut push = |seen| sightings.push(Sighting { line, pid, seen });
        if let Some(written) = call.written() {
            if let Some(stdout) = stdout.as_mut().filter(|s| s.takes(&written)) {
                // A line strace showed only in part cannot be read: its id
                // goes unseen, and the case reports it missing.
                if written.whole() {
                    for id in stdout.write(&written) {
                        push(Seen::Acknowledged { id });
                    }
                }
            } else if !written.path.is_empty() {
                push(Seen::Write { path: written.path });
            }
        } else if let Some(path) = call.synced() {
            push(Seen::Sync { path });
        } else if let Some(program) = call.executed() {
            push(Seen::Exec { program });
        }
    }
    sightings
}

/// Checks that before the sighting `at` (an acknowledgement), the last write
/// to each of `files` was followed by a sync of that file. Returns what
/// is wrong, or None.
pub fn unsynced_before(sightings: &[Sighting], at: usize, files: &[String]) -> Option<String> {
    let mut wrote_any = false;
    for file in files {
        let last_write =
            sightings[..at].iter().rposition(|s| matches!(&s.seen, Seen::Write { path } if path == file));
        let Some(w) = last_write else { continue };
        wrote_any = true;
        let synced = sightings[w..at].iter().any(|s| matches!(&s.seen, Seen::Sync { path } if path == file));
        if !synced {
            return Some(format!(
                "the last write to {file} (trace line {}) was not followed by fsync/fdatasync of it before the acknowledgement (trace line {})",
                sightings[w].line, sightings[at].line
            ));
        }
    }
    (!wrote_any).then(|| format!("nothing was written to {} before the acknowledgement", files.join(" or ")))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Padded as strace pads short lines (pids of a fresh machine).
    const TRACE: &str = r#"100   pwrite64(4</t/a.ukue-wal>, "\0\0", 24, 0) = 24
100   fdatasync(4</t/a.ukue-wal> <unfinished ...>
101   write(5</t/probe.log>, "x", 1)    = 1
100   <... fdatasync resumed>)          = 0
100   write(1<pipe:[77]>, "1", 1)       = 1
100   write(1<pipe:[77]>, "\n", 1)      = 1
102   execve("/bin/probe", ["probe"], 0x7ff /* 3 vars */) = 0
103   execve("/bin/nope", ["nope"], 0x7ff /* 3 vars */) = -1 ENOENT (No such file or directory)
"#;

    #[test]
    fn reads_sightings_in_completion_order() {
        let found = sightings(TRACE, Some("pipe:[77]"));
        let seen: Vec<(usize, Seen)> = found.into_iter().map(|s| (s.line, s.seen)).collect();
        assert_eq!(
            seen,
            vec![
                (1, Seen::Write { path: "/t/a.ukue-wal".into() }),
                (3, Seen::Write { path: "/t/probe.log".into() }),
                (4, Seen::Sync { path: "/t/a.ukue-wal".into() }),
                (6, Seen::Acknowledged { id: 1 }),
                (7, Seen::Exec { program: "/bin/probe".into() }),
            ]
        );
    }

    #[test]
    fn an_ack_before_the_sync_is_found() {
        let wal = vec!["/t/a.ukue-wal".to_string()];
        assert_eq!(unsynced_before(&sightings(TRACE, Some("pipe:[77]")), 3, &wal), None);
        let unsynced = sightings(
            concat!(
                "100 pwrite64(4</t/a.ukue-wal>, \"\", 1, 0) = 1\n",
                "100 write(1<pipe:[1]>, \"1\\n\", 2) = 2\n",
                "100 fsync(4</t/a.ukue-wal>) = 0\n"
            ),
            Some("pipe:[1]"),
        );
        assert_eq!(unsynced[1].seen, Seen::Acknowledged { id: 1 });
        let problem = unsynced_before(&unsynced, 1, &wal).unwrap();
        assert!(problem.contains("(trace line 1)") && problem.contains("(trace line 2)"), "{problem}");
        assert!(unsynced_before(&unsynced, 0, &wal).unwrap().contains("nothing was written"));
    }
}
