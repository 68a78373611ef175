//! Reading `strace -f -y` output: the writes and syncs that reach a file,
//! and the acknowledgements a program makes, in the order they completed.
//! The durability cases check that each acknowledgement follows a sync of
//! the file that holds the commit it acknowledges (FORMAT.md §6.1).

use std::collections::HashMap;

/// One completed system call that matters here.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Call {
    /// Data written to a file (write, pwrite64, writev, pwritev).
    Write { pid: u32, path: String, data: String },
    /// fsync or fdatasync that returned 0.
    Sync { pid: u32, path: String },
    /// A program started (execve that returned 0).
    Exec { pid: u32, program: String },
}

/// The traced calls, in completion order. strace splits a call that
/// another thread interrupts into `<unfinished ...>` and `<... resumed>`;
/// such a call counts where it completed.
pub fn parse(trace: &str) -> Vec<Call> {
    completed(trace).into_iter().filter_map(|(_, pid, text)| call(pid, &text)).collect()
}

/// Every line of the trace as `(line number from 1, pid, call text)`, in
/// completion order, with an `<unfinished ...>` call joined to its
/// `<... resumed>` end (and counted at the line of its end).
pub fn completed(trace: &str) -> Vec<(usize, u32, String)> {
    let mut pending: HashMap<u32, String> = HashMap::new();
    let mut lines = Vec::new();
    for (number, line) in trace.lines().enumerate() {
        let Some((pid, rest)) = line.split_once(' ') else { continue };
        let Ok(pid) = pid.trim().parse::<u32>() else { continue };
        let rest = rest.trim_start();
        let text = if let Some(start) = rest.strip_suffix(" <unfinished ...>") {
            pending.insert(pid, start.to_string());
            continue;
        } else if let Some(resumed) = rest.strip_prefix("<... ") {
            let Some(start) = pending.remove(&pid) else { continue };
            let tail = resumed.split_once("resumed>").map(|(_, t)| t).unwrap_or("");
            format!("{start}{tail}")
        } else {
            rest.to_string()
        };
        lines.push((number + 1, pid, text));
    }
    lines
}

fn call(pid: u32, text: &str) -> Option<Call> {
    let (name, args) = text.split_once('(')?;
    let result = text.rsplit_once(") = ").map(|(_, r)| r.trim())?;
    if result.starts_with('-') || result.starts_with('?') {
        return None; // failed or never returned
    }
    match name {
        "write" | "pwrite64" | "writev" | "pwritev" | "pwritev2" => {
            let path = fd_path(args)?;
            let data = args.split_once(", ").map(|(_, d)| d.to_string()).unwrap_or_default();
            Some(Call::Write { pid, path, data })
        }
        "fsync" | "fdatasync" => Some(Call::Sync { pid, path: fd_path(args)? }),
        "execve" => {
            let program = args.split('"').nth(1)?.to_string();
            Some(Call::Exec { pid, program })
        }
        _ => None,
    }
}

/// The path strace -y shows for the first argument: `4</tmp/x.ukue-wal>`.
fn fd_path(args: &str) -> Option<String> {
    let open = args.find('<')?;
    let close = args[open..].find('>')? + open;
    Some(args[open + 1..close].to_string())
}

/// Checks that before the acknowledgement at `ack` (an index into
/// `calls`), the last write to each of `files` was followed by a sync of
/// that file. Returns what is wrong, or None.
pub fn unsynced_before(calls: &[Call], ack: usize, files: &[String]) -> Option<String> {
    let mut wrote_any = false;
    for file in files {
        let last_write =
            calls[..ack].iter().rposition(|c| matches!(c, Call::Write { path, .. } if path == file));
        let Some(w) = last_write else { continue };
        wrote_any = true;
        let synced = calls[w..ack].iter().any(|c| matches!(c, Call::Sync { path, .. } if path == file));
        if !synced {
            return Some(format!(
                "the last write to {file} (call {w}) was not followed by fsync/fdatasync of it before the acknowledgement (call {ack})"
            ));
        }
    }
    (!wrote_any).then(|| format!("nothing was written to {} before the acknowledgement", files.join(" or ")))
}

#[cfg(test)]
mod tests {
    use super::*;

    const TRACE: &str = r#"100 pwrite64(4</t/a.ukue-wal>, "\0\0", 24, 0) = 24
100 fdatasync(4</t/a.ukue-wal> <unfinished ...>
101 write(5</t/probe.log>, "x", 1) = 1
100 <... fdatasync resumed>) = 0
100 write(1<pipe:[77]>, "1\n", 2) = 2
102 execve("/bin/probe", ["probe"], 0x7ff /* 3 vars */) = 0
103 execve("/bin/nope", ["nope"], 0x7ff /* 3 vars */) = -1 ENOENT (No such file or directory)
"#;

    #[test]
    fn parses_completed_calls_in_completion_order() {
        let calls = parse(TRACE);
        assert_eq!(calls.len(), 5, "{calls:?}");
        assert!(matches!(&calls[1], Call::Write { path, .. } if path == "/t/probe.log"));
        assert_eq!(calls[2], Call::Sync { pid: 100, path: "/t/a.ukue-wal".into() });
        assert!(
            matches!(&calls[3], Call::Write { path, data, .. } if path == "pipe:[77]" && data.starts_with("\"1\\n\""))
        );
        assert_eq!(calls[4], Call::Exec { pid: 102, program: "/bin/probe".into() });
    }

    #[test]
    fn an_ack_before_the_sync_is_found() {
        let wal = vec!["/t/a.ukue-wal".to_string()];
        let calls = parse(TRACE);
        assert_eq!(unsynced_before(&calls, 3, &wal), None);
        let unsynced = parse("100 pwrite64(4</t/a.ukue-wal>, \"\", 1, 0) = 1\n100 write(1<pipe:[1]>, \"1\\n\", 2) = 2\n100 fsync(4</t/a.ukue-wal>) = 0\n");
        assert!(unsynced_before(&unsynced, 1, &wal).is_some());
        assert!(unsynced_before(&unsynced, 0, &wal).unwrap().contains("nothing was written"));
    }
}
